#!/usr/bin/env bash
# t0736-agent-scrub: bytes that rot in the agent's cache after they were verified are found by the
# background scrub (agent --scrub-rate, --scrub-every), with no one asking: a byte flipped in a
# verified file is found, the piece fetched again from the mirror, status (and --json) says what was
# found, and a reader of the hub cache's link gets upstream's bytes again. Before, only `status
# --verify` found such damage; readers got the rotten byte. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/rot",
   "files": [{"path": "config.json", "content": "{\"rot\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 391}]}
 ]}
JSON
sync_from_fake hf:acme/rot
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
whole() { "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/rot "$T/hfc/models--acme--rot/snapshots/$commit"; }
# st EXPR: status --json's answer as d (its first snapshot as s) makes EXPR true
st() { "$HUBMIRROR" status --json | "$PY" -c "import json,sys; d=json.load(sys.stdin); s=(d['snapshots'] or [{}])[0]; sys.exit(not ($1))"; }
wait_for() { local i; for i in $(seq 300); do st "$1" && return 0; sleep 0.2; done; return 1; }

check "an agent starts, scrubbing at 50 MB/s every second" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" \
	--listen 127.0.0.1:0 --scrub-rate 50M --scrub-every 1
check "pull" timeout 60 "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/rot
check "the hub cache holds the files, byte for byte" whole
check "a scrub pass reads the snapshot back, finding nothing" wait_for \
	"d['scrub']['passes'] >= 1 and s['scrubbed_at'] and d['scrub']['damaged'] == 0 and d['scrub']['pieces'] > 0"
D=$("$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["snapshots"][0]["path"])')

# a byte rots in the verified file (what the hub cache's link and a mount's bind mount read)
printf '\xff' | dd of="$D/model.safetensors" bs=1 seek=1500000 conv=notrunc status=none
check "the scrub finds the damage by itself" wait_for "d['scrub']['damaged'] >= 1 and s['scrub_damaged'] >= 1"
check "and heals it: the snapshot is verified again" wait_for "s['verified'] and s['complete']"
check "a reader of the hub cache's link gets upstream's bytes" whole
check "status --verify finds every piece sound" "$HUBMIRROR" status --verify
check "status --json names what the scrub found" st \
	"d['scrub']['found'][-1]['spec'] == 'hf:acme/rot' and d['scrub']['found'][-1]['pieces'] == 1"
"$HUBMIRROR" status >"$T/status.out"
sed 's/^/# /' "$T/status.out"
check "plain status says it too" grep -q "scrub: .*1 damaged piece found and fetched again (last: hf:acme/rot" "$T/status.out"
check "the log says it" grep -q "scrub: hf:acme/rot: 1 piece damaged in the cache since it was verified" "$T/cache/agent.log"
check "agent --stop" "$HUBMIRROR" agent --stop
check "an agent with --scrub-rate 0 says the scrub is off" bash -c "'$HUBMIRROR' agent --mirror '$M' --cache '$T/cache' \
	--listen 127.0.0.1:0 --scrub-rate 0 >/dev/null && '$HUBMIRROR' status | grep -q 'scrub: off'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
