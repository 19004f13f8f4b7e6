#!/usr/bin/env bash
# t0722-agent-damage: bytes that change in the agent's cache after they were verified never reach a
# reader or a hub cache link as they are. A flipped byte while the agent runs is found by `status
# --verify` (exit 1, naming the damaged piece count) and fetched again, and the next pull is whole; a
# flipped byte, or the snapshot's folder deleted, while the agent is down: a pull after the restart
# hashes the files before it links them and fetches what is damaged; a mount read of a damaged piece
# gets the right bytes within seconds, not an error after the 10-minute read timeout. FUSE for the last.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/dmg",
   "files": [{"path": "config.json", "content": "{\"dmg\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 221}]}
 ]}
JSON
sync_from_fake hf:acme/dmg
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
fuse=1
[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null || fuse=
trap '[ -n "$fuse" ] && { "$HUBMIRROR" umount "$T/mnt" 2>/dev/null || umount -l "$T/mnt" 2>/dev/null; }; _cleanup' EXIT
# (the background scrub off: its first pass, right after the pull, may find the flipped byte and fetch
# it again before `status --verify` looks, as it did under a loaded sanitized build; t0736 tests it)
start_agent() { "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --scrub-rate 0 >/dev/null; }
snapdir() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["snapshots"][0]["path"])'; }
# flip FILE: change one byte in the middle of FILE, in place
flip() { printf '\xff' | dd of="$1" bs=1 seek=1500000 conv=notrunc status=none; }
whole() { "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/dmg "$T/hfc/models--acme--dmg/snapshots/$commit"; }
wait_verified() { local i; for i in $(seq 150); do
	"$HUBMIRROR" status --json | "$PY" -c 'import json,sys; sys.exit(not all(x["verified"] for x in json.load(sys.stdin)["snapshots"]))' && return 0
	sleep 0.2; done; return 1; }

check "an agent starts" start_agent
check "pull" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/dmg
check "the hub cache holds the files, byte for byte" whole
check "status --verify finds every piece sound" "$HUBMIRROR" status --verify
check "the snapshot is verified (what a restart takes back whole)" wait_verified
D=$(snapdir)

# a byte flips while the agent runs
flip "$D/model.safetensors"
expect_status 1 "status --verify finds the damage" "$HUBMIRROR" status --verify hf:acme/dmg >"$T/v1.out"
sed 's/^/# /' "$T/v1.out"
check "and says one piece is damaged and fetched again" grep -q "1 of [0-9]* pieces damaged in the cache: fetching them again" "$T/v1.out"
check "a pull after it waits for the piece and ends whole" timeout 60 "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/dmg
check "the cache's file is right again" whole
check "and status --verify finds every piece sound again" "$HUBMIRROR" status --verify hf:acme/dmg

# a byte flips while the agent is down
check "the snapshot is verified again" wait_verified
check "agent --stop" "$HUBMIRROR" agent --stop
flip "$D/model.safetensors"
check "the agent starts again" start_agent
check "after the restart a pull hashes before it links, and fetches the damaged piece" timeout 60 "$HUBMIRROR" pull --hf-cache "$T/hfc2" hf:acme/dmg
check "what it linked is right" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/dmg "$T/hfc2/models--acme--dmg/snapshots/$commit"
check "so is the cache's file" whole

# the snapshot's folder is deleted while the agent is down
check "verified once more" wait_verified
check "agent --stop" "$HUBMIRROR" agent --stop
rm -rf "$D"
check "the agent starts again" start_agent
check "a pull fetches the deleted files again" timeout 60 "$HUBMIRROR" pull --hf-cache "$T/hfc3" hf:acme/dmg
check "and links them whole" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/dmg "$T/hfc3/models--acme--dmg/snapshots/$commit"

if [ -n "$fuse" ]; then
	check "verified before the last restart" wait_verified
	check "agent --stop" "$HUBMIRROR" agent --stop
	flip "$D/model.safetensors"
	check "the agent starts again" start_agent
	check "mount" "$HUBMIRROR" mount --no-hf-cache hf:acme/dmg "$T/mnt"
	check "a read of the damaged piece gets the right bytes within seconds" timeout 60 \
		"$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/dmg "$T/mnt"
	check "umount" "$HUBMIRROR" umount "$T/mnt"
fi
grep -E "failed their hash|damaged" "$T/cache/agent.log" | sed 's/^/# /'
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
