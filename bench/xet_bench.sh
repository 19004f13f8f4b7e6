#!/usr/bin/env bash
# xet_bench.sh [BUILD] [MIB] [RUNS] [BASELINE]: the CPU a file's Xet identity (hub/xet) adds to the
# SHA-256 the store computes as a blob is written: CPU-seconds per GiB of SHA-256 alone (OpenSSL), of
# SHA-256 and the identity in one pass over the same 256 KiB slices, of the identity alone, of SHA-256
# with the identity a sync through Xet makes (the chunks it checks, stated), and of the identity's
# chunker alone and its chunk hashes (BLAKE3) alone, over MIB MiB (default 4096) of random bytes in
# memory, no I/O. RUNS runs (default 3), each
# printed, then each line's median and the load average. With BASELINE (another build's
# tests/unit/xet-ident, e.g. of an older commit) the two programs run alternately, baseline first in
# each round, and the medians of both are printed side by side. docs/benchmarks.md, "Xet identity".
set -euo pipefail
build=${1:-build}
mib=${2:-4096}
runs=${3:-3}
baseline=${4:-}
ninja -C "$build" tests/unit/xet-ident >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
sides=(new)
[ -n "$baseline" ] && sides=(baseline new)
for run in $(seq 1 "$runs"); do
	for side in "${sides[@]}"; do
		prog="$build/tests/unit/xet-ident"
		[ "$side" = baseline ] && prog=$baseline
		echo "run $run, $side ($(cut -d' ' -f1-3 /proc/loadavg)):"
		"$prog" --bench "$mib" | tee "$out/$side.$run" | sed 's/^/  /'
	done
done
python3 - "$out" "$runs" "${sides[@]}" <<'PY'
import re, statistics, sys
out, runs, sides = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
med = {}
for side in sides:
    vals = {}
    for run in range(1, runs + 1):
        for line in open(f"{out}/{side}.{run}"):
            m = re.match(r"(.*?)\s+([0-9.]+) cpu-s/GiB", line)
            if m:
                vals.setdefault(m.group(1), []).append(float(m.group(2)))
    med[side] = {k: statistics.median(v) for k, v in vals.items()}
print("medians (cpu-s/GiB):", " | ".join(sides))
for k in med[sides[-1]]:
    print(f"  {k:<55}", " | ".join(f"{med[s].get(k, float('nan')):.3f}" for s in sides))
for s in sides:
    m = med[s]
    sha, both = m.get("sha256 alone"), m.get("sha256 + xet identity")
    if sha and both:
        print(f"  {s}: the identity adds {(both - sha) / sha:.2f}x sha256's CPU (medians)")
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
