#!/usr/bin/env bash
# t0308-sync-renamed: a repo upstream renamed (its old name answers with a redirect to the new one).
# Added under the old name, it syncs; the mirror records the name upstream answers with, shows it
# (info, the catalog API, the page's data) with the name it was added under, and answers to both:
# downloads, repo info and file listings by the new name work like by the old, under the old name's
# access rules (a repo named in the tokens file stays closed by its new name too).
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/new-name", "renamed_from": ["acme/old-name"],
   "files": [{"path": "config.json", "content": "{\"renamed\": true}\n"},
             {"path": "model.safetensors", "size": 200000, "seed": 5}]},
  {"hub": "hf", "type": "model", "id": "acme/secret-now", "renamed_from": ["acme/secret"],
   "files": [{"path": "config.json", "content": "{\"secret\": true}\n"}]}
 ]}
JSON
sync_from_fake hf:acme/old-name hf:acme/secret
check "the renamed repo synced under its old name" bash -c "'$HUBMIRROR' info --json hf:acme/old-name |
	'$PY' -c 'import json,sys; d=json.load(sys.stdin); assert d[\"sync_status\"] == \"ok\" and d[\"upstream_name\"] == \"acme/new-name\", d'"
check "info shows the new name" bash -c "'$HUBMIRROR' info hf:acme/old-name | grep -q 'acme/new-name'"
cat >"$T/tokens" <<'TOK'
team-abcdefghij hf:acme/secret
TOK
chmod 600 "$T/tokens" # (a tokens file others can read is refused)
check "serve starts" start_serve --tokens "$T/tokens"
code() { curl -sS -o /dev/null -w '%{http_code}' "$@"; }
check "a download by the new name" test "$(curl -fsS "$M/acme/new-name/resolve/main/config.json")" = '{"renamed": true}'
check "... and by the old one" test "$(curl -fsS "$M/acme/old-name/resolve/main/config.json")" = '{"renamed": true}'
check "model_info by the new name names the same commit" "$PY" -c '
import json,sys,urllib.request
a = json.load(urllib.request.urlopen(sys.argv[1] + "/api/models/acme/new-name"))
b = json.load(urllib.request.urlopen(sys.argv[1] + "/api/models/acme/old-name"))
assert a["sha"] == b["sha"] and len(a["sha"]) == 40, (a, b)' "$M"
check "the tree by the new name" "$PY" -c '
import json,sys,urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/models/acme/new-name/tree/main"))
assert sorted(e["path"] for e in d) == [".gitattributes", "config.json", "model.safetensors"], d' "$M"
check "a name neither old nor new is still not found" test "$(code "$M/api/models/acme/other-name")" = 404
check "the catalog API shows both names" "$PY" -c '
import json,sys,urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/catalog/repos/hf/model/acme/old-name"))
assert d["name"] == "acme/old-name" and d["upstream_name"] == "acme/new-name", d' "$M"
check "a token-listed repo is closed by its new name too" test "$(code "$M/acme/secret-now/resolve/main/config.json")" = 401
check "... and opens with its token" test "$(code -H 'Authorization: Bearer team-abcdefghij' "$M/acme/secret-now/resolve/main/config.json")" = 200
finish
