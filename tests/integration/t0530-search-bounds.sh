#!/usr/bin/env bash
# t0530-search-bounds: one search cannot hold the server (docs/security.md). On a 20,000-repo catalog
# a query of many words is refused at once with a 400 that says why (each word is a prefix FTS5 expands
# over the whole vocabulary: 20 words took 6.8 s, 1000 words minutes, on the server's only loop);
# repeated words count once; a search that runs past the budget (--search-budget, here made tiny) is
# abandoned with a 400, and the server answers the next request; the CLI says the same.
. "$HM_SRC/tests/integration/lib.sh"
"$HUBMIRROR" init >/dev/null   # makes the catalog
check "a 20,000-repo catalog" "$PY" - "$HUBMIRROR_DATA/catalog.db" "$HM_SRC/bench" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import catalog_bench
catalog_bench.generate(sys.argv[1], 20000, 10)
PY
check "serve starts" start_serve --p2p-listen off
search() { curl -s -o "$T/body" -w '%{http_code}' "$M/api/catalog/repos?limit=5&q=$1"; }
words() { "$PY" -c 'import sys; print("+".join("w%d" % i for i in range(int(sys.argv[1]))))' "$1"; }
check "one word: found" test "$(search qwen)" = 200
check "eight words: searched" test "$(search llama+qwen+mistral+gemma+phi+bert+chat+base)" = 200
code=$(search "$(words 20)")
check "twenty words: 400" test "$code" = 400
check "which says why" grep -q "too many search words (at most 8)" "$T/body"
check "a thousand words: 400" test "$(search "$(words 1000)")" = 400
check "one word repeated 500 times counts once" test "$(search "$(printf 'qwen+%.0s' $(seq 500))")" = 200
check "a 65-byte word: 400" test "$(search "$(printf 'a%.0s' $(seq 65))")" = 400
check "punctuation is no FTS syntax" test "$(search 'qwen%22+OR+NEAR(a+b)+*')" = 200

check "serve starts with a 1 ms search budget" start_serve --p2p-listen off --search-budget 1
code=$(search org)   # matches every repo: ranking 20,000 rows takes far longer than 1 ms
check "a search past its budget: 400" test "$code" = 400
check "which says so" grep -q "search took too long" "$T/body"
check "and the server answers the next request" curl -fsS -o /dev/null "$M/healthz"

"$HUBMIRROR" search $(words 20 | tr + ' ') >"$T/cli.out" 2>"$T/cli.err"; st=$?
check "the CLI refuses twenty words" test "$st" != 0
check "and says why" grep -q "too many search words" "$T/cli.err"
finish
