#!/usr/bin/env bash
# t0715-agent-full-disk: the agent's cache on a disk too small for the model (a 3 MB tmpfs, a 6 MB
# model): `pull` fails saying the disk is full and links nothing into the hub cache; a mount of it shows
# the files but a read of bytes that cannot land fails at once with EIO instead of waiting; the agent
# keeps answering. Needs root (tmpfs) and FUSE.
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
mkdir -p "$T/small"
check "a 3 MB disk for the cache" mount -t tmpfs -o size=3m tmpfs "$T/small"
trap '"$HUBMIRROR" agent --stop >/dev/null 2>&1; umount -l "$T/mnt" 2>/dev/null; umount -l "$T/small"; _cleanup' EXIT
expect_status 1 "pull fails" timeout 120 "$HUBMIRROR" pull --mirror "$M" --cache "$T/small/cache" --hf-cache "$T/hfc" \
	--listen 127.0.0.1:0 hf:acme/big 2>"$T/pull.err"
sed 's/^/# /' "$T/pull.err"
check "saying the cache's disk is full" grep -q "disk is full" "$T/pull.err"
check "nothing is linked into the hub cache" test ! -e "$T/hfc/models--acme--big"
check "the agent still answers, and says so too" bash -c "\"$HUBMIRROR\" status --json | grep -q 'disk is full'"
check "a mount of it shows the files" "$HUBMIRROR" mount --no-hf-cache hf:acme/big "$T/mnt"
start=$(date +%s)
check "reading the bytes that cannot land fails (EIO)" bash -c "! cat '$T/mnt/w.bin' >/dev/null 2>'$T/read.err'"
took=$(( $(date +%s) - start ))
# (without the torrent's error the read would wait for its pieces for 10 minutes, past this test's
# own time limit: that it ends at all is the check; the time is only printed)
echo "# the failing read took ${took} s: $(cat "$T/read.err")"
check "umount" "$HUBMIRROR" umount "$T/mnt"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/small/cache/agent.log'"
finish
