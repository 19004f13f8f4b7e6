#!/usr/bin/env bash
# t0740-agent-range-ignored: a mirror that answers a Range request with 200 and the whole file (it,
# or a proxy in front of it, drops the header) never has those bytes taken for the range's: the
# agent drops each such answer, and a pull through it fails with that reason (said by the pull, by
# status, and in the agent's log), holding nothing. The same snapshot pulled again through the real
# mirror comes whole and byte for byte.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/norange",
   "files": [{"path": "config.json", "content": "{\"norange\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 401}]}
 ]}
JSON
sync_from_fake hf:acme/norange
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
# the front: every request forwarded to the mirror, without its Range
"$PY" "$HM_SRC/tests/integration/helpers/lyingmirror.py" --ready-file "$T/front.url" --mirror "$M" --ignore-range &
_pids+=($!)
for i in $(seq 100); do [ -s "$T/front.url" ] && break; sleep 0.05; done
F=$(cat "$T/front.url")
check "the front ignores Range (200 and the whole file)" test "$(curl -s -o /dev/null -w '%{http_code}' -r 0-9 \
	"$F/api/p2p/torrent/hf/model/acme/norange?meta=1")" = 200

"$HUBMIRROR" pull --mirror "$F" --cache "$T/cache" --listen 127.0.0.1:0 --hf-cache "$T/hfc" hf:acme/norange \
	>"$T/p1.out" 2>"$T/p1.err"
st=$?
sed 's/^/# /' "$T/p1.out" "$T/p1.err"
check "the pull through it fails" test "$st" != 0
check "and never says pulled" bash -c "! grep -q pulled '$T/p1.out'"
check "it says why" grep -q "answered a range request with 200 and the whole file" "$T/p1.err"
"$HUBMIRROR" status --json >"$T/st1.json"
check "status says it as the snapshot's error, and nothing of the weights was taken" "$PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))["snapshots"][0]
assert "ignores Range" in s["error"] and s["fetched_over_http"] == 0 and s["held"] == 0, s' "$T/st1.json"
check "the agent's log says it" grep -q "ignores Range" "$T/cache/agent.log"
check "nothing of it is linked in the hub cache" test ! -e "$T/hfc/models--acme--norange/snapshots/$commit/model.safetensors"

check "the same pull through the real mirror works" "$HUBMIRROR" pull --mirror "$M" --hf-cache "$T/hfc" hf:acme/norange
check "its files are upstream's, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/norange "$T/hfc/models--acme--norange/snapshots/$commit"
check "status: no error now" bash -c "'$HUBMIRROR' status --json | '$PY' -c '
import json,sys; s=json.load(sys.stdin)[\"snapshots\"][0]; assert \"error\" not in s and s[\"verified\"], s'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
