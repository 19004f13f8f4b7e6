#!/usr/bin/env bash
# t0864-store-rgw-kill: a sync into a Ceph RGW bucket killed (kill -9) mid-object leaves no object under
# a content id whose bytes are not verified: killed while fetching a content (its partial file on
# local disk, nothing in the bucket), and killed while uploading it (HUBMIRROR_TEST_KILL=store-upload,
# tests/README.md: its multipart upload begun, a part sent, not completed). verify passes; gc removes
# the partial file and aborts the unfinished upload; the next sync puts the content there, byte for byte.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "big.safetensors", "size": 36000000, "seed": 7}]}
 ]}
JSON
rgw_store t0864 64M
big=$("$PY" -c 'import hashlib, sys
sys.path.insert(0, sys.argv[1])
from content import Blob
b, h = Blob(36000000, seed=7), hashlib.sha256()
for c in b.iter_range(0, b.size):
    h.update(c)
print(h.hexdigest())' "$HM_SRC/tests/fakehub")
key="t0864/blobs/${big:0:2}/$big"
uploads() { rgw_s3 GET "/?prefix=t0864%2F&uploads=" >/dev/null; grep -o '<UploadId>' "$T/s3.body" | wc -l; }
part() { find "$HUBMIRROR_DATA/store/tmp" -name "$big.part" -size +0 | grep -q .; }
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/big >/dev/null

# 1. killed mid-fetch: the content's bytes come slowly; once some are in its partial file, kill -9
curl -fsS -X POST -d '{"match": "big.safetensors", "kind": "slow", "rate": 2000000, "count": 1}' \
	"$FAKE_API/_fake/faults" >/dev/null
"$HUBMIRROR" sync >"$T/sync1.out" 2>&1 &
pid=$!
for _ in $(seq 600); do part && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
check "the fetch is under way (its partial file grows)" part
kill -9 "$pid"; wait "$pid" 2>/dev/null
check "killed mid-fetch: no object under the content's id" test "$(rgw_s3 HEAD "/$key")" = 404
check "and no upload of it begun" test "$(uploads)" = 0
check "verify passes" "$HUBMIRROR" verify
"$HUBMIRROR" gc --partial-age 0 --json >"$T/gc1.json"
check "gc removes the partial file" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["partials_removed"] >= 1, d' "$T/gc1.json"
check "the content's partial file is gone" bash -c "! ls '$HUBMIRROR_DATA/store/tmp' | grep -q '$big'"

# 2. killed mid-upload: the content fetched and verified, its upload to the bucket multipart and begun
HUBMIRROR_TEST_KILL=store-upload "$HUBMIRROR" sync >"$T/sync2.out" 2>&1; st=$?
check "the sync killed itself mid-upload (status $st)" test "$st" = 137
check "killed mid-upload: no object under the content's id" test "$(rgw_s3 HEAD "/$key")" = 404
check "its multipart upload is left unfinished" test "$(uploads)" = 1
check "verify passes" "$HUBMIRROR" verify
"$HUBMIRROR" gc --json >"$T/gc2.json"
check "gc with the default age (a week) keeps a young upload (it may be a running writer's)" test "$(uploads)" = 1
"$HUBMIRROR" gc --partial-age 0 --json >"$T/gc3.json"
check "gc aborts the orphan upload" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["bucket_uploads_aborted"] == 1, d' "$T/gc3.json"
check "none is left" test "$(uploads)" = 0
check "no object under the content's id still" test "$(rgw_s3 HEAD "/$key")" = 404

# 3. the next sync completes it
check "the next sync" "$HUBMIRROR" sync
check "the content is in the bucket" test "$(rgw_s3 GET "/$key")" = 200
check "byte for byte" test "$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$big"
check "no upload left" test "$(uploads)" = 0
check "verify passes" "$HUBMIRROR" verify
"$HUBMIRROR" gc --partial-age 0 --json >"$T/gc4.json"
check "gc then finds nothing to remove" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1]))
assert d["blobs_removed"] == 0 and d["partials_removed"] == 0 and d["bucket_uploads_aborted"] == 0, d' "$T/gc4.json"
check "and the content stays" test "$(rgw_s3 HEAD "/$key")" = 200
finish
