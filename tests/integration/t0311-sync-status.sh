#!/usr/bin/env bash
# t0311-sync-status: `sync --status` says how a running sync stands (repo i of n, bytes, ETA, what
# it fetches) and that it waits when upstream asked it to slow down (429), how the last run ended,
# and when the serve's schedule runs the next; a run whose upstream cannot be reached stops trying
# that hub after a few repos in a row instead of trying every one.
. "$HM_SRC/tests/integration/lib.sh"
hm() { "$HUBMIRROR" "$@"; }
{
	printf '{"repos": ['
	for i in $(seq 1 6); do
		printf '{"hub": "hf", "type": "model", "id": "acme/m%d", "files": [{"path": "w.bin", "size": 2000000, "seed": %d}]}' "$i" "$i"
		[ "$i" = 6 ] || printf ','
	done
	printf ']}'
} >"$T/spec.json"
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
for i in $(seq 1 6); do hm add "hf:acme/m$i" >/dev/null; done

check "before any run: said" bash -c '"$HUBMIRROR" sync --status | grep -qx "no sync has run on this mirror yet"'
# a slow body (a few seconds) and a 429 asking for 6 s: a run long enough to look at
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '{"match": "/acme/m1/", "host": "cdn", "kind": "slow", "rate": 400000, "count": 1}' >/dev/null
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '{"match": "/api/models/acme/m6/revision/", "kind": "ratelimit", "retry_after": 6, "count": 1}' >/dev/null
"$HUBMIRROR" sync --progress >"$T/run.out" 2>"$T/run.err" &
run=$!
seen_running=1 seen_waiting=1
# (as long as the run lasts: on a loaded machine it reaches the 429 only after many looks)
for _ in $(seq 1200); do
	kill -0 "$run" 2>/dev/null || break
	hm sync --status >"$T/st" 2>&1
	grep -Eq "^sync running since [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} [A-Z+0-9-]+ \([0-9]+s, pid $run\): repo [0-6] of 6, files [0-9]+ of [0-9]+, " "$T/st" && seen_running=0
	grep -Eq "^waiting [0-9]+ s: upstream asked to slow down$" "$T/st" && seen_waiting=0
	[ $seen_running = 0 ] && [ $seen_waiting = 0 ] && break
	sleep 0.1
done
check "while it runs: since when, its pid, repo i of n, files and bytes" test $seen_running = 0
check "and that it waits because upstream asked it to slow down" test $seen_waiting = 0
wait "$run"
check "the run ends well" test $? = 0
check "its terminal line said the wait too" grep -q "waiting [0-9]* s: upstream asked to slow down" "$T/run.err"
hm sync --status >"$T/st2"
check "after: how the last run ended" grep -Eq "^no sync running; the last started [0-9-]+ [0-9:]+ [A-Z+0-9-]+ and ended ok: 6 of 6 repos, [0-9]+ files? fetched \([0-9.]+ MiB\)$" "$T/st2"
check "and that no serve runs syncs here" grep -qx "no serve with the operator API runs on this data directory: no schedule to tell" "$T/st2"
hm sync --status --json >"$T/st.json"
check "--json: the progress file's fields" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1])); p=d["progress"]
assert p["running"] is False and p["outcome"] == "ok" and p["repos_done"] == 6 and d["serve"] is None, d' "$T/st.json"

# the schedule, from the serve that runs syncs on this directory
printf 'adm-9Kd8s7Jq2Lp4\n' >"$T/admin.token"; chmod 600 "$T/admin.token"
check "serve with the operator API and a schedule" start_serve --p2p-listen off --admin-token-file "$T/admin.token" --sync-every 7200
hm sync --status >"$T/st3"
check "the next run, as a local time and a wait" grep -Eq "^next sync at [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} [A-Z+0-9-]+ \(in (1h59m|2h00m)\)$" "$T/st3"
at_status=$(sed -n 's/^next sync at \(.*\) (in .*/\1/p' "$T/st3")
at_log=$(sed -n 's/.*serve: next sync at \(.*\) (in .*/\1/p' "$T/serve.err" | tail -1)
check "the same minute as serve's log says ($at_status, $at_log)" test -n "$at_log" -a "$at_status" = "$at_log"
hm sync --status --json >"$T/st3.json"
check "--json: serve's own time of it" "$PY" -c '
import json,sys,time; d=json.load(open(sys.argv[1]))["serve"]
assert abs(d["next_sync_at"] - (time.time() + 7200)) < 30 and abs(d["next_sync_in_s"] - 7200) < 30, d' "$T/st3.json"
kill "$(pgrep -f -- "--ready-file $T/url" | head -n1)"
for _ in $(seq 50); do [ -e "$HUBMIRROR_DATA/serve.admin" ] || break; sleep 0.1; done

# upstream down: after 8 repos in a row that could not reach it, the others are not tried
for i in $(seq 7 24); do hm add "hf:acme/m$i" >/dev/null; done
hm sync --local --max-tries 1 --hf-upstream http://127.0.0.1:9 >"$T/down.out" 2>/dev/null
check "a run with upstream down fails" test $? = 1
tried=$(grep -c "^error     hf:acme/m[0-9]*: transfer error" "$T/down.out")
skipped=$(grep -c "^error     hf:acme/m[0-9]*: not tried: upstream did not answer the last 8 repos of hf (" "$T/down.out")
check "it stopped trying after 8 in a row (tried $tried, not tried $skipped)" bash -c "[ $skipped -ge 1 ] && [ $((tried + skipped)) = 24 ] && [ $tried -lt 24 ]"
one=$(grep "not tried" "$T/down.out" | head -1 | sed 's/^error     \(hf:[^:]*\):.*/\1/')
check "a repo not tried keeps its record ($one: never synced, not failed)" bash -c "'$HUBMIRROR' info --json '$one' | grep -q '\"sync_status\": \"never\"'"
finish
