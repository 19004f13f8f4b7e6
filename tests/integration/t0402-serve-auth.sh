#!/usr/bin/env bash
# t0402-serve-auth: operator bearer tokens on the mirror: repos named in the tokens file need a token
# that grants them (--auth listed), or the whole mirror does (--auth all); Hugging Face clients send
# Authorization: Bearer, ModelScope clients may send the m_session_id cookie; refusals are the hubs'
# 401/403 answers; tokens never reach a log.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/open", "files": [{"path": "config.json", "content": "{\"o\": 1}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/secret", "card": {"tags": ["zanzibarcode"], "license": "mit"},
   "files": [{"path": "config.json", "content": "{\"s\": 1}\n"}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-secret", "files": [{"path": "configuration.json", "content": "{}\n"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/open hf:acme/secret ms:acme/ms-secret >/dev/null
"$HUBMIRROR" sync >/dev/null
cat >"$T/tokens" <<'TOK'
# operators: everything
ops-0123456789 *
team-abcdefghij hf:acme/secret ms:acme/ms-secret   # the team's repos
other-zyxwvutsr hf:acme/elsewhere
TOK
chmod 600 "$T/tokens" # (a tokens file others can read is refused)
check "serve starts with --tokens (listed by default)" start_serve --tokens "$T/tokens"
code() { curl -sS -o /dev/null -w '%{http_code}' "$@"; }
check "open repo: anonymous 200" test "$(code "$M/acme/open/resolve/main/config.json")" = 200
check "listed repo: anonymous 401" test "$(code "$M/acme/secret/resolve/main/config.json")" = 401
check "listed repo info is protected too" test "$(code "$M/api/models/acme/secret")" = 401
check "401 asks for a bearer token" bash -c "curl -sS -D - -o /dev/null '$M/acme/secret/resolve/main/config.json' | grep -qi '^WWW-Authenticate: Bearer'"
check "team token: 200 and the bytes" bash -c "curl -fsS -H 'Authorization: Bearer team-abcdefghij' '$M/acme/secret/resolve/main/config.json' | grep -q '\"s\": 1'"
check "ops token (*): 200" test "$(code -H 'Authorization: Bearer ops-0123456789' "$M/acme/secret/resolve/main/config.json")" = 200
check "a valid token for another repo: 403" test "$(code -H 'Authorization: Bearer other-zyxwvutsr' "$M/acme/secret/resolve/main/config.json")" = 403
check "an unknown token: 401" test "$(code -H 'Authorization: Bearer nope-nope-nope' "$M/acme/secret/resolve/main/config.json")" = 401
check "a prefix of a token is not the token" test "$(code -H 'Authorization: Bearer team-abcdefghi' "$M/acme/secret/resolve/main/config.json")" = 401
check "catalog detail of a listed repo needs the token" test "$(code "$M/api/catalog/repos/hf/model/acme/secret")" = 401
check "ModelScope: envelope 401 anonymous" bash -c "curl -sS '$M/api/v1/models/acme/ms-secret/repo/files?Revision=master' | grep -q '\"Code\":401'"
check "ModelScope: the m_session_id cookie works" test "$(code -b 'm_session_id=team-abcdefghij' "$M/api/v1/models/acme/ms-secret/repo?Revision=master&FilePath=configuration.json")" = 200
# A guarded repo is not there for whom may not read it: not listed, counted, matched or measured.
search_total() { curl -fsS "$@" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["total"], " ".join(r["name"] for r in d["repos"]))'; }
check "search: anonymous does not find a guarded repo by its tag" test "$(search_total "$M/api/catalog/repos?q=zanzibarcode")" = "0 "
check "search: the team finds it" test "$(search_total -H 'Authorization: Bearer team-abcdefghij' "$M/api/catalog/repos?q=zanzibarcode")" = "1 acme/secret"
check "list: anonymous sees the open repo only (and counts it only)" test "$(search_total "$M/api/catalog/repos?hub=hf")" = "1 acme/open"
check "list: the team sees both" test "$(search_total -H 'Authorization: Bearer team-abcdefghij' "$M/api/catalog/repos?hub=hf")" = "2 acme/open acme/secret"
check "/api/models: anonymous sees the open repo only" bash -c "
	curl -fsS '$M/api/models' | grep -q acme/open && ! curl -fsS '$M/api/models' | grep -q acme/secret"
check "/api/models: the team sees both" bash -c "
	curl -fsS -H 'Authorization: Bearer team-abcdefghij' '$M/api/models' | grep -q acme/secret"
check "/metrics: no series of a guarded repo for an anonymous scrape" bash -c "
	curl -fsS '$M/metrics' | grep -q 'repo=\"acme/open\"' && ! curl -fsS '$M/metrics' | grep -q 'acme/secret'"
check "/metrics: a scrape with the team's token has them" bash -c "
	curl -fsS -H 'Authorization: Bearer team-abcdefghij' '$M/metrics' | grep -q 'repo=\"acme/secret\"'"
check "tokens never reach the logs" bash -c "! grep -rqE 'team-abc|ops-0123|other-zyx' '$T/access.log' '$T/serve.err'"
kill "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null

check "serve starts with --auth all" start_serve --tokens "$T/tokens" --auth all
check "all: anonymous info 401" test "$(code "$M/api/models/acme/open")" = 401
check "all: /healthz stays open" test "$(code "$M/healthz")" = 200
check "all: a valid token opens the open repo" test "$(code -H 'Authorization: Bearer other-zyxwvutsr' "$M/api/models/acme/open")" = 200
check "all: the catalog API needs a token too" test "$(code "$M/api/catalog/repos")" = 401
kill "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null

# ---- SIGHUP reloads the tokens file: new rules at once, a broken file keeps the old ones ----
cp "$T/tokens" "$T/tokens2"
check "serve starts with a tokens file to change" start_serve --tokens "$T/tokens2"
spid=${_pids[-1]}
team() { code -H "Authorization: Bearer $1" "$M/acme/secret/resolve/main/config.json"; }
check "before: the team token reads its repo" test "$(team team-abcdefghij)" = 200
printf 'newteam-0987654321 hf:acme/secret\n' >"$T/tokens2"; chmod 600 "$T/tokens2"
kill -HUP "$spid"
for _ in $(seq 50); do grep -q 'tokens file .* reloaded' "$T/serve.err" && break; sleep 0.1; done
check "SIGHUP: the reload is logged" grep -q "SIGHUP: tokens file $T/tokens2 reloaded" "$T/serve.err"
check "after: the dropped token no longer reads it (an unknown token now)" test "$(team team-abcdefghij)" = 401
check "after: the new token does" test "$(team newteam-0987654321)" = 200
check "after: metrics see the new rules" bash -c "curl -fsS -H 'Authorization: Bearer newteam-0987654321' '$M/metrics' | grep -q 'repo=\"acme/secret\"'"
printf 'short *\n' >"$T/tokens2"; chmod 600 "$T/tokens2"
kill -HUP "$spid"
for _ in $(seq 50); do grep -q 'tokens file not reloaded' "$T/serve.err" && break; sleep 0.1; done
check "SIGHUP with a broken file: said, with its line" grep -q "SIGHUP: tokens file not reloaded, the old rules stay: .*tokens2:1:" "$T/serve.err"
check "and the rules in use stay" test "$(team newteam-0987654321)" = 200
check "no token ever logged" bash -c "! grep -q -e newteam-0987654321 -e team-abcdefghij '$T/serve.err'"
kill "$spid"; wait "$spid" 2>/dev/null

printf 'short *\n' >"$T/bad1"; printf 'long-enough-token hf:../x\n' >"$T/bad2"; printf 'long-enough-token\n' >"$T/bad3"
chmod 600 "$T/bad1" "$T/bad2" "$T/bad3"
for f in bad1 bad2 bad3; do
	"$HUBMIRROR" serve --listen 127.0.0.1:0 --tokens "$T/$f" 2>"$T/$f.err"; st=$?
	check "bad tokens file ($f) refused at start with its line" bash -c "[ $st = 1 ] && grep -q '$f:1:' '$T/$f.err'"
done
printf 'long-enough-token *\n' >"$T/open-tokens"; chmod 644 "$T/open-tokens"
"$HUBMIRROR" serve --listen 127.0.0.1:0 --tokens "$T/open-tokens" 2>"$T/open.err"; st=$?
check "a tokens file every user can read is refused at start" bash -c "[ $st != 0 ] && grep -q 'can be read by others' '$T/open.err'"
expect_status 2 "--auth all without --tokens is a usage error" "$HUBMIRROR" serve --auth all 2>/dev/null
finish
