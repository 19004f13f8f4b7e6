#!/usr/bin/env bash
# t0743-agent-endpoint-seeds: what an agent fetched for its local endpoint's reads alone is offered to
# the next instance. Agent a, alone in the swarm (its direct fill: pieces over HTTP ranges, written by
# the agent itself), sends a file through its endpoint, and then offers those pieces through
# libtorrent (status: `offered`); agent b, reading the same file through its own endpoint, takes
# (almost) all of it from a, not from the mirror. Alone again, a fetches a second file the same way
# and offers it too; and (with FUSE) a file a reads through a mount is offered the same way, agent c
# taking it from a. Every byte is compared with upstream's.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/eps",
   "files": [{"path": "config.json", "content": "{\"eps\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 743},
             {"path": "other.bin", "size": 2000000, "seed": 744},
             {"path": "mounted.bin", "size": 1500000, "seed": 745}]}
 ]}
JSON
sync_from_fake hf:acme/eps
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
sha() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["repos"][0]
c=[c for c in r["commits"] if c["id"]==r["sha"]][0]; print([f for f in c["files"] if f["path"]==sys.argv[2]][0]["sha256"])' \
	"$T/up.json" "$1"; }
# field SOCKET KEY: a number from the agent's status of the snapshot (0 while it has none)
field() { HUBMIRROR_AGENT_SOCKET=$1 "$HUBMIRROR" status --json | "$PY" -c '
import json,sys; s=json.load(sys.stdin)["snapshots"]; print(s[0][sys.argv[1]] if s else 0)' "$2"; }
size=3000000

export HUBMIRROR_AGENT_SOCKET=$T/a.sock
check "agent a starts with a local endpoint" "$HUBMIRROR" agent --mirror "$M" --cache "$T/ca" --listen 127.0.0.1:0 --http 0
EA=$(agent_endpoint)
curl -fsS -o "$T/a.bin" "$EA/acme/eps/resolve/main/model.safetensors"
check "a sends the file, byte for byte" test "$(sha256sum <"$T/a.bin" | cut -c1-64)" = "$(sha model.safetensors)"
echo "# a: $(field "$T/a.sock" fetched_over_http) bytes over HTTP ranges, $(field "$T/a.sock" downloaded) from peers"
check "a took it from the mirror over HTTP ranges" test "$(field "$T/a.sock" fetched_over_http)" -ge $size
# a offers what it fetched: libtorrent holds those pieces (waited for: it is not timed)
for i in $(seq 300); do
	[ "$(field "$T/a.sock" offered)" -ge $size ] && break
	sleep 0.2
done
echo "# a offers $(field "$T/a.sock" offered) bytes"
check "a offers the file's pieces to peers" test "$(field "$T/a.sock" offered)" -ge $size
check "and not the files nobody read" test "$(field "$T/a.sock" offered)" -lt $((size + 1500000))

export HUBMIRROR_AGENT_SOCKET=$T/b.sock
check "agent b starts with a local endpoint" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cb" --listen 127.0.0.1:0 --http 0
EB=$(agent_endpoint)
curl -fsS -o "$T/b.bin" "$EB/acme/eps/resolve/main/model.safetensors"
check "b sends the file, byte for byte" test "$(sha256sum <"$T/b.bin" | cut -c1-64)" = "$(sha model.safetensors)"
filled=$(field "$T/b.sock" fetched_over_http)
got=$(field "$T/b.sock" downloaded)
echo "# b: $filled bytes over HTTP ranges, $got from peers; a uploaded $(field "$T/a.sock" uploaded)"
check "b took the file from a" test "$got" -ge $((size * 3 / 4))
check "and at most a quarter of it from the mirror" test "$filled" -le $((size / 4))
check "a uploaded it" test "$(field "$T/a.sock" uploaded)" -ge $((size * 3 / 4))

# a reads more through its endpoint, alone again to the mirror: that comes too, and is offered too
export HUBMIRROR_AGENT_SOCKET=$T/a.sock
check "agent b stops" env HUBMIRROR_AGENT_SOCKET="$T/b.sock" "$HUBMIRROR" agent --stop
curl -fsS -o "$T/a2.bin" "$EA/acme/eps/resolve/main/other.bin"
check "a sends a second file, byte for byte" test "$(sha256sum <"$T/a2.bin" | cut -c1-64)" = "$(sha other.bin)"
check "alone again, it came over HTTP ranges" test "$(field "$T/a.sock" fetched_over_http)" -ge $((size + 2000000))
for i in $(seq 300); do
	[ "$(field "$T/a.sock" offered)" -ge $((size + 2000000)) ] && break
	sleep 0.2
done
check "a offers both files' pieces" test "$(field "$T/a.sock" offered)" -ge $((size + 2000000))

# the same for a file read through a mount of a's (when FUSE is here): agent c takes it from a
if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	had=$(field "$T/a.sock" offered)
	"$HUBMIRROR" mount --no-hf-cache hf:acme/eps "$T/mnt" >/dev/null 2>"$T/mount.err"
	check "a mounts the snapshot" test $? = 0
	check "a reads a third file through the mount, byte for byte" \
		test "$(sha256sum <"$T/mnt/mounted.bin" | cut -c1-64)" = "$(sha mounted.bin)"
	for i in $(seq 300); do
		[ "$(field "$T/a.sock" offered)" -ge $((had + 1500000)) ] && break
		sleep 0.2
	done
	check "a offers what the mount read" test "$(field "$T/a.sock" offered)" -ge $((had + 1500000))
	export HUBMIRROR_AGENT_SOCKET=$T/c.sock
	check "agent c starts with a local endpoint" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cc" \
		--listen 127.0.0.1:0 --http 0
	EC=$(agent_endpoint)
	curl -fsS -o "$T/c.bin" "$EC/acme/eps/resolve/main/mounted.bin"
	check "c sends the file, byte for byte" test "$(sha256sum <"$T/c.bin" | cut -c1-64)" = "$(sha mounted.bin)"
	filled=$(field "$T/c.sock" fetched_over_http)
	got=$(field "$T/c.sock" downloaded)
	echo "# c: $filled bytes over HTTP ranges, $got from peers"
	check "c took the mounted file from a" test "$got" -ge $((1500000 * 3 / 4))
	check "and at most a quarter of it from the mirror" test "$filled" -le $((1500000 / 4))
	check "agent c stops" "$HUBMIRROR" agent --stop
	export HUBMIRROR_AGENT_SOCKET=$T/a.sock
	check "umount" "$HUBMIRROR" umount "$T/mnt"
fi
check "agent a stops" "$HUBMIRROR" agent --stop
check "the agents' logs hold no sanitizer report" bash -c "! grep -sE 'Sanitizer|runtime error' '$T/ca/agent.log' '$T/cb/agent.log' '$T/cc/agent.log'"
finish
