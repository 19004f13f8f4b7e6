#!/usr/bin/env bash
# t0702-mount-ms-cache: `hubmirror mount ms:OWNER/NAME` links the files into both ModelScope caches, so
# that either SDK finds the model offline: the classic `modelscope` package's
# $MODELSCOPE_CACHE/models/OWNER/NAME (dots as ___) with its own index (.msc, a pickle of
# {Path, Revision} per file; .mdl; .mv), and `modelscope_hub`'s models/OWNER--NAME/snapshots/REV/.
# The SDKs' offline lookups are replayed here as they read the cache (snapshot_download and
# model_file_download with local_files_only=True; modelscope_hub's download_repo). Needs root and FUSE.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "ms", "type": "model", "id": "acme/tiny.v2",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "sub/w.bin", "size": 400000, "seed": 77}]}
 ]}
JSON
sync_from_fake ms:acme/tiny.v2
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
mnt=$T/mnt
trap '"$HUBMIRROR" umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; _cleanup' EXIT
MODELSCOPE_CACHE=$T/msc "$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 \
	ms:acme/tiny.v2 "$mnt" >"$T/mount.out" 2>&1
check "the ModelScope repo mounts and says where it linked it" grep -q "ModelScope cache: $T/msc" "$T/mount.out"
sed 's/^/# /' "$T/mount.out"
commit=$(curl -fsS "$M/api/p2p/torrent/ms/model/acme/tiny.v2?meta=1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["commit"])')
check "the classic SDK finds it offline, as it reads its cache" "$PY" - "$T/msc" "$commit" "$mnt" <<'PY'
import os, pickle, sys
root, commit, mnt = sys.argv[1], sys.argv[2], sys.argv[3]
owner, name = "acme", "tiny.v2"
# get_model_cache_root() + owner + name with '.' masked (file_download.create_temporary_directory_and_cache)
folder = os.path.join(root, "models", owner, name.replace(".", "___"))
# ModelFileSystemCache: .msc is a pickle of [{'Path', 'Revision'}]; snapshot_download(local_files_only)
# needs it non-empty, model_file_download finds each file by its Path
entries = pickle.load(open(os.path.join(folder, ".msc"), "rb"))
assert entries and all(set(e) == {"Path", "Revision"} and e["Revision"] == commit for e in entries), entries
paths = sorted(e["Path"] for e in entries)
assert paths == [".gitattributes", "configuration.json", "sub/w.bin"] or paths == ["configuration.json", "sub/w.bin"], paths
for p in paths:
    got = open(os.path.join(folder, p), "rb").read()
    assert got == open(os.path.join(mnt, p), "rb").read(), p
assert pickle.load(open(os.path.join(folder, ".mdl"), "rb")) == {"id": "acme/tiny___v2"}
assert open(os.path.join(folder, ".mv")).read().startswith("Revision:" + commit + ",CreatedAt:")
PY
check "modelscope_hub finds it offline (models/OWNER--NAME/snapshots/REV)" bash -c "
	cmp '$T/msc/models/acme--tiny.v2/snapshots/master/sub/w.bin' '$mnt/sub/w.bin' &&
	cmp '$T/msc/models/acme--tiny.v2/snapshots/master/configuration.json' '$mnt/configuration.json'"
check "the files are upstream's, byte for byte" bash -c "
	curl -fsS '$FAKE_API/_fake/repos' >'$T/up.json' &&
	'$PY' '$HM_SRC/tests/integration/helpers/checkfiles.py' '$T/up.json' ms acme/tiny.v2 '$mnt'"
"$HUBMIRROR" umount "$mnt"
MODELSCOPE_CACHE=$T/msc2 "$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --no-ms-cache \
	ms:acme/tiny.v2 "$mnt" >"$T/mount2.out" 2>&1
check "with --no-ms-cache it mounts" grep -q mounted "$T/mount2.out"
check "and writes no cache" test ! -e "$T/msc2"
"$HUBMIRROR" umount "$mnt"
finish
