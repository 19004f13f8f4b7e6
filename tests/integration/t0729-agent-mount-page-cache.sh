#!/usr/bin/env bash
# t0729-agent-mount-page-cache: what a mount has answered, the kernel keeps in the mount's own page
# cache, so the agent lets go of the cache file's pages of it behind the reader (docs/agent.md,
# "One copy of each byte in memory"): a 160 MB file read front to back through a fresh mount, and a
# 64 MB one read through mmap by 4 threads as a loader does, leave their cache files mostly out of the
# page cache (the cache's folder on an ext4 disk of the test's own: a loop device), and read byte for
# byte again once the mount's copy is gone too (from the disk, through the agent). Needs root (loop
# device) and FUSE.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
command -v fincore >/dev/null && command -v mkfs.ext4 >/dev/null || skip "needs fincore and mkfs.ext4"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/paged",
   "files": [{"path": "config.json", "content": "{}\n"},
             {"path": "w.bin", "size": 167772160, "seed": 291},
             {"path": "shard.safetensors", "size": 67108864, "seed": 292}]}
 ]}
JSON
sync_from_fake hf:acme/paged
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
truncate -s 400M "$T/disk.img"
mkfs.ext4 -q -F "$T/disk.img"
mkdir -p "$T/disk"
check "an ext4 disk for the cache (a loop device)" mount -o loop "$T/disk.img" "$T/disk"
trap '"$HUBMIRROR" agent --stop >/dev/null 2>&1; umount -l "$T/m" 2>/dev/null; umount -d "$T/disk"; _cleanup' EXIT
check "mount it (nothing fetched ahead)" "$HUBMIRROR" mount --mirror "$M" --cache "$T/disk/cache" --no-hf-cache \
	--listen 127.0.0.1:0 hf:acme/paged "$T/m"
want() { "$PY" -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/paged"][0]; print([f for f in r["commits"][-1]["files"] if f["path"]==sys.argv[2]][0]["sha256"])' "$T/up.json" "$1"; }
check "w.bin reads front to back, byte for byte" test "$(sha256sum <"$T/m/w.bin" | cut -c1-64)" = "$(want w.bin)"
# 4 threads, each copying its quarter out of one mmap in order: the pages fault in through the mount
mmap_sum() {
	"$PY" - "$1" <<'PY'
import hashlib, mmap, sys, threading
f = open(sys.argv[1], "rb")
mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
q = len(mm) // 4
parts = [None] * 4
def copy(i):
    parts[i] = bytes(mm[i * q:(i + 1) * q if i < 3 else len(mm)])
ts = [threading.Thread(target=copy, args=(i,)) for i in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print(hashlib.sha256(b"".join(parts)).hexdigest())
PY
}
check "shard.safetensors reads through mmap on 4 threads, byte for byte" test "$(mmap_sum "$T/m/shard.safetensors")" = "$(want shard.safetensors)"
resident() { fincore --bytes --noheadings --output RES "$1"; }
held() {
	local n=0 f
	for f in w.bin shard.safetensors; do
		n=$((n + $(resident "$(find "$T/disk/cache" -name "$f" -not -path '*/by-sha256/*' | head -1)")))
	done
	echo "$n"
}
# (the agent keeps the last 8 chunks of 8 MiB the mount answered, of any file, and pages still being
# written back: at most 72 MiB of the 224 MiB read stay; without the letting go every byte stays)
for i in $(seq 25); do [ "$(held)" -le $((72 << 20)) ] && break; sleep 0.2; done
echo "# $(held) of $((224 << 20)) bytes of the two cache files are in the page cache"
check "the cache files' pages are let go behind the reads (at most 72 MiB stay)" test "$(held)" -le $((72 << 20))
# the mount's own copy goes too (as under memory pressure): the bytes come from the cache's disk
"$PY" -c 'import os,sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' \
	"$T/m/w.bin" "$T/m/shard.safetensors"
check "w.bin reads again, byte for byte" test "$(sha256sum <"$T/m/w.bin" | cut -c1-64)" = "$(want w.bin)"
check "shard.safetensors reads again through mmap, byte for byte" test "$(mmap_sum "$T/m/shard.safetensors")" = "$(want shard.safetensors)"
check "umount" "$HUBMIRROR" umount "$T/m"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/disk/cache/agent.log'"
finish
