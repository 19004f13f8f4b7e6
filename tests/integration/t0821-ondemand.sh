#!/usr/bin/env bash
# t0821-ondemand: serve --on-demand PATTERNS fetches what the curated list lacks when a client asks.
# The first request for a repo a pattern covers tracks it (marked as added on demand, with who asked)
# and lists it upstream, fetching its small files only; a large file is fetched the first time it is
# asked for and streamed to that client as it arrives; two clients at once make one upstream
# transfer and both get the right bytes; a content that fails its hash is never kept and the
# client's connection ends short of the promised length (curl fails), and asking again works; a repo
# outside the patterns stays 404 without a request upstream; the nightly sync completes the
# provisional snapshot (its torrent made); the metrics count it all.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/od-model",
   "files": [{"path": "config.json", "content": "{\"od\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 41}]},
  {"hub": "hf", "type": "model", "id": "acme/od-bad",
   "files": [{"path": "config.json", "content": "{}\n"}, {"path": "w.bin", "size": 2000000, "seed": 42}]},
  {"hub": "hf", "type": "model", "id": "acme/od-bad-range",
   "files": [{"path": "config.json", "content": "{}\n"}, {"path": "w.bin", "size": 2000000, "seed": 43}]},
  {"hub": "hf", "type": "model", "id": "other/outside",
   "files": [{"path": "config.json", "content": "{}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/od-head",
   "files": [{"path": "big.safetensors", "size": 4000000, "seed": 43}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-od",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "sub/tokenizer.json", "content": "{}\n"},
             {"path": "model.safetensors", "size": 1200000, "seed": 9}]},
  {"hub": "hf", "type": "model", "id": "acme/od-pull",
   "files": [{"path": "config.json", "content": "{\"pull\": 1}\n"},
             {"path": "sub/model.safetensors", "size": 2500000, "seed": 44}]},
  {"hub": "ms", "type": "dataset", "id": "acme/ms-od-rows",
   "generate": {"count": 120, "size": 30, "prefix": "rows/r-", "suffix": ".txt"}}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
check "serve with --on-demand starts" start_serve --p2p-listen off --hf-upstream "$FAKE_API" --ms-upstream "$FAKE_API" --on-demand 'hf:acme/*, ms:acme/*, ms:datasets/acme/*'
stats() { curl -fsS "$FAKE_API/_fake/stats"; }
resolves() { stats | "$PY" -c "import json,sys; print(sum(1 for r in json.load(sys.stdin)['recent'] if r['kind'] == 'resolve' and r['path'].endswith('$1')))"; }
fake_sha() { curl -fsS -L "$FAKE_API/$1/resolve/main/$2" | sha256sum | cut -c1-64; }
SHA_MODEL=$(fake_sha acme/od-model model.safetensors)
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null

check "nothing is tracked yet" bash -c "'$HUBMIRROR' ls --json | '$PY' -c 'import json,sys; assert json.load(sys.stdin) == []'"
check "info of a repo the list lacks answers at once" bash -c "curl -fsS '$M/api/models/acme/od-model' >'$T/info.json' &&
	'$PY' -c 'import json,sys; d=json.load(open(sys.argv[1])); assert sorted(s[\"rfilename\"] for s in d[\"siblings\"]) == [\".gitattributes\", \"config.json\", \"model.safetensors\"], d' '$T/info.json'"
check "it is tracked now, marked as added on demand with who asked" "$PY" -c '
import json, sqlite3, sys
o = sqlite3.connect(sys.argv[1]).execute("select options from repos where name = ? and removed_at is null", ("acme/od-model",)).fetchone()[0]
assert json.loads(o)["on_demand"]["by"] == "127.0.0.1", o' "$HUBMIRROR_DATA/catalog.db"
check "its small file came with the listing" test "$(curl -fsS "$M/acme/od-model/resolve/main/config.json")" = '{"od": 1}'
check "its large file was not fetched yet" test "$(resolves /model.safetensors)" = 0

# two clients at once, the upstream body throttled so that they overlap
curl -fsS -X POST -d '{"match": "", "host": "cdn", "kind": "slow", "rate": 1000000, "count": 1}' "$FAKE_API/_fake/faults" >/dev/null
curl -fsS -o "$T/a.bin" "$M/acme/od-model/resolve/main/model.safetensors" & pa=$!
sleep 0.5
curl -fsS -o "$T/b.bin" "$M/acme/od-model/resolve/main/model.safetensors" & pb=$!
wait "$pa"; sa=$?; wait "$pb"; sb=$?
check "both clients got the file" test "$sa$sb" = 00
check "first client: right bytes" test "$(sha256sum <"$T/a.bin" | cut -c1-64)" = "$SHA_MODEL"
check "second client: right bytes" test "$(sha256sum <"$T/b.bin" | cut -c1-64)" = "$SHA_MODEL"
check "one upstream transfer for both" test "$(resolves /model.safetensors)" = 1
check "the content is in the store, verified" test -f "$HUBMIRROR_DATA/store/blobs/${SHA_MODEL:0:2}/$SHA_MODEL"
check "a third client is served from the store" test "$(curl -fsS "$M/acme/od-model/resolve/main/model.safetensors" | sha256sum | cut -c1-64)" = "$SHA_MODEL"
check "still one upstream transfer" test "$(resolves /model.safetensors)" = 1
check "a Range of it" test "$(curl -fsS -r 100-109 "$M/acme/od-model/resolve/main/model.safetensors" | od -An -tx1)" = "$(dd if="$T/a.bin" bs=1 skip=100 count=10 2>/dev/null | od -An -tx1)"

# a corrupt upstream answer: no file kept, no client with a complete wrong file
curl -fsS -X POST -d '{"match": "", "host": "cdn", "kind": "corrupt", "offset": 1000, "count": 1}' "$FAKE_API/_fake/faults" >/dev/null
curl -fsS -o "$T/bad.bin" "$M/acme/od-bad/resolve/main/w.bin"; st=$?
check "the client's download of a corrupt answer fails (curl $st)" test "$st" != 0
check "it holds less than the whole file" test "$(stat -c %s "$T/bad.bin" 2>/dev/null || echo 0)" -lt 2000000
SHA_BAD=$(fake_sha acme/od-bad w.bin)
check "nothing was kept" test ! -e "$HUBMIRROR_DATA/store/blobs/${SHA_BAD:0:2}/$SHA_BAD"
check "asking again fetches it again, right" test "$(curl -fsS "$M/acme/od-bad/resolve/main/w.bin" | sha256sum | cut -c1-64)" = "$SHA_BAD"
# ... nor a client with a complete range of it (how hf_transfer, aria2c -x and hfd split a file): the
# range's last byte waits for the content's verdict, and the answer is cut short on a mismatch
# (upstream throttled: the range's bytes are in long before the content's last one)
curl -fsS -X POST -d '{"match": "", "host": "cdn", "kind": "slow", "rate": 1000000, "count": 1}' "$FAKE_API/_fake/faults" >/dev/null
curl -fsS -X POST -d '{"match": "", "host": "cdn", "kind": "corrupt", "offset": 1000, "count": 1}' "$FAKE_API/_fake/faults" >/dev/null
curl -fsS -r 0-9999 -o "$T/badr.bin" "$M/acme/od-bad-range/resolve/main/w.bin"; st=$?
check "a range over bytes that fail the hash does not end as a complete answer (curl $st)" test "$st" != 0
check "what came is short of the range" test "$(stat -c %s "$T/badr.bin" 2>/dev/null || echo 0)" -lt 10000
SHA_BADR=$(fake_sha acme/od-bad-range w.bin)
check "a range asked again comes whole and right" cmp <(curl -fsS -r 0-9999 "$M/acme/od-bad-range/resolve/main/w.bin") \
	<(curl -fsS "$M/acme/od-bad-range/resolve/main/w.bin" | head -c 10000)

# outside the patterns: not found, and upstream never asked
before=$(stats | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["total"])')
check "a repo outside the patterns: 404" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/api/models/other/outside")" = 404
check "... and upstream was not asked" test "$(stats | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["total"])')" = "$before"
check "a repo upstream lacks: 404" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/api/models/acme/nowhere")" = 404
check "... and it is not tracked" bash -c "! '$HUBMIRROR' ls --json | grep -q acme/nowhere"
# each front says so in its hub's own style (the engine knows neither)
curl -s -D "$T/nf.h" -o "$T/nf.json" "$M/api/models/acme/nowhere2"
check "... the Hugging Face way: RepoNotFound in X-Error-Code, an error body" bash -c "tr -d '\r' <'$T/nf.h' |
	grep -qix 'x-error-code: RepoNotFound' && '$PY' -c 'import json,sys; assert json.load(open(sys.argv[1]))[\"error\"]' '$T/nf.json'"
code=$(curl -s -o "$T/nf-ms.json" -w '%{http_code}' "$M/api/v1/models/acme/nowhere3")
check "... and ModelScope's: 404 in its envelope, naming the repository" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1])); assert sys.argv[2] == "404" and d["Code"] == 404 and not d["Success"] and "acme/nowhere3 not found" in d["Message"], d' "$T/nf-ms.json" "$code"

# a client that looks before it downloads (huggingface_hub's HEAD): the size and ETags at once
curl -fsS -X POST -d '{"match": "", "host": "cdn", "kind": "slow", "rate": 1000000, "count": 1}' "$FAKE_API/_fake/faults" >/dev/null
curl -fsS -I "$M/acme/od-head/resolve/main/big.safetensors" >"$T/head.txt"; st=$?
check "HEAD of a file not fetched yet answers with its size and ETags" bash -c "[ $st = 0 ] &&
	grep -qi '^content-length: 4000000' '$T/head.txt' && grep -qi '^x-linked-size: 4000000' '$T/head.txt' && grep -qi '^etag: ' '$T/head.txt'"
check "then its GET gets the right bytes" test "$(curl -fsS "$M/acme/od-head/resolve/main/big.safetensors" | sha256sum | cut -c1-64)" = "$(fake_sha acme/od-head big.safetensors)"

# ModelScope: a model and a dataset the list lacks, through the SDK's flows
"$PY" "$HM_SRC/tests/integration/helpers/msclient.py" "$M" acme/ms-od acme/ms-od-rows 120 >"$T/ms.out"; st=$?
check "ModelScope SDK flows on demand ($(grep -c '^ok' "$T/ms.out") checks)" test "$st" = 0
[ "$st" = 0 ] || { grep -v "^ok" "$T/ms.out" | sed "s/^/# /"; grep -i "ondemand\|error\|warn" "$T/serve.err" | tail -20; }

check "metrics count the on-demand work" bash -c "curl -fsS '$M/metrics' >'$T/metrics' &&
	grep -q '^hubmirror_ondemand_repos_total 6$' '$T/metrics' && grep -q '^hubmirror_ondemand_fetches_total{outcome=\"failed\"} 2$' '$T/metrics' &&
	grep -q '^hubmirror_ondemand_fetches_total{outcome=\"started\"} [0-9]' '$T/metrics'"
check "the provisional snapshot has no torrent yet" bash -c "curl -fsS '$M/api/catalog/repos/hf/model/acme/od-model' | '$PY' -c 'import json,sys; assert json.load(sys.stdin)[\"swarm\"] is None'"
check "the nightly sync completes it" env HUBMIRROR_HF_UPSTREAM="$FAKE_API" "$HUBMIRROR" sync --local --no-progress hf:acme/od-model hf:acme/od-bad
check "... and makes its torrent" bash -c "curl -fsS '$M/api/catalog/repos/hf/model/acme/od-model' | '$PY' -c 'import json,sys; assert json.load(sys.stdin)[\"swarm\"][\"btih\"]'"
# an instance pulls a repo the mirror never had, through its agent and the swarm: the mirror tracks
# it, completes the snapshot (a sync of it, as a child) and makes its torrent while pull waits
kill "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null
check "serve with on demand and its seed starts" start_serve --p2p-listen 127.0.0.1:0 --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*'
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
pc=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/od-pull"][0]["sha"])' "$T/up.json")
timeout 120 "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" --listen 127.0.0.1:0 hf:acme/od-pull >"$T/pull.out" 2>"$T/pull.err"
st=$?
check "pull of a repo the mirror never had exits 0" test "$st" = 0
check "it said it waited for the mirror" grep -q "fetching this repository on demand; waiting" "$T/pull.err"
check "the HF cache holds every file, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/od-pull "$T/hfc/models--acme--od-pull/snapshots/$pc"
check "the mirror completed the snapshot (its torrent)" bash -c "curl -fsS '$M/api/catalog/repos/hf/model/acme/od-pull' | '$PY' -c 'import json,sys; assert json.load(sys.stdin)[\"swarm\"][\"btih\"]'"
timeout 20 "$HUBMIRROR" agent --stop >/dev/null 2>&1

# a repo nobody asks for within the TTL stops being tracked; one in use stays
kill "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null
check "serve with a 3 s TTL starts" start_serve --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*' --on-demand-ttl 3
for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do curl -fsS -o /dev/null "$M/api/models/acme/od-head"; sleep 0.5; done
check "the repo asked for all along is still tracked" bash -c "'$HUBMIRROR' ls --json | grep -q acme/od-head"
check "one nobody asked for is not" bash -c "! '$HUBMIRROR' ls --json | grep -q acme/od-bad"
check "the log says so" grep -q "hf:acme/od-bad: nobody asked for it lately" "$T/serve.err"
check "gc drops its contents" bash -c "'$HUBMIRROR' gc --keep 1 >/dev/null && [ ! -e '$HUBMIRROR_DATA/store/blobs/${SHA_BAD:0:2}/$SHA_BAD' ]"

finish
