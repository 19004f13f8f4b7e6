#!/usr/bin/env bash
# t0721-agent-mirror-restart: a lone agent fetching a snapshot over HTTP ranges (direct mode) while its
# mirror is killed -9 and comes back on the same address 2 s later: the fill rests, asks again, and
# the pull ends whole and verified (it used to give up for good, with libtorrent asking no peer).
# The mirror is reached through tests/integration/helpers/slowproxy.py, which paces the bytes so that
# the kill lands mid-download and stands for the mirror's process. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/rs",
   "files": [{"path": "config.json", "content": "{\"rs\": 1}\n"},
             {"path": "model.safetensors", "size": 24000000, "seed": 211}]}
 ]}
JSON
sync_from_fake hf:acme/rs
check "serve starts" start_serve --p2p-listen off
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
port=$(free_port)
proxy() { start_slowproxy "$port" --rate 3000000; }
check "the mirror's front starts" proxy
check "an agent starts" "$HUBMIRROR" agent --mirror "$P" --cache "$T/cache" --listen 127.0.0.1:0
"$HUBMIRROR" pull --json --hf-cache "$T/hfc" hf:acme/rs >"$T/pull.json" 2>"$T/pull.err" &
pull=$!
have() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; s=json.load(sys.stdin)["snapshots"]; print(s[0]["bytes_have"] if s else 0)'; }
for i in $(seq 200); do [ "$(have)" -ge 4000000 ] && break; sleep 0.05; done
echo "# $(have) bytes in when the mirror is killed"
check "the download is under way, not done" test "$(have)" -lt 20000000
check "the agent is in direct mode" grep -q "alone in its swarm" "$T/cache/agent.log"
kill -9 "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null
sleep 2
check "the mirror comes back on the same address" proxy
timeout 120 tail --pid="$pull" -f /dev/null
kill "$pull" 2>/dev/null # (still waiting after 2 minutes: it would wait forever)
wait "$pull"; rc=$?
sed 's/^/# /' "$T/pull.err"
check "the pull ends well (status $rc)" test "$rc" = 0
check "its last line says verified" "$PY" -c 'import json,sys; d=[json.loads(l) for l in open(sys.argv[1])][-1]; assert d["verified"] and d["bytes_have"] == d["bytes_total"], d' "$T/pull.json"
check "every file is upstream's, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/rs "$T/hfc/models--acme--rs/snapshots/$commit"
grep -E "failed|again" "$T/cache/agent.log" | sed 's/^/# /'
check "the agent said it would ask again, and that the mirror answered again" bash -c \
	"grep -q 'asking again in a moment' '$T/cache/agent.log' && grep -q 'the mirror answers again' '$T/cache/agent.log'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
