#!/usr/bin/env bash
# t0878-store-rgw-bundle-stream: a bundle imported into a mirror whose store is in a bucket: a content
# bigger than the local cache's bound goes from the archive straight into the bucket (a multipart
# upload fed as the entry is read, hashed as it comes, completed only once it hashed to its name),
# never whole on local disk:
# 1. the import killed mid-object (HUBMIRROR_TEST_KILL=store-upload: a part sent, the upload not
#    completed): the store's temporary files hold no byte of it (on the code before, the whole content
#    was on local disk before its put began), nothing is under its id, gc aborts the unfinished upload;
# 2. a bundle whose entry has one byte changed is refused: nothing under the id, no upload left;
# 3. the import whole: the content in the bucket byte for byte, the cache keeping no copy of it and
#    the store's folder no more than the bound; verify passes, and serve's resolve reads it back;
# 4. exported again from the bucket: the content read from it by ranges, byte for byte in the bundle,
#    never brought into the cache (on the code before, the export filled the cache with it, past its
#    bound).
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
size=30000000
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "big.safetensors", "size": $size, "seed": 11}]}
 ]}
JSON
# the bundle, from a mirror without a bucket
check "synced from the fake upstream" sync_from_fake hf:acme/big
check "export" "$HUBMIRROR" export --output "$T/b.tar" hf:acme/big
big=$(sha256sum <"$(find "$HUBMIRROR_DATA/store/blobs" -type f -size +1M | head -1)" | cut -d' ' -f1)
check "the content is in the bundle" test -n "$big"
# the same bundle with one byte of that content changed
"$PY" - "$T/b.tar" "$T/bad.tar" "$big" <<'PY'
import sys, tarfile
src, dst, sha = sys.argv[1:4]
data = bytearray(open(src, "rb").read())
with tarfile.open(src) as t:
    m = t.getmember("blobs/" + sha)
    at = m.offset_data + 20000000
data[at] ^= 1
open(dst, "wb").write(data)
PY

check "a Ceph cluster with its gateway starts" start_rgw
rgw_store t0878 4M
export HUBMIRROR_DATA=$T/in
unset HUBMIRROR_HF_UPSTREAM
key="t0878/blobs/${big:0:2}/$big"
uploads() { rgw_s3 GET "/?prefix=t0878%2F&uploads=" >/dev/null; grep -o '<UploadId>' "$T/s3.body" | wc -l; }
tmp_bytes() { find "$HUBMIRROR_DATA/store/tmp" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
store_bytes() { find "$HUBMIRROR_DATA/store" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }

# 1. killed mid-object
HUBMIRROR_TEST_KILL=store-upload "$HUBMIRROR" import "$T/b.tar" >"$T/import1.out" 2>&1; st=$?
check "the import killed itself mid-object, the entry streaming into the bucket (status $st)" test "$st" = 137
check "the store's temporary files hold no byte of it ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "no object under the content's id" test "$(rgw_s3 HEAD "/$key")" = 404
check "its multipart upload is left unfinished" test "$(uploads)" = 1
"$HUBMIRROR" gc --partial-age 0 --json >"$T/gc.json"
check "gc aborts the orphan upload" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["bucket_uploads_aborted"] == 1, d' "$T/gc.json"
check "none is left" test "$(uploads)" = 0

# 2. a changed byte
check "a bundle whose content has a changed byte is refused" bash -c "! '$HUBMIRROR' import '$T/bad.tar' >'$T/bad.out' 2>&1"
sed 's/^/# /' "$T/bad.out" | tail -2
check "as damaged" grep -q "does not hash to its name" "$T/bad.out"
check "nothing under the content's id" test "$(rgw_s3 HEAD "/$key")" = 404
check "its upload was aborted, not left" test "$(uploads)" = 0
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0

# 3. whole
check "the import" "$HUBMIRROR" import "$T/b.tar"
check "the content is in the bucket" test "$(rgw_s3 GET "/$key")" = 200
check "byte for byte" test "$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$big"
check "the cache keeps no copy of a content over its bound" test ! -e "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "the store's folder holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
check "no upload is left" test "$(uploads)" = 0
check "verify reads it back" "$HUBMIRROR" verify
# 4. exported again, from the bucket: read by ranges, never brought into the cache
check "an export from the bucket" "$HUBMIRROR" --log-level debug export --output "$T/b2.tar" hf:acme/big \
	2>"$T/export.err"
read_back=$(grep -F "${big:0:12}: " "$T/export.err" | grep -F "read from the bucket, not brought into the cache" |
	sed 's/.*: \([0-9]*\) bytes at.*/\1/' | awk '{ n += $1 } END { print n + 0 }')
check "its debug log names the bucket's reads of the content, every byte ($read_back of $size)" \
	test "$read_back" = "$size"
check "the cache still keeps no copy of it" test ! -e "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
check "the store's folder no more than the bound ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
check "the bundle holds it byte for byte" "$PY" - "$T/b2.tar" "$big" <<'PY'
import hashlib, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    f = t.extractfile("blobs/" + sys.argv[2])
    h = hashlib.sha256()
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
sys.exit(h.hexdigest() != sys.argv[2])
PY
check "serve starts" start_serve --p2p-listen off
check "resolve serves it byte for byte" bash -c "[ \"\$(curl -fsS '$M/acme/big/resolve/main/big.safetensors' |
	sha256sum | cut -d' ' -f1)\" = $big ]"
check "serve stops clean" serve_stops_clean
finish
