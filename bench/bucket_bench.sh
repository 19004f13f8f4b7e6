#!/usr/bin/env bash
# bucket_bench.sh [BUILD] [MIB] [RUNS]: one file of MIB MiB (default 1024) in a store kept in an S3
# bucket (a real single-node Ceph cluster and its RADOS Gateway, tests/integration/helpers/cephrgw.py,
# as root), read whole three ways, side by side in each run, RUNS times (default 3):
#   direct: a signed GET of the object from the gateway (curl --aws-sigv4), the mirror not involved;
#   cold:   GET /resolve through `hubmirror serve` with its local cache emptied first: the mirror
#           reads it from the bucket into its cache (hashing it) as it sends it;
#   warm:   the same GET again, the cache now holding it (sendfile from the local file).
# Every byte is read once per case (curl into /dev/null), each answer's length checked; the object's
# bytes were checked against the content's sha256 by the sync that put it there, and the mirror's
# cold read hashes them again before its cache keeps them. Prints each run, the median of each case
# and the ratios cold/direct and warm/direct; docs/benchmarks.md, "The store in an S3 bucket".
# The machine's load average is printed before and after: the numbers are only as quiet as it.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
mib=${2:-1024}
runs=${3:-3}
hm=${HM:-$src/$build/mirror/cli/hubmirror} # (HM: another binary, to compare)
py=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "needs root (the Ceph OSD)"; exit 1; }
T=$(mktemp -d /tmp/bucket-bench-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$T"' EXIT
export HUBMIRROR_DATA=$T/data HUBMIRROR_P2P_LISTEN=127.0.0.1:0
size=$((mib << 20))

# the cluster, its RAM store big enough for the object twice over
"$py" "$src/tests/integration/helpers/cephrgw.py" "$T/ceph" --ready-file "$T/ceph.ready" \
	--memstore-bytes $((2 * size + (1 << 30))) 2>"$T/ceph.err" &
pids+=($!)
while [ ! -s "$T/ceph.ready" ]; do
	kill -0 "${pids[0]}" 2>/dev/null || { cat "$T/ceph.err"; exit 1; }
	sleep 0.2
done
eval "$("$py" -c 'import json, shlex, sys
d = json.load(open(sys.argv[1]))
for k in ("endpoint", "bucket", "access_key", "secret_key"):
    print("RGW_%s=%s" % (k.upper(), shlex.quote(d[k])))' "$T/ceph.ready")"
export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
printf '[store]\nurl = s3://%s/bench\ns3-endpoint = %s\ncache-size = %s\n' "$RGW_BUCKET" "$RGW_ENDPOINT" \
	$((2 * size)) >"$T/hm.conf"
export HUBMIRROR_CONFIG=$T/hm.conf

cat >"$T/spec.json" <<JSON
{"repos": [{"hub": "hf", "type": "model", "id": "bench/bucket",
  "files": [{"path": "model.safetensors", "size": $size, "seed": 11}]}]}
JSON
"$py" "$src/tests/fakehub/fakehub.py" --repos "$T/spec.json" --ready-file "$T/fake" --quiet >/dev/null 2>&1 &
pids+=($!)
while [ ! -s "$T/fake" ]; do sleep 0.1; done
export HUBMIRROR_HF_UPSTREAM=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$T/fake")
"$hm" add hf:bench/bucket >/dev/null
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); syncing $mib MiB into the bucket"
"$hm" sync >/dev/null
sha=$("$py" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"select sha256 from files where path = ?", ("model.safetensors",)).fetchone()[0])' "$HUBMIRROR_DATA/catalog.db")
blob=$HUBMIRROR_DATA/store/blobs/${sha:0:2}/$sha
"$hm" serve --listen 127.0.0.1:0 --ready-file "$T/url" 2>"$T/serve.err" &
pids+=($!)
while [ ! -s "$T/url" ]; do sleep 0.1; done
M=$(cat "$T/url")

# CASE: seconds of one whole read into /dev/null (its length checked)
get() {
	local out
	case $1 in
	direct) out=$(curl -fsS -o /dev/null -w '%{size_download} %{time_total}' \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 \
		--user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$RGW_ENDPOINT/$RGW_BUCKET/bench/blobs/${sha:0:2}/$sha") ;;
	*) out=$(curl -fsS -o /dev/null -w '%{size_download} %{time_total}' \
		"$M/bench/bucket/resolve/main/model.safetensors") ;;
	esac
	[ "${out% *}" = "$size" ] || { echo "$1: read ${out% *} bytes of $size" >&2; exit 1; }
	echo "${out#* }"
}
: >"$T/times"
for r in $(seq 1 "$runs"); do
	d1=$(get direct)
	rm -f "$blob"
	[ ! -e "$blob" ]
	c=$(get cold)
	# the cold read's answer ends once its bytes are verified; the cache's copy is published after
	# its fsync: a warm read before that would be a second cold one
	for _ in $(seq 600); do [ -e "$blob" ] && break; sleep 0.1; done
	[ -e "$blob" ] || { echo "the cold read left nothing in the cache" >&2; exit 1; }
	w=$(get warm)
	echo "run $r: direct $d1 s, cold $c s, warm $w s"
	echo "$d1 $c $w" >>"$T/times"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$T/times" "$mib" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
mib = int(sys.argv[2])
d, c, w = (statistics.median(col) for col in zip(*rows))
for name, t in (("direct (RGW, signed)", d), ("mirror cold (bucket)", c), ("mirror warm (cache)", w)):
    print("%-22s median %6.2f s  %7.1f MiB/s" % (name, t, mib / t))
print("ratios: cold/direct %.2fx, warm/direct %.2fx" % (c / d, w / d))
PY
