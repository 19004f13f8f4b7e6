#!/usr/bin/env bash
# run-libfuzzer.sh FUZZER CORPUS [SECONDS]: a bounded libFuzzer campaign (SECONDS, 15 when not given;
# HM_FUZZ_SECONDS and HM_FUZZ_RUNS override the time and the 200,000 inputs, for a longer run by hand)
# that starts from the seeds in CORPUS and writes what it finds to a temporary folder (the seeds in the
# tree stay as they are). Prints TAP.
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/hm-fuzz-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$1" -runs="${HM_FUZZ_RUNS:-200000}" -max_total_time="${HM_FUZZ_SECONDS:-${3:-15}}" -max_len=4096 -timeout=10 \
	-rss_limit_mb=2048 -artifact_prefix="$work/" "$work" "$2" >"$work/log" 2>&1
st=$?
tail -3 "$work/log" | sed 's/^/# /'
if [ "$st" = 0 ]; then
	echo "ok 1 - $(basename "$1"): no crash"
else
	grep -E "ERROR|SUMMARY|crash-|runtime error" "$work/log" | head -20 | sed 's/^/# /'
	for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do [ -e "$f" ] && { echo "# input: $(od -An -c "$f" | head -3 | tr -s ' ')"; }; done
	echo "not ok 1 - $(basename "$1"): exit $st"
fi
echo "1..1"
