#!/usr/bin/env bash
# t0520-metrics: /metrics in the Prometheus text format, parsed, with counters that move when requests
# and syncs happen: requests by route and status, bytes served, connections, sync runs by outcome,
# bytes fetched upstream, per-repo last-sync time and size, store size, dedup savings.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/m1", "files": [{"path": "config.json", "content": "{}\n"},
     {"path": "w.safetensors", "size": 200000, "seed": 3}]},
  {"hub": "ms", "type": "model", "id": "acme/m1", "files": [{"path": "w.safetensors", "size": 200000, "seed": 3}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/m1 ms:acme/m1 >/dev/null
"$HUBMIRROR" sync >/dev/null
# (on demand for a pattern nothing matches: its metrics are exported too)
check "serve starts" start_serve --on-demand 'hf:nobody-here/*'
# parse M OUT: every sample into "name{labels} value" lines; fails on anything not in the format
parse() {
	curl -fsS "$M/metrics" | "$PY" -c '
import re, sys
sample = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\]|\\\\.)*\",?)*\})? (-?[0-9.eE+]+|NaN|\+Inf)$")
types = {}
for line in sys.stdin.read().splitlines():
    if line.startswith("# HELP "):
        continue
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(" ", 3)
        assert kind in ("counter", "gauge"), line
        assert kind != "counter" or name.endswith("_total"), "counter without _total: " + line
        types[name] = kind
        continue
    m = sample.match(line)
    assert m, "not a sample: %r" % line
    assert m.group(1) in types, "sample without TYPE: " + line
    print(m.group(1) + (m.group(2) or ""), m.group(3))
'
}
val() { grep -F "$1 " "$2" | head -1 | awk '{print $NF}'; }
check "metrics parse" bash -c "$(declare -f parse); M=$M PY=$PY parse >$T/m1"
check "store size and dedup savings" bash -c "[ \$(grep '^hubmirror_dedup_saved_bytes ' $T/m1 | cut -d' ' -f2) -ge 200000 ] && [ \$(grep '^hubmirror_store_bytes ' $T/m1 | cut -d' ' -f2) -ge 200000 ]"
check "one sync run, ok" grep -q '^hubmirror_sync_runs_total{outcome="ok"} 1$' "$T/m1"
check "bytes fetched upstream recorded" bash -c "[ \$(grep '^hubmirror_upstream_fetched_bytes_total ' $T/m1 | cut -d' ' -f2) -ge 200000 ]"
check "per-repo size gauges" grep -q '^hubmirror_repo_size_bytes{hub="hf",type="model",repo="acme/m1"} ' "$T/m1"
check "per-repo last sync time" grep -qE '^hubmirror_repo_last_sync_timestamp_seconds\{hub="ms",type="model",repo="acme/m1",status="ok"\} [0-9]{10}$' "$T/m1"
for i in 1 2 3; do curl -fsS -o /dev/null "$M/acme/m1/resolve/main/w.safetensors"; done
curl -sS -o /dev/null "$M/acme/m1/resolve/main/nope.json"
curl -fsS -o /dev/null "$M/api/catalog/stats"
parse >"$T/m2"
check "resolve 200 counted three times" grep -q '^hubmirror_http_requests_total{route="hf_resolve",status="200"} 3$' "$T/m2"
check "resolve 404 counted" grep -q '^hubmirror_http_requests_total{route="hf_resolve",status="404"} 1$' "$T/m2"
check "catalog API counted" grep -q '^hubmirror_http_requests_total{route="catalog_api",status="200"} 1$' "$T/m2"
b1=$(val hubmirror_http_response_bytes_total "$T/m1"); b2=$(val hubmirror_http_response_bytes_total "$T/m2")
check "bytes served moved by at least three files" test $((b2 - b1)) -ge 600000
check "connections counted" bash -c "[ \$(grep '^hubmirror_http_connections_total ' $T/m2 | cut -d' ' -f2) -ge 6 ]"
# a sync that happens while serving moves the sync counters
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/m1", "hub": "hf", "type": "model", "branch": "main",
  "files": [{"path": "w.safetensors", "size": 210000, "seed": 4}]}' >/dev/null
"$HUBMIRROR" sync >/dev/null
parse >"$T/m3"
check "second sync run counted" grep -q '^hubmirror_sync_runs_total{outcome="ok"} 2$' "$T/m3"
u2=$(val hubmirror_upstream_fetched_bytes_total "$T/m2"); u3=$(val hubmirror_upstream_fetched_bytes_total "$T/m3")
check "upstream bytes moved by the new file" test $((u3 - u2)) -eq 210000
# a failed attempt moves the last attempt, not the last success
ok_before=$(val 'hubmirror_repo_last_success_timestamp_seconds{hub="hf",type="model",repo="acme/m1"}' "$T/m3")
check "the last success is recorded" test "${ok_before:-0}" -gt 0
sleep 1.1
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '{"kind": "status", "status": 404, "match": "/api/models/acme/m1", "count": -1}' >/dev/null
"$HUBMIRROR" sync hf:acme/m1 >/dev/null 2>&1
curl -fsS -X DELETE "$FAKE_API/_fake/faults" >/dev/null
parse >"$T/m5"
check "the failed attempt is the last sync, with its status" bash -c "grep -E '^hubmirror_repo_last_sync_timestamp_seconds\{hub=\"hf\",type=\"model\",repo=\"acme/m1\",status=\"[a-z]+\"\} ' '$T/m5' | grep -vq 'status=\"ok\"'"
check "the last success did not move" test "$(val 'hubmirror_repo_last_success_timestamp_seconds{hub="hf",type="model",repo="acme/m1"}' "$T/m5")" = "$ok_before"
# the Grafana dashboard asks for names /metrics has (one name each: the tracker's are hubmirror_tracker_*)
curl -fsS "$M/metrics" >"$T/m4"
missing=$(grep -o 'hubmirror_[a-z0-9_]*' "$HM_SRC/docs/grafana/hubmirror-dashboard.json" | sort -u |
	while read -r n; do grep -q "^# TYPE $n " "$T/m4" || echo "$n"; done)
check "every metric the dashboard queries is exported${missing:+ (missing: $(echo $missing))}" test -z "$missing"
# (but the store's bucket's, exported only by a mirror with a bucket behind its store: t0863 reads them)
missing=$(cat "$HM_SRC"/docs/*.md "$HM_SRC"/docs/commands/*.md | grep -oE 'hubmirror_[a-z0-9_]+' | grep -v '_$' |
	grep -Ev '^hubmirror_store_(bucket|cache)_' | sort -u |
	while read -r n; do grep -q "^# TYPE $n " "$T/m4" || echo "$n"; done)
check "every metric the docs name is exported${missing:+ (missing: $(echo $missing))}" test -z "$missing"
finish
