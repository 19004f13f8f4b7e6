#!/usr/bin/env bash
# t0443-agent-oci: the agent's local endpoint as the node's registry mirror (docs/agent.md, "The
# registry mirror"). containerd (started by the test as root, each with its own root, state and
# socket, as t0442 starts it) pulls models.example/image/hf/acme/x:main through hosts.toml naming the
# agent; the agent passes the index and manifests from the mirror with their digests checked and
# answers the tar layers from its cache (the file fetched through the swarm, between the header
# hub/oci.c makes and zeros): the unpacked tree is upstream's, the mirror's log shows no GET of a
# layer, and a second containerd pulling the same image, then the raw ModelPack artifact's layer and a
# `hubmirror pull` through the same agent, make the mirror send nothing more: the bytes are in the
# cache once. A
# guarded repo's image is refused without its token and pulled with it (the registry token flow through
# the agent; the agent takes the snapshot with its own token). Another node's agent, and its
# containerd pulling the image through it, get the weights from the first agent over the swarm.
. "$HM_SRC/tests/integration/lib.sh"
need_containerd
"$PY" - >"$T/spec.json" <<'PY'
import json
print(json.dumps({
 "tokens": {},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/x", "files": [
     {"path": "config.json", "content": "{\"architectures\": [\"LlamaForCausalLM\"]}\n"},
     {"path": "model.safetensors", "size": 3000000, "seed": 443},
     {"path": "sub/tokenizer.json", "content": "{\"t\": 1}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/guarded", "files": [
     {"path": "config.json", "content": "{\"g\": 1}\n"},
     {"path": "w.bin", "size": 300000, "seed": 444}]}
 ]}))
PY
sync_from_fake hf:acme/x hf:acme/guarded
printf 'tok-reader-abcdefgh hf:acme/guarded\n' >"$T/tokens"
printf 'tok-reader-abcdefgh\n' >"$T/agent-token"
chmod 600 "$T/tokens" "$T/agent-token"
check "serve starts" start_serve --p2p-listen 127.0.0.1:0 --tokens "$T/tokens"
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/ca" --listen 127.0.0.1:0 \
	--http 0 --token-file "$T/agent-token"
E=$(agent_endpoint)
echo "# endpoint $E, mirror $M"
# what the mirror sent: to its swarm's peers, and over HTTP (web seed, /v2/, everything else)
sent() { echo $(($(metric hubmirror_seeder_uploaded_bytes_total) + $(metric hubmirror_http_response_bytes_total))); }

check "containerd starts" start_containerd "$T/c1" "$E" t0443
before=$(sent)
check "ctr pulls models.example/image/hf/acme/x:main through hosts.toml naming the agent" ctr_pull image/hf/acme/x:main
check "the unpacked image holds every file of the snapshot, equal to upstream's, and nothing else" \
	ctr_unpacked acme/x .gitattributes config.json model.safetensors sub/tokenizer.json
# the layers' digests, from the mirror's manifest of linux/amd64
idx=$(curl -fsS "$M/v2/image/hf/acme/x/manifests/main")
man=$(echo "$idx" | "$PY" -c 'import json,sys; print([m["digest"] for m in json.load(sys.stdin)["manifests"] if m["platform"]["architecture"]=="amd64"][0])')
layers=$(curl -fsS "$M/v2/image/hf/acme/x/manifests/$man" | "$PY" -c 'import json,sys; print(" ".join(l["digest"] for l in json.load(sys.stdin)["layers"]))')
check "the image has four layers" test "$(wc -w <<<"$layers")" = 4
got=0
for d in $layers; do grep -q "\"GET /v2/image/hf/acme/x/blobs/$d" "$T/access.log" && got=$((got + 1)); done
check "the mirror's log shows no GET of a layer (the agent's HEADs only)" test "$got" = 0
check "... the agent asked the mirror HEAD of each layer (may this client have it?)" \
	test "$(for d in $layers; do grep -c "\"HEAD /v2/image/hf/acme/x/blobs/$d" "$T/access.log"; done | sort -u)" = 1
first=$(($(sent) - before))
echo "# the mirror sent $first bytes for the first pull"
check "the mirror sent the weights once (through the swarm's web seed)" test "$first" -ge 3000000 -a "$first" -lt 6000000
check "the agent holds the snapshot" bash -c "\"$HUBMIRROR\" status --json | grep -q '\"spec\": \"hf:acme/x'"

# a second node's containerd, the same image, the same agent's cache: nothing more from the mirror
check "a second containerd starts" start_containerd "$T/c2" "$E" t0443
mid=$(sent)
check "the second containerd pulls the image through the agent" ctr_pull image/hf/acme/x:main
check "... unpacked equal to upstream's" ctr_unpacked acme/x .gitattributes config.json model.safetensors sub/tokenizer.json
# the ModelPack artifact's raw layer, through the agent: the same cached file
wsha=$(curl -fsS "$FAKE_API/_fake/repos" | "$PY" -c 'import json,sys
r=[r for r in json.load(sys.stdin)["repos"] if r["id"]=="acme/x"][0]; c=[c for c in r["commits"] if c["id"]==r["sha"]][0]
print([f for f in c["files"] if f["path"]=="model.safetensors"][0]["sha256"])')
check "the agent passes the artifact's manifest equal to the mirror's" cmp <(curl -fsS "$E/v2/hf/acme/x/manifests/main") \
	<(curl -fsS "$M/v2/hf/acme/x/manifests/main")
curl -fsS -D "$T/raw.h" -o "$T/raw" "$E/v2/hf/acme/x/blobs/sha256:$wsha"
check "the raw layer through the agent is the file" test "$(sha256sum <"$T/raw" | cut -c1-64)" = "$wsha"
check "... with its digest header" grep -qi "^docker-content-digest: sha256:$wsha" "$T/raw.h"
check "a Range of a tar layer through the agent is those bytes of the mirror's" \
	cmp <(curl -fsS -r 1000-2999 "$E/v2/image/hf/acme/x/blobs/$(echo "$layers" | cut -d' ' -f3)") \
	<(curl -fsS -r 1000-2999 "$M/v2/image/hf/acme/x/blobs/$(echo "$layers" | cut -d' ' -f3)")
# and `hubmirror pull` of the same snapshot into a hub cache, through the same agent
commit=$(curl -fsS -D - -o /dev/null "$M/v2/hf/acme/x/manifests/main" | tr -d '\r' | sed -n 's/^[Xx]-[Rr]epo-[Cc]ommit: //p')
check "hubmirror pull of the snapshot through the same agent" bash -c "\"\$HUBMIRROR\" pull --mirror \"\$M\" --hf-cache \"$T/hf\" hf:acme/x >/dev/null"
check "... its files are upstream's" cmp "$T/hf/models--acme--x/snapshots/$commit/model.safetensors" \
	<(curl -fsSL "$FAKE_API/acme/x/resolve/main/model.safetensors")
again=$(($(sent) - mid))
echo "# the mirror sent $again more bytes for the second pull, the raw layer, the range and the hub pull"
check "the mirror sent no byte of the weights again: all of them came from the cache" test "$again" -lt 100000
check "the cache holds the weights once (pulled as an image, as an artifact, by hubmirror pull: one file)" \
	test "$(du -sb "$T/ca" | cut -f1)" -lt 4500000

# a manifest the mirror did not name by that digest is not passed (the agent checks what it passes)
code=$(curl -s -o /dev/null -w '%{http_code}' "$E/v2/hf/acme/x/manifests/sha256:$wsha")
check "a manifest asked by a digest the mirror does not know is its 404" test "$code" = 404

# a guarded repo: the registry token flow through the agent
refused() { ! ctr_pull "$@" >/dev/null; }
check "a guarded repo's image is refused without its token" refused image/hf/acme/guarded:main
check "... and pulled with it (ctr --user: the token flow, through the agent)" \
	ctr_pull image/hf/acme/guarded:main --user x:tok-reader-abcdefgh
check "... unpacked equal to upstream's" ctr_unpacked acme/guarded .gitattributes config.json w.bin
check "... containerd asked the token endpoint the agent passed on" grep -q "GET /v2/token" "$T/access.log"
check "... and the agent's copies keep no registry token" bash -c "! grep -rq hmreg_ '$T/ca/agent'"

# another node: its own agent (cache, socket, endpoint) and containerd; its bytes come from the first
# agent over the swarm, not from the mirror
EA=$E
check "a second agent starts" env HUBMIRROR_AGENT_SOCKET="$T/b.sock" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cb" \
	--listen 127.0.0.1:0 --http 0 --token-file "$T/agent-token"
bstatus() { HUBMIRROR_AGENT_SOCKET=$T/b.sock "$HUBMIRROR" status --json; }
bpid=$(bstatus | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
_pids+=("$bpid") # (stopped by the end if a check fails before its own stop)
E=$(HUBMIRROR_AGENT_SOCKET=$T/b.sock agent_endpoint)
check "a third containerd, naming the second agent, starts" start_containerd "$T/c3" "$E" t0443
mid=$(sent)
check "it pulls the image through the second agent" ctr_pull image/hf/acme/x:main
check "... unpacked equal to upstream's" ctr_unpacked acme/x .gitattributes config.json model.safetensors sub/tokenizer.json
peers=$(bstatus | "$PY" -c 'import json,sys; print(sum(s["downloaded"] for s in json.load(sys.stdin)["snapshots"]))')
third=$(($(sent) - mid))
echo "# the second agent got $peers bytes from peers; the mirror sent $third bytes for it"
# (most of them, not all: a reader that waits takes the pieces no peer gave it soon enough from the
# mirror, and on a machine at load 20 that was 1,080,078 bytes of the 3,000,000 once)
check "the second agent got most of the weights from the first one over the swarm" test "$peers" -ge 1500000
check "... and the mirror sent under half of them" test "$third" -lt 1500000
check "the second agent stops" env HUBMIRROR_AGENT_SOCKET="$T/b.sock" "$HUBMIRROR" agent --stop
keep=()
for p in "${_pids[@]}"; do [ "$p" = "$bpid" ] || keep+=("$p"); done
_pids=("${keep[@]}")
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' logs hold no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/ca/agent.log' '$T/cb/agent.log'"
check "serve stops clean" serve_stops_clean
finish
