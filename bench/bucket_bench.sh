#!/usr/bin/env bash
# bucket_bench.sh [BUILD] [MIB] [RUNS]: one file of MIB MiB (default 1024) in a store kept in an S3
# bucket (a real single-node Ceph cluster and its RADOS Gateway, tests/integration/helpers/cephrgw.py,
# as root), read whole several ways, side by side in each run, RUNS times (default 5):
#   direct:   a signed GET of the object from the gateway (curl --aws-sigv4), the mirror not involved;
#   cold:     GET /resolve through `hubmirror serve` with its local cache emptied first: a worker reads
#             it from the bucket into its cache (hashing it) as the answer follows it;
#   cold-base: the same through a second serve of another binary (HM_BASE=path, optional), the two
#             interleaved in each run so that both see the same load;
#   straight: (the cache emptied) the range from 4 MiB to the end, which serve reads straight from the
#             bucket on its loop (ranged GETs of 8 MiB into a spool the answer follows): no hash, no
#             cache copy, a reference for what receiving and sending alone cost;
#   big:      (the cache emptied) GET /resolve whole through a second serve of the same binary whose
#             cache is smaller than the file (cache-size MIB/2): read straight as `straight` is, and
#             hashed as it passes (on a worker, behind the spool), its last byte held until the whole matched;
#   warm:     the whole file again, the cache now holding it (sendfile from the local file).
# Every byte is read once per case (curl into /dev/null), each answer's length checked; the object's
# bytes were checked against the content's sha256 by the sync that put it there, and the mirror's
# cold read hashes them again before its cache keeps them. For each case it prints the seconds and
# the CPU seconds each process spent in it (the gateway, the OSD, serve, the client curl): on a
# machine whose cores they all share, the CPU is where the time goes. Medians of each case, the
# ratios to direct; docs/benchmarks.md, "The store in an S3 bucket". The load average is printed
# before and after: the seconds are only as quiet as it (the CPU seconds much less affected).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
mib=${2:-1024}
runs=${3:-5}
hm=${HM:-$src/$build/mirror/cli/hubmirror} # (HM: another binary)
base=${HM_BASE:-}
py=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "needs root (the Ceph OSD)"; exit 1; }
T=$(mktemp -d /tmp/bucket-bench-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$T"' EXIT
export HUBMIRROR_DATA=$T/data HUBMIRROR_P2P_LISTEN=127.0.0.1:0
size=$((mib << 20))

# the cluster, its RAM store big enough for the object twice over
. "$src/bench/lib.sh"
bench_start_rgw $((2 * size + (1 << 30)))
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
start_serve() { # BIN URL-FILE: a serve on a free port, its pid in $spid
	"$1" serve --listen 127.0.0.1:0 --ready-file "$2" 2>>"$T/serve.err" &
	spid=$!
	pids+=($spid)
	while [ ! -s "$2" ]; do kill -0 $spid || exit 1; sleep 0.1; done
}
start_serve "$hm" "$T/url"
M=$(cat "$T/url") SP=$spid
sed "s/^cache-size = .*/cache-size = $((size / 2))/" "$T/hm.conf" >"$T/hm-small.conf"
HUBMIRROR_CONFIG=$T/hm-small.conf start_serve "$hm" "$T/url.small"
MS=$(cat "$T/url.small") SPS=$spid
cases="direct straight big cold warm"
if [ -n "$base" ]; then
	start_serve "$base" "$T/url.base"
	MB=$(cat "$T/url.base") SPB=$spid
	cases="direct straight big cold-base cold warm"
fi
# this cluster's daemons (other Ceph clusters may run beside it): by their configuration's path
rgw=$(pgrep -f "^radosgw -c $T/ceph/ceph.conf")
osd=$(pgrep -f "^ceph-osd -c $T/ceph/ceph.conf")
[ -n "$rgw" ] && [ -n "$osd" ] || { echo "cannot find the gateway and the OSD"; exit 1; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# CASE: one whole read into /dev/null (its length checked): "seconds rgw osd serve client" (CPU seconds)
get() {
	local out want=$size sp=$SP url="$M/bench/bucket/resolve/main/model.safetensors" a b c
	local range=()
	case $1 in
	direct) url="$RGW_ENDPOINT/$RGW_BUCKET/bench/blobs/${sha:0:2}/$sha"; sp= ;;
	cold-base) url="$MB/bench/bucket/resolve/main/model.safetensors"; sp=$SPB ;;
	big) url="$MS/bench/bucket/resolve/main/model.safetensors"; sp=$SPS ;;
	straight) range=(-H "Range: bytes=$((4 << 20))-"); want=$((size - (4 << 20))) ;;
	esac
	case $1 in cold* | straight | big) rm -f "$blob"; [ ! -e "$blob" ] ;; esac
	a=$(ticks "$rgw") b=$(ticks "$osd") c=$([ -n "$sp" ] && ticks "$sp" || echo 0)
	if [ "$1" = direct ]; then
		out=$( { /usr/bin/time -f '%U %S' curl -fsS -o /dev/null -w '%{size_download} %{time_total}\n' \
			-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 \
			--user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$url"; } 2>&1 )
	else
		out=$( { /usr/bin/time -f '%U %S' curl -fsS -o /dev/null -w '%{size_download} %{time_total}\n' \
			"${range[@]}" "$url"; } 2>&1 )
	fi
	set -- $out
	[ "$1" = "$want" ] || { echo "read $1 bytes of $want: $out" >&2; exit 1; }
	[ -n "$sp" ] && c=$(( $(ticks "$sp") - c ))
	echo "$2 $(( $(ticks "$rgw") - a )) $(( $(ticks "$osd") - b )) $c $3 $4" |
		awk -v hz="$hz" '{ printf "%s %.2f %.2f %.2f %.2f", $1, $2 / hz, $3 / hz, $4 / hz, $5 + $6 }'
}
# the cold read's answer ends once its bytes are verified; the cache's copy is published after its
# fsync: a warm read before that would be a second cold one (serve's CPU is counted to the answer's end)
wait_copy() {
	for _ in $(seq 600); do [ -e "$blob" ] && return 0; sleep 0.1; done
	echo "the cold read left nothing in the cache" >&2
	exit 1
}
: >"$T/times"
for r in $(seq 1 "$runs"); do
	line="run $r:"
	order=$cases
	# the two cold reads in turn first and second, so that neither always follows the other's fsync
	[ -n "$base" ] && [ $((r % 2)) = 0 ] && order="direct straight big cold cold-base warm"
	for c in $order; do
		t=$(get "$c")
		case $c in cold*) wait_copy ;; esac
		echo "$r $c $t" >>"$T/times"
		line="$line $c ${t%% *} s;"
	done
	echo "$line load $(cut -d' ' -f1 /proc/loadavg)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$T/times" "$mib" "$cases" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
mib, cases = int(sys.argv[2]), sys.argv[3].split()
med = {}
print("%-10s %8s %9s   CPU seconds: %5s %5s %5s %6s %6s" %
      ("case", "seconds", "MiB/s", "rgw", "osd", "serve", "client", "all"))
for c in cases:
    v = [list(map(float, r[2:])) for r in rows if r[1] == c]
    m = [statistics.median(col) for col in zip(*v)]
    med[c] = m[0]
    print("%-10s %8.2f %9.1f   median:      %5.2f %5.2f %5.2f %6.2f %6.2f" %
          (c, m[0], mib / m[0], m[1], m[2], m[3], m[4], sum(m[1:])))
print("ratios to direct: " + ", ".join("%s %.2fx" % (c, med[c] / med["direct"])
                                       for c in cases if c != "direct"))
PY
