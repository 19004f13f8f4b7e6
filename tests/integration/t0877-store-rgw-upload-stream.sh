#!/usr/bin/env bash
# t0877-store-rgw-upload-stream: with a bucket behind the store, a user's upload of a content bigger
# than the local cache's bound goes straight into the bucket as it comes (a multipart upload fed as
# the PUT's body arrives, hashed as it comes, completed only once the bytes hashed to the object's oid),
# never whole on local disk:
# 1. serve killed mid-object (HUBMIRROR_TEST_KILL=store-upload: a part sent, the upload not completed)
#    during an LFS PUT: the store's temporary files hold no byte of it (on the code before, the whole
#    object was on local disk before its put began), nothing is under its id, verify passes, gc aborts
#    the unfinished upload;
# 2. the same upload after a restart lands in the bucket byte for byte, the cache keeping no copy and
#    the store's folder no more than the cache's bound; resolve serves it back from the bucket;
# 3. a PUT whose bytes are not the oid's (one byte changed) is refused, nothing under the id and no
#    upload left behind;
# 4. the JavaScript client's upload through Xet: the file rebuilt from its xorbs (kept in the bucket's
#    staging area: t0883) goes the same way, and reads back byte for byte;
# 5. two mirrors on the bucket: a commit of this one that counts on a content another put and dropped
#    re-stamps its object, and the other's gc keeps it (on the code before: deleted, checks 38-40).
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
need_node_module @huggingface/hub
check "a Ceph cluster with its gateway starts" start_rgw
rgw_store t0877 4M
printf 'hf_writer_acme_0001 hf:acme/*:write\n' >"$T/tokens"
chmod 600 "$T/tokens"
export HFU="$HM_SRC/tests/integration/helpers"
head -c 24000000 /dev/urandom >"$T/big.bin"
big=$(sha256sum <"$T/big.bin" | cut -d' ' -f1)
key="t0877/blobs/${big:0:2}/$big"
uploads() { rgw_s3 GET "/?prefix=t0877%2F&uploads=" >/dev/null; grep -o '<UploadId>' "$T/s3.body" | wc -l; }
tmp_bytes() { find "$HUBMIRROR_DATA/store/tmp" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
store_bytes() { find "$HUBMIRROR_DATA/store" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
upload() { # FILE: the SDK's upload of FILE to acme/up as big.bin (preupload, the LFS PUT, the commit)
	"$PY" - "$M" "$1" <<'PY'
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
api = Api(sys.argv[1], "hf_writer_acme_0001")
api.create_repo("acme/up", exist_ok=True)
ans, _ = api.upload_files("acme/up", [("big.bin", open(sys.argv[2], "rb").read())])
assert len(ans["commitOid"]) == 40, ans
PY
}

# 1. killed mid-object
HUBMIRROR_TEST_KILL=store-upload start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish
serve_pid=${_pids[-1]}
upload "$T/big.bin" >"$T/up1.out" 2>&1
wait "$serve_pid" 2>/dev/null; st=$?
check "serve killed itself mid-object, the upload streaming into the bucket (status $st)" test "$st" = 137
check "the store's temporary files hold no byte of it ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "no object under the content's id" test "$(rgw_s3 HEAD "/$key")" = 404
check "its multipart upload is left unfinished" test "$(uploads)" = 1
check "verify passes" "$HUBMIRROR" verify
"$HUBMIRROR" gc --wait --partial-age 0 --json >"$T/gc.json"
check "gc aborts the orphan upload" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["bucket_uploads_aborted"] == 1, d' "$T/gc.json"
check "none is left" test "$(uploads)" = 0

# 2. the same upload, whole
check "serve starts again" start_serve --local acme --tokens "$T/tokens" --p2p-listen off
check "the same upload lands" upload "$T/big.bin"
check "the content is in the bucket" test "$(rgw_s3 GET "/$key")" = 200
check "byte for byte" test "$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$big"
check "the cache keeps no copy of a content over its bound" test ! -e "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "the store's folder holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
check "resolve reads it back from the bucket, byte for byte" bash -c "[ \"\$(curl -fsS '$M/acme/up/resolve/main/big.bin' |
	sha256sum | cut -d' ' -f1)\" = $big ]"

# 3. bytes that are not the oid's
head -c 24000000 /dev/urandom >"$T/bad.bin"
bad=$(sha256sum <"$T/bad.bin" | cut -d' ' -f1)
"$PY" - "$M" "$T/bad.bin" >"$T/bad.out" 2>&1 <<'PY'
import hashlib, json, os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api, HubError, LFS_HEADERS
api = Api(sys.argv[1], "hf_writer_acme_0001")
c = open(sys.argv[2], "rb").read()
url = f"{api.endpoint}/acme/up.git/info/lfs/objects/batch"
body = {"operation": "upload", "transfers": ["basic"], "objects": [{"oid": hashlib.sha256(c).hexdigest(),
        "size": len(c)}], "hash_algo": "sha256", "ref": {"name": "main"}}
o = api.request("POST", url, json.dumps(body).encode(), LFS_HEADERS)["objects"][0]
changed = c[:20000000] + bytes([c[20000000] ^ 1]) + c[20000001:]
try:
    api.put(o["actions"]["upload"]["href"], changed)
except HubError as e:
    print("status", e.status)
    sys.exit(0 if e.status == 400 else 1)
print("taken")
sys.exit(1)
PY
st=$?
sed 's/^/# /' "$T/bad.out" | tail -3
check "a PUT whose bytes are not the oid's is refused" test "$st" = 0
check "nothing under its id" test "$(rgw_s3 HEAD "/t0877/blobs/${bad:0:2}/$bad")" = 404
check "its upload was aborted, not left" test "$(uploads)" = 0
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0

# 4. through Xet, with the official JS client
head -c 12000000 /dev/urandom >"$T/xet.bin"
xet=$(sha256sum <"$T/xet.bin" | cut -d' ' -f1)
n=0
while IFS= read -r line; do
	echo "# hfjs: $line"
	case $line in "ok - "*) n=$((n + 1)) ;; "not ok - "*) n=-100 ;; esac
done < <(cd "$JS" && timeout 300 node xetput.mjs --hub-url "$M" --token hf_writer_acme_0001 --repo acme/up \
	--file "$T/xet.bin" --path xet.bin 2>&1)
check "the JS client's Xet upload lands and reads back byte for byte" test "$n" -ge 2
check "the Xet upload's content is in the bucket" test "$(rgw_s3 GET "/t0877/blobs/${xet:0:2}/$xet")" = 200
check "byte for byte" test "$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$xet"
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "no upload is left" test "$(uploads)" = 0

check "verify passes" "$HUBMIRROR" verify
check "serve stops clean" serve_stops_clean

# 5. two mirrors on the bucket: this one (A) counts on a content another (B) put and then dropped,
#    which A's catalog did not name when A last wrote its live set: A's commit re-stamps the object,
#    so B's gc takes it for young and keeps it (on the code before, B's gc deleted it: A's file lost)
commit_file() { # MIRROR REPO PATH FILE: a commit of FILE (a small one, sent whole in the commit)
	"$PY" - "$@" <<'PY'
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
api = Api(sys.argv[1], "hf_writer_acme_0001")
api.create_repo(sys.argv[2], exist_ok=True)
ans, _ = api.upload_files(sys.argv[2], [(sys.argv[3], open(sys.argv[4], "rb").read())])
assert len(ans["commitOid"]) == 40, ans
PY
}
printf 'shared by two mirrors %s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/small.txt"
sm=$(sha256sum <"$T/small.txt" | cut -d' ' -f1)
B=$T/b
check "mirror B's serve starts on the same bucket" start_serve --data "$B" --local acme --tokens "$T/tokens" --p2p-listen off
check "B commits a small file" commit_file "$M" acme/b small.txt "$T/small.txt"
check "it is in the bucket" test "$(rgw_s3 HEAD "/t0877/blobs/${sm:0:2}/$sm")" = 200
check "B's gc writes B's live set, naming it" "$HUBMIRROR" gc --wait --data "$B" --grace 0
check "B deletes its repo" "$PY" -c 'import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
Api(sys.argv[1], "hf_writer_acme_0001").delete_repo("acme/b")' "$M"
check "B's serve stops" serve_stops_clean
sleep 1.1 # (the bucket's times are whole seconds: A's live set is written a second after the put)
check "A's gc writes A's live set, which does not name it" "$HUBMIRROR" gc --wait --grace 0
check "B's live set kept it" test "$(rgw_s3 HEAD "/t0877/blobs/${sm:0:2}/$sm")" = 200
sleep 1.1 # (and A's commit comes a second after A's live set)
check "A's serve starts again" start_serve --local acme --tokens "$T/tokens" --p2p-listen off
check "A commits the same file, counting on the bucket's object" commit_file "$M" acme/up small.txt "$T/small.txt"
"$HUBMIRROR" gc --wait --data "$B" --grace 0 --json >"$T/gcb.json"
check "B's gc, its catalog no longer naming it, leaves A's file" test "$(rgw_s3 HEAD "/t0877/blobs/${sm:0:2}/$sm")" = 200
rm -f "$HUBMIRROR_DATA/store/blobs/${sm:0:2}/$sm"
check "A serves it from the bucket" bash -c "[ \"\$(curl -fsS '$M/acme/up/resolve/main/small.txt' | sha256sum | cut -d' ' -f1)\" = $sm ]"
check "A's verify finds nothing missing" "$HUBMIRROR" verify
check "A's serve stops clean" serve_stops_clean
finish
