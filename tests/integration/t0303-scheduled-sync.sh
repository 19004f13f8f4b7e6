#!/usr/bin/env bash
# t0303-scheduled-sync: `serve` runs the sync by itself (the scheduler behind --sync-at and
# --sync-every): an upstream commit reaches the mirror, and its API, with no sync started by hand.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/sched", "files": [{"path": "config.json", "content": "{\"v\": 1}\n"}]}]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
"$HUBMIRROR" add hf:acme/sched >/dev/null
expect_status 2 "bad --sync-every is a usage error" "$HUBMIRROR" serve --sync-every 3x 2>/dev/null
expect_status 2 "bad --sync-at is a usage error" "$HUBMIRROR" serve --sync-at 25:00 2>/dev/null
check "serve starts with a schedule" start_serve --sync-every 1 --hf-upstream "$FAKE_API"
commit_of() { curl -fsS "$M/api/models/acme/sched" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])' 2>/dev/null; }
for _ in $(seq 100); do c1=$(commit_of); [ -n "$c1" ] && break; sleep 0.2; done
check "the first scheduled sync brought the repo in" test ${#c1} = 40
new=$(curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/sched", "hub": "hf", "type": "model", "branch": "main",
  "files": [{"path": "config.json", "content": "{\"v\": 2}\n"}]}' | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["commit"])')
for _ in $(seq 100); do c2=$(commit_of); [ "$c2" = "$new" ] && break; sleep 0.2; done
check "a later scheduled sync followed the upstream commit" test "$c2" = "$new"
check "the new content is served" bash -c "curl -fsS '$M/acme/sched/resolve/main/config.json' | grep -q '\"v\": 2'"
check "the server logged its scheduled runs" grep -q "scheduled sync finished" "$T/serve.err"
ts='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
check "and when the next comes, as a time and a wait" grep -Eq "^$ts info  serve: next sync at [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} [A-Z+0-9-]+ \(in [0-9]+ s\)$" "$T/serve.err"
check "the sync's report is in the log, each line with its time" grep -Eq "^$ts info  sync: ok +hf:acme/sched @ [0-9a-f]{12}: 2 files" "$T/serve.err"
check "its summary too" grep -Eq "^$ts info  sync: 1 ok, 0 failed" "$T/serve.err"
check "and no line without a time" bash -c "! grep -Ev '^$ts ' '$T/serve.err'"
finish
