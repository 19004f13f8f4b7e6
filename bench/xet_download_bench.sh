#!/usr/bin/env bash
# xet_download_bench.sh [BUILD] [MIB] [RUNS]: @huggingface/hub's downloadFile of one LFS file of MIB
# MiB (default 256) from `hubmirror serve`, through Xet (the client's default: xet-read-token, the v2
# reconstruction, virtual xorb ranges) against plain HTTP (xet: false), RUNS times each (default 3),
# alternating, wall seconds of the whole download into memory. The file is synced from the fake
# upstream first; the mirror computes its identity as it stores it. docs/benchmarks.md, "Xet reads".
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
mib=${2:-256}
runs=${3:-3}
hm=$src/$build/mirror/cli/hubmirror
T=$(mktemp -d /tmp/xet-dl-bench-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
export HUBMIRROR_DATA=$T/data HUBMIRROR_CONFIG=/dev/null HUBMIRROR_P2P_LISTEN=127.0.0.1:0
cat >"$T/spec.json" <<JSON
{"repos": [{"hub": "hf", "type": "model", "id": "bench/xet",
  "files": [{"path": "model.safetensors", "size": $((mib << 20)), "seed": 7}]}]}
JSON
/usr/bin/python3 "$src/tests/fakehub/fakehub.py" --repos "$T/spec.json" --ready-file "$T/fake" --quiet 2>/dev/null &
pids+=($!)
while [ ! -s "$T/fake" ]; do sleep 0.1; done
export HUBMIRROR_HF_UPSTREAM=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$T/fake")
"$hm" add hf:bench/xet >/dev/null
"$hm" sync >/dev/null
"$hm" serve --listen 127.0.0.1:0 --ready-file "$T/url" --p2p-listen off 2>"$T/serve.err" &
pids+=($!)
while [ ! -s "$T/url" ]; do sleep 0.1; done
cat >"$T/dl.mjs" <<'JS'
import * as hub from "@huggingface/hub";
console.debug = () => {};
const [url, xet] = process.argv.slice(2);
const t0 = performance.now();
const blob = await hub.downloadFile({ repo: "bench/xet", path: "model.safetensors", hubUrl: url, xet: xet === "xet" });
const n = (await blob.arrayBuffer()).byteLength;
console.log(`${xet} ${((performance.now() - t0) / 1000).toFixed(2)} s ${n} bytes`);
JS
ln -s "$src/tests/js/node_modules" "$T/node_modules"
echo "file: $mib MiB; $runs runs each, alternating"
for r in $(seq 1 "$runs"); do
	node "$T/dl.mjs" "$(cat "$T/url")" xet
	node "$T/dl.mjs" "$(cat "$T/url")" plain
done
