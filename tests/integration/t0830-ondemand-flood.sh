#!/usr/bin/env bash
# t0830-ondemand-flood: names a pattern covers but upstream lacks cost the upstream a bounded number
# of calls, and never the server its workers (docs/security.md, "No request may stall the server").
# One listing runs at a time: ten misses at once against a slow upstream make one upstream listing,
# the nine others are told 503 with Retry-After at once, and a tracked repo's info answers meanwhile.
# A flood of distinct names from one address lists at most the minute's budget (the rest 429 with
# Retry-After), cannot push an earlier miss out of the negative cache, and leaves no row in the
# catalog. The torrent route checks names as the hubs' routes do: `..`, `?`, `#` and a newline never
# reach the catalog or forge a log line.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/open", "files": [{"path": "config.json", "content": "{}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/big", "files": [{"path": "config.json", "content": "{}\n"},
   {"path": "w.safetensors", "size": 3000000, "seed": 7}]},
  {"hub": "hf", "type": "model", "id": "acme/third", "files": [{"path": "config.json", "content": "{}\n"}]}
 ]}
JSON
sync_from_fake hf:acme/open
check "serve with --on-demand starts" start_serve --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*'
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
listed() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c "
import json, re, sys
names = {m.group(1) for r in json.load(sys.stdin)['recent'] for m in [re.match(r'/api/models/acme/($1[^/?]*)', r['path'])] if m}
print(len(names))"; }
rows() { "$PY" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from repos where name like ?", (sys.argv[2],)).fetchone()[0])' "$HUBMIRROR_DATA/catalog.db" "$1"; }

# ten misses at once, the upstream taking 4 s for each listing call
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '{"kind": "slow", "seconds": 4, "match": "/api/models/acme/miss-", "count": -1}' >/dev/null
cpids=()
for i in 0 1 2 3 4 5 6 7 8 9; do
	curl -s -o /dev/null -D "$T/h$i" -w '%{http_code}\n' "$M/api/models/acme/miss-$i" >"$T/c$i" & cpids+=($!)
	[ "$i" = 0 ] && sleep 0.5
done
sleep 1
code_open=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$M/api/models/acme/open")
wait "${cpids[@]}"
check "a tracked repo's info answers while a slow listing runs (HTTP $code_open)" test "$code_open" = 200
check "the first miss was listed, then not found" test "$(cat "$T/c0")" = 404
check "the nine others were told to come back (503)" test "$(cat "$T"/c[1-9] | grep -c '^503$')" = 9
check "... with Retry-After" test "$(cat "$T"/h[1-9] | tr -d '\r' | grep -ci '^retry-after: ')" = 9
check "one upstream listing for the ten" test "$(listed miss-)" = 1
curl -fsS -X DELETE "$FAKE_API/_fake/faults" >/dev/null

# a flood of distinct names from one address
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
for i in $(seq 1 80); do printf 'url = "%s"\noutput = "/dev/null"\n' "$M/api/models/acme/flood-$i"; done >"$T/flood.cfg"
curl -s -K "$T/flood.cfg" -o /dev/null -w '%{http_code}\n' >"$T/flood.codes"
n=$(listed flood-)
check "80 misses: the upstream listed at most the minute's budget ($n)" test "$n" -ge 1 -a "$n" -le 40
check "the rest were told 429" test "$(grep -c '^429$' "$T/flood.codes")" -ge 40
check "... and the listed ones 404" test "$(grep -c '^404$' "$T/flood.codes")" = "$n"
again=$(code "$M/api/models/acme/miss-0")
check "the flood did not push the first miss out: asked again, not found ($again)" test "$again" = 404
check "... without an upstream call" test "$(listed miss-)" = 0
check "misses leave no rows in the catalog" test "$(rows 'acme/miss-%')$(rows 'acme/flood-%')" = 00
check "metrics count the refusals" bash -c "curl -fsS '$M/metrics' >'$T/m' &&
	grep -q '^hubmirror_ondemand_listings_refused_total{why=\"busy\"} 9$' '$T/m' &&
	grep -Eq '^hubmirror_ondemand_listings_refused_total\{why=\"rate\"\} [1-9][0-9]*$' '$T/m'"

# hostile names on the torrent route
for p in 'acme/..' 'acme/x%3Fy' 'acme/x%23y' 'acme/x%0aadmin:%20forged' '..%2f../etc'; do
	c=$(code "$M/api/p2p/torrent/hf/model/$p")
	check "torrent route: $p is not found ($c)" test "$c" = 404
done
check "none of them reached the catalog" test "$(rows '%admin%')$(rows '%?%')$(rows '%#%')$(rows '%..%')" = 0000
check "no log line was forged" bash -c "! grep -q '^admin:' '$T/serve.err' '$T/access.log'"

# the store quota ([store] quota) holds for on-demand fetches too: past it, the client is told 503
kill "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null
printf '[store]\nquota = 1M\n' >"$T/quota.conf"
check "serve with a 1 MB store quota starts" start_serve --config "$T/quota.conf" --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*'
check "a repo is listed on demand" test "$(code "$M/api/models/acme/big")" = 200
check "its 3 MB file would pass the quota: 503" test "$(code "$M/acme/big/resolve/main/w.safetensors")" = 503
check "serve says why" grep -q "acme/big/w.safetensors: not fetched: 3000000 bytes would take the store past its quota" "$T/serve.err"
check "metrics count it" bash -c "curl -fsS '$M/metrics' | grep -q '^hubmirror_ondemand_fetches_refused_total{why=\"quota\"} 1$'"
check "its small file is served" test "$(code "$M/acme/big/resolve/main/config.json")" = 200

# at most so many repos tracked on demand at once (acme/big is one)
kill "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null
check "serve with --on-demand-max-repos 1 starts" start_serve --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*' --on-demand-max-repos 1
check "a second repo on demand: 503, the mirror is full of them" test "$(code "$M/api/models/acme/third")" = 503
check "... saying so" bash -c "curl -s '$M/api/models/acme/third' | grep -q 'tracks as many repositories on demand as it may (1'"
check "... and it is not tracked" test "$(rows 'acme/third')" = 0
check "the one tracked is served" test "$(code "$M/api/models/acme/big")" = 200
finish
