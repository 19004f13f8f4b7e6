#!/usr/bin/env bash
# t0700-mount: `hubmirror mount` attaches a synced model from a mirror: the files are there read-only
# when the command returns, byte for byte upstream's (read through FUSE, fetched from the swarm on
# demand), the Hugging Face cache points at them (refs/main, snapshots/COMMIT), writes are refused,
# and `hubmirror umount` detaches it and ends the mount's process. Needs root and /dev/fuse.
. "$HM_SRC/tests/integration/lib.sh"
[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] || { echo "1..0 # SKIP needs root and /dev/fuse"; exit 77; }
command -v fusermount3 >/dev/null || { echo "1..0 # SKIP fusermount3 missing (apt-get install fuse3)"; exit 77; }
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/mnt",
   "files": [{"path": "config.json", "content": "{\"mounted\": true}\n"},
             {"path": "empty.txt", "content": ""},
             {"path": "tokenizer/vocab.txt", "content": "a\nb\n"},
             {"path": "model.safetensors", "size": 6000000, "seed": 61}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/mnt >/dev/null && "$HUBMIRROR" sync >/dev/null
check "serve starts" start_serve
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/mnt"][0]["sha"])' "$T/up.json")
mnt=$T/mnt
unmount() { "$HUBMIRROR" umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; }
trap 'unmount; _cleanup' EXIT

"$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --hf-cache "$T/hf" --listen 127.0.0.1:0 hf:acme/mnt "$mnt" >"$T/mount.out" 2>&1
st=$?
check "mount returns 0 once the files are there" test "$st" = 0
sed 's/^/# /' "$T/mount.out"
check "it is a FUSE mount" bash -c "grep -q ' $mnt fuse.hubmirror ' /proc/mounts"
check "config.json reads at once, as upstream has it" bash -c "test \"\$(cat '$mnt/config.json')\" = '{\"mounted\": true}'"
check "the tail of the big file reads first (pieces asked for on demand)" bash -c "
	tail -c 1000 '$mnt/model.safetensors' | cmp - <(tail -c 1000 \"\$(ls $HUBMIRROR_DATA/store/blobs/*/* | while read b; do [ \$(stat -c %s \$b) = 6000000 ] && echo \$b; done)\")"
check "every file, byte for byte" "$PY" "$HM_SRC/tests/integration/checkfiles.py" "$T/up.json" hf acme/mnt "$mnt"
check "files are read-only" bash -c "test \"\$(stat -c %a '$mnt/config.json')\" = 444 && ! (echo x >'$mnt/config.json') 2>/dev/null"
check "no new files" bash -c "! touch '$mnt/new' 2>/dev/null"
check "the HF cache's ref names the commit" test "$(cat "$T/hf/models--acme--mnt/refs/main")" = "$commit"
check "the HF cache's snapshot links to the mounted files" cmp "$T/hf/models--acme--mnt/snapshots/$commit/tokenizer/vocab.txt" "$mnt/tokenizer/vocab.txt"
pid=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$T/mount.out")
check "umount detaches it" "$HUBMIRROR" umount "$mnt"
check "the folder is no longer a mount" bash -c "! grep -q ' $mnt ' /proc/mounts"
for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
check "and the mount's process has ended" bash -c "! kill -0 $pid 2>/dev/null"
expect_status 1 "mounting a repo the mirror does not have fails clearly" \
	"$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --no-hf-cache hf:acme/nope "$T/nope" 2>"$T/nope.err"
check "and says so" grep -q "not on this mirror" "$T/nope.err"
expect_status 2 "mount without a mirror is a usage error" env -u HUBMIRROR_URL "$HUBMIRROR" mount hf:acme/mnt "$T/x" 2>/dev/null
finish
