#!/usr/bin/env bash
# t0882-store-rgw-torrent: with a bucket of Ceph's RADOS Gateway behind the store and a local cache of
# 4 MiB, a sync of a snapshot whose content (30 MB) is bigger than the cache makes the snapshot's torrent
# by reading that content in ranges from the bucket, never bringing it into the cache:
# - watched with inotify while the sync runs, the store's folder never gets a file of the content: no
#   fill of the cache (tmp/.<sha256>-<nonce>.part, then blobs/<h0h1>/<sha256>), which the code before
#   made for its torrent (it hashed the cache's files, the content brought in, pinned, for that while);
#   the sync's debug log names the bucket's reads, every byte of the content once;
# - the torrent's info-hashes are those libtorrent's own create_torrent + set_piece_hashes make of the
#   plain files on local disk (lt_check.py --make);
# - python3-libtorrent downloads the snapshot with it from the mirror (its web seed reads the bucket),
#   every piece verified against the torrent's hashes, every byte upstream's;
# - a read of the bucket that fails halfway through the content (the object cut short) fails the
#   torrent with words that name the file, the offset and why, and no torrent is made; the next sync,
#   and so does one byte changed in the object (its ranges hashed in order as they pass: the content
#   does not hash to its name), never a torrent of those bytes; the next sync, the object whole again,
#   makes the same torrent.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
"$PY" -c 'import libtorrent' 2>/dev/null || skip "python3-libtorrent missing"
check "a Ceph cluster with its gateway starts" start_rgw
size=30000000
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "small.bin", "size": 1000000, "seed": 881},
             {"path": "big.safetensors", "size": $size, "seed": 882}]}
 ]}
JSON
rgw_store t0882 4M
big=$("$PY" -c 'import hashlib, sys
sys.path.insert(0, sys.argv[1])
from content import Blob
b, h = Blob(int(sys.argv[2]), seed=882), hashlib.sha256()
for c in b.iter_range(0, b.size):
    h.update(c)
print(h.hexdigest())' "$HM_SRC/tests/fakehub" "$size")
store_bytes() { find "$HUBMIRROR_DATA/store" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/big >/dev/null

# inotify on the store's tmp/ and blobs/ (and each folder made under blobs/): every name made or moved
# in, one a line, from before the sync starts to after it ended
check "the store's folder is watched" watch_store

"$HUBMIRROR" --log-level debug sync >"$T/sync.out" 2>"$T/sync.err"; st=$?
tail -3 "$T/sync.err" | sed 's/^/# /'
check "the sync completes" test "$st" = 0
# a marker made after the sync ended: once the watch names it, it has read every event before it
touch "$HUBMIRROR_DATA/store/tmp/t0882-end"
for i in $(seq 600); do grep -q "^tmp/t0882-end$" "$T/made" && break; kill -0 $watcher || break; sleep 0.1; done
check "the watch read every event of the sync" grep -q "^tmp/t0882-end$" "$T/made"
kill $watcher
rm -f "$HUBMIRROR_DATA/store/tmp/t0882-end"
sed 's/^/# made: /' "$T/made" | grep -v "/[0-9a-f]\{64\}$" | head -20
check "the watch saw the sync's writes (config.json's content into the cache)" grep -q "^blobs/../[0-9a-f]\{64\}$" "$T/made"
check "the store's folder never got a file of the big content but its empty streaming partial file" \
	bash -c "! grep -v '^tmp/$big.part$' '$T/made' | grep -q '$big'"
check "so no fill of the cache brought it in (the code before did, for its torrent)" \
	bash -c "! grep -q '^tmp/\.$big-' '$T/made'"
check "the cache keeps no copy of it" test ! -e "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
check "the store's folder holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
read_back=$(grep -F "${big:0:12}: " "$T/sync.err" | grep -F "read from the bucket, not brought into the cache" |
	sed 's/.*: \([0-9]*\) bytes at \([0-9]*\) read from the bucket.*/\2 \1/' | sort -n |
	awk 'BEGIN { next_at = 0; ok = 1 } { if ($1 != next_at) ok = 0; next_at = $1 + $2 } END { print (ok ? next_at : -1) }')
check "the debug log names the bucket's reads of its torrent, every byte once, in order ($read_back)" \
	test "$read_back" = "$size"
ls "$HUBMIRROR_DATA/torrents" >"$T/torrents"
check "one torrent was made" test "$(grep -c '\.torrent$' "$T/torrents")" = 1
btih=$(sed -n 's/\.torrent$//p' "$T/torrents")

check "serve starts" start_serve
curl -fsS -o "$T/big.torrent" "$M/api/p2p/torrent/hf/model/acme/big"
check "the torrent served is the one the sync made" \
	test "$("$PY" -c 'import libtorrent as lt, sys; print(lt.torrent_info(sys.argv[1]).info_hashes().v1)' \
		"$T/big.torrent")" = "$btih"
check "python3-libtorrent downloads the snapshot with it, every piece verified" \
	timeout 180 "$PY" "$HM_SRC/tests/integration/helpers/ltget.py" --timeout 170 "$T/big.torrent" "$T/dl"
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
check "every byte, as upstream has it" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf \
	acme/big "$T/dl/big"
check "the web seed sent the big content from the bucket" metric_at_least hubmirror_webseed_bytes_total "$size"
# the info-hashes of the plain files (just checked byte for byte), made by libtorrent itself
piece=$("$PY" -c 'import libtorrent as lt, sys; print(lt.torrent_info(sys.argv[1]).piece_length())' "$T/big.torrent")
"$PY" "$HM_SRC/tests/unit/lt_check.py" --make "$piece" "$T/dl" big >"$T/plain.json"
sed 's/^/# libtorrent of the plain files: /' "$T/plain.json"
check "the info-hashes are those of the plain files on local disk" "$PY" -c '
import json, sys
import libtorrent as lt
ih = lt.torrent_info(sys.argv[2]).info_hashes()
plain = json.load(open(sys.argv[1]))
assert plain == {"btih": str(ih.v1), "btmh": str(ih.v2)}, (plain, str(ih.v1), str(ih.v2))' "$T/plain.json" "$T/big.torrent"
check "serve stops clean" serve_stops_clean

# 2. a read of the bucket that fails mid-content fails the torrent with words that say so, never a
# torrent of wrong hashes: the torrent forgotten (its row and file, as before an upgrade that made
# none) and the object replaced by its first 20 MB (what a damaged gateway might give)
forget_torrent() {
	"$PY" -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); db.execute("delete from torrents"); db.commit()' "$HUBMIRROR_DATA/catalog.db" &&
		rm -f "$HUBMIRROR_DATA/torrents/"*.torrent
}
key="/t0882/blobs/${big:0:2}/$big"
check "the torrent is forgotten" forget_torrent
# (serve's web seed read the content from its start, which brings it into the cache: out of it again)
rm -f "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
head -c 20000000 "$T/dl/big/big.safetensors" >"$T/short"
check "the bucket's object is replaced by its first 20 MB" test "$(rgw_s3 PUT "$key" "$T/short")" = 200
"$HUBMIRROR" sync >"$T/sync2.out" 2>"$T/sync2.err"; st=$?
sed 's/^/# /' "$T/sync2.err" | tail -3
check "the sync says it could not make the torrent (status $st)" test "$st" != 0
# (the hashing threads read 8 MiB ranges at once: the one at 16 MiB comes short, the one at 24 MiB past
# the object's end is refused (416); whichever fails first is the one named)
check "naming the file, where, and why" grep -qE "reading \"big.safetensors\" at (16777216|25165824): the bucket's \
${big:0:12} at (16777216|25165824): .*(not the range asked|HTTP 416 InvalidRange)" "$T/sync2.err"
check "no torrent was made" test -z "$(ls "$HUBMIRROR_DATA/torrents")"
check "the cache still keeps no copy of it" test ! -e "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
# 3. one byte changed in the bucket's object (its size kept: every range reads): the content, hashed in
# order as its ranges pass, does not hash to its name, and no torrent is made of those bytes (which
# peers would then take as right)
"$PY" -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[25000000] ^= 1; open(sys.argv[2], "wb").write(b)' \
	"$T/dl/big/big.safetensors" "$T/damaged"
check "the bucket's object is replaced by one with a byte changed" test "$(rgw_s3 PUT "$key" "$T/damaged")" = 200
"$HUBMIRROR" sync >"$T/sync2b.out" 2>"$T/sync2b.err"; st=$?
sed 's/^/# /' "$T/sync2b.err" | tail -3
check "the sync says it could not make the torrent (status $st)" test "$st" != 0
check "because the content does not hash to its name" \
	grep -q "reading \"big.safetensors\" at [0-9]*: content ${big:0:12} as the store gave it hashes to" "$T/sync2b.err"
check "no torrent was made of the damaged bytes" test -z "$(ls "$HUBMIRROR_DATA/torrents")"
clean() { ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$@"; }
check "the failed syncs' logs hold no sanitizer's report (sanitized builds)" clean "$T/sync2.err" "$T/sync2b.err"
check "the object whole again" test "$(rgw_s3 PUT "$key" "$T/dl/big/big.safetensors")" = 200
"$HUBMIRROR" sync >"$T/sync3.out" 2>"$T/sync3.err"; st=$?
sed 's/^/# /' "$T/sync3.err" | tail -3
check "the next sync makes the torrent" test "$st" = 0
check "the same one as before" test -e "$HUBMIRROR_DATA/torrents/$btih.torrent"
finish
