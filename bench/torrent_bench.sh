#!/usr/bin/env bash
# torrent_bench.sh [BUILD] [MIB] [RUNS]: the torrent of a snapshot of one content of MIB MiB (default
# 1024) made by `hubmirror sync`, several ways, side by side in each run, RUNS times (default 5):
#   bucket:      the store in an S3 bucket (a real single-node Ceph cluster and its RADOS Gateway,
#                tests/integration/helpers/cephrgw.py, as root) with a local cache of 64 MiB, smaller
#                than the content: its bytes read in ranges from the bucket, never brought into the cache;
#   bucket-base: the same with another binary (HM_BASE=path, optional; e.g. one built before the change,
#                which brought the content into the cache, pinned, and hashed the cache's file);
#   local:       a second data directory without a bucket, the content a file on local disk (in the page
#                cache, as right after a sync).
# Before each case the torrent is forgotten (its catalog row and file) and the cache's copy of the
# content removed, so that the sync makes it again from the start; the sync finds upstream unchanged and
# only makes the torrent. Each case's info-hash must be the same (else the bench stops). For each case:
# the seconds, the CPU seconds of hubmirror, the gateway and the OSD, and what hubmirror wrote to local
# disk (MiB, the file system's output count). Medians; docs/benchmarks.md, "A snapshot's torrent from the
# bucket". The load average is printed beside each run: the machine is shared.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
mib=${2:-1024}
runs=${3:-5}
hm=${HM:-$src/$build/mirror/cli/hubmirror}
base=${HM_BASE:-}
py=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "needs root (the Ceph OSD)"; exit 1; }
T=$(mktemp -d /tmp/torrent-bench-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$T"' EXIT
export HUBMIRROR_DATA=$T/data HUBMIRROR_P2P_LISTEN=127.0.0.1:0
size=$((mib << 20))

. "$src/bench/lib.sh"
bench_start_rgw $((2 * size + (1 << 30)))
printf '[store]\nurl = s3://%s/bench\ns3-endpoint = %s\ncache-size = 64M\n' "$RGW_BUCKET" "$RGW_ENDPOINT" \
	>"$T/hm.conf"

cat >"$T/spec.json" <<JSON
{"repos": [{"hub": "hf", "type": "model", "id": "bench/torrent",
  "files": [{"path": "config.json", "content": "{}\n"},
            {"path": "model.safetensors", "size": $size, "seed": 12}]}]}
JSON
"$py" "$src/tests/fakehub/fakehub.py" --repos "$T/spec.json" --ready-file "$T/fake" --quiet >/dev/null 2>&1 &
pids+=($!)
while [ ! -s "$T/fake" ]; do sleep 0.1; done
export HUBMIRROR_HF_UPSTREAM=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$T/fake")
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); syncing $mib MiB into the bucket and into a local store"
HUBMIRROR_CONFIG=$T/hm.conf "$hm" add hf:bench/torrent >/dev/null
HUBMIRROR_CONFIG=$T/hm.conf "$hm" sync >/dev/null
HUBMIRROR_DATA=$T/local "$hm" add hf:bench/torrent >/dev/null
HUBMIRROR_DATA=$T/local "$hm" sync >/dev/null
sha=$("$py" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"select sha256 from files where path = ?", ("model.safetensors",)).fetchone()[0])' "$T/data/catalog.db")
rgw=$(pgrep -f "^radosgw -c $T/ceph/ceph.conf")
osd=$(pgrep -f "^ceph-osd -c $T/ceph/ceph.conf")
[ -n "$rgw" ] && [ -n "$osd" ] || { echo "cannot find the gateway and the OSD"; exit 1; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
cases="bucket local"
[ -n "$base" ] && cases="bucket bucket-base local"

# CASE: the torrent made again: "seconds hubmirror-cpu rgw-cpu osd-cpu written-MiB", its btih in $T/btih.CASE
make() {
	local data=$T/data bin=$hm conf=$T/hm.conf out a b
	case $1 in bucket-base) bin=$base ;; local) data=$T/local conf= ;; esac
	"$py" -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); db.execute("delete from torrents"); db.commit()' "$data/catalog.db"
	rm -f "$data/torrents/"*.torrent
	[ "$1" = local ] || rm -f "$data/store/blobs/${sha:0:2}/$sha"
	a=$(ticks "$rgw") b=$(ticks "$osd")
	out=$( { (if [ -n "$conf" ]; then export HUBMIRROR_CONFIG=$conf; else unset HUBMIRROR_CONFIG; fi
		HUBMIRROR_DATA=$data exec /usr/bin/time -f '%e %U %S %O' "$bin" sync >/dev/null); } 2>&1 )
	ls "$data/torrents" | sed -n 's/\.torrent$//p' >"$T/btih.$1"
	[ -s "$T/btih.$1" ] || { echo "$1: no torrent made: $out" >&2; exit 1; }
	set -- $(echo "$out" | tail -1)
	echo "$1 $2 $3 $(( $(ticks "$rgw") - a )) $(( $(ticks "$osd") - b )) $4" |
		awk -v hz="$hz" '{ printf "%s %.2f %.2f %.2f %.1f", $1, $2 + $3, $4 / hz, $5 / hz, $6 * 512 / 1048576 }'
}
: >"$T/times"
for r in $(seq 1 "$runs"); do
	line="run $r:"
	order=$cases
	# each side first in half the runs
	[ $((r % 2)) = 0 ] && order=$(echo "$cases" | tr ' ' '\n' | tac | tr '\n' ' ')
	for c in $order; do
		t=$(make "$c")
		echo "$r $c $t" >>"$T/times"
		line="$line $c ${t%% *} s;"
	done
	for c in $cases; do
		cmp -s "$T/btih.bucket" "$T/btih.$c" || { echo "$c made another torrent than bucket"; exit 1; }
	done
	echo "$line load $(cut -d' ' -f1 /proc/loadavg)"
done
echo "every case made the torrent $(cat "$T/btih.bucket")"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$T/times" "$mib" "$cases" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
mib, cases = int(sys.argv[2]), sys.argv[3].split()
print("%-12s %8s %9s   CPU seconds: %9s %5s %5s   %s" % ("case", "seconds", "MiB/s", "hubmirror", "rgw", "osd",
                                                        "written MiB"))
for c in cases:
    v = [list(map(float, r[2:])) for r in rows if r[1] == c]
    m = [statistics.median(col) for col in zip(*v)]
    print("%-12s %8.2f %9.1f   median:      %9.2f %5.2f %5.2f   %.1f" % (c, m[0], mib / m[0], m[1], m[2], m[3], m[4]))
PY
