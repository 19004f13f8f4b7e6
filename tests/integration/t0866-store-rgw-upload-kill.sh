#!/usr/bin/env bash
# t0866-store-rgw-upload-kill: serve, its store in a Ceph RGW bucket, killed (kill -9) in the middle of
# a user's upload (huggingface_hub's way: preupload, the LFS PUT, the commit) while the uploaded content
# goes into the bucket (HUBMIRROR_TEST_KILL=store-upload, tests/README.md: its multipart upload begun,
# not completed): no object under the content's id, verify passes, gc aborts the unfinished upload;
# after a restart the same upload lands, and the content reads back byte for byte from the bucket.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
rgw_store t0866 64M
printf 'hf_writer_acme_0001 hf:acme/*:write\n' >"$T/tokens"
chmod 600 "$T/tokens"
export HFU="$HM_SRC/tests/integration/helpers"
head -c 24000000 /dev/urandom >"$T/big.bin"
big=$(sha256sum <"$T/big.bin" | cut -d' ' -f1)
key="t0866/blobs/${big:0:2}/$big"
uploads() { rgw_s3 GET "/?prefix=t0866%2F&uploads=" >/dev/null; grep -o '<UploadId>' "$T/s3.body" | wc -l; }
upload() { # the SDK's upload of big.bin to acme/up; its status
	"$PY" - "$M" "$T/big.bin" <<'PY'
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
api = Api(sys.argv[1], "hf_writer_acme_0001")
api.create_repo("acme/up", exist_ok=True)
ans, _ = api.upload_files("acme/up", [("big.bin", open(sys.argv[2], "rb").read())])
assert len(ans["commitOid"]) == 40, ans
PY
}

HUBMIRROR_TEST_KILL=store-upload start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish
serve_pid=${_pids[-1]}
upload >"$T/up1.out" 2>&1
wait "$serve_pid" 2>/dev/null; st=$?
check "serve killed itself mid-upload into the bucket (status $st)" test "$st" = 137
check "no object under the content's id" test "$(rgw_s3 HEAD "/$key")" = 404
check "its multipart upload is left unfinished" test "$(uploads)" = 1
check "verify passes" "$HUBMIRROR" verify
"$HUBMIRROR" gc --partial-age 0 --json >"$T/gc.json"
check "gc aborts the orphan upload" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["bucket_uploads_aborted"] == 1, d' "$T/gc.json"
check "none is left" test "$(uploads)" = 0

check "serve starts again" start_serve --local acme --tokens "$T/tokens" --p2p-listen off
check "the same upload lands" upload
check "the content is in the bucket, byte for byte" bash -c "[ \"\$(curl -fsS -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
	--aws-sigv4 aws:amz:us-east-1:s3 --user '$RGW_ACCESS_KEY:$RGW_SECRET_KEY' '$RGW_ENDPOINT/$RGW_BUCKET/$key' |
	sha256sum | cut -d' ' -f1)\" = $big ]"
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
check "resolve reads it back from the bucket, byte for byte" bash -c "[ \"\$(curl -fsS '$M/acme/up/resolve/main/big.bin' |
	sha256sum | cut -d' ' -f1)\" = $big ]"
check "verify passes" "$HUBMIRROR" verify
check "serve stops clean" serve_stops_clean
finish
