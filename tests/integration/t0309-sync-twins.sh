#!/usr/bin/env bash
# t0309-sync-twins: one content known by git id on Hugging Face (a regular file) and by sha256 on
# ModelScope, wanted by two repos in one run, is fetched once whichever listing comes first: the
# job of the other kind of key and the same size is waited for (or, done already, compared) and its
# verified blob taken when it is the same content. Same-size files with other content are each
# fetched; a twin in a gated repo is not handed to an open one. Every file serves its right bytes.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"approved": ["acme/hf-gated"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/hf-twin", "gitattributes": false,
   "files": [{"path": "config.json", "content": "{\"twin\": 1}\n"},
             {"path": "a.txt", "content": "aaaa\n"}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-twin", "gitattributes": false,
   "files": [{"path": "configuration.json", "content": "{\"twin\": 1}\n"},
             {"path": "b.txt", "content": "bbbb\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/hf-gated", "gated": "manual", "gitattributes": false,
   "files": [{"path": "secret.json", "content": "{\"gated\": 42}\n"}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-open", "gitattributes": false,
   "files": [{"path": "copy.json", "content": "{\"gated\": 42}\n"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
fetches() { # how many times upstream sent the bytes of a file whose path ends with $1
	curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c '
import json,sys
print(sum(1 for r in json.load(sys.stdin)["recent"]
          if r["kind"] in ("resolve", "ms-file", "cdn") and r["status"] == 200
          and (r["path"].split("?")[0].endswith("/" + sys.argv[1]) or "FilePath=" + sys.argv[1] in r["path"])))' "$1"; }
# Two orders, forced with a slow answer: (1) the Hugging Face download is still running when the
# ModelScope listing comes (its job waits); (2) the ModelScope file is in before the Hugging Face
# listing comes (the git id is compared with the finished blob).
for case in "hf-running:hf-twin/resolve/.*/config.json" "ms-first:/api/models/acme/hf-twin/revision/"; do
	name=${case%%:*}
	rm -rf "$HUBMIRROR_DATA"
	"$HUBMIRROR" add hf:acme/hf-twin ms:acme/ms-twin >/dev/null
	curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
	curl -fsS -X POST -d '{"match": "'"${case#*:}"'", "kind": "slow", "seconds": 1, "count": 1}' "$FAKE_API/_fake/faults" >/dev/null
	check "[$name] both synced in one run" "$HUBMIRROR" sync --no-progress
	n=$(( $(fetches config.json) + $(fetches configuration.json) ))
	check "[$name] the twin content came once ($n)" test "$n" = 1
	check "[$name] same-size files with other content each came" test "$(fetches a.txt)$(fetches b.txt)" = 11
done
check "serve starts" start_serve
check "the Hugging Face file serves its bytes" test "$(curl -fsS "$M/acme/hf-twin/resolve/main/config.json")" = '{"twin": 1}'
check "the ModelScope file serves its bytes" test \
	"$(curl -fsS "$M/api/v1/models/acme/ms-twin/repo?Revision=master&FilePath=configuration.json")" = '{"twin": 1}'
check "b.txt is its own" test "$(curl -fsS "$M/api/v1/models/acme/ms-twin/repo?Revision=master&FilePath=b.txt")" = bbbb

# A gated repo's copy (fetched with its token) is not given to an open repo of the other hub.
rm -rf "$HUBMIRROR_DATA"
"$HUBMIRROR" add hf:acme/hf-gated ms:acme/ms-open >/dev/null
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
# the gated copy first: the open repo's listing comes a second later
curl -fsS -X POST -d '{"match": "/api/v1/models/acme/ms-open/repo/files", "kind": "slow", "seconds": 1, "count": 1}' \
	"$FAKE_API/_fake/faults" >/dev/null
check "gated + open twins sync (with the approved token)" env HF_TOKEN=hf_ok "$HUBMIRROR" sync --no-progress
check "the open repo fetched its own copy" test "$(fetches secret.json)$(fetches copy.json)" = 11
finish
