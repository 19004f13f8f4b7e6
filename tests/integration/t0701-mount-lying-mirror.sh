#!/usr/bin/env bash
# t0701-mount-lying-mirror: an instance trusts its mirror with a snapshot's file list and torrent, not
# with the bytes already in its cache (docs/security.md). A mount keeps finished contents by the sha256
# the mirror names (by-sha256/: an index, not a proof) and places them into later revisions only where
# the later torrent's hashes accept them; a mirror that names wrong sha256s (here a front that lies in
# the torrent's meta) must neither make a later revision read a wrong byte, nor make a later torrent
# write into a file other snapshots share. Needs root and /dev/fuse.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/lie",
   "files": [{"path": "config.json", "content": "{\"rev\": 1}\n"},
             {"path": "w.bin", "size": 3000000, "seed": 71}]}
 ]}
JSON
sync_from_fake hf:acme/lie
check "serve starts" start_serve --p2p-rescan 1 --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up1.json"
sha() { "$PY" -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["repos"] if x["id"]=="acme/lie"][0]; print([f for f in r["commits"][-1]["files"] if f["path"]==sys.argv[2]][0]["sha256"])' "$1" "$2"; }
x=$(sha "$T/up1.json" w.bin)
mnt=$T/mnt
unmount() { "$HUBMIRROR" umount "$1" 2>/dev/null || umount -l "$1" 2>/dev/null; }
trap 'unmount "$T/mnt"; unmount "$T/mnt2"; unmount "$T/mnt3"; _cleanup' EXIT

# Revision 1 through a mirror that names a made-up sha256 for config.json.
lie() {
	rm -f "$T/lie.url"
	"$PY" "$HM_SRC/tests/integration/helpers/lyingmirror.py" --ready-file "$T/lie.url" --mirror "$M" "$@" &
	_pids+=($!)
	for i in $(seq 100); do [ -s "$T/lie.url" ] && break; sleep 0.05; done
	L=$(cat "$T/lie.url")
}
# The lie names for revision 1's config.json the sha256 of a file revision 2 will add.
extra='{"extra": 2}'
z=$(printf '%s\n' "$extra" | sha256sum | cut -d' ' -f1)
lie --claim "config.json=$z"
"$HUBMIRROR" mount --mirror "$L" --cache "$T/cache" --no-hf-cache --listen 127.0.0.1:0 hf:acme/lie "$mnt" >"$T/m1.out" 2>&1
check "revision 1 mounts through the lying front" grep -q mounted "$T/m1.out"
check "its files are upstream's, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up1.json" hf acme/lie "$mnt"
for i in $(seq 100); do [ -e "$T/cache/by-sha256/$x" ] && break; sleep 0.1; done
check "the weights are kept by their sha256" test -e "$T/cache/by-sha256/$x"
for i in $(seq 100); do [ -e "$T/cache/by-sha256/$z" ] && break; sleep 0.1; done
check "config.json is kept under the name the mirror gave it (checked where it is used)" test -e "$T/cache/by-sha256/$z"
unmount "$mnt"
old_config=$(ls "$T"/cache/*/lie/config.json | head -1)
old_copy=$(ls "$T"/cache/*/lie/w.bin | head -1)

# Revision 2 changes the weights and adds extra.json; the front claims the weights are still revision
# 1's, and names extra.json truly (so the content kept under that name is placed there, and fails).
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/lie", "hub": "hf", "type": "model", "branch": "main",
  "title": "new weights", "files": [{"path": "w.bin", "size": 3000000, "seed": 72},
  {"path": "extra.json", "content": "{\"extra\": 2}\n"}]}' >/dev/null
"$HUBMIRROR" sync >/dev/null
curl -fsS "$FAKE_API/_fake/repos" >"$T/up2.json"
y=$(sha "$T/up2.json" w.bin)
check "the weights did change upstream" test "$x" != "$y"
sleep 1.5   # the seed's rescan picks up the new torrent
lie --claim "w.bin=$x"
"$HUBMIRROR" mount --mirror "$L" --cache "$T/cache" --no-hf-cache --listen 127.0.0.1:0 hf:acme/lie "$T/mnt2" >"$T/m2.out" 2>&1
check "revision 2 mounts through the front that names revision 1's weights" grep -q mounted "$T/m2.out"
check "it reads revision 2's weights, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up2.json" hf acme/lie "$T/mnt2"
unmount "$T/mnt2"
got=$(sha256sum "$T/cache/by-sha256/$x" | cut -d' ' -f1)
check "the content kept as revision 1's weights is still theirs" test "$got" = "$x"
got=$(sha256sum "$old_copy" | cut -d' ' -f1)
check "and so is revision 1's copy in the cache" test "$got" = "$x"
check "revision 2's weights are not kept under revision 1's name" test "$(stat -c %h "$T/cache/by-sha256/$x")" -le 2
check "the wrongly named content placed as extra.json was refused: the cache holds upstream's" \
	test "$(cat "$(ls "$T"/cache/*/lie/extra.json | head -1)")" = "$extra"
check "and revision 1's config.json, which that name held, is still revision 1's" grep -q '"rev": 1' "$old_config"

# An honest mirror again: the same revision mounts as it should.
"$HUBMIRROR" mount --mirror "$M" --cache "$T/cache" --no-hf-cache --listen 127.0.0.1:0 hf:acme/lie "$T/mnt3" >"$T/m3.out" 2>&1
check "the honest mirror's revision 2 mounts too" grep -q mounted "$T/m3.out"
check "byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up2.json" hf acme/lie "$T/mnt3"
unmount "$T/mnt3"
finish
