#!/usr/bin/env bash
# agent_xet_bench.sh [BUILD] [MIB] [RUNS]: @huggingface/hub's downloadFile of one LFS file of MIB MiB
# (default 128) through an instance agent's local endpoint (agent --http), through Xet (the client's
# default: the mirror's token and reconstruction relayed, the xorb ranges made by the agent from its
# cache file, docs/agent.md "Xet through the agent") against plain HTTP (xet: false: the endpoint's
# gated sendfile), RUNS times each (default 3), alternating, wall seconds of the whole download into
# memory. The first download (Xet) is the cold one: the agent fetches the file as it serves it; the
# others read the agent's cache. docs/benchmarks.md, "Xet through the agent".
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
mib=${2:-128}
runs=${3:-3}
hm=$src/$build/mirror/cli/hubmirror
T=$(mktemp -d /tmp/agent-xet-bench-XXXXXX)
pids=()
export HUBMIRROR_DATA=$T/data HUBMIRROR_CONFIG=/dev/null HUBMIRROR_P2P_LISTEN=127.0.0.1:0
export HUBMIRROR_AGENT_SOCKET=$T/agent.sock
trap '"$hm" agent --stop >/dev/null 2>&1 || true; for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
cat >"$T/spec.json" <<JSON
{"repos": [{"hub": "hf", "type": "model", "id": "bench/axet",
  "files": [{"path": "model.safetensors", "size": $((mib << 20)), "seed": 9}]}]}
JSON
/usr/bin/python3 "$src/tests/fakehub/fakehub.py" --repos "$T/spec.json" --ready-file "$T/fake" --quiet 2>/dev/null &
pids+=($!)
while [ ! -s "$T/fake" ]; do sleep 0.1; done
export HUBMIRROR_HF_UPSTREAM=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$T/fake")
"$hm" add hf:bench/axet >/dev/null
"$hm" sync >/dev/null
"$hm" serve --listen 127.0.0.1:0 --ready-file "$T/url" 2>"$T/serve.err" &
pids+=($!)
while [ ! -s "$T/url" ]; do sleep 0.1; done
"$hm" agent --mirror "$(cat "$T/url")" --cache "$T/cache" --listen 127.0.0.1:0 --http 0 >/dev/null
E=http://127.0.0.1:$("$hm" status --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["http_port"])')
cat >"$T/dl.mjs" <<'JS'
import * as hub from "@huggingface/hub";
console.debug = () => {};
const [url, xet, what] = process.argv.slice(2);
const t0 = performance.now();
const blob = await hub.downloadFile({ repo: "bench/axet", path: "model.safetensors", hubUrl: url, xet: xet === "xet" });
const n = (await blob.arrayBuffer()).byteLength;
console.log(`${xet}${what ? " " + what : ""} ${((performance.now() - t0) / 1000).toFixed(2)} s ${n} bytes`);
JS
ln -s "$src/tests/js/node_modules" "$T/node_modules"
echo "file: $mib MiB through the agent's endpoint; $runs runs each from its cache, alternating"
node "$T/dl.mjs" "$E" xet "(cold: the agent fetches as it serves)"
for r in $(seq 1 "$runs"); do
	node "$T/dl.mjs" "$E" xet
	node "$T/dl.mjs" "$E" plain
done
