#!/usr/bin/env bash
# t0746-agent-xet-runs: Xet through the agent's local endpoint (docs/agent.md, "Xet through the
# agent") for a file whose chunks fill more than one of the mirror's virtual xorbs (64 MiB each): a
# 71 MB file read whole by @huggingface/hub's downloadFile through the endpoint (its v2
# reconstruction's terms in two runs, each fetch URL's range made by the agent from where its run
# starts in the file), and a v1 reconstruction of a Range across both runs put together from the
# endpoint's xorb ranges, byte for byte the file's. The agent's counters show it fetched the bytes.
. "$HM_SRC/tests/integration/lib.sh"
need_node_module @huggingface/hub

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/xbig",
   "files": [{"path": "big.safetensors", "size": 71000000, "seed": 72}]}
 ]}
JSON
sync_from_fake hf:acme/xbig
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
# tree BASE KEY: the file's sha256 (lfs) or Xet hash in that tree
tree() { curl -fsS "$1/api/models/acme/xbig/tree/main" | "$PY" -c 'import json,sys
for e in json.load(sys.stdin):
    if e["path"] == "big.safetensors":
        print(e["lfs"]["oid"] if sys.argv[1] == "sha" else e["xetHash"])' "$2"; }
bsha=$(tree "$FAKE_API" sha); bxh=$(tree "$M" xet)
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --http 0
E=$(agent_endpoint)
echo "# endpoint $E, mirror $M"

node "$HM_SRC/tests/js/xetdownload.mjs" --hub-url "$E" --repo acme/xbig --path big.safetensors --sha256 "$bsha" \
	--xet-hash "$bxh" >"$T/js.out" 2>&1
sed 's/^/# /' "$T/js.out"
check "downloadFile of a 71 MB file through the endpoint by Xet: the bytes, equal" \
	bash -c "grep -q '^ok 1 ' '$T/js.out' && grep -q '^ok 2 ' '$T/js.out'"
check "  its second run's range made by the agent from where that run starts" \
	grep -q "^# GET $E/xet-cas/xorb/$bsha/1?cap=...&at=0:[1-9]" "$T/js.out"
fetched=$("$HUBMIRROR" status --json | "$PY" -c 'import json,sys
s = json.load(sys.stdin)["snapshots"][0]; print(s["downloaded"] + s["fetched_over_http"])')
check "the agent fetched the file's bytes itself ($fetched)" test "$fetched" -ge 71000000

# huggingface_hub's v1 reconstruction of a Range across both runs, put together as hf_xet does
tok=$(curl -fsS "$E/api/models/acme/xbig/xet-read-token/main" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
code=$(curl -sS -o "$T/cas.out" -w '%{http_code}' -H "Authorization: Bearer $tok" -H 'Range: bytes=66000000-68999999' \
	"$E/xet-cas/v1/reconstructions/$bxh")
check "v1 reconstruction of a Range across the two runs, through the endpoint" test "$code" = 200
nterms=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["terms"]))' "$T/cas.out")
check "  gives exactly those bytes, from terms of both runs ($nterms)" bash -c "[ $nterms -ge 2 ] &&
	'$PY' '$HM_SRC/tests/integration/helpers/xetjoin.py' '$T/cas.out' '$T/part' '$E' &&
	cmp <(head -c 3000000 '$T/part') <(curl -fsS -r 66000000-68999999 '$E/acme/xbig/resolve/main/big.safetensors')"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
check "serve stops clean (no sanitizer report)" serve_stops_clean
finish
