#!/usr/bin/env bash
# t0872-store-rgw-stream: with a bucket behind the store, a content bigger than the local cache's
# bound is fetched straight into the bucket (a multipart upload fed as the bytes come, hashed as they
# come, completed only once they hashed to the content), never whole on local disk:
# 1. killed mid-upload (HUBMIRROR_TEST_KILL=store-upload: a part sent, the upload not completed),
#    the partial file holds no byte (on the code before it held the whole content: the fetch went to
#    local disk first) and nothing is under the content's id; the next sync starts from zero;
# 2. a reset mid-fetch is resumed from where it broke into the same upload (upstream serves the
#    content's bytes about once, not once and a half);
# 3. a corrupt byte: the upload is aborted (nothing under the id, no upload left), the content
#    fetched again and completed;
# the content's partial file never holding a byte (polled during a slow fetch); the object read
# back byte for byte with curl's own SigV4, served whole and in ranges by the hub API; gc leaves no upload.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
size=30000000
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "big.safetensors", "size": $size, "seed": 8}]}
 ]}
JSON
rgw_store t0872 4M
big=$("$PY" -c 'import hashlib, sys
sys.path.insert(0, sys.argv[1])
from content import Blob
b, h = Blob(int(sys.argv[2]), seed=8), hashlib.sha256()
for c in b.iter_range(0, b.size):
    h.update(c)
print(h.hexdigest())' "$HM_SRC/tests/fakehub" "$size")
key="t0872/blobs/${big:0:2}/$big"
uploads() { rgw_s3 GET "/?prefix=t0872%2F&uploads=" >/dev/null; grep -o '<UploadId>' "$T/s3.body" | wc -l; }
store_bytes() { find "$HUBMIRROR_DATA/store" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
part_bytes() { find "$HUBMIRROR_DATA/store/tmp" -name "$big.part" -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
content_bytes() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)["content_bytes"]; print(d.get("api", 0) + d.get("cdn", 0))'; }
fault() { curl -fsS -X POST -d "$1" "$FAKE_API/_fake/faults" >/dev/null; }
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/big >/dev/null

# 1. killed mid-upload
HUBMIRROR_TEST_KILL=store-upload "$HUBMIRROR" sync >"$T/sync1.out" 2>&1; st=$?
check "the sync killed itself mid-upload (status $st)" test "$st" = 137
check "its partial file holds no byte of the content ($(part_bytes))" test "$(part_bytes)" = 0
check "the store's folder holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
check "no object under the content's id" test "$(rgw_s3 HEAD "/$key")" = 404
check "its multipart upload is left unfinished" test "$(uploads)" = 1

# 2. a slow fetch with a reset halfway: the local disk watched while it runs
fault '{"match": "big.safetensors", "kind": "reset", "bytes": 15000000, "count": 1}'
fault '{"match": "big.safetensors", "kind": "slow", "rate": 6000000, "count": 2}'
before=$(content_bytes)
"$HUBMIRROR" sync >"$T/sync2.out" 2>&1 &
pid=$!
peak=0 seen=0
while kill -0 "$pid" 2>/dev/null; do
	n=$(part_bytes)
	[ -e "$HUBMIRROR_DATA/store/tmp/$big.part" ] && seen=1
	[ "$n" -gt "$peak" ] && peak=$n
	sleep 0.1
done
wait "$pid"; st=$?
sed 's/^/# /' "$T/sync2.out" | tail -5
check "the sync completes" test "$st" = 0
check "the fetch was watched (its partial file seen)" test "$seen" = 1
check "its partial file never held a byte (peak $peak bytes)" test "$peak" = 0
served=$(( $(content_bytes) - before ))
check "the reset was resumed into the same upload (upstream served $served bytes of $size)" \
	test "$served" -lt $((size + size / 4))
check "the content is in the bucket" test "$(rgw_s3 GET "/$key")" = 200
check "byte for byte" test "$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$big"
check "the cache keeps no copy of a content over its bound" \
	test ! -e "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
check "no partial file is left" test -z "$(ls -A "$HUBMIRROR_DATA/store/tmp")"
"$HUBMIRROR" gc --partial-age 0 --json >"$T/gc.json"
check "gc aborts the killed sync's upload" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["bucket_uploads_aborted"] == 1, d' "$T/gc.json"
check "no upload is left" test "$(uploads)" = 0
check "verify reads it back" "$HUBMIRROR" verify

# 3. a corrupt byte: the upload aborted, fetched again
rgw_s3 DELETE "/$key" >/dev/null
"$HUBMIRROR" verify >/dev/null 2>&1 # (marks it missing: the next sync fetches it)
fault '{"match": "big.safetensors", "kind": "corrupt", "offset": 20000000, "count": 1}'
check "a sync whose first fetch is corrupt" bash -c '"$HUBMIRROR" sync >"$T/sync3.out" 2>&1'
check "finds the mismatch and fetches again" grep -q "hash mismatch, fetching again" "$T/sync3.out"
check "the content is in the bucket, right" test "$(rgw_s3 GET "/$key")" = 200
check "byte for byte" test "$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$big"
check "no upload left behind (the corrupt one was aborted)" test "$(uploads)" = 0

check "serve starts" start_serve
curl -fsS "$M/acme/big/resolve/main/big.safetensors" >"$T/got"
check "resolve serves it byte for byte" test "$(sha256sum <"$T/got" | cut -d' ' -f1)" = "$big"
curl -fsS -H 'Range: bytes=29000000-' "$M/acme/big/resolve/main/big.safetensors" >"$T/tail"
check "and its last megabyte" cmp -s "$T/tail" <(tail -c 1000000 "$T/got")
check "serve stops clean" serve_stops_clean
finish
