#!/usr/bin/env bash
# t0715-agent-full-disk: the agent's cache on a disk too small for the model (a 3 MB tmpfs, a 6 MB
# model): `pull` fails at once, before fetching, saying what it needs and what is free (and that the
# model alone does not fit that disk), and links nothing; a mount of it shows the files with the same
# warning, a read of bytes that cannot land fails at once with EIO instead of waiting, and status says
# the disk is full; the log says it once. Then the disk grows: the agent goes on by itself, the mount
# reads whole and a pull succeeds, with no restart. Needs root (tmpfs) and FUSE.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "config.json", "content": "{}\n"}, {"path": "w.bin", "size": 6000000, "seed": 121}]}
 ]}
JSON
sync_from_fake hf:acme/big
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
mkdir -p "$T/small"
check "a 3 MB disk for the cache" mount -t tmpfs -o size=3m tmpfs "$T/small"
trap '"$HUBMIRROR" agent --stop >/dev/null 2>&1; umount -l "$T/mnt" 2>/dev/null; umount -l "$T/small"; _cleanup' EXIT
expect_status 1 "pull fails" timeout 120 "$HUBMIRROR" pull --mirror "$M" --cache "$T/small/cache" --hf-cache "$T/hfc" \
	--listen 127.0.0.1:0 hf:acme/big 2>"$T/pull.err"
sed 's/^/# /' "$T/pull.err"
check "at once, before fetching: saying what it needs and what is free, in MiB" \
	grep -Eq "not enough room in the cache for hf:acme/big: it needs 5\.[0-9] MiB more and the disk of $T/small/cache has [0-9.]+ (KiB|MiB) free" "$T/pull.err"
check "and that the model alone is bigger than that disk" grep -q "bigger than that whole disk" "$T/pull.err"
check "nothing was fetched (the agent took nothing)" bash -c "\"$HUBMIRROR\" status --json | \"$PY\" -c 'import json,sys; sys.exit(len(json.load(sys.stdin)[\"snapshots\"]))'"
check "nothing is linked into the hub cache" test ! -e "$T/hfc/models--acme--big"
"$HUBMIRROR" mount --no-hf-cache hf:acme/big "$T/mnt" 2>"$T/mount.err"
check "a mount of it shows the files" test -f "$T/mnt/w.bin"
check "with the same warning" grep -q "warning: not enough room" "$T/mount.err"
start=$(date +%s)
check "reading the bytes that cannot land fails (EIO)" bash -c "! cat '$T/mnt/w.bin' >/dev/null 2>'$T/read.err'"
took=$(( $(date +%s) - start ))
# (without the torrent's error the read would wait for its pieces for 10 minutes, past this test's
# own time limit: that it ends at all is the check; the time is only printed)
echo "# the failing read took ${took} s: $(cat "$T/read.err")"
"$HUBMIRROR" status >"$T/status.out"
sed 's/^/# /' "$T/status.out"
check "plain status says the disk is full, and what is missing" grep -Eq "error: the cache's disk is full: not enough room .* it needs [0-9.]+ (KiB|MiB) more" "$T/status.out"
check "the log says the write error once, not once per write" test "$(grep -c ' agent: hf:acme/big: ' "$T/small/cache/agent.log")" -le 3
# the disk grows (or another process frees space): the agent goes on by itself, no restart
check "the cache's disk grows to 16 MB" mount -o remount,size=16m "$T/small"
for i in $(seq 150); do grep -q "has room again" "$T/small/cache/agent.log" && break; sleep 0.2; done
check "the agent says it goes on" grep -q "has room again" "$T/small/cache/agent.log"
check "and the mounted file now reads whole" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/big "$T/mnt"
check "umount" "$HUBMIRROR" umount "$T/mnt"
check "a pull now succeeds" timeout 120 "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/big
check "and links every file into the hub cache, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/big \
	"$T/hfc/models--acme--big/snapshots/$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/small/cache/agent.log'"
finish
