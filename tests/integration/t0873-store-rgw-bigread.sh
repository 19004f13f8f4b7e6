#!/usr/bin/env bash
# t0873-store-rgw-bigread: with a bucket of Ceph's RADOS Gateway behind the store and a local cache of
# 4 MiB, a read from the start of a content bigger than the cache's bound (30 MB) is served straight
# from the bucket (ranged GETs on serve's loop through a spool of the answer's own, floor-bucket.c),
# never through a fill of the cache:
# 1. a whole GET (200, its full length, no Content-Range) and a Range 0- GET (206) are the object byte
#    for byte; a client held after 2 MB (helpers/slowproxy.py) while the mirror reads the whole ahead of
#    it: watched with inotify, the store's folder never gets a file of the content (no partial file of a
#    fill, no copy in blobs/), and its files never hold more than the cache's bound, during and after;
#    a range near the start is read straight too, and one past the end is a 416;
# 2. one byte changed in the bucket's object (same size): the whole GET and the Range 0- GET end short
#    of the last byte (curl: a partial transfer), the bytes hashed in order as they came, and the log
#    names the content;
# 3. a content within the bound (3 MB) is still brought into the cache by a read from its start;
# 4. a Xet client's read of the big content (reconstruction, xorbs, helpers/xetjoin.py) byte for byte,
#    the cache not filled by it; a chunk changed in the bucket's object: the xorb is a 503, logged.
# Fails on the code before it: the whole read filled the cache with the 30 MB (checks of 1 fail).
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
size=30000000
small_size=3000000
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "big.safetensors", "size": $size, "seed": 11},
             {"path": "small.bin", "size": $small_size, "seed": 12}]}
 ]}
JSON
rgw_store t0873 4M
check "sync into the bucket" sync_from_fake hf:acme/big
sha_of() { "$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"select sha256 from files where path = ?", (sys.argv[2],)).fetchone()[0])' "$HUBMIRROR_DATA/catalog.db" "$1"; }
big=$(sha_of big.safetensors)
small=$(sha_of small.bin)
s3() { # METHOD SHA FILE: the content's object at the gateway, signed by curl itself (GET into FILE, PUT from it)
	local a=(-o "$3")
	[ "$1" = PUT ] && a=(-o /dev/null -T "$3")
	curl -fsS "${a[@]}" -X "$1" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 \
		--user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$RGW_ENDPOINT/$RGW_BUCKET/t0873/blobs/${2:0:2}/$2"
}
blob() { echo "$HUBMIRROR_DATA/store/blobs/${1:0:2}/$1"; }
store_bytes() { find "$HUBMIRROR_DATA/store" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
check "the big content is in the bucket" s3 GET "$big" "$T/big.obj"
check "byte for byte" test "$(sha256sum <"$T/big.obj" | cut -d' ' -f1)" = "$big"
check "the small one too" s3 GET "$small" "$T/small.obj"
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
check "serve starts" start_serve
url=$M/acme/big/resolve/main/big.safetensors
read_bytes() { metric hubmirror_store_bucket_read_bytes_total; }

# inotify on the store's tmp/ and blobs/ (and each folder made under blobs/): every name made or moved in
check "the store's folder is watched" watch_store

# 1. a whole read by a client held after 2 MB: the mirror reads the whole ahead of it (30 MB, within the
# spool's 32 MiB ahead), the cache's folder meanwhile as small as its bound
check "a slow client's proxy starts" start_slowproxy "$(free_port)" --rate 1000000000 --hold-after 2000000 \
	--hold-file "$T/go"
r0=$(read_bytes)
curl -fsS -D "$T/h.whole" -o "$T/whole" "$P/acme/big/resolve/main/big.safetensors" &
cpid=$!
read_all() { # (waits while serve lives, up to 240 s: no timed assertion)
	local i
	for i in $(seq 2400); do
		[ "$(read_bytes)" -ge $((r0 + size)) ] && return 0
		kill -0 "$cpid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
check "the mirror reads the whole content from the bucket ahead of the held client" read_all
check "meanwhile the store's folder holds no more than the cache ($(store_bytes) bytes)" \
	test "$(store_bytes)" -le 4194304
check "and no copy of the content in the cache" test ! -e "$(blob "$big")"
check "the client is still held (its answer not done)" kill -0 "$cpid"
touch "$T/go"
wait "$cpid"; st=$?
check "the whole GET completes (curl status $st)" test "$st" = 0
check "byte for byte" cmp -s "$T/whole" "$T/big.obj"
check "answered 200" grep -q '^HTTP/1.[01] 200' "$T/h.whole"
check "with its full length" grep -qi "^content-length: $size" "$T/h.whole"
check "and no Content-Range" bash -c "! grep -qi '^content-range' '$T/h.whole'"
check "each byte read from the bucket once" test $(( $(read_bytes) - r0 )) = "$size"

curl -fsS -D "$T/h.range" -o "$T/range0" -H 'Range: bytes=0-' "$url"
check "a Range 0- GET byte for byte" cmp -s "$T/range0" "$T/big.obj"
check "answered 206 with its Content-Range" grep -qi "^content-range: bytes 0-$((size - 1))/$size" "$T/h.range"
curl -fsS -H 'Range: bytes=100-199' "$url" >"$T/near"
check "a range near the start byte for byte" cmp -s "$T/near" <(tail -c +101 "$T/big.obj" | head -c 100)
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Range: bytes=$((size + 10))-" "$url")
check "a range past the end is a 416 ($code)" test "$code" = 416
check "a HEAD answers 200 with the full length" bash -c \
	"curl -fsS -I '$url' | tr -d '\r' | grep -qi '^content-length: $size$'"

# a marker made after the reads: once the watch names it, it has read every event before it
touch "$HUBMIRROR_DATA/store/tmp/t0873-end"
for _ in $(seq 600); do grep -q "^tmp/t0873-end$" "$T/made" && break; kill -0 $watcher || break; sleep 0.1; done
check "the watch read every event of the reads" grep -q "^tmp/t0873-end$" "$T/made"
rm -f "$HUBMIRROR_DATA/store/tmp/t0873-end"
sed 's/^/# made: /' "$T/made" | head -20
check "the store's folder never got a file of the big content (no fill's partial file, no copy)" \
	bash -c "! grep -q '$big' '$T/made'"
check "after the reads it holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304

# 2. one byte changed in the bucket's object
"$PY" -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read()); d[len(d) // 2] ^= 0xff
open(sys.argv[2], "wb").write(d)' "$T/big.obj" "$T/big.bad"
check "the big content's object damaged in the bucket (same size)" s3 PUT "$big" "$T/big.bad"
damaged() { # NAME [CURL-ARG...]
	local name=$1 st n
	shift
	curl -fsS -o "$T/$name.short" "$@" "$url" 2>/dev/null; st=$?
	n=$(stat -c %s "$T/$name.short" 2>/dev/null || echo 0)
	check "$name: the answer ends short (curl status $st)" test "$st" = 18
	check "$name: its last byte never sent ($n of $size bytes)" test "$n" -lt "$size"
	check "$name: what was sent is the damaged copy's start" cmp -s "$T/$name.short" <(head -c "$n" "$T/big.bad")
}
damaged whole
damaged range0 -H 'Range: bytes=0-'
check "the log names the damaged content" grep -q "bucket's ${big:0:12} is not its content" "$T/serve.err"
check "nothing of it kept in the cache" test ! -e "$(blob "$big")"
check "the object put back" s3 PUT "$big" "$T/big.obj"
check "the whole GET byte for byte again" cmp -s <(curl -fsS "$url") "$T/big.obj"

# 3. a content within the bound still fills the cache
curl -fsS -o "$T/small.got" "$M/acme/big/resolve/main/small.bin"
check "a cold read of the small content byte for byte" cmp -s "$T/small.got" "$T/small.obj"
kept=
for _ in $(seq 2400); do [ -e "$(blob "$small")" ] && { kept=1; break; }; sleep 0.05; done
check "its copy is kept in the cache" test -n "$kept"
check "the copy hashes to its name" test "$(sha256sum <"$(blob "$small")" | cut -d' ' -f1)" = "$small"
check "the store's folder still holds no more than the cache ($(store_bytes) bytes)" \
	test "$(store_bytes)" -le 4194304

# 4. a Xet client's read of the big content (its reconstruction, then its xorbs): never into the cache
xh=$(curl -fsS -I "$url" | tr -d '\r' | awk -F': ' 'tolower($1) == "x-xet-hash" { print $2 }')
check "resolve names the big content's Xet hash ($xh)" test -n "$xh"
tok=$(curl -fsS "$M/api/models/acme/big/xet-read-token/main" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
check "its v1 reconstruction" curl -fsS -o "$T/recon.json" -H "Authorization: Bearer $tok" \
	"$M/xet-cas/v1/reconstructions/$xh"
check "put together from its xorbs as hf_xet does (helpers/xetjoin.py), byte for byte" bash -c \
	"'$PY' '$HM_SRC/tests/integration/helpers/xetjoin.py' '$T/recon.json' '$T/joined' && cmp -s '$T/joined' '$T/big.obj'"
check "no copy of it in the cache" test ! -e "$(blob "$big")"
check "the store's folder holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
xorb=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["fetch_info"][d["terms"][0]["hash"]][0]["url"])' \
	"$T/recon.json")
"$PY" -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read()); d[1000] ^= 0xff
open(sys.argv[2], "wb").write(d)' "$T/big.obj" "$T/big.bad0"
check "the big content's object damaged in its first chunk" s3 PUT "$big" "$T/big.bad0"
code=$(curl -sS -o /dev/null -w '%{http_code}' "$xorb")
check "its first xorb is refused, no byte of it sent ($code)" test "$code" = 503
check "the log names the chunk that is not the content's" \
	grep -q "a xorb of ${big:0:12} from the store's bucket: a chunk is not the content's" "$T/serve.err"
check "the object put back" s3 PUT "$big" "$T/big.obj"
check "the xorb is served again" test "$(curl -sS -o /dev/null -w '%{http_code}' "$xorb")" = 200
kill $watcher
check "serve stops clean" serve_stops_clean
finish
