#!/usr/bin/env bash
# t0719-agent-namespaces: the agent on a node where containers start beside it. Every container
# runtime copies the host's mounts into a new mount namespace (`unshare -m` here); such a copy, or a
# reader that gave up, must never hang the agent: umount detaches at once and says the mount stays
# in use elsewhere, status, a new mount and the local endpoint answer within seconds meanwhile, the
# copy keeps reading until its namespace ends, and the agent then lets the mount go. A reader killed
# while it waits for bytes that are not coming (the mirror frozen) leaves nothing stuck either.
# A mirror that accepts and never answers holds only the mount that asked it. A second agent on the
# same cache is refused, and so is one on the socket of an agent that is slow to answer. SIGHUP does
# not kill the agent; `agent --stop` returns once the process is gone. Needs root and FUSE.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
command -v unshare >/dev/null && command -v nsenter >/dev/null || skip "unshare and nsenter (util-linux) missing"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/ns-a",
   "files": [{"path": "config.json", "content": "{\"ns\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 191}]},
  {"hub": "hf", "type": "model", "id": "acme/ns-big",
   "files": [{"path": "config.json", "content": "{\"ns\": 2}\n"},
             {"path": "big.bin", "size": 48000000, "seed": 192}]}
 ]}
JSON
sync_from_fake hf:acme/ns-a hf:acme/ns-big
# no BitTorrent seed and (below) no HTTP fill: a lone agent takes its bytes from the web seed, which it
# lets in a second after the mount, so a frozen mirror leaves the big file's bytes missing
check "serve starts" start_serve --p2p-listen off
serve_pid=${_pids[-1]}
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	kill -CONT "$serve_pid" 2>/dev/null
	for d in a b c big; do "$HUBMIRROR" umount "$T/$d" 2>/dev/null || umount -l "$T/$d" 2>/dev/null; done
	_cleanup
}
trap cleanup EXIT
# quick NAME CMD...: CMD must end (well) within 5 s: a hung agent fails here, not after minutes
quick() { local name=$1; shift; check "$name" timeout 5 "$@"; }
snapj() { "$HUBMIRROR" status --json | "$PY" -c "import json,sys; x=[s for s in json.load(sys.stdin)['snapshots'] if s['spec']==sys.argv[1]][0]; print($2)" "$1"; }

check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --http 127.0.0.1:0 --no-fill --mirror-timeout 3
apid=$("$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
E=$(agent_endpoint)
# the watchdog: a status call every 200 ms from here to the stop, each within 2 s (the target is a
# second; the margin is for a loaded CI machine) whatever the mounts, FUSE and the mirror are doing
touch "$T/watch"
( while [ -e "$T/watch" ]; do
	t0=$(date +%s%N)
	timeout 2 "$HUBMIRROR" status >/dev/null 2>&1 || echo "status failed or hung at $(date +%T.%N)" >>"$T/watch.bad"
	echo "$((($(date +%s%N) - t0) / 1000000)) $(date +%T.%N)" >>"$T/watch.ms"
	sleep 0.2
done ) &
watchdog=$!
quick "mount acme/ns-a" "$HUBMIRROR" mount --hf-cache "$T/hfc" hf:acme/ns-a "$T/a"
check "its files read, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/ns-a "$T/a"

# a container starts: a new mount namespace with a private copy of every mount, the model's among them
unshare -m --propagation private bash -c "echo ready >'$T/ns.ready'; exec sleep 600" &
holder=$!
for i in $(seq 100); do [ -s "$T/ns.ready" ] && break; sleep 0.05; done
check "the new namespace sees the model's files" nsenter -t "$holder" -m cmp "$T/a/config.json" <(printf '{"ns": 1}\n')
timeout 10 "$HUBMIRROR" umount "$T/a" 2>"$T/umount.err"; rc=$?
sed 's/^/# /' "$T/umount.err"
check "umount returns at once, and well (status $rc)" test "$rc" = 0
check "saying the mount stays in use elsewhere" grep -q "stays in use elsewhere" "$T/umount.err"
check "and naming who holds it: the container's process, in its mount namespace" grep -q "held by .*pid $holder (sleep) in another mount namespace" "$T/umount.err"
check "the folder is free in the agent's namespace" bash -c "! mountpoint -q '$T/a'"
quick "status answers meanwhile" "$HUBMIRROR" status
check "and counts the copy still in use" test "$(snapj hf:acme/ns-a 'x["detached_in_use"]')" = 1
check "the container's copy still reads, byte for byte" nsenter -t "$holder" -m \
	"$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/ns-a "$T/a"
quick "a new mount on the same folder" "$HUBMIRROR" mount --hf-cache "$T/hfc" hf:acme/ns-a "$T/a"
quick "a mount on another folder" "$HUBMIRROR" mount --hf-cache "$T/hfc" hf:acme/ns-a "$T/b"
quick "the local endpoint answers" curl -fsS -o /dev/null "$E/api/models/acme/ns-a/revision/main"
quick "and serves a file" cmp <(curl -fsS "$E/acme/ns-a/resolve/main/config.json") "$T/b/config.json"
check "the new mount reads" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/ns-a "$T/a"
# (the namespace was made before these mounts: it has no copy of them)
timeout 10 "$HUBMIRROR" umount "$T/b" 2>"$T/umount2.err"; rc=$?
check "a mount nobody else holds unmounts (status $rc)" test "$rc" = 0
check "without the in-use note" test ! -s "$T/umount2.err"
# the container ends: the last user of the first mount lets go, and the agent frees it
kill "$holder"; wait "$holder" 2>/dev/null; holder=
for i in $(seq 50); do [ "$(snapj hf:acme/ns-a 'x["detached_in_use"]')" = 0 ] && break; sleep 0.2; done
check "once the namespace is gone the detached mount is let go" test "$(snapj hf:acme/ns-a 'x["detached_in_use"]')" = 0
quick "umount of the remounted folder" "$HUBMIRROR" umount "$T/a"

# a reader gives up while it waits for bytes that are not coming
quick "mount acme/ns-big" "$HUBMIRROR" mount --hf-cache "$T/hfc" hf:acme/ns-big "$T/big"
kill -STOP "$serve_pid"
if [ "$(snapj hf:acme/ns-big 'int(x["bytes_have"] < x["bytes_total"])')" != 1 ]; then
	fail "the big file must still be missing for this case (the web seed came early)"
else
	dd if="$T/big/big.bin" of=/dev/null bs=1M skip=40 count=1 2>/dev/null &
	reader=$!
	sleep 1
	check "the reader waits for its bytes" kill -0 "$reader"
	kill -9 "$reader"
	for i in $(seq 50); do kill -0 "$reader" 2>/dev/null || break; sleep 0.1; done
	check "the killed reader is gone" bash -c "! kill -0 $reader 2>/dev/null"
	quick "umount returns at once" "$HUBMIRROR" umount "$T/big"
	quick "status answers" "$HUBMIRROR" status
	for i in $(seq 50); do [ "$(snapj hf:acme/ns-big 'x["detached_in_use"]')" = 0 ] && break; sleep 0.2; done
	check "the mount's waiting read gave up and the mount is let go" test "$(snapj hf:acme/ns-big 'x["detached_in_use"]')" = 0
fi
kill -CONT "$serve_pid"

# a mirror that accepts connections and never answers holds only the request that asked it: status
# answers meanwhile, and the mount goes to the next mirror after --mirror-timeout
"$PY" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1], "w").write("http://127.0.0.1:%d" % s.getsockname()[1])
held = []
while True:
    c, _ = s.accept(); held.append(c)   # read nothing, answer nothing
' "$T/bh.url" &
_pids+=($!)
for i in $(seq 100); do [ -s "$T/bh.url" ] && break; sleep 0.05; done
BH=$(cat "$T/bh.url")
"$HUBMIRROR" mount --mirror "$BH,$M" --hf-cache "$T/hfc" hf:acme/ns-a "$T/c" >"$T/bh.out" 2>&1 &
bhmount=$!
sleep 0.5
quick "while a mount waits on a silent mirror, status answers" "$HUBMIRROR" status
quick "and so does the local endpoint" curl -fsS -o /dev/null "$E/api/models/acme/ns-a/revision/main"
timeout 30 tail --pid="$bhmount" -f /dev/null
wait "$bhmount"; rc=$?
sed 's/^/# /' "$T/bh.out"
check "the mount then comes from the next mirror (status $rc)" grep -q "mounted hf:acme/ns-a" "$T/bh.out"
quick "umount it" "$HUBMIRROR" umount "$T/c"

# SIGHUP (systemd's reload) is no reason to end
kill -HUP "$apid"
sleep 0.5
quick "after SIGHUP the agent still answers" "$HUBMIRROR" status
check "and says it carries on" grep -q "SIGHUP" "$T/cache/agent.log"

rm -f "$T/watch"; wait "$watchdog"
echo "# watchdog: $(wc -l <"$T/watch.ms") status calls, the slowest $(sort -n "$T/watch.ms" | tail -1 | cut -d' ' -f1) ms"
check "the watchdog saw every status call answer" test ! -s "$T/watch.bad"

# one agent per cache, and a slow agent keeps its socket (after the watchdog: this one stops the agent)
expect_status 1 "a second agent on the same cache is refused" "$HUBMIRROR" agent --cache "$T/cache" --socket "$T/other.sock" --listen 127.0.0.1:0 2>"$T/second.err"
sed 's/^/# /' "$T/second.err"
check "saying the cache is in use by the first (its pid and socket)" grep -q "in use by another agent (pid $apid, socket $HUBMIRROR_AGENT_SOCKET)" "$T/second.err"
kill -STOP "$apid"
expect_status 1 "a stopped agent's socket is not taken over" timeout 30 "$HUBMIRROR" agent --cache "$T/cache2" --listen 127.0.0.1:0 2>"$T/third.err"
sed 's/^/# /' "$T/third.err"
check "saying the agent there does not answer" grep -q "does not answer" "$T/third.err"
kill -CONT "$apid"
quick "the first agent answers on its socket again" "$HUBMIRROR" status

# agent --stop returns once the process has ended
quick "agent --stop" "$HUBMIRROR" agent --stop
check "its process has ended when --stop returns" bash -c "! kill -0 $apid 2>/dev/null || grep -q '^State:.*Z' /proc/$apid/status"
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
