#!/usr/bin/env bash
# t0871-store-rgw-range: a range far into a content the bucket holds and the local cache does not is
# read straight from the bucket (ranged GETs of the range alone, on serve's loop): the bucket's read
# bytes grow by the range's length, not by the bytes before it, the cache is not filled by it, and
# the bytes are the object's. A range of several pieces, a HEAD, and reads from the start beside it
# (read straight too: the content is bigger than the cache's bound, t0873); every answer byte for byte against the object as the gateway
# has it (curl's own SigV4). A client that stops taking a long range (held by helpers/slowproxy.py):
# the mirror reads 40 MiB ahead of it at most, its spool on the disk no bigger, every byte read once
# when it goes on. Fails on the code before it: the bucket's read bytes grew by the whole content for
# the range at its end.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
size=24000000
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "model.safetensors", "size": $size, "seed": 7},
             {"path": "huge.bin", "size": 100000000, "seed": 9}]}
 ]}
JSON
rgw_store t0871 4M
check "sync into the bucket" sync_from_fake hf:acme/big
sha=$("$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"select sha256 from files where path = ?", ("model.safetensors",)).fetchone()[0])' "$HUBMIRROR_DATA/catalog.db")
curl -fsS -o "$T/obj" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 \
	--user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$RGW_ENDPOINT/$RGW_BUCKET/t0871/blobs/${sha:0:2}/$sha"
check "the content is in the bucket" test "$(sha256sum <"$T/obj" | cut -d' ' -f1)" = "$sha"
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
cached() { test -e "$HUBMIRROR_DATA/store/blobs/${sha:0:2}/$sha"; }
check "serve starts" start_serve
url=$M/acme/big/resolve/main/model.safetensors
read_bytes() { metric hubmirror_store_bucket_read_bytes_total; }
check "nothing read from the bucket yet" test "$(read_bytes)" = 0

# the last megabyte
a=$((size - 1000000))
curl -fsS -D "$T/h1" -H "Range: bytes=$a-" "$url" >"$T/tail"
check "the range at the end byte for byte" cmp -s "$T/tail" <(tail -c 1000000 "$T/obj")
check "answered 206 with its Content-Range" grep -qi "^content-range: bytes $a-$((size - 1))/$size" "$T/h1"
n=$(read_bytes)
check "the bucket gave the range's bytes, not those before it ($n read)" test "$n" = 1000000
check "the cache was not filled by it" bash -c "! test -e '$HUBMIRROR_DATA/store/blobs/${sha:0:2}/$sha'"
check "no partial file of a fill" test -z "$(ls -A "$HUBMIRROR_DATA/store/tmp")"

# a range of several pieces (8 MiB each) in the middle, and one to the end
curl -fsS -H 'Range: bytes=5000000-22999999' "$url" >"$T/mid"
check "a range of three pieces byte for byte" cmp -s "$T/mid" <(tail -c +5000001 "$T/obj" | head -c 18000000)
n=$(read_bytes)
check "each of its bytes read once ($n read in all)" test "$n" = 19000000
curl -fsS -H 'Range: bytes=-4500000' "$url" >"$T/suffix"
check "a suffix range byte for byte" cmp -s "$T/suffix" <(tail -c 4500000 "$T/obj")
check "read straight too" test "$(read_bytes)" = 23500000
curl -fsS -I -H "Range: bytes=$a-" "$url" >"$T/h2"
check "a HEAD of a far range answers 206" grep -q '^HTTP/1.1 206' "$T/h2"
check "and reads nothing" test "$(read_bytes)" = 23500000
check "no call to the bucket failed" test "$(metric hubmirror_store_bucket_errors_total)" = 0

# a range near the start, and a whole read: straight too (the content is bigger than the cache's bound)
curl -fsS -H 'Range: bytes=100-199' "$url" >"$T/head"
check "a range near the start byte for byte" cmp -s "$T/head" <(tail -c +101 "$T/obj" | head -c 100)
curl -fsS "$url" >"$T/whole"
check "the whole file byte for byte" cmp -s "$T/whole" "$T/obj"
check "a read from the start reads the content whole from the bucket" \
	metric_at_least hubmirror_store_bucket_read_bytes_total $((23500000 + size))

# a client that stops taking a long range: the mirror reads ahead of it a bounded stretch only (32 MiB
# past what the client took, a piece of 8 MiB in flight), and its spool on the disk holds no more
hsha=$("$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"select sha256 from files where path = ?", ("huge.bin",)).fetchone()[0])' "$HUBMIRROR_DATA/catalog.db")
curl -fsS -o "$T/huge" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 \
	--user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$RGW_ENDPOINT/$RGW_BUCKET/t0871/blobs/${hsha:0:2}/$hsha"
serve_pid=${_pids[-1]}
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PY" "$HM_SRC/tests/integration/helpers/slowproxy.py" --mirror "$M" --port "$port" --rate 1000000000 \
	--hold-after 2000000 --hold-file "$T/go" --ready-file "$T/proxy" &
_pids+=($!)
for _ in $(seq 300); do [ -s "$T/proxy" ] && break; sleep 0.1; done
r0=$(read_bytes)
curl -fsS -H 'Range: bytes=4194304-' "http://127.0.0.1:$port/acme/big/resolve/main/huge.bin" >"$T/hrange" &
cpid=$!
check "the mirror reads ahead of the held client" metric_at_least hubmirror_store_bucket_read_bytes_total \
	$((r0 + (32 << 20)))
sleep 3 # (what a mirror with no bound would read meanwhile: the range's 96 MB; the bound holds whatever the time)
ahead=$(( $(read_bytes) - r0 ))
check "no further than its bound ($ahead bytes read of the range's 95805696)" test "$ahead" -le $((64 << 20))
spool=0
for f in /proc/"$serve_pid"/fd/*; do
	case $(readlink "$f") in *store/tmp/*deleted*) spool=$(( $(stat -L -c %b "$f") * 512 )) ;; esac
done
check "its spool on the disk holds at most 56 MiB ($spool bytes)" test "$spool" -le $((58 << 20))
touch "$T/go"
wait "$cpid"
check "the range comes whole once the client takes it, byte for byte" cmp -s "$T/hrange" <(tail -c +4194305 "$T/huge")
check "each of its bytes read from the bucket once" test $(( $(read_bytes) - r0 )) = 95805696
check "serve stops clean" serve_stops_clean
finish
