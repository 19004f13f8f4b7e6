#!/usr/bin/env bash
# xet_download_bench.sh [BUILD] [MIB] [RUNS] [OTHER]: @huggingface/hub's downloadFile of one LFS file of
# MIB MiB (default 256) from `hubmirror serve`, through Xet (the client's default: xet-read-token, the
# v2 reconstruction, virtual xorb ranges) against plain HTTP (xet: false), RUNS rounds (default 3),
# alternating within each round, the whole download into memory. With OTHER (the path of another
# hubmirror binary, e.g. one built from an older commit), a second serve of that binary, on a copy of
# the data directory, is read through Xet in each round too ("xet-other"). Each line: the mode, wall
# seconds, the client's CPU seconds (user + system, process.cpuUsage) and the serving process's
# (from /proc, its whole process across the download); then the medians of each mode and the load
# before and after. The file is synced from the fake upstream first; the mirror computes its identity
# as it stores it. docs/benchmarks.md, "Xet reads".
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
mib=${2:-256}
runs=${3:-3}
other=${4:-}
hm=$src/$build/mirror/cli/hubmirror
T=$(mktemp -d /tmp/xet-dl-bench-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
export HUBMIRROR_DATA=$T/data HUBMIRROR_CONFIG=/dev/null HUBMIRROR_P2P_LISTEN=127.0.0.1:0
cat >"$T/spec.json" <<JSON
{"repos": [{"hub": "hf", "type": "model", "id": "bench/xet",
  "files": [{"path": "model.safetensors", "size": $((mib << 20)), "seed": 7}]}]}
JSON
/usr/bin/python3 "$src/tests/fakehub/fakehub.py" --repos "$T/spec.json" --ready-file "$T/fake" --quiet >/dev/null 2>&1 &
pids+=($!)
while [ ! -s "$T/fake" ]; do sleep 0.1; done
export HUBMIRROR_HF_UPSTREAM=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$T/fake")
"$hm" add hf:bench/xet >/dev/null 2>&1
"$hm" sync >/dev/null
serve() { # serve BINARY DATA NAME: start it, its pid in $T/NAME.pid and its URL in $T/NAME.url
	HUBMIRROR_DATA=$2 "$1" serve --listen 127.0.0.1:0 --ready-file "$T/$3.url" --p2p-listen off 2>"$T/$3.err" &
	pids+=($!)
	echo $! >"$T/$3.pid"
	while [ ! -s "$T/$3.url" ]; do sleep 0.1; done
}
serve "$hm" "$T/data" this
if [ -n "$other" ]; then
	cp -a "$T/data" "$T/data-other"
	serve "$other" "$T/data-other" other
fi
cat >"$T/dl.mjs" <<'JS'
import * as hub from "@huggingface/hub";
console.debug = () => {};
const [url, mode] = process.argv.slice(2);
const t0 = performance.now(), c0 = process.cpuUsage();
const blob = await hub.downloadFile({ repo: "bench/xet", path: "model.safetensors", hubUrl: url, xet: mode !== "plain" });
const n = (await blob.arrayBuffer()).byteLength;
const c = process.cpuUsage(c0);
console.log(`${((performance.now() - t0) / 1000).toFixed(2)} ${((c.user + c.system) / 1e6).toFixed(2)} ${n}`);
JS
ln -s "$src/tests/js/node_modules" "$T/node_modules"
hz=$(getconf CLK_TCK)
cpu_of() { awk -v hz="$hz" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
one() { # one MODE NAME: a download; appends "wall client-cpu serve-cpu" to $T/MODE
	local pid s0 s1 out
	pid=$(cat "$T/$2.pid")
	s0=$(cpu_of "$pid")
	out=$(node "$T/dl.mjs" "$(cat "$T/$2.url")" "$1")
	s1=$(cpu_of "$pid")
	[ "${out##* }" = $((mib << 20)) ] || { echo "$1: short download: $out" >&2; exit 1; }
	set -- "$1" "${out% *}" "$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }')"
	echo "$1 $2 $3" | awk '{ printf "%-10s wall %s s  client cpu %s s  serve cpu %s s\n", $1, $2, $3, $4 }'
	echo "$2 $3" >>"$T/$1"
}
echo "file: $mib MiB; $runs rounds, alternating; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
modes="xet plain"
[ -n "$other" ] && modes="xet-other xet plain"
for r in $(seq 1 "$runs"); do
	for m in $modes; do
		case $m in
		xet-other) one xet-other other ;;
		*) one "$m" this ;;
		esac
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for m in $modes; do
	sort -n -k1,1 "$T/$m" | awk -v m="$m" '{ w[NR] = $1 } END { printf "median %-10s wall %s s\n", m, w[int((NR + 1) / 2)] }'
	sort -n -k3,3 "$T/$m" | awk -v m="$m" '{ c[NR] = $3 } END { printf "median %-10s serve cpu %s s\n", m, c[int((NR + 1) / 2)] }'
	sort -n -k2,2 "$T/$m" | awk -v m="$m" '{ c[NR] = $2 } END { printf "median %-10s client cpu %s s\n", m, c[int((NR + 1) / 2)] }'
done
