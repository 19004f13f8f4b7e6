#!/usr/bin/env bash
# t0829-private-hidden: the Hub shows a private repo to nobody but who may read it, and so does the
# mirror (docs/security.md, "What a client may read"). A private upstream repo the operator neither
# opened (add --open) nor named in the tokens file is closed to everyone here; its name, info, files,
# card, search hits, listing, metrics, torrent, git URL and a request for it all answer as for a repo
# the mirror does not have. Named in the tokens file, it is shown to the tokens that grant it only;
# opened, to everyone.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"read": ["acme/priv", "acme/teampriv"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/open", "card": {"tags": ["quokkaword"]},
   "files": [{"path": "config.json", "content": "{\"o\": 1}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/priv", "private": true, "card": {"tags": ["quokkaword"]},
   "files": [{"path": "config.json", "content": "{\"p\": 1}\n"}, {"path": "w.bin", "size": 100000, "seed": 3}]},
  {"hub": "hf", "type": "model", "id": "acme/teampriv", "private": true,
   "files": [{"path": "config.json", "content": "{\"t\": 1}\n"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/open hf:acme/priv hf:acme/teampriv >/dev/null
HF_TOKEN=hf_ok "$HUBMIRROR" sync >/dev/null
check "sync got the private repos with a token that reads them" bash -c "'$HUBMIRROR' ls --json | grep -c '\"ok\"' | grep -qx 3"
cat >"$T/tokens" <<'TOK'
team-abcdefghij hf:acme/teampriv
TOK
chmod 600 "$T/tokens" # (a tokens file others can read is refused)
check "serve starts" start_serve --p2p-listen off --tokens "$T/tokens"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
names() { curl -fsS "$@" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); d=d.get("repos", d) if isinstance(d, dict) else d; print(" ".join(sorted(r.get("name") or r.get("id") for r in d)))'; }

check "a repo the mirror lacks: 404 (the reference answer)" test "$(code "$M/api/models/acme/nothere")" = 404
check "the private repo's info: 404 like it" test "$(code "$M/api/models/acme/priv")" = 404
check "... RepoNotFound" bash -c "curl -s -D - -o /dev/null '$M/api/models/acme/priv' | tr -d '\r' | grep -qix 'x-error-code: RepoNotFound'"
check "... with the upstream token too (nobody may read it here)" test "$(code -H 'Authorization: Bearer hf_ok' "$M/api/models/acme/priv")" = 404
check "its file: 404" test "$(code "$M/acme/priv/resolve/main/config.json")" = 404
check "its tree: 404" test "$(code "$M/api/models/acme/priv/tree/main")" = 404
check "its catalog page: 404" test "$(code "$M/api/catalog/repos/hf/model/acme/priv")" = 404
check "its card: 404" test "$(code "$M/api/catalog/repos/hf/model/acme/priv/card")" = 404
check "its torrent: 404" test "$(code "$M/api/p2p/torrent/hf/model/acme/priv")" = 404
check "its git URL: 404" test "$(code "$M/acme/priv.git/info/refs?service=git-upload-pack")" = 404
check "search does not find it by its tag" test "$(names "$M/api/catalog/repos?q=quokkaword")" = "acme/open"
check "the catalog list leaves it out" test "$(names "$M/api/catalog/repos?hub=hf")" = "acme/open"
check "/api/models leaves it out" test "$(names "$M/api/models?author=acme")" = "acme/open"
check "/api/models?search= does not find it" bash -c "! curl -fsS '$M/api/models?search=priv' | grep -q acme/priv"
check "/metrics has no series of it" bash -c "curl -fsS '$M/metrics' >'$T/m' && grep -q 'repo=\"acme/open\"' '$T/m' && ! grep -q 'priv' '$T/m'"
check "a request for it is taken like one for a repo the mirror lacks (not 'mirrored already')" \
	test "$(code -X POST -H 'Authorization: Bearer team-abcdefghij' -H 'Content-Type: application/json' -d '{"spec": "hf:acme/priv"}' "$M/api/catalog/requests")" = 201
check "the control: a request for a repo shown is 'mirrored already'" \
	test "$(code -X POST -H 'Authorization: Bearer team-abcdefghij' -H 'Content-Type: application/json' -d '{"spec": "hf:acme/open"}' "$M/api/catalog/requests")" = 409

# named in the tokens file: shown to the token that grants it, to nobody else
check "a private repo named in the tokens file: not found anonymously" test "$(code "$M/api/catalog/repos/hf/model/acme/teampriv")" = 401
check "... the team sees it listed" test "$(names -H 'Authorization: Bearer team-abcdefghij' "$M/api/catalog/repos?hub=hf")" = "acme/open acme/teampriv"
check "... and reads it" test "$(curl -fsS -H 'Authorization: Bearer team-abcdefghij' "$M/acme/teampriv/resolve/main/config.json")" = '{"t": 1}'
check "... anonymous lists do not show it" test "$(names "$M/api/catalog/repos?hub=hf")" = "acme/open"

# opened by the operator: everyone's
"$HUBMIRROR" add --open hf:acme/priv >/dev/null
check "opened (add --open), the private repo is shown" test "$(code "$M/api/models/acme/priv")" = 200
check "... listed" test "$(names "$M/api/catalog/repos?hub=hf")" = "acme/open acme/priv"
check "... and served" test "$(curl -fsS "$M/acme/priv/resolve/main/config.json")" = '{"p": 1}'
finish
