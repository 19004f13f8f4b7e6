#!/usr/bin/env bash
# t0444-agent-oci-liar: what the agent as a registry mirror (docs/agent.md, "The registry mirror")
# trusts of its mirror's /v2/. A front that lies (helpers/ocilying.py) stands between the agent and a
# real mirror:
# - its manifests' bytes are not the digest it names them by: the agent passes none of them (502),
#   asked by tag or by digest;
# - its manifests are self-consistent but name each layer by a digest of other bytes than the file's
#   (and the front admits a HEAD or GET of that digest, as the mirror would of the real one): the
#   agent passes the manifests, and refuses the layers (502): a raw layer's digest is not the file's
#   sha256 (known from the snapshot before any byte), a tar layer's is not the digest of header, file
#   and zeros (known once the agent has the file: the first GET, before the cache held it, streamed
#   the layer as the file came, and its client finds it is not the digest it asked for, as containerd
#   does; the agent checks it after that stream and says so in its log). The same requests through an agent that trusts the front would be 200 with the file's bytes.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/liar",
   "files": [{"path": "config.json", "content": "{\"architectures\": [\"LlamaForCausalLM\"]}\n"},
             {"path": "model.safetensors", "size": 1500000, "seed": 4441}]}
 ]}
JSON
sync_from_fake hf:acme/liar
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
# front MODE: the lying front on the mirror; $F its URL
front() {
	rm -f "$T/front.$1"
	"$PY" "$HM_SRC/tests/integration/helpers/ocilying.py" --ready-file "$T/front.$1" --mirror "$M" --mode "$1" &
	_pids+=($!)
	for _ in $(seq 100); do [ -s "$T/front.$1" ] && break; sleep 0.1; done
	F=$(cat "$T/front.$1")
}
# agent CACHE: an agent whose mirror is the front, with its local endpoint; $E its URL
agent() {
	"$HUBMIRROR" agent --mirror "$F" --cache "$T/$1" --listen 127.0.0.1:0 --http 0 >/dev/null || return 1
	E=$(agent_endpoint)
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
real=$(curl -fsS -D - -o /dev/null "$M/v2/hf/acme/liar/manifests/main" | tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p')
check "the mirror's manifest has a digest" test -n "$real"

# ---- manifests that are not their digest ----
front body
check "an agent behind a front that changes manifests starts" agent ca
check "a manifest asked by tag that is not the digest the mirror names is not passed (502)" \
	test "$(code "$E/v2/hf/acme/liar/manifests/main")" = 502
check "... nor one asked by its digest" test "$(code "$E/v2/hf/acme/liar/manifests/$real")" = 502
check "... nor an image's index" test "$(code "$E/v2/image/hf/acme/liar/manifests/main")" = 502
check "... the agent says why" bash -c "curl -sS -D - -o /dev/null '$E/v2/hf/acme/liar/manifests/main' | grep -qi '^x-error-message: the mirror.s manifest is not the digest'"
check "(the front's manifest through curl alone is a 200: the agent refused it)" \
	test "$(code "$F/v2/hf/acme/liar/manifests/main")" = 200
check "agent --stop" "$HUBMIRROR" agent --stop

# ---- manifests that name layers of other bytes ----
front layer
check "an agent behind a front that renames layers starts" agent cb
man=$(curl -fsS "$E/v2/hf/acme/liar/manifests/main")
check "the artifact's manifest (self-consistent) is passed" test -n "$man"
wrong=$(echo "$man" | "$PY" -c 'import json,sys; print([l["digest"] for l in json.load(sys.stdin)["layers"]
	if l["annotations"]["org.cncf.model.filepath"] == "model.safetensors"][0])')
check "the front admits the renamed raw layer (200 from the front itself)" test "$(code "$F/v2/hf/acme/liar/blobs/$wrong")" = 200
check "the agent refuses the raw layer whose digest is not the file's sha256 (502)" \
	test "$(code "$E/v2/hf/acme/liar/blobs/$wrong")" = 502
idx=$(curl -fsS "$E/v2/image/hf/acme/liar/manifests/main")
check "the image's index (self-consistent) is passed" test -n "$idx"
amd=$(echo "$idx" | "$PY" -c 'import json,sys; print([m["digest"] for m in json.load(sys.stdin)["manifests"] if m["platform"]["architecture"]=="amd64"][0])')
tman=$(curl -fsS "$E/v2/image/hf/acme/liar/manifests/$amd")
check "... and its manifest, asked by the digest the index names" test -n "$tman"
twrong=$(echo "$tman" | "$PY" -c 'import json,sys; print([l["digest"] for l in json.load(sys.stdin)["layers"]
	if l["annotations"]["org.cncf.model.filepath"] == "model.safetensors"][0])')
check "the front admits the renamed tar layer" test "$(code "$F/v2/image/hf/acme/liar/blobs/$twrong")" = 200
curl -sS -D "$T/first.h" -o "$T/first.body" "$E/v2/image/hf/acme/liar/blobs/$twrong"
check "the first GET of the tar layer, the file not yet in the cache, streams it (200)" grep -q '^HTTP/1.1 200' "$T/first.h"
check "... and its client finds it is not the digest it asked for" \
	test "sha256:$(sha256sum <"$T/first.body" | cut -d' ' -f1)" != "$twrong"
for _ in $(seq 600); do grep -q "streamed before its check: the tar layer made here is not" "$T/cb/agent.log" && break; sleep 0.1; done
check "the agent, checking the streamed layer after it, says in its log it is not the digest" \
	grep -q "streamed before its check: the tar layer made here is not" "$T/cb/agent.log"
curl -sS -D "$T/tar.h" -o "$T/tar.body" "$E/v2/image/hf/acme/liar/blobs/$twrong"
check "the file now in the cache, the agent refuses the tar layer whose bytes are not its digest (502)" grep -q '^HTTP/1.1 502' "$T/tar.h"
check "... having checked the digest of header, file and zeros" grep -qi '^x-error-message: the tar layer made here is not the manifest' "$T/tar.h"
check "... and again the next time (nothing remembered as checked)" test "$(code "$E/v2/image/hf/acme/liar/blobs/$twrong")" = 502
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' logs hold no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/ca/agent.log' '$T/cb/agent.log'"
check "serve stops clean" serve_stops_clean
finish
