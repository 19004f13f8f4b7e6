#!/usr/bin/env bash
# t0735-agent-stall: a wait says why, and ends soon after its cause does. A lone agent pulls a snapshot
# over HTTP ranges (direct mode) through tests/integration/helpers/slowproxy.py, which stands for the
# mirror; the proxy is killed -9 mid-pull and comes back on the same address some seconds later.
# Meanwhile `pull --json`, the progress line of a pull on a terminal and `status` say "waiting for the mirror (unreachable for N s: ...),
# retrying" with a rate of 0 (the progress line showed a decaying average and an ETA), and once the
# mirror is back the pull goes on and ends verified. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/wait",
   "files": [{"path": "config.json", "content": "{\"wait\": 1}\n"},
             {"path": "model.safetensors", "size": 24000000, "seed": 381}]}
 ]}
JSON
sync_from_fake hf:acme/wait
check "serve starts" start_serve --p2p-listen off
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
port=$(free_port)
proxy() { start_slowproxy "$port" --rate 3000000; }
check "the mirror's front starts" proxy
check "an agent starts" "$HUBMIRROR" agent --mirror "$P" --cache "$T/cache" --listen 127.0.0.1:0
"$HUBMIRROR" pull --json --hf-cache "$T/hfc" hf:acme/wait >"$T/pull.json" 2>"$T/pull.err" &
pull=$!
# and one on a terminal (script(1) gives it a pty), which draws the progress line
script -qfec "'$HUBMIRROR' pull --hf-cache '$T/hfc2' hf:acme/wait" "$T/tty.out" >/dev/null 2>&1 </dev/null &
ttypull=$!
# st EXPR: status --json's first snapshot as s makes EXPR true
st() { "$HUBMIRROR" status --json | "$PY" -c "import json,sys; d=json.load(sys.stdin); s=(d['snapshots'] or [{}])[0]; sys.exit(not ($1))"; }
for i in $(seq 200); do st "s.get('bytes_have', 0) >= 4000000" && break; sleep 0.05; done
check "the download is under way, not done" st "s['bytes_have'] < 20000000 and s['rate'] > 0 and s['waiting'] is None"
kill -9 "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null
waiting='waiting for the mirror (unreachable for'
for i in $(seq 100); do st "(s['waiting'] or '').startswith('$waiting')" && break; sleep 0.1; done
check "status --json says the pull waits for the mirror, and why" st \
	"s['waiting'].startswith('$waiting') and s['waiting'].endswith('retrying') and s['rate'] == 0 and s['waiting_since']"
"$HUBMIRROR" status >"$T/status.out"
sed 's/^/# /' "$T/status.out"
check "plain status says it under the snapshot's row" grep -q "^  $waiting" "$T/status.out"
sleep 4
check "the mirror comes back on the same address" proxy
back=$(date +%s.%N)
timeout 120 tail --pid="$pull" -f /dev/null
kill "$pull" 2>/dev/null # (still waiting after 2 minutes: it would wait forever)
wait "$pull"; rc=$?
sed 's/^/# /' "$T/pull.err"
check "the pull ends well (status $rc)" test "$rc" = 0
check "pull --json said it waited for the mirror, at a rate of 0" "$PY" -c '
import json,sys
lines = [json.loads(l) for l in open(sys.argv[1])]
w = [d for d in lines if (d.get("waiting") or "").startswith(sys.argv[2])]
assert w and all(d["rate"] == 0 for d in w), w[:1]
assert lines[-1]["verified"] and "waiting" not in lines[-1], lines[-1]' "$T/pull.json" "$waiting"
timeout 60 tail --pid="$ttypull" -f /dev/null
kill "$ttypull" 2>/dev/null
wait "$ttypull"; rc=$?
check "the pull on a terminal ends well too (status $rc)" test "$rc" = 0
tr '\r' '\n' <"$T/tty.out" | grep -a "waiting for the mirror" | tail -1 | sed 's/^/# /'
check "its progress line said it waited for the mirror, retrying, not an ETA" bash -c \
	"tr '\r' '\n' <'$T/tty.out' | grep -a 'waiting for the mirror (unreachable for' | grep -av ETA | grep -aq 'retrying'"
check "its last line says verified" "$PY" -c 'import json,sys; d=[json.loads(l) for l in open(sys.argv[1])][-1]; assert d["verified"] and d["bytes_have"] == d["bytes_total"], d' "$T/pull.json"
check "every file is upstream's, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/wait "$T/hfc/models--acme--wait/snapshots/$commit"
grep -E "failed|again" "$T/cache/agent.log" | sed 's/^/# /'
# (not a timed check: how soon the first byte came after the mirror was back, for the record)
again=$(awk '/the mirror answers again/ { print $1; exit }' "$T/cache/agent.log")
echo "# mirror back at $(date -u -d "@${back%.*}" +%H:%M:%S), the agent's log says it answers again at $again"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
