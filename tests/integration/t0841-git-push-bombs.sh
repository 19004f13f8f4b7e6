#!/usr/bin/env bash
# t0841-git-push-bombs: packs that are small on the wire and huge inside, and pushes of many small
# objects, against git's own receive-pack and `hubmirror git-hook` (docs/uploads.md, "git push"; issue
# 46, "Also"). The data directory is on a 1 GB tmpfs; the namespace's quota is 100 MB. Each bomb is
# refused in git's words, before it costs the store a byte or the machine its memory, and main stays
# where it was: a 3 GiB file of zeros (a 3 MB pack: refused by its size, which the hook asks git
# before reading anything), a delta that makes 2 GiB out of a 16 MiB base (git runs under a bound of
# its memory and says so), 160 files of 8 MiB as a delta chain (1.3 GB from a pack of 60 KB: more than
# the disk has room for) and 20 of them (more than the quota has room for). (Many small files:
# t0853-git-push-many.)
. "$HM_SRC/tests/integration/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (a tmpfs for the data directory)"

cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
TOK
chmod 600 "$T/tokens"
W=hf_writer_acme_0001
mkdir -p "$T/disk"
mount -t tmpfs -o size=1g tmpfs "$T/disk" 2>"$T/mount.err" || skip "cannot mount a tmpfs: $(cat "$T/mount.err")"
trap 'umount -l "$T/disk"; _cleanup' EXIT
export HUBMIRROR_DATA=$T/disk/data
"$HUBMIRROR" init >/dev/null
check "serve starts (acme's quota 100M)" start_serve --local acme --tokens "$T/tokens" --p2p-listen off \
	--local-quota acme=100M || finish
for r in r; do
	curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
		-d "{\"name\":\"$r\",\"organization\":\"acme\",\"type\":\"model\"}" "$M/api/repos/create" || fail "create acme/$r"
done
head_of() { curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/$1/revision/main" |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])'; }
blobs() { find "$HUBMIRROR_DATA/store/blobs" -type f | wc -l; }
main0=$(head_of r)
blobs0=$(blobs)

# bomb GREP MODE ARGS...: the crafted push is refused, saying GREP; main and the store as they were
bomb() {
	local grep=$1; shift
	"$PY" "$HM_SRC/tests/integration/helpers/gitpack.py" "$M" "$W" acme/r "$@" >"$T/bomb.out" 2>&1
	local st=$?
	sed 's/^/#   /' "$T/bomb.out"
	[ "$st" = 1 ] && grep -q "$grep" "$T/bomb.out" && [ "$(head_of r)" = "$main0" ] && [ "$(blobs)" = "$blobs0" ]
}
check "a 3 GiB file of zeros (a 3 MB pack): refused by its size, read by no one" \
	bomb "remote: hubmirror: push refused: 'zeros.dat' is 10 MiB or more outside Git LFS" zeros $((3 << 30))
check "a delta that makes 2 GiB of a 16 MiB base: git's memory is bounded and git says so" \
	bomb "remote: fatal: Out of memory, malloc failed" delta $((16 << 20)) $((2 << 30))
check "160 files of 8 MiB in a delta chain (1.3 GB): no room on the disk, before any is read" \
	bomb "remote: hubmirror: push refused: the mirror's disk has no room for this push's 161 new files" chain $((8 << 20)) 160
check "20 of them (168 MB): over the namespace's quota, before any is read" \
	bomb "remote: hubmirror: push refused: The storage quota of namespace acme is exceeded" chain $((8 << 20)) 20
check "nothing of them is left in git's quarantine" bash -c "! find '$HUBMIRROR_DATA/git' -name 'incoming-*' | grep -q ."
finish
