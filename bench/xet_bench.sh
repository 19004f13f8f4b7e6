#!/usr/bin/env bash
# xet_bench.sh [BUILD] [MIB]: the CPU a file's Xet identity (hub/xet) adds to the SHA-256 the store
# computes as a blob is written: CPU-seconds per GiB of SHA-256 alone (OpenSSL), of SHA-256 and the
# identity in one pass over the same 256 KiB slices, of the identity alone and of its chunker alone,
# and of SHA-256 with the identity a sync through Xet makes (the chunks it checks, stated), over MIB MiB (default 4096) of random bytes in memory, no I/O. Three runs; docs/benchmarks.md,
# "Xet identity".
set -euo pipefail
build=${1:-build}
mib=${2:-4096}
ninja -C "$build" tests/unit/xet-ident >/dev/null
for run in 1 2 3; do
	echo "run $run:"
	"$build/tests/unit/xet-ident" --bench "$mib" | sed 's/^/  /'
done
