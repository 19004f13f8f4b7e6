#!/usr/bin/env bash
# t0726-agent-shortcut: a mount serves the files its snapshot holds whole and keeps straight from the
# cache (read-only bind mounts over the FUSE files), so loaders read them as local files.
# - pull a checkpoint whole, then mount it: the big files are bind mounts of the cache's files
#   (read-only, nosuid, nodev), byte for byte upstream's, refusing writes; the small ones stay on FUSE;
# - a mount of a snapshot that wants one shard (pull --include): that shard only;
# - a mount whose files are read through it (not wanted): none;
# - umount and agent --stop leave no mount behind, and a container's copy (unshare -m) reads on.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/direct",
   "files": [{"path": "config.json", "content": "{\"model_type\": \"llama\"}\n"},
             {"path": "model-00001-of-00002.safetensors", "size": 3000000, "seed": 281},
             {"path": "model-00002-of-00002.safetensors", "size": 2500000, "seed": 282}]},
  {"hub": "hf", "type": "model", "id": "acme/direct-part",
   "files": [{"path": "config.json", "content": "{\"part\": 1}\n"},
             {"path": "a.bin", "size": 2000000, "seed": 283},
             {"path": "b.bin", "size": 2000000, "seed": 284}]}
 ]}
JSON
sync_from_fake hf:acme/direct hf:acme/direct-part
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
direct() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print([s for s in json.load(sys.stdin)["snapshots"] if s["spec"]==sys.argv[1]][0]["served_directly"])' "$1"; }

check "pull it whole" "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --no-hf-cache --listen 127.0.0.1:0 hf:acme/direct
check "mount it" "$HUBMIRROR" mount --no-hf-cache hf:acme/direct "$T/m"
for i in $(seq 50); do [ "$(direct hf:acme/direct)" = 2 ] && break; sleep 0.1; done
check "status: its two shards are served directly" test "$(direct hf:acme/direct)" = 2
grep " $T/m/" /proc/mounts | sed 's/^/# /'
check "as read-only bind mounts of the cache's files" bash -c "grep ' $T/m/model-00001-of-00002.safetensors ' /proc/mounts | grep -q ' ro,nosuid,nodev'"
check "config.json stays on FUSE" bash -c "! grep -q ' $T/m/config.json ' /proc/mounts"
check "every file, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/direct "$T/m"
check "a direct file refuses writes" bash -c "! echo x >>'$T/m/model-00001-of-00002.safetensors' 2>/dev/null"
chmod 755 "$T" # (the test's folder: the cache inside stays 0750)
check "another user reads it, as any file of the mount" setpriv --reuid=65534 --regid=65534 --clear-groups \
	cmp "$T/m/model-00001-of-00002.safetensors" "$T/m/model-00001-of-00002.safetensors"
check "but not by the cache's own path" bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups \
	cat \"\$(find '$T/cache' -name model-00001-of-00002.safetensors | head -1)\" >/dev/null 2>&1"
check "and is the cache's file" test "$(stat -c %i "$T/m/model-00001-of-00002.safetensors")" = \
	"$(stat -c %i "$(find "$T/cache" -name model-00001-of-00002.safetensors | head -1)")"

# a mount point whose folders are not there yet (/models/ORG/NAME): made passable by others though the
# agent's umask keeps its own files 0640 (a container's non-root user reads the model)
check "mount where the folders are not there yet" "$HUBMIRROR" mount --no-hf-cache hf:acme/direct "$T/models/acme/direct"
check "the folders made are 0755" test "$(stat -c %a "$T/models") $(stat -c %a "$T/models/acme")" = "755 755"
check "another user reads the model there" setpriv --reuid=65534 --regid=65534 --clear-groups \
	cat "$T/models/acme/direct/config.json"
check "umount it" "$HUBMIRROR" umount "$T/models/acme/direct"

# a container's copy of the mount, then umount: the copy reads on, the folder is free
mkfifo "$T/hold"
unshare -m --propagation private bash -c "cat '$T/hold' >/dev/null; sha256sum '$T/m/model-00002-of-00002.safetensors' >'$T/ns.sum'" &
ns=$!
sleep 0.5
check "umount" "$HUBMIRROR" umount "$T/m"
check "nothing stays mounted under the folder" test "$(grep -c " $T/m" /proc/mounts)" = 0
echo go >"$T/hold"
wait "$ns"
check "the container's copy reads on, byte for byte" test "$(cut -c1-64 "$T/ns.sum")" = \
	"$("$PY" -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/direct"][0]; print([f for f in r["commits"][-1]["files"] if f["path"].startswith("model-00002")][0]["sha256"])' "$T/up.json")"

# only the files a snapshot keeps
check "pull one file of another" "$HUBMIRROR" pull --no-hf-cache --include a.bin hf:acme/direct-part
check "mount it" "$HUBMIRROR" mount --no-hf-cache hf:acme/direct-part "$T/p"
for i in $(seq 50); do [ "$(direct hf:acme/direct-part)" = 1 ] && break; sleep 0.1; done
check "only the file pulled is served directly" test "$(direct hf:acme/direct-part)" = 1
check "b.bin reads through FUSE, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/direct-part "$T/p"
sleep 1
check "and stays there (read, not kept)" test "$(direct hf:acme/direct-part)" = 1

# damage in a file served directly, with no mirror to fetch it from again: the shortcut goes, and a
# read waits for good bytes instead of returning the bad ones
kill "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null
f=$(find "$T/cache" -name a.bin -not -path '*/by-sha256/*' | head -1)
"$PY" -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(1000); b=f.read(1); f.seek(1000); f.write(bytes([b[0]^1]))' "$f"
expect_status 1 "status --verify finds the damage" bash -c "'$HUBMIRROR' status --verify hf:acme/direct-part >/dev/null"
# (the bind mount goes on a worker thread: its path is looked up through FUSE; CI once took over 5 s)
t0=$SECONDS
for i in $(seq 300); do [ "$(direct hf:acme/direct-part)" = 0 ] && break; sleep 0.1; done
echo "# the shortcut went within $((SECONDS - t0)) s of the check"
check "the damaged file is served through FUSE again" test "$(direct hf:acme/direct-part)" = 0
timeout 3 head -c 4096 "$T/p/a.bin" >"$T/got" 2>/dev/null
check "where a read does not get the bad byte (it waits for good ones)" "$PY" -c '
import sys; got, bad = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(4096)
assert len(got) <= 1000 or got[1000] != bad[1000], "the damaged byte was read"' "$T/got" "$f"
check "agent --stop" "$HUBMIRROR" agent --stop
check "leaves no mount behind" test "$(grep -c " $T/" /proc/mounts)" = 0
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
