#!/usr/bin/env bash
# t0875-store-rgw-cold: a cold read, a content the bucket holds and the local cache does not, read from
# its start through serve: a worker brings it into the cache (a content of 16 MiB or more hashed on a
# thread of its own, behind the writes the answer follows; a smaller one hashed as it comes), and:
# 1. the answer is the content byte for byte, and the cache's copy, published once verified, is too;
# 2. the bucket's copy damaged in its last byte (an object of the same size put under the content's
#    key with curl's own SigV4): the answer ends short of its last byte, the connection closed, and
#    nothing of it is kept, neither in blobs/ nor as a partial file; for a big content (hashed behind)
#    and a small one (hashed inline) alike;
# 3. serve killed mid-fill (HUBMIRROR_TEST_KILL=store-fill: half the content in the partial file, the
#    whole not yet verified): the client's answer is short, blobs/ holds nothing of it; a serve started
#    again reads it cold byte for byte and keeps a verified copy.
# Guards the hash behind the writes (mirror/store-behind.c): the answer's last byte, and the cache's
# copy, wait for the whole to be hashed.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
big_size=40000000
small_size=3000000
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/cold",
   "files": [{"path": "big.safetensors", "size": $big_size, "seed": 5},
             {"path": "small.bin", "size": $small_size, "seed": 6}]}
 ]}
JSON
rgw_store t0875 64M
check "sync into the bucket" sync_from_fake hf:acme/cold
sha_of() { "$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"select sha256 from files where path = ?", (sys.argv[2],)).fetchone()[0])' "$HUBMIRROR_DATA/catalog.db" "$1"; }
big=$(sha_of big.safetensors)
small=$(sha_of small.bin)
s3() { # METHOD SHA [FILE]: the content's object at the gateway, signed by curl itself (GET into FILE, PUT from it)
	local a=(-o /dev/null)
	[ "$1" = GET ] && a=(-o "$3")
	[ "$1" = PUT ] && a=(-o /dev/null -T "$3")
	curl -fsS "${a[@]}" -X "$1" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 \
		--user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$RGW_ENDPOINT/$RGW_BUCKET/t0875/blobs/${2:0:2}/$2"
}
blob() { echo "$HUBMIRROR_DATA/store/blobs/${1:0:2}/$1"; }
# cached SHA: wait (while serve lives, up to 240 s) for the fill's copy, published after the answer
cached() {
	local i
	for i in $(seq 4800); do
		[ -e "$(blob "$1")" ] && return 0
		kill -0 "${_pids[-1]}" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
partials() { find "$HUBMIRROR_DATA/store/tmp" -name "*.part" | wc -l; }
check "the big content is in the bucket" s3 GET "$big" "$T/big.obj"
check "the small one too" s3 GET "$small" "$T/small.obj"
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
check "serve starts" start_serve
url() { echo "$M/acme/cold/resolve/main/$1"; }

# 1. cold reads, byte for byte
curl -fsS -o "$T/big.got" "$(url big.safetensors)"
check "a cold read of the big content byte for byte" cmp -s "$T/big.got" "$T/big.obj"
check "its copy is kept in the cache" cached "$big"
check "the copy hashes to its name" test "$(sha256sum <"$(blob "$big")" | cut -d' ' -f1)" = "$big"
curl -fsS -o "$T/small.got" "$(url small.bin)"
check "a cold read of the small content byte for byte" cmp -s "$T/small.got" "$T/small.obj"
check "its copy is kept too" cached "$small"
check "the copy hashes to its name" test "$(sha256sum <"$(blob "$small")" | cut -d' ' -f1)" = "$small"
check "a warm read of the big content byte for byte" cmp -s <(curl -fsS "$(url big.safetensors)") "$T/big.obj"

# 2. the bucket's copies damaged in their last byte
damage() { # NAME SHA: the object of SHA replaced by its bytes with the last one flipped
	"$PY" -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read()); d[-1] ^= 0xff
open(sys.argv[2], "wb").write(d)' "$T/$1.obj" "$T/$1.bad"
	s3 PUT "$2" "$T/$1.bad" && rm -f "$(blob "$2")"
}
cold_damaged() { # NAME PATH SHA SIZE
	local name=$1 path=$2 sha=$3 size=$4 st n
	curl -fsS -o "$T/$name.short" "$(url "$path")" 2>/dev/null; st=$?
	n=$(stat -c %s "$T/$name.short" 2>/dev/null || echo 0)
	check "$path: the answer ends short (curl status $st)" test "$st" != 0
	check "$path: its last byte never sent ($n of $size bytes)" test "$n" -lt "$size"
	check "$path: what was sent is the damaged copy's start" cmp -s "$T/$name.short" <(head -c "$n" "$T/$name.bad")
	check "$path: nothing kept in the cache" test ! -e "$(blob "$sha")"
	check "$path: no partial file left" test "$(partials)" = 0
}
check "the big content's object damaged in the bucket" damage big "$big"
cold_damaged big big.safetensors "$big" "$big_size"
check "the small content's object damaged in the bucket" damage small "$small"
cold_damaged small small.bin "$small" "$small_size"
check "serve stops clean" serve_stops_clean

# 3. serve killed mid-fill
check "the big content's object put back" s3 PUT "$big" "$T/big.obj"
rm -f "$(blob "$big")"
export HUBMIRROR_TEST_KILL=store-fill
check "serve starts with the fault hook" start_serve
unset HUBMIRROR_TEST_KILL
curl -fsS -o "$T/big.cut" "$(url big.safetensors)" 2>/dev/null; st=$?
# (up to 240 s; a serve the hook missed is stopped, and the check below says so)
for _ in $(seq 4800); do kill -0 "${_pids[-1]}" 2>/dev/null || break; sleep 0.05; done
kill -TERM "${_pids[-1]}" 2>/dev/null
wait "${_pids[-1]}"; killed=$?
check "serve killed itself mid-fill (status $killed)" test "$killed" = 137
n=$(stat -c %s "$T/big.cut" 2>/dev/null || echo 0)
check "the client's answer is short (curl status $st, $n bytes)" test "$st" != 0 -a "$n" -lt "$big_size"
check "nothing of the content in the cache" test ! -e "$(blob "$big")"
check "nothing unverified in blobs/" test -z "$(find "$HUBMIRROR_DATA/store/blobs" -type f -name "$big*")"
check "serve starts again" start_serve
curl -fsS -o "$T/big.again" "$(url big.safetensors)"
check "a cold read after the crash byte for byte" cmp -s "$T/big.again" "$T/big.obj"
check "its copy is kept" cached "$big"
check "the copy hashes to its name" test "$(sha256sum <"$(blob "$big")" | cut -d' ' -f1)" = "$big"
check "serve stops clean" serve_stops_clean
finish
