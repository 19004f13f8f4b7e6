#!/usr/bin/env bash
# t0445-agent-oci-stream: the agent as a registry mirror (docs/agent.md, "The registry mirror") sends
# a tar layer as its file arrives. The agent's mirror is a front (helpers/slowproxy.py) that sends
# 12 MB of its bodies and then holds every answer until the test lets it go, so that the agent's cache
# cannot hold the 40 MB file yet: the layer's first bytes (the tar header, then the file's first
# verified pieces) reach the client while the front holds. Let go, the layer ends; it is the
# manifest's digest, and unpacked it is the file. The agent then checks the layer's digest by itself
# (the file whole in its cache) and remembers it; the next GET, ranges of the layer and a HEAD say
# the same bytes. Before the commit that streams tar layers the agent sent no byte of one until the
# whole file was in its cache: the first check failed (nothing came while the front held).
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "config.json", "content": "{\"architectures\": [\"LlamaForCausalLM\"]}\n"},
             {"path": "model.safetensors", "size": 40000000, "seed": 4451}]}
 ]}
JSON
size=40000000
sync_from_fake hf:acme/big
check "serve starts" start_serve --p2p-listen off
check "the mirror's front starts" start_slowproxy "$(free_port)" --rate 4000000 --hold-after 12000000 \
	--hold-file "$T/let-go"
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$P" --cache "$T/ca" --listen 127.0.0.1:0 --http 0
E=$(agent_endpoint)
idx=$(curl -fsS "$E/v2/image/hf/acme/big/manifests/main")
amd=$(echo "$idx" | "$PY" -c 'import json,sys; print([m["digest"] for m in json.load(sys.stdin)["manifests"] if m["platform"]["architecture"]=="amd64"][0])')
man=$(curl -fsS "$E/v2/image/hf/acme/big/manifests/$amd")
read -r tl tlsize < <(echo "$man" | "$PY" -c 'import json,sys; l=[l for l in json.load(sys.stdin)["layers"]
	if l["annotations"]["org.cncf.model.filepath"] == "model.safetensors"][0]; print(l["digest"], l["size"])')
check "the image's manifest names the file's tar layer" test -n "$tl"
echo "# layer $tl ($tlsize bytes)"
fetched() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["fetched_over_http"])'; }
got() { stat -c %s "$T/layer.tar" 2>/dev/null || echo 0; }

# ---- the first GET: the file not in the cache, the front holding after 12 MB ----
curl -sS -D "$T/layer.h" -o "$T/layer.tar" "$E/v2/image/hf/acme/big/blobs/$tl" &
cpid=$!
# the header and 2 MiB of the file (the front gives at most 12 MB of the 40 until let go)
for _ in $(seq 1200); do [ "$(got)" -ge $((2 << 20)) ] && break; sleep 0.1; done
n=$(got)
f=$(fetched)
echo "# while the front holds: the client has $n bytes of the layer, the agent fetched $f bytes"
check "the layer's first bytes come while the front holds the rest of the file" test "$n" -ge $((2 << 20))
check "... and the agent has fetched at most 12 MB of the 40 MB file" test "$f" -le 12000000
check "... its digest not checked yet (nothing remembered)" bash -c "! grep -qs '\"header\"' '$T'/ca/agent/oci/*"
touch "$T/let-go"
check "let go, the layer ends" wait "$cpid"
check "... a 200 of the whole layer's length" bash -c "grep -q '^HTTP/1.1 200' '$T/layer.h' &&
	tr -d '\r' <'$T/layer.h' | grep -qi '^content-length: $tlsize\$'"
check "the layer is its manifest's digest" test "sha256:$(sha256sum <"$T/layer.tar" | cut -d' ' -f1)" = "$tl"
curl -fsS -o "$T/file" "$M/acme/big/resolve/main/model.safetensors"
check "unpacked, the layer is the file" "$PY" - "$T/layer.tar" "$T/file" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = t.getmembers()
    assert [x.name for x in m] == ["model.safetensors"] and m[0].isfile(), m
    assert t.extractfile(m[0]).read() == open(sys.argv[2], "rb").read()
PY
for _ in $(seq 600); do grep -qs '"header"' "$T"/ca/agent/oci/* && break; sleep 0.1; done
check "after the stream, the agent checks the layer's digest by itself and remembers it" \
	grep -qs '"header"' "$T"/ca/agent/oci/*
check "... and says so in its log" grep -q "registry mirror: image/hf/acme/big@$tl checked" "$T/ca/agent.log"

# ---- checked: sent at once ----
curl -sS -D "$T/again.h" -o "$T/again.tar" "$E/v2/image/hf/acme/big/blobs/$tl"
check "the next GET is a 200 of the same bytes" bash -c "grep -q '^HTTP/1.1 200' '$T/again.h' && cmp -s '$T/again.tar' '$T/layer.tar'"
curl -sS -D "$T/r1.h" -o "$T/r1" -H 'Range: bytes=100-3000099' "$E/v2/image/hf/acme/big/blobs/$tl"
check "a range across header and file is a 206 of the layer's bytes" bash -c "grep -q '^HTTP/1.1 206' '$T/r1.h' &&
	cmp -s '$T/r1' <(tail -c +101 '$T/layer.tar' | head -c 3000000)"
curl -sS -o "$T/r2" -H "Range: bytes=$((tlsize - 3000))-" "$E/v2/image/hf/acme/big/blobs/$tl"
check "a range of the file's end and the zeros" cmp -s "$T/r2" <(tail -c 3000 "$T/layer.tar")
curl -sS -o "$T/r3" -H "Range: bytes=0-511" "$E/v2/image/hf/acme/big/blobs/$tl"
check "a range of the header alone" cmp -s "$T/r3" <(head -c 512 "$T/layer.tar")
curl -sS -I "$E/v2/image/hf/acme/big/blobs/$tl" | tr -d '\r' >"$T/head.h"
check "a HEAD says the layer's length" grep -qi "^content-length: $tlsize\$" "$T/head.h"
check "... and that ranges are taken, once" test "$(grep -ci '^accept-ranges: bytes$' "$T/head.h")" = 1
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/ca/agent.log'"
check "serve stops clean" serve_stops_clean
finish
