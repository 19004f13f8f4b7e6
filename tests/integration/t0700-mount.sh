#!/usr/bin/env bash
# t0700-mount: `hubmirror mount` attaches a synced model from a mirror: the files are there read-only
# when the command returns, byte for byte upstream's (read through FUSE, fetched from the swarm on
# demand), the Hugging Face cache points at them (refs/main, snapshots/COMMIT), writes are refused,
# and `hubmirror umount` detaches it while the agent that held it keeps the snapshot. Needs root and
# /dev/fuse.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/mnt",
   "files": [{"path": "config.json", "content": "{\"mounted\": true}\n"},
             {"path": "empty.txt", "content": ""},
             {"path": "tokenizer/vocab.txt", "content": "a\nb\n"},
             {"path": "model.safetensors", "size": 6000000, "seed": 61}]}
 ]}
JSON
sync_from_fake hf:acme/mnt
check "serve starts" start_serve --p2p-rescan 1
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
check "every file, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/mnt "$mnt"
check "files are read-only" bash -c "test \"\$(stat -c %a '$mnt/config.json')\" = 444 && ! (echo x >'$mnt/config.json') 2>/dev/null"
check "no new files" bash -c "! touch '$mnt/new' 2>/dev/null"
check "the HF cache's ref names the commit" test "$(cat "$T/hf/models--acme--mnt/refs/main")" = "$commit"
check "the HF cache's snapshot links to the mounted files" cmp "$T/hf/models--acme--mnt/snapshots/$commit/tokenizer/vocab.txt" "$mnt/tokenizer/vocab.txt"
pid=$(sed -n 's/.*(agent pid \([0-9]*\)).*/\1/p' "$T/mount.out")
check "the mount is held by a running agent" kill -0 "$pid"
big=$("$PY" -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["repos"] if x["id"]=="acme/mnt"][0]; print([f for f in r["commits"][-1]["files"] if f["path"]=="model.safetensors"][0]["sha256"])' "$T/up.json")
# (kept once the snapshot is quiet for 3 s: within seconds)
for i in $(seq 200); do [ -e "$T/cache/by-sha256/$big" ] && break; sleep 0.1; done
check "once whole, the mount keeps its contents by sha256 in the cache" test -e "$T/cache/by-sha256/$big"
check "umount detaches it" "$HUBMIRROR" umount "$mnt"
check "the folder is no longer a mount" bash -c "! grep -q ' $mnt ' /proc/mounts"
"$HUBMIRROR" status --json >"$T/status.json"
check "the agent keeps the snapshot, whole and unmounted" "$PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))["snapshots"]
assert len(s) == 1 and s[0]["commit"] == sys.argv[2] and s[0]["mounts"] == [] and s[0]["complete"], s' "$T/status.json" "$commit"
# A new revision upstream (config.json changes, the 6 MB weights do not): mounting it fetches only
# what changed; the weights are placed from the cache (a hard link) and checked by libtorrent.
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/mnt", "hub": "hf", "type": "model", "branch": "main",
  "title": "new config", "files": [{"path": "config.json", "content": "{\"mounted\": 2}\n"}]}' >/dev/null
"$HUBMIRROR" sync >/dev/null
curl -fsS "$FAKE_API/_fake/repos" >"$T/up2.json"
sleep 1.5   # the seed's rescan picks up the new torrent
sent() { echo $(( $(metric hubmirror_seeder_uploaded_bytes_total) + $(metric hubmirror_webseed_bytes_total) )); }
before=$(sent)
"$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --no-hf-cache --listen 127.0.0.1:0 hf:acme/mnt "$T/mnt2" >"$T/mount2.out" 2>&1
check "the new revision mounts, through the same agent" grep -q "mounted .*(agent pid $pid)" "$T/mount2.out"
check "with its new config and the same weights, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up2.json" hf acme/mnt "$T/mnt2"
after=$(sent)
echo "# the mirror sent $((after - before)) bytes for the new revision"
check "the mirror sent well under the weights' 6 MB for it" test $((after - before)) -lt 1000000
check "the weights in the cache are one file with two names" test "$(stat -c %h "$T/cache/by-sha256/$big")" -ge 3
"$HUBMIRROR" umount "$T/mnt2"
expect_status 1 "mounting a repo the mirror does not have fails clearly" \
	"$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --no-hf-cache hf:acme/nope "$T/nope" 2>"$T/nope.err"
check "and says so" grep -q "not on this mirror" "$T/nope.err"
expect_status 2 "mount without a mirror (and no agent to ask) is a usage error" \
	env -u HUBMIRROR_URL HUBMIRROR_AGENT_SOCKET="$T/none.sock" "$HUBMIRROR" mount hf:acme/mnt "$T/x" 2>/dev/null
finish
