#!/usr/bin/env bash
# t0827-ondemand-listing-trust: a listing taken on demand is held to the rule sync follows
# (docs/security.md, "What sync takes from a listing"). The mirror holds a gated repo's content; an
# open repo's upstream lists that content's sha256 (public metadata) but never serves its bytes. On
# demand, the open repo is listed at once, yet its file is not served from the store's copy: it must
# come from its own upstream and hash right first. Nor does the provisional listing make the content
# count as public afterwards: a regular sync of the open repo, or of a second open repo naming it, is
# not given it. Once the open repo's upstream serves the bytes, the client gets them (verified, stored
# once), and the sync that completes the snapshot takes them as that repo's own without a second fetch.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"approved": ["acme/gate"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/gate", "gated": "manual",
   "files": [{"path": "w.bin", "size": 200000, "seed": 81}]},
  {"hub": "hf", "type": "model", "id": "evil/open",
   "files": [{"path": "w.bin", "size": 200000, "seed": 81}]},
  {"hub": "hf", "type": "model", "id": "evil/two",
   "files": [{"path": "w.bin", "size": 200000, "seed": 81}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HF_TOKEN=hf_ok
outcome() { "$PY" -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["repos"] if x["spec"]==sys.argv[2]][0]; print(r["outcome"], r["files_fetched"])' "$@"; }
stats() { curl -fsS "$FAKE_API/_fake/stats"; }
resolves() { stats | "$PY" -c "import json,sys; print(sum(1 for r in json.load(sys.stdin)['recent'] if r['kind'] == 'resolve' and '$1' in r['path'] and r['path'].endswith('w.bin')))"; }
SHA=$(curl -fsS -L -H "Authorization: Bearer hf_ok" "$FAKE_API/acme/gate/resolve/main/w.bin" | sha256sum | cut -c1-64)

"$HUBMIRROR" add hf:acme/gate >/dev/null && "$HUBMIRROR" sync --json >"$T/s1.json"
check "the gated repo syncs with the approved token" test "$(outcome "$T/s1.json" hf:acme/gate)" = "ok 2"
check "its content is in the store" test -f "$HUBMIRROR_DATA/store/blobs/${SHA:0:2}/$SHA"
# the open repos' upstream never serves the bytes: a listing naming content it does not have
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null # (it clears the faults too)
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '[{"kind": "status", "status": 404, "match": "evil/open/resolve/.*w.bin", "count": -1},
	{"kind": "status", "status": 404, "match": "evil/two/resolve/.*w.bin", "count": -1}]' >/dev/null

# each on-demand fetch's worker waits 3 s after its commit, before the loop hears of it (tests/README.md,
# "Fault hooks"): the next client below comes in that window, and must join the verified fetch
export HUBMIRROR_TEST_PAUSE=ondemand-commit
check "serve with --on-demand starts" start_serve --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:evil/*'
unset HUBMIRROR_TEST_PAUSE
check "the open repo is listed on demand" bash -c "curl -fsS '$M/api/models/evil/open' | grep -q w.bin"
curl -fsS -o "$T/leak.bin" "$M/evil/open/resolve/main/w.bin" 2>/dev/null; st=$?
check "its file is not served from the gated repo's copy (curl $st)" test "$st" != 0
check "... no complete copy of it" bash -c "! cmp -s '$T/leak.bin' '$HUBMIRROR_DATA/store/blobs/${SHA:0:2}/$SHA'"
check "... it was asked of the open repo's own upstream" test "$(resolves evil/open/resolve/)" -ge 1
curl -fsS -r 0-9999 -o "$T/leak-r.bin" "$M/evil/open/resolve/main/w.bin" 2>/dev/null; st=$?
check "nor a complete range of it (curl $st)" test "$st" != 0
check "serve says why" grep -q "evil/open.*content ${SHA:0:12} not kept" "$T/serve.err"

# the provisional listing does not make the content public: later syncs are not given it
"$HUBMIRROR" add hf:evil/two >/dev/null
"$HUBMIRROR" sync --json --local hf:evil/two >"$T/s2.json"
check "another open repo naming it is not synced from the store's copy" test "$(outcome "$T/s2.json" hf:evil/two | cut -d' ' -f1)" != ok
"$HUBMIRROR" sync --json --local hf:evil/open >"$T/s3.json"
check "nor is the open repo's own regular sync" test "$(outcome "$T/s3.json" hf:evil/open | cut -d' ' -f1)" != ok
curl -fsS -o "$T/leak2.bin" "$M/evil/open/resolve/main/w.bin" 2>/dev/null; st=$?
check "and the file is still refused (curl $st)" test "$st" != 0

# once its upstream serves the bytes, they are fetched, verified and served, and stored once
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
check "an upstream that serves the bytes: the client gets them, right" \
	test "$(curl -fsS "$M/evil/open/resolve/main/w.bin" | sha256sum | cut -c1-64)" = "$SHA"
check "fetched from the open repo's upstream once" test "$(resolves evil/open/resolve/)" = 1
check "the store holds the content once" test "$(find "$HUBMIRROR_DATA/store/blobs" -type f -name "$SHA" | wc -l)" = 1
check "the next client, while the fetch's commit is told, is served" \
	test "$(curl -fsS "$M/evil/open/resolve/main/w.bin" | sha256sum | cut -c1-64)" = "$SHA"
check "... without asking upstream again" test "$(resolves evil/open/resolve/)" = 1
for _ in $(seq 100); do grep -q "evil/open: content ${SHA:0:12} in" "$T/serve.err" && break; sleep 0.1; done
check "the fetch's end is told" grep -q "evil/open: content ${SHA:0:12} in" "$T/serve.err"
check "the next client is served from the store" test "$(curl -fsS "$M/evil/open/resolve/main/w.bin" | sha256sum | cut -c1-64)" = "$SHA"
"$HUBMIRROR" sync --json --local hf:evil/open >"$T/s4.json"
check "the sync completing the snapshot takes the verified bytes as the repo's own, no fetch" \
	test "$(outcome "$T/s4.json" hf:evil/open)" = "ok 0"
check "... nor one of the open repo's file" test "$(resolves evil/open/resolve/)" = 1
finish
