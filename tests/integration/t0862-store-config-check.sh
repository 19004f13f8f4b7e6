#!/usr/bin/env bash
# t0862-store-config-check: `hubmirror config check` reaches the store's bucket ([store] url,
# s3-endpoint, the keys from the environment or a credentials file) on Ceph's RADOS Gateway (a real
# cluster, helpers/cephrgw.py) with a probe object it writes, reads, lists and deletes, and says
# in one line, with the file and line, what is wrong: an endpoint that does not answer, a wrong
# secret, an unknown access key, no such bucket, keys that may not write, keys that may not delete.
# The secret key is never printed.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
"$HUBMIRROR" init --data "$HUBMIRROR_DATA" >/dev/null
conf=$T/hm.conf
write_conf() { # URL ENDPOINT [CREDENTIALS-FILE]
	{
		echo "[store]"
		echo "url = $1"
		echo "s3-endpoint = $2"
		[ -n "${3:-}" ] && echo "credentials-file = $3"
	} >"$conf"
}
# config_check NAME WANT-STATUS: run it with the test's environment; its output in $T/out
config_check() {
	local got
	"$HUBMIRROR" config check "$conf" >"$T/out" 2>&1
	got=$?
	sed 's/^/#   /' "$T/out"
	if [ "$got" -eq "$2" ]; then ok "$1"; else fail "$1 (status $got, expected $2)"; fi
	! grep -qF "$RGW_SECRET_KEY" "$T/out" || fail "$1: the secret key is printed"
	! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/out" || fail "$1: a sanitizer's report"
}
said() { grep -q -- "$1" "$T/out"; }
lines() { test "$(grep -c 'hubmirror: ' "$T/out")" = "$1"; }

export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
write_conf "s3://$RGW_BUCKET/t0862" "$RGW_ENDPOINT"
config_check "the right keys from the environment pass" 0
check "it says the bucket was written, read, listed and deleted" said "written, read, listed and deleted"
check "the probe object is gone" bash -c '! curl -s -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
	--aws-sigv4 aws:amz:us-east-1:s3 --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" \
	"$RGW_ENDPOINT/$RGW_BUCKET?list-type=2&prefix=t0862%2F" | grep -q "<Key>"'

AWS_SECRET_ACCESS_KEY=wrong$RGW_SECRET_KEY config_check "a wrong secret fails" 1
check "named in one line at [store] url's line" said "hm.conf:2: \[store\] url: .*refuses the keys from the environment.*SignatureDoesNotMatch"
check "one line" lines 1
AWS_ACCESS_KEY_ID=NOSUCHKEY config_check "an unknown access key fails" 1
check "named: InvalidAccessKeyId" said "hm.conf:2: \[store\] url: .*no such access key (InvalidAccessKeyId)"

printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" >"$T/creds"
chmod 600 "$T/creds"
write_conf "s3://$RGW_BUCKET/t0862" "$RGW_ENDPOINT" "$T/creds"
AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= config_check "the right keys from a credentials file pass" 0
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = nope\n' "$RGW_ACCESS_KEY" >"$T/creds.bad"
write_conf "s3://$RGW_BUCKET/t0862" "$RGW_ENDPOINT" "$T/creds.bad"
config_check "a wrong secret in the credentials file fails" 1
check "named at [store] credentials-file's line" said "hm.conf:4: \[store\] credentials-file: .*refuses the keys from $T/creds.bad"
write_conf "s3://$RGW_BUCKET/t0862" "$RGW_ENDPOINT" "$T/creds.none"
config_check "a credentials file that is not there fails" 1
check "named with its path" said "hm.conf:4: \[store\] credentials-file: '$T/creds.none': No such file"

write_conf "s3://no-such-bucket-t0862/x" "$RGW_ENDPOINT"
config_check "a bucket that is not there fails" 1
check "named: no bucket" said "hm.conf:2: \[store\] url: .* has no bucket 'no-such-bucket-t0862' (NoSuchBucket)"
port=$(free_port)
write_conf "s3://$RGW_BUCKET/t0862" "http://127.0.0.1:$port"
config_check "an endpoint that does not answer fails" 1
check "named at [store] s3-endpoint's line" said "hm.conf:3: \[store\] s3-endpoint: http://127.0.0.1:$port does not answer"
write_conf "s3:/$RGW_BUCKET" "$RGW_ENDPOINT"
config_check "a URL that is not s3://BUCKET fails" 1
check "named" said "hm.conf:2: \[store\] url: 's3:/$RGW_BUCKET': not s3://BUCKET"
write_conf "s3://$RGW_BUCKET/t0862" "$RGW_ENDPOINT"
AWS_ACCESS_KEY_ID= config_check "no keys at all fails" 1
check "named" said "hm.conf:2: \[store\] url: no keys to the bucket"

# Another user of the gateway: the bucket is not theirs (no write), then a policy lets them write,
# read and list but not delete.
other_key=HMOTHER$RANDOM$RANDOM other_secret=othersecret$RANDOM$RANDOM$RANDOM
check "a second user is made" bash -c "radosgw-admin -c '$RGW_CONF' user create --uid=other --display-name=other \
	--access-key='$other_key' --secret='$other_secret' >/dev/null 2>&1"
AWS_ACCESS_KEY_ID=$other_key AWS_SECRET_ACCESS_KEY=$other_secret config_check "keys that may not write fail" 1
check "named: may not write (AccessDenied)" said "hm.conf:2: \[store\] url: the keys from .* may not write objects in s3://$RGW_BUCKET/t0862 (AccessDenied)"
cat >"$T/policy.json" <<JSON
{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/other"]},
 "Action": ["s3:PutObject", "s3:GetObject", "s3:ListBucket"],
 "Resource": ["arn:aws:s3:::$RGW_BUCKET", "arn:aws:s3:::$RGW_BUCKET/*"]}]}
JSON
if [ -x /usr/bin/aws ]; then
	check "a policy lets the second user write, read and list" env AWS_CONFIG_FILE=/dev/null \
		AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_DEFAULT_REGION=us-east-1 /usr/bin/aws --endpoint-url "$RGW_ENDPOINT" \
		s3api put-bucket-policy --bucket "$RGW_BUCKET" --policy "file://$T/policy.json"
	AWS_ACCESS_KEY_ID=$other_key AWS_SECRET_ACCESS_KEY=$other_secret config_check "keys that may not delete fail" 1
	check "named: may not delete (AccessDenied)" said "hm.conf:2: \[store\] url: the keys from .* may not delete objects in s3://$RGW_BUCKET/t0862 (AccessDenied)"
fi
finish
