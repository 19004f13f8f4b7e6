#!/usr/bin/env bash
# t0710-agent: the instance agent. Two mounts (a Hugging Face and a ModelScope repo) are served by one
# agent process; `status --json` tells what it holds; a bad spec or a repo the mirror lacks fails
# clearly and the agent carries on; with the mirror down, a held snapshot still mounts (and says so);
# killed with -9, the agent leaves its cache intact: a new one takes its snapshots back, mounts the
# stale folder again, and reads every byte without fetching the model again. Needs root and FUSE.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/agent-hf",
   "files": [{"path": "config.json", "content": "{\"agent\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 71}]},
  {"hub": "ms", "type": "model", "id": "acme/agent-ms",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "w.bin", "size": 1500000, "seed": 72}]}
 ]}
JSON
sync_from_fake hf:acme/agent-hf ms:acme/agent-ms
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
serve_pid=${_pids[-1]}
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
unmount() { "$HUBMIRROR" umount "$1" 2>/dev/null || umount -l "$1" 2>/dev/null; }
trap 'unmount "$T/hf"; unmount "$T/ms"; _cleanup' EXIT
json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

"$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" --listen 127.0.0.1:0 hf:acme/agent-hf "$T/hf" >"$T/m1.out" 2>&1
check "the HF repo mounts (starting the agent)" grep -q "mounted hf:acme/agent-hf" "$T/m1.out"
MODELSCOPE_CACHE=$T/msc "$HUBMIRROR" mount --mirror "$M" ms:acme/agent-ms "$T/ms" >"$T/m2.out" 2>&1
check "the ModelScope repo mounts" grep -q "mounted ms:acme/agent-ms" "$T/m2.out"
sed 's/^/# /' "$T/m1.out" "$T/m2.out"
pid1=$(sed -n 's/.*(agent pid \([0-9]*\)).*/\1/p' "$T/m1.out")
pid2=$(sed -n 's/.*(agent pid \([0-9]*\)).*/\1/p' "$T/m2.out")
check "one agent process holds both" test -n "$pid1" -a "$pid1" = "$pid2"
check "and it is the only agent on this socket" test "$(pgrep -fc "hubmirror agent --socket $HUBMIRROR_AGENT_SOCKET")" = 1
check "HF files, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/agent-hf "$T/hf"
check "ModelScope files, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" ms acme/agent-ms "$T/ms"
check "the ModelScope cache is linked" test -L "$T/msc/models/acme/agent-ms/w.bin"
"$HUBMIRROR" status --json >"$T/st.json"
check "status --json names both snapshots, their commits and mount points" "$PY" - "$T/st.json" "$T/up.json" "$T" <<'PY'
import json, sys
st = json.load(open(sys.argv[1])); up = json.load(open(sys.argv[2])); t = sys.argv[3]
sha = {(r["hub"], r["id"]): r["sha"] for r in up["repos"]}
snaps = {s["spec"]: s for s in st["snapshots"]}
assert set(snaps) == {"hf:acme/agent-hf", "ms:acme/agent-ms"}, snaps
assert snaps["hf:acme/agent-hf"]["commit"] == sha[("hf", "acme/agent-hf")]
assert len(snaps["ms:acme/agent-ms"]["commit"]) == 40
assert snaps["hf:acme/agent-hf"]["mounts"] == [t + "/hf"] and snaps["ms:acme/agent-ms"]["mounts"] == [t + "/ms"]
assert all(s["bytes_total"] > 0 and len(s["btih"]) == 40 for s in snaps.values())
assert st["cache"] == t + "/cache" and st["pid"] > 0
PY
"$HUBMIRROR" status >"$T/status.txt"
check "status prints a line per snapshot" bash -c "grep -c '^.*:acme/agent-' '$T/status.txt' | grep -qx 2"
check "under column headers, with the revision, commit and mirror" bash -c "grep -Eq '^SPEC +REVISION +COMMIT +HELD +STATE +PEERS +MIRROR +MOUNTED ON$' '$T/status.txt' &&
	grep -Eq '^hf:acme/agent-hf +main +[0-9a-f]{12} +[0-9.]+ MiB of [0-9.]+ MiB +complete, seeding.* +[0-9]+ +$M +$T/hf$' '$T/status.txt'"
check "and what came from the mirror over HTTP, not 'received 0 B'" grep -Eq '^sent .* to peers; received .* from peers and [1-9][0-9.]* MiB from the mirror over HTTP$' "$T/status.txt"

# bad input: the agent says why and carries on
expect_status 1 "a repo the mirror lacks fails" "$HUBMIRROR" mount hf:acme/nope "$T/nope" 2>"$T/nope.err"
check "and says so" grep -q "not on this mirror" "$T/nope.err"
expect_status 2 "a malformed spec is a usage error" "$HUBMIRROR" mount 'hf:acme/../x' "$T/bad" 2>/dev/null
expect_status 1 "mounting over a held mount point fails" "$HUBMIRROR" mount hf:acme/agent-hf "$T/hf" 2>"$T/busy.err"
check "and says it is mounted already" grep -q "mounted already" "$T/busy.err"
check "the agent still answers" "$HUBMIRROR" status
"$HUBMIRROR" drop hf:acme/agent-hf 2>"$T/drop.err"
check "drop of a mounted snapshot is refused, saying where it is mounted" bash -c "[ $? = 1 ] && grep -q 'hf:acme/agent-hf is mounted on $T/hf: umount it first' '$T/drop.err'"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	# root's agent, asked by another user: whose it is and what to do, not "no agent runs"
	as_nobody "$HUBMIRROR" status >/dev/null 2>"$T/perm.err"
	check "status as another user fails, saying the agent is root's" grep -q \
		"cannot reach the agent at $HUBMIRROR_AGENT_SOCKET: Permission denied; it belongs to root (run this as that user or with sudo" "$T/perm.err"
	as_nobody "$HUBMIRROR" agent --cache /tmp/hm-never-made-$$ >/dev/null 2>"$T/perm2.err"
	check "and an agent of that user's on the same socket is refused the same way" grep -q \
		"the agent did not start: cannot reach the agent at $HUBMIRROR_AGENT_SOCKET: Permission denied; it belongs to root" "$T/perm2.err"
	rm -rf "/tmp/hm-never-made-$$" # (its log went there: the test leaves nothing outside its own folder)
	check "root's agent carries on" "$HUBMIRROR" status
fi
expect_status 1 "umount of a folder nobody mounted fails" "$HUBMIRROR" umount "$T/nothing" 2>/dev/null

# the mirror goes down: what the instance holds still mounts
check "umount the ModelScope mount" "$HUBMIRROR" umount "$T/ms"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
MODELSCOPE_CACHE=$T/msc "$HUBMIRROR" mount --mirror "$M" ms:acme/agent-ms "$T/ms" >"$T/m3.out" 2>"$T/m3.err"
check "with the mirror down, the held snapshot mounts again" grep -q "mounted ms:acme/agent-ms" "$T/m3.out"
check "and the command says the mirror did not answer" grep -q "mirror did not answer" "$T/m3.err"
check "its files read whole" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" ms acme/agent-ms "$T/ms"
expect_status 1 "a snapshot it does not hold fails" "$HUBMIRROR" mount --mirror "$M" hf:acme/other "$T/other" 2>"$T/down.err"
check "saying the mirror cannot be reached" grep -q "cannot reach the mirror" "$T/down.err"

# kill -9: the cache stays, a new agent takes the snapshots back
# the agent checks a finished snapshot's files on a worker: wait until both are verified (the state a
# restart takes back without a recheck), up to 30 s
for i in $(seq 150); do
	"$HUBMIRROR" status --json | "$PY" -c 'import json,sys; sys.exit(not all(x["verified"] for x in json.load(sys.stdin)["snapshots"]))' && break
	sleep 0.2
done
kill -9 "$pid1"
for i in $(seq 50); do kill -0 "$pid1" 2>/dev/null || break; sleep 0.1; done
check "the killed agent's mount points are dead" bash -c "! ls '$T/hf' >/dev/null 2>&1"
rm -f "$HUBMIRROR_AGENT_SOCKET"
"$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" --listen 127.0.0.1:0 hf:acme/agent-hf "$T/hf" >"$T/m4.out" 2>"$T/m4.err"
check "a new agent mounts the stale folder again (mirror still down)" grep -q "mounted hf:acme/agent-hf" "$T/m4.out"
sed 's/^/# /' "$T/m4.out" "$T/m4.err"
pid3=$(sed -n 's/.*(agent pid \([0-9]*\)).*/\1/p' "$T/m4.out")
check "it is a new process" test -n "$pid3" -a "$pid3" != "$pid1"
check "it took back both snapshots" bash -c "\"$HUBMIRROR\" status --json | grep -c '\"spec\": \"' | grep -qx 2"
# verified whole before the kill: taken back without a recheck of every byte (seed mode: each piece is
# verified when first read or asked for)
check "both are taken back whole, checked lazily, not rechecked up front" bash -c "\"$HUBMIRROR\" status --json | \"$PY\" -c '
import json,sys; s=json.load(sys.stdin)[\"snapshots\"]
assert all(x[\"checked_lazily\"] and x[\"verified\"] and x[\"complete\"] for x in s), s'"
check "every byte reads, with no mirror to fetch from" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/agent-hf "$T/hf"
check "the HF cache still points at the files" cmp "$T/hfc/models--acme--agent-hf/snapshots/$(json "$T/up.json" '[r for r in d["repos"] if r["id"]=="acme/agent-hf"][0]["sha"]')/config.json" "$T/hf/config.json"
check "agent --stop ends it" "$HUBMIRROR" agent --stop
check "and its socket is gone" test ! -e "$HUBMIRROR_AGENT_SOCKET"
check "its mount points are released" bash -c "! grep -q ' $T/hf ' /proc/mounts"
for i in $(seq 50); do kill -0 "$pid3" 2>/dev/null || break; sleep 0.1; done
check "and its process has ended" bash -c "! kill -0 $pid3 2>/dev/null"
check "every line of the agent's log starts with its time" bash -c "test -s '$T/cache/agent.log' && \
	! grep -vE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z (error|warn |info |debug) agent: ' '$T/cache/agent.log'"
# (in the sanitizer build the agents report to their log, which no exit status carries)
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
