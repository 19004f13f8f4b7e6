#!/usr/bin/env bash
# t0805-admin: the operator's API (serve --admin-token-file). Off without the file; without a token
# 401, with a wrong one 403; with the right one: a repository added, a sync started now (and a second
# refused while it runs), the status followed to its end, the repository then served; the schedule
# paused and resumed; a repository removed; bad bodies refused; the CLI on the same data directory
# goes through the serve (serve.admin) unless told --local. The token is never logged.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/via-api",
   "files": [{"path": "config.json", "content": "{\"api\": 1}\n"}, {"path": "w.bin", "size": 3000000, "seed": 6}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
check "serve without an admin token starts" start_serve --p2p-listen off
check "the admin API is off then" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/api/admin/status")" = 404
kill "$(pgrep -f -- "--ready-file $T/url" | head -n1)"
printf 'adm-7Qx2k9zLwP\n' >"$T/admin.token"
chmod 644 "$T/admin.token"
"$HUBMIRROR" serve --listen 127.0.0.1:0 --admin-token-file "$T/admin.token" 2>"$T/e0"; st=$?
check "an admin token file others can read is refused" bash -c "[ $st = 1 ] && grep -q 'can be read by others' '$T/e0'"
printf 'adm-5c\n' >"$T/short.token"; chmod 600 "$T/short.token"
"$HUBMIRROR" serve --listen 127.0.0.1:0 --admin-token-file "$T/short.token" 2>"$T/e1"; st=$?
check "an admin token of 6 characters is refused" bash -c "[ $st = 1 ] && grep -q 'use at least 12' '$T/e1'"
chmod 600 "$T/admin.token"
check "serve with the admin token starts" start_serve --p2p-listen off --admin-token-file "$T/admin.token" --sync-every 3600
A=(-H 'Authorization: Bearer adm-7Qx2k9zLwP')
code() { curl -s -o "$T/out" -w '%{http_code}' "$@"; }
check "no token: 401" test "$(code "$M/api/admin/status")" = 401
check "a wrong token: 403" test "$(code -H 'Authorization: Bearer adm-7Qx2k9zLwQ' "$M/api/admin/status")" = 403
check "the right token: the status" bash -c "[ \"\$(curl -s -o '$T/st' -w '%{http_code}' -H 'Authorization: Bearer adm-7Qx2k9zLwP' '$M/api/admin/status')\" = 200 ] &&
	'$PY' -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"sync_running\"] is False and d[\"schedule_paused\"] is False and d[\"next_sync_in_s\"] > 3000, d' '$T/st'"
check "a bad body is refused" test "$(code "${A[@]}" -X POST -d '[1]' "$M/api/admin/repos")" = 400
check "a bad spec is refused" test "$(code "${A[@]}" -X POST -d '{"spec": "hf:../x"}' "$M/api/admin/repos")" = 400
check "add a repository" test "$(code "${A[@]}" -X POST -d '{"spec": "hf:acme/via-api", "exclude": ["*.md"]}' "$M/api/admin/repos")" = 201
check "it is tracked, with its options" bash -c "'$HUBMIRROR' info --json hf:acme/via-api | '$PY' -c 'import json,sys; d=json.load(sys.stdin); assert d[\"exclude\"] == [\"*.md\"] and d[\"refs_policy\"] == \"tags\", d'"
check "a sync of a repo that is not tracked is refused" test "$(code "${A[@]}" -X POST -d '{"specs": ["hf:acme/none"]}' "$M/api/admin/sync")" = 404
curl -fsS -X POST -d '{"match": "/acme/via-api/resolve/", "kind": "slow", "seconds": 3, "count": 1}' "$FAKE_API/_fake/faults" >/dev/null
check "start a sync now" test "$(code "${A[@]}" -X POST -d '{"specs": ["hf:acme/via-api"]}' "$M/api/admin/sync")" = 202
check "a second one while it runs is refused" test "$(code "${A[@]}" -X POST "$M/api/admin/sync")" = 409
progress_seen=1
for _ in $(seq 50); do
	curl -fsS "${A[@]}" "$M/api/admin/status" | "$PY" -c 'import json,sys
p = json.load(sys.stdin)["sync_progress"] or {}
sys.exit(0 if p.get("running") and p["repos_total"] == 1 and p["files_total"] >= 2 and p["bytes_total"] > 3000000 else 1)' && { progress_seen=0; break; }
	sleep 0.1
done
check "the status shows the running sync's progress (repos, files, bytes)" test "$progress_seen" = 0
for _ in $(seq 100); do
	curl -fsS "${A[@]}" "$M/api/admin/status" | "$PY" -c 'import json,sys; sys.exit(0 if not json.load(sys.stdin)["sync_running"] else 1)' && break
	sleep 0.1
done
check "the status says the sync ended well" bash -c "curl -fsS -H 'Authorization: Bearer adm-7Qx2k9zLwP' '$M/api/admin/status' |
	'$PY' -c 'import json,sys; d=json.load(sys.stdin); assert not d[\"sync_running\"] and d[\"last_sync_exit\"] == 0, d'"
check "and its progress, ended, every byte in" bash -c "curl -fsS -H 'Authorization: Bearer adm-7Qx2k9zLwP' '$M/api/admin/status' |
	'$PY' -c 'import json,sys; p=json.load(sys.stdin)[\"sync_progress\"]; assert not p[\"running\"] and p[\"outcome\"] == \"ok\" and p[\"bytes_done\"] == p[\"bytes_total\"] and p[\"files_done\"] == p[\"files_total\"], p'"
check "the repository is served" test "$(curl -fsS "$M/acme/via-api/resolve/main/config.json")" = '{"api": 1}'
check "serve's log announced the operator API, and where its token is" grep -q \
	"info  serve: operator API on /api/admin/ (its token in $T/admin.token): add, remove and sync on this machine go through this serve" "$T/serve.err"
check "and says the sync was requested, from start to end" bash -c "grep -q 'info  serve: requested sync started' '$T/serve.err' &&
	grep -q 'info  serve: requested sync finished' '$T/serve.err' && ! grep -q 'scheduled sync' '$T/serve.err'"
check "pause the schedule" test "$(code "${A[@]}" -X POST -d '{"paused": true}' "$M/api/admin/schedule")" = 200
check "paused: no next sync" bash -c "curl -fsS -H 'Authorization: Bearer adm-7Qx2k9zLwP' '$M/api/admin/status' |
	'$PY' -c 'import json,sys; d=json.load(sys.stdin); assert d[\"schedule_paused\"] and d[\"next_sync_in_s\"] is None, d'"
check "resume it" test "$(code "${A[@]}" -X POST -d '{"paused": false}' "$M/api/admin/schedule")" = 200
check "resumed: a next sync" bash -c "curl -fsS -H 'Authorization: Bearer adm-7Qx2k9zLwP' '$M/api/admin/status' |
	'$PY' -c 'import json,sys; d=json.load(sys.stdin); assert not d[\"schedule_paused\"] and d[\"next_sync_in_s\"] > 3000, d'"
check "remove the repository" test "$(code "${A[@]}" -X DELETE "$M/api/admin/repos/hf/model/acme/via-api")" = 200
check "it is no longer tracked" bash -c "'$HUBMIRROR' ls --json | '$PY' -c 'import json,sys; assert json.load(sys.stdin) == []'"
check "removing it again: 404" test "$(code "${A[@]}" -X DELETE "$M/api/admin/repos/hf/model/acme/via-api")" = 404
# ---- the CLI through the API: add, sync --wait, remove on the running mirror ----
"$HUBMIRROR" add --mirror "$M" hf:acme/via-api 2>"$T/noauth"; st=$?
check "add --mirror without the admin token fails, saying what to set" bash -c "[ $st = 1 ] && grep -q HUBMIRROR_ADMIN_TOKEN '$T/noauth'"
export HUBMIRROR_ADMIN_TOKEN=adm-7Qx2k9zLwP
check "add --mirror" bash -c "'$HUBMIRROR' add --mirror '$M' --prefer-safetensors hf:acme/via-api | grep -q 'tracking 1 new'"
check "... with its options, in that mirror's catalog" "$PY" -c '
import sqlite3,sys
o = sqlite3.connect(sys.argv[1]).execute("select options from repos where name = ?", ("acme/via-api",)).fetchone()[0]
assert o == "{\"prefer_safetensors\":true}", o' "$HUBMIRROR_DATA/catalog.db"
check "sync --mirror --wait runs it there and ends ok" "$HUBMIRROR" sync --mirror "$M" --wait hf:acme/via-api
check "the repository is served again" test "$(curl -fsS "$M/acme/via-api/resolve/main/config.json")" = '{"api": 1}'
check "remove --mirror" bash -c "'$HUBMIRROR' remove --mirror '$M' hf:acme/via-api | grep -q removed"
check "gone from that mirror" bash -c "'$HUBMIRROR' ls --json | '$PY' -c 'import json,sys; assert json.load(sys.stdin) == []'"
unset HUBMIRROR_ADMIN_TOKEN
HUBMIRROR_ADMIN_TOKEN=wrong-token "$HUBMIRROR" remove --mirror "$M" hf:acme/via-api 2>"$T/wrong"; st=$?
check "a wrong admin token: refused, said" bash -c "[ $st = 1 ] && grep -q '403 wrong admin token' '$T/wrong'"
check "the token is in no log" bash -c "! grep -rq adm-7Qx2k9zLwP '$T/serve.err' '$T/access.log'"
# ---- on the mirror's machine, the plain CLI goes through the serve of its data directory ----
check "the serve advertises itself in the data directory" "$PY" -c "
import json; d = json.load(open('$HUBMIRROR_DATA/serve.admin'))
assert d['url'].startswith('http://127.0.0.1:') and d['token_file'] == '$(realpath "$T/admin.token")', d"
check "add goes through it (its token read from its file)" bash -c "'$HUBMIRROR' add hf:acme/via-api | grep -q 'on http://127.0.0.1:.* (the serve of this data directory)'"
check "the serve logged it" grep -q "admin.*tracking hf:acme/via-api" "$T/serve.err"
"$HUBMIRROR" sync hf:acme/via-api >"$T/rs.out" 2>"$T/rs.err"
check "sync goes through it, exit 0" test $? = 0
check "printing what the serve's run printed, as a sync here would" bash -c "grep -Eq '^(ok|unchanged) +hf:acme/via-api @ [0-9a-f]{12}: ' '$T/rs.out' &&
	grep -q '^sync: 1 ok, 0 failed' '$T/rs.out'"
check "and following it to its end" grep -q 'sync on http://127.0.0.1:.* ended: ok' "$T/rs.err"
"$HUBMIRROR" sync --json hf:acme/via-api >"$T/rs.json" 2>/dev/null
check "sync --json through it: the run's report in JSON, alone on stdout" "$PY" -c '
import json,sys; d = json.load(open(sys.argv[1])); assert d["ok"] == 1 and d["repos"][0]["spec"] == "hf:acme/via-api", d' "$T/rs.json"
check "the serve's log has the text run's lines, not the JSON" bash -c "grep -Eq 'info  sync: (ok|unchanged) +hf:acme/via-api' '$T/serve.err' && ! grep -q 'sync: *\"repos\"' '$T/serve.err'"
"$HUBMIRROR" add hf:acme/not-upstream >/dev/null
"$HUBMIRROR" sync hf:acme/not-upstream >"$T/rf.out" 2>"$T/rf.err"
check "a run that fails through it: exit 1" test $? = 1
check "with the failed repo's line and the summary" bash -c "grep -q '^denied    hf:acme/not-upstream: upstream has no repository' '$T/rf.out' &&
	grep -q '^sync: 0 ok, 1 failed' '$T/rf.out' && grep -q 'ended: with failures' '$T/rf.err'"
"$HUBMIRROR" remove hf:acme/not-upstream >/dev/null
check "sync --local runs here" bash -c "'$HUBMIRROR' sync --local --no-progress hf:acme/via-api | grep -q 'unchanged'"
check "remove goes through it" bash -c "'$HUBMIRROR' remove hf:acme/via-api | grep -q '(the serve of this data directory)'"
kill "$(pgrep -f -- "--ready-file $T/url" | head -n1)"
for _ in $(seq 50); do [ -e "$HUBMIRROR_DATA/serve.admin" ] || break; sleep 0.1; done
check "a stopping serve withdraws its advertisement" test ! -e "$HUBMIRROR_DATA/serve.admin"
check "without a serve, add works on the directory" bash -c "'$HUBMIRROR' add hf:acme/via-api | grep -q '^tracking hf:acme/via-api'"
check "the log names each operator action and who asked" bash -c "grep -q \"admin.*127.0.0.1: tracking hf:acme/via-api\" '$T/serve.err' && grep -q \"admin.*: stopped tracking hf:acme/via-api\" '$T/serve.err' && grep -q \"admin.*: schedule paused\" '$T/serve.err'"
finish
