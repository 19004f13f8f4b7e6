#!/usr/bin/env bash
# t0404-serve-refused: a repo on the mirror's list that upstream refused to it answers as the Hub (or
# ModelScope) answers a client that may not read it, so clients raise what they would upstream: a gated
# repo without an approved token -> 401 (403 with a token) X-Error-Code GatedRepo (GatedRepoError); a
# disabled one -> 403 "Access to this resource is disabled." (DisabledRepoError); a private one or one
# gone upstream -> 404 RepoNotFound (RepositoryNotFoundError); ModelScope -> 403 in its envelope. An unknown revision of a repo the mirror has stays RevisionNotFound.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/open", "files": [{"path": "config.json", "content": "{}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual",
   "files": [{"path": "config.json", "content": "{\"gated\": 1}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/off", "disabled": true,
   "files": [{"path": "config.json", "content": "{\"off\": 1}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/secret", "private": true,
   "files": [{"path": "config.json", "content": "{\"secret\": 1}\n"}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-gated", "gated": "manual",
   "files": [{"path": "configuration.json", "content": "{\"ms-gated\": 1}\n"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/open hf:acme/gated hf:acme/off hf:acme/secret hf:acme/gone ms:acme/ms-gated >/dev/null
"$HUBMIRROR" sync >/dev/null 2>&1
"$HUBMIRROR" info --json hf:acme/gated >"$T/g.json"
check "the sync recorded the gated repo as refused" grep -q '"sync_status": *"gated"' "$T/g.json"
check "serve starts" start_serve
# ask URL [curl args]: the status, then each header line, in $T/h
ask() { local u=$1; shift; curl -sS -D "$T/h" -o "$T/b" -w '%{http_code}' "$@" "$M$u"; }
hdr() { grep -i "^$1:" "$T/h" | tr -d '\r' | cut -d' ' -f2-; }
for u in /api/models/acme/gated /api/models/acme/gated/revision/main /acme/gated/resolve/main/config.json \
	/api/models/acme/gated/tree/main; do
	check "gated, not fetched: $u is 401 GatedRepo" test "$(ask "$u")" = 401
	check "  with X-Error-Code GatedRepo and a message naming the mirror" bash -c \
		"grep -qi '^X-Error-Code: GatedRepo' '$T/h' && grep -qi '^X-Error-Message: .*this mirror has no approved access' '$T/h'"
done
check "with a token: 403 GatedRepo" test "$(ask /acme/gated/resolve/main/config.json -H 'Authorization: Bearer hf_x')" = 403
check "  X-Error-Code GatedRepo" test "$(hdr X-Error-Code)" = GatedRepo
check "disabled: 403" test "$(ask /api/models/acme/off)" = 403
check "  'Access to this resource is disabled.'" test "$(hdr X-Error-Message)" = "Access to this resource is disabled."
check "private upstream: 404 RepoNotFound" test "$(ask /acme/secret/resolve/main/config.json)" = 404
check "  X-Error-Code RepoNotFound" test "$(hdr X-Error-Code)" = RepoNotFound
check "gone upstream: 404 RepoNotFound" test "$(ask /api/models/acme/gone)" = 404
check "  X-Error-Code RepoNotFound" test "$(hdr X-Error-Code)" = RepoNotFound
check "an unknown revision of a repo the mirror has: RevisionNotFound" test "$(ask /api/models/acme/open/revision/v9)" = 404
check "  X-Error-Code RevisionNotFound" test "$(hdr X-Error-Code)" = RevisionNotFound
check "ModelScope, gated, not fetched: 403" test "$(ask /api/v1/models/acme/ms-gated)" = 403
check "  in ModelScope's envelope, saying why" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1])); assert d["Success"] is False and d["Code"] == 403 and "no access" in d["Message"], d' "$T/b"
check "ModelScope file of it: 403" test "$(ask '/api/v1/models/acme/ms-gated/repo?Revision=master&FilePath=configuration.json')" = 403
finish
