#!/usr/bin/env bash
# t0737-agent-mirror-moves: a snapshot the agent holds follows its mirror when the mirror moves. The
# mirror serves on one port, the agent pulls some files of a snapshot; the mirror moves to another port
# and a pull of more files of that snapshot (--mirror NEW) gets them (its trackers and web seeds were
# those of the old address, stored in the torrent: the pull waited for good, error null); after an
# agent restart with --mirror at a third address, again. A pull that can never complete (the mirror
# gone) does not make its snapshot undroppable: drop takes it, and the waiting pull fails saying so.
# No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/mv",
   "files": [{"path": "config.json", "content": "{\"mv\": 1}\n"},
             {"path": "a.bin", "size": 1500000, "seed": 321},
             {"path": "b.bin", "size": 1500000, "seed": 322},
             {"path": "c.bin", "size": 1500000, "seed": 323},
             {"path": "d.bin", "size": 1500000, "seed": 324}]}
 ]}
JSON
sync_from_fake hf:acme/mv
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
snap="$T/hfc/models--acme--mv/snapshots/$commit"
# has FILE: the hub cache link of FILE holds upstream's bytes
has() { [ -f "$snap/$1" ] && [ "$(sha256sum <"$snap/$1" | cut -d' ' -f1)" = "$("$PY" -c '
import json,sys
r = json.load(open(sys.argv[1]))["repos"][0]
for f in next(c for c in r["commits"] if c["id"] == r["sha"])["files"]:
    if f["path"] == sys.argv[2]: print(f["sha256"])' "$T/up.json" "$1")" ]; }
pull() { timeout 60 "$HUBMIRROR" pull --hf-cache "$T/hfc" "$@"; }

check "serve starts (first address)" start_serve --p2p-listen 127.0.0.1:0
M1=$M
check "an agent starts with that mirror" "$HUBMIRROR" agent --mirror "$M1" --cache "$T/cache" --listen 127.0.0.1:0
check "pull a.bin from the first address" pull --include a.bin hf:acme/mv
check "a.bin is linked, whole" has a.bin

check "the mirror stops" serve_stops_clean
check "serve starts again on another port" start_serve --p2p-listen 127.0.0.1:0
M2=$M
echo "# the mirror moved from $M1 to $M2"
check "a pull of b.bin of the snapshot held, from the new address, gets it" pull --mirror "$M2" --include b.bin hf:acme/mv
check "b.bin is linked, whole" has b.bin
check "the agent said where its mirror is now" grep -q "its mirror is now $M2" "$T/cache/agent.log"

check "agent --stop" "$HUBMIRROR" agent --stop
check "the mirror stops" serve_stops_clean
check "serve starts on a third port" start_serve --p2p-listen 127.0.0.1:0
M3=$M
check "the agent starts again, told of the third address" "$HUBMIRROR" agent --mirror "$M3" --cache "$T/cache" --listen 127.0.0.1:0
check "status lists the snapshot's sources at the third address" bash -c \
	"'$HUBMIRROR' status --json | '$PY' -c 'import json,sys; s=json.load(sys.stdin)[\"snapshots\"][0]; w=s[\"sources\"][\"web_seeds\"]; assert w[0].startswith(\"$M3/\"), w'"
check "after the restart a pull of c.bin gets it" pull --include c.bin hf:acme/mv
check "c.bin is linked, whole" has c.bin

# the mirror goes away for good: a pull of d.bin takes the snapshot held (offline) and waits
check "the mirror stops for good" serve_stops_clean
"$HUBMIRROR" pull --hf-cache "$T/hfc" --include d.bin hf:acme/mv >"$T/stuck.out" 2>"$T/stuck.err" &
stuck=$!
waiting() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not d["snapshots"] or d["snapshots"][0]["selected"] < 5)'; }
for i in $(seq 100); do waiting && break; sleep 0.1; done
check "the pull of d.bin waits (the snapshot wants it now)" waiting
check "drop takes the stuck snapshot" "$HUBMIRROR" drop --hf-cache "$T/hfc" hf:acme/mv
timeout 30 tail --pid="$stuck" -f /dev/null
kill "$stuck" 2>/dev/null # (still waiting: it would wait for good)
wait "$stuck"; rc=$?
sed 's/^/# /' "$T/stuck.err"
check "the waiting pull fails (status $rc)" test "$rc" != 0
check "saying the snapshot was dropped" grep -q "dropped from the cache" "$T/stuck.err"
check "the agent holds nothing now" bash -c "'$HUBMIRROR' status --json | '$PY' -c 'import json,sys; assert not json.load(sys.stdin)[\"snapshots\"]'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
