# bench/lib.sh: what the shell benchmarks share (torrent_bench.sh, bucket_bench.sh), sourced once they
# set src (the checkout), py (python3), T (their folder) and pids (the processes their exit trap kills
# before it removes $T).

# bench_start_rgw MEMSTORE-BYTES: a real single-node Ceph cluster and its RADOS Gateway in $T/ceph
# (tests/integration/helpers/cephrgw.py, as root), its RAM store MEMSTORE-BYTES big, its helper's pid
# added to pids (stopping it stops the cluster). Returns once the cluster is ready, with RGW_ENDPOINT,
# RGW_BUCKET, RGW_ACCESS_KEY and RGW_SECRET_KEY set from its ready file and the keys exported as
# AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, as an operator's would be; exits, its log shown, if the
# helper ends first.
bench_start_rgw() {
	local pid
	"$py" "$src/tests/integration/helpers/cephrgw.py" "$T/ceph" --ready-file "$T/ceph.ready" \
		--memstore-bytes "$1" 2>"$T/ceph.err" &
	pid=$!
	pids+=("$pid")
	while [ ! -s "$T/ceph.ready" ]; do
		kill -0 "$pid" 2>/dev/null || { cat "$T/ceph.err"; exit 1; }
		sleep 0.2
	done
	eval "$("$py" -c 'import json, shlex, sys
d = json.load(open(sys.argv[1]))
for k in ("endpoint", "bucket", "access_key", "secret_key"):
    print("RGW_%s=%s" % (k.upper(), shlex.quote(d[k])))' "$T/ceph.ready")"
	export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
}
