#!/usr/bin/env bash
# t0714-agent-preheat: what the operator marks with `add --preheat` is listed at /api/p2p/preheat, and
# an agent started with --preheat fetches it in the background, with no mount or pull: every byte,
# verified; after a sync brings a new commit, the agent fetches that too. A repo not marked is left
# alone. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/hot", "files": [{"path": "w.bin", "size": 1200000, "seed": 111}]},
  {"hub": "hf", "type": "model", "id": "acme/cold", "files": [{"path": "w.bin", "size": 300000, "seed": 112}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add --preheat hf:acme/hot >/dev/null && "$HUBMIRROR" add hf:acme/cold >/dev/null && "$HUBMIRROR" sync >/dev/null
check "serve starts" start_serve --p2p-listen 127.0.0.1:0 --p2p-rescan 1
commits() { curl -fsS "$FAKE_API/_fake/repos" | "$PY" -c 'import json,sys; print([r for r in json.load(sys.stdin)["repos"] if r["id"]=="acme/hot"][0]["sha"])'; }
c1=$(commits)
curl -fsS "$M/api/p2p/preheat" >"$T/pre.json"
check "the mirror lists the marked repo at its commit, and only it" "$PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))["snapshots"]
assert [(x["spec"], x["commit"], x["revision"]) for x in s] == [("hf:acme/hot", sys.argv[2], "main")], s' "$T/pre.json" "$c1"
check "an agent with --preheat starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --preheat --preheat-every 1
# verified COMMIT: up to 30 s until the agent holds that commit whole and verified
verified() { local i; for i in $(seq 150); do
	"$HUBMIRROR" status --json | "$PY" -c '
import json,sys; s=[x for x in json.load(sys.stdin)["snapshots"] if x["commit"]==sys.argv[1]]
sys.exit(not (s and s[0]["verified"] and s[0]["bytes_have"] == s[0]["bytes_total"] > 0))' "$1" && return 0; sleep 0.2; done; return 1; }
check "it fetches the marked snapshot by itself, whole and verified" verified "$c1"
check "and not the unmarked one" bash -c "! \"$HUBMIRROR\" status --json | grep -q acme/cold"
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/hot", "hub": "hf", "type": "model", "branch": "main",
  "title": "new weights", "files": [{"path": "w.bin", "size": 1200000, "seed": 113}]}' >/dev/null
"$HUBMIRROR" sync >/dev/null
c2=$(commits)
check "a sync brought a new commit" test "$c2" != "$c1"
check "the agent fetches the new snapshot too" verified "$c2"
grep preheating "$T/cache/agent.log" | sed 's/^/# /'
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
