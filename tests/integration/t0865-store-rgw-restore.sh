#!/usr/bin/env bash
# t0865-store-rgw-restore: a mirror whose store is a Ceph RGW bucket, restored on a fresh data
# directory from a backup of its catalog (`backup`, then `restore` there), serves every file byte for
# byte from the same bucket at once (nothing fetched from upstream again); and the gateway stopped
# under that running mirror: a content not in its cache is answered 503 with Retry-After (its log says
# the bucket does not answer), and once the gateway is started again the same request is served whole.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/llm",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "a.safetensors", "size": 2000000, "seed": 1},
             {"path": "b.safetensors", "size": 1500000, "seed": 2}]},
  {"hub": "hf", "type": "dataset", "id": "acme/rows",
   "files": [{"path": "train.parquet", "size": 700000, "seed": 3}]}
 ]}
JSON
rgw_store t0865 16M
check "sync into the bucket" sync_from_fake hf:acme/llm hf:datasets/acme/rows
check "backup of the catalog" "$HUBMIRROR" backup --output "$T/catalog.bak"
"$PY" - "$HUBMIRROR_DATA/catalog.db" >"$T/files" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = ("select distinct r.type, r.name, f.path, f.sha256 from files f join snapshots s on s.id = f.snapshot_id "
     "join repos r on r.id = s.repo_id")
for t, name, path, sha in db.execute(q):
    print(("datasets/" if t == "dataset" else "") + name, path, sha)
PY
fetched=$(curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c 'import json,sys; d=json.load(sys.stdin)["content_bytes"]; print(d["api"]+d["cdn"])')

# a new machine: a fresh data directory, the catalog restored, the same bucket
export HUBMIRROR_DATA=$T/fresh
"$HUBMIRROR" restore --json "$T/catalog.bak" >"$T/restore.json"
check "restore on a fresh data directory finds every content (in the bucket)" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1])); assert d["blobs"] >= 4 and d["blobs_missing"] == 0, d' "$T/restore.json"
check "its local store holds nothing" test -z "$(find "$HUBMIRROR_DATA/store/blobs" -type f)"
check "serve starts on it" start_serve
resolve_all() {
	local bad=0 repo path sha got
	while read -r repo path sha; do
		got=$(curl -fsS "$M/$repo/resolve/main/$path" | sha256sum | cut -d' ' -f1)
		[ "$got" = "$sha" ] || { echo "# $repo/$path: got $got"; bad=1; }
	done <"$T/files"
	return "$bad"
}
check "it serves every file of every repo byte for byte" resolve_all
check "nothing was fetched from upstream again" test "$(curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c 'import json,sys; d=json.load(sys.stdin)["content_bytes"]; print(d["api"]+d["cdn"])')" = "$fetched"

# the gateway stopped under the running mirror
read -r _ _ asha < <(grep ' a.safetensors ' "$T/files")
find "$HUBMIRROR_DATA/store/blobs" -type f -delete   # (nothing of it in the cache)
check "the gateway stops" rgw_stop
code=$(curl -sS -o "$T/down.body" -D "$T/down.h" -w '%{http_code}' "$M/acme/llm/resolve/main/a.safetensors")
check "a content not in the cache: 503 ($code)" test "$code" = 503
check "with Retry-After" grep -qi '^Retry-After:' "$T/down.h"
check "its log says the bucket does not answer" grep -q "cannot read ${asha:0:12} from the bucket" "$T/serve.err"
check "the gateway starts again" rgw_start
check "the same request is served whole" bash -c "[ \"\$(curl -fsS '$M/acme/llm/resolve/main/a.safetensors' | sha256sum | cut -d' ' -f1)\" = $asha ]"
check "and every file" resolve_all
check "serve stops clean" serve_stops_clean
finish
