#!/usr/bin/env bash
# t0861-store-s3: the store's S3 client (store/s3.h) against Ceph's RADOS Gateway (a real cluster,
# helpers/cephrgw.py), through tests/unit/store-s3-check.c which links the store room: a 64 MiB
# object put by multipart upload (8 MiB parts, several in flight) and read back by ranges byte for
# byte (nine ranges also at once on a libuv loop), listings page by page, deletes, an upload left unfinished by a writer that died found and
# aborted, a wrong secret named, the gateway stopped under an upload and started again 2 s later
# (the parts sent again until it is back, the object whole). The AWS CLI then sees the bucket as the client left it: empty.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
CHECK=$HM_BUILD/tests/unit/store-s3-check
[ -x "$CHECK" ] || skip "store-s3-check is not built"
check "a Ceph cluster with its gateway starts" start_rgw
echo "# the cluster started in $RGW_START_S s"
AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY RGW_GATEWAY_FILE=$T/ceph.ready.gateway \
	"$CHECK" "$RGW_ENDPOINT" "$RGW_BUCKET" "t0861/store" >"$T/check.out" 2>&1
rc=$?
sed 's/^/# /' "$T/check.out"
check "the S3 client's checks against the gateway pass" test "$rc" = 0
check "they ran" grep -q '^ok' "$T/check.out"
if [ -x /usr/bin/aws ]; then
	export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY AWS_DEFAULT_REGION=us-east-1
	export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
	check "the AWS CLI lists the bucket" /usr/bin/aws --endpoint-url "$RGW_ENDPOINT" s3api list-objects-v2 \
		--bucket "$RGW_BUCKET" --output json --no-cli-pager >"$T/ls.json"
	check "nothing is left in it" bash -c '! grep -q "\"Key\"" "$T/ls.json"'
	check "the AWS CLI lists the unfinished uploads" /usr/bin/aws --endpoint-url "$RGW_ENDPOINT" s3api \
		list-multipart-uploads --bucket "$RGW_BUCKET" --output json --no-cli-pager >"$T/up.json"
	check "no upload is left unfinished" bash -c '! grep -q "\"UploadId\"" "$T/up.json"'
fi
finish
