#!/usr/bin/env bash
# t0860-store-rgw: the real Ceph cluster the store's tests run against (helpers/cephrgw.py: one monitor,
# one OSD on memstore, the RADOS Gateway on a loopback port, a user and a bucket): it starts, answers
# requests signed with its user's keys (curl's own SigV4) and refuses others, its gateway stops and
# starts again alone (rgw_stop, rgw_start) and serves what it held, and when stopped it leaves no
# daemon and no file behind.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
echo "# the cluster started in $RGW_START_S s"
s3curl() {
	curl -s -o "$T/body" -w '%{http_code}' -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--aws-sigv4 aws:amz:us-east-1:s3 "$@"
}
echo hello >"$T/hello"
check "a signed PUT into the bucket" test "$(s3curl --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" -T "$T/hello" \
	"$RGW_ENDPOINT/$RGW_BUCKET/probe/hello")" = 200
check "a signed GET reads it back" test "$(s3curl --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" \
	"$RGW_ENDPOINT/$RGW_BUCKET/probe/hello")" = 200
check "byte for byte" cmp -s "$T/body" "$T/hello"
check "a wrong secret is refused (403)" test "$(s3curl --user "$RGW_ACCESS_KEY:wrong$RGW_SECRET_KEY" \
	"$RGW_ENDPOINT/$RGW_BUCKET/probe/hello")" = 403
check "an anonymous GET is refused (403)" test "$(curl -s -o /dev/null -w '%{http_code}' \
	"$RGW_ENDPOINT/$RGW_BUCKET/probe/hello")" = 403
# The gateway alone stopped and started again on its port (under a running mirror, next): it is
# refused while down, and serves what it held once up.
check "the gateway stops" rgw_stop
check "a request to it is refused" test "$(curl -s -o /dev/null -w '%{http_code}' "$RGW_ENDPOINT/")" = 000
check "it starts again" rgw_start
check "and serves what it held" test "$(s3curl --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" \
	"$RGW_ENDPOINT/$RGW_BUCKET/probe/hello")" = 200
check "byte for byte" cmp -s "$T/body" "$T/hello"
# Stopped as at a test's exit: every daemon gone, its folder removed.
kill -TERM "$RGW_PID"
wait "$RGW_PID"
check "the helper stops cleanly" test $? = 0
check "no Ceph daemon of this cluster is left" bash -c '! pgrep -f "$T/ceph/ceph.conf" >/dev/null'
check "its folder is removed" test ! -e "$T/ceph"
finish
