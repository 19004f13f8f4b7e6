#!/usr/bin/env bash
# t0304-sync-listing-trust: a listing names content by its sha256, and a gated repo's sha256s are
# public metadata; so an upstream that lists a closed repo's content under an open name must not get
# it served without ever serving it itself (docs/security.md). Here the open repo's upstream refuses
# every request for the file's bytes: its listing alone must not make the mirror's copy of the gated
# content its own. Content shared between open repos is still fetched once.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"approved": ["acme/gate"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/gate", "gated": "manual",
   "files": [{"path": "w.bin", "size": 200000, "seed": 81}]},
  {"hub": "hf", "type": "model", "id": "evil/open",
   "files": [{"path": "w.bin", "size": 200000, "seed": 81}]},
  {"hub": "hf", "type": "model", "id": "acme/pub",
   "files": [{"path": "p.bin", "size": 150000, "seed": 82}]},
  {"hub": "hf", "type": "model", "id": "acme/pub2",
   "files": [{"path": "p.bin", "size": 150000, "seed": 82}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HF_TOKEN=hf_ok
outcome() { "$PY" -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["repos"] if x["spec"]==sys.argv[2]][0]; print(r["outcome"], r["files_fetched"])' "$@"; }
# the open repo's upstream never serves the bytes (a listing that names content it does not have)
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '[{"kind": "status", "status": 404, "match": "evil/open/resolve", "count": -1}]' >/dev/null

"$HUBMIRROR" add hf:acme/gate >/dev/null && "$HUBMIRROR" sync --json >"$T/s1.json"
# (the fake adds the same .gitattributes to every repo: one more shared content)
check "the gated repo syncs with the approved token" test "$(outcome "$T/s1.json" hf:acme/gate)" = "ok 2"
"$HUBMIRROR" add hf:evil/open >/dev/null && "$HUBMIRROR" sync --json hf:evil/open >"$T/s2.json"
check "a later run: the open repo naming the gated content is not synced from the store's copy" \
	test "$(outcome "$T/s2.json" hf:evil/open | cut -d' ' -f1)" != ok
check "serve starts" start_serve --p2p-listen off
code=$(curl -s -o /dev/null -w '%{http_code}' "$M/evil/open/resolve/main/w.bin")
check "and the mirror does not serve the gated bytes under the open name (HTTP $code)" test "$code" != 200

# The same in one run, from a fresh data directory: the gated repo's fetch does not count for the open one.
export HUBMIRROR_DATA=$T/one-run
"$HUBMIRROR" add hf:acme/gate hf:evil/open >/dev/null && "$HUBMIRROR" sync --json >"$T/s3.json"
check "one run: the gated repo is ok" test "$(outcome "$T/s3.json" hf:acme/gate | cut -d' ' -f1)" = ok
check "one run: the open repo is not" test "$(outcome "$T/s3.json" hf:evil/open | cut -d' ' -f1)" != ok

# Once its upstream does serve the bytes, the open repo fetches its own copy (stored once).
curl -fsS -X DELETE "$FAKE_API/_fake/faults" >/dev/null
"$HUBMIRROR" sync --json hf:evil/open >"$T/s4.json"
check "an upstream that serves the bytes: the open repo fetches them itself" test "$(outcome "$T/s4.json" hf:evil/open)" = "ok 2"
check "and the store holds the content once" test "$(find "$HUBMIRROR_DATA/store/blobs" -type f | wc -l)" = 2

# Open repos still share: the second one names the first one's content without a fetch.
"$HUBMIRROR" add hf:acme/pub >/dev/null && "$HUBMIRROR" sync --json hf:acme/pub >"$T/s5.json"
"$HUBMIRROR" add hf:acme/pub2 >/dev/null && "$HUBMIRROR" sync --json hf:acme/pub2 >"$T/s6.json"
check "an open repo's new content is fetched once (its .gitattributes an open repo has already)" \
	test "$(outcome "$T/s5.json" hf:acme/pub)" = "ok 1"
check "and another open repo takes it from the store" test "$(outcome "$T/s6.json" hf:acme/pub2)" = "ok 0"
finish
