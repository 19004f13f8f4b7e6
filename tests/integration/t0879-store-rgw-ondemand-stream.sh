#!/usr/bin/env bash
# t0879-store-rgw-ondemand-stream: serve --on-demand with its store in a bucket: a content bigger than
# the local cache's bound, asked for by a client, is fetched from upstream straight into the bucket (a
# multipart upload fed as the bytes come, hashed as they come, completed only once they hashed to the
# content), never whole on local disk; the client is answered 503 with Retry-After meanwhile (there is
# no partial file to stream to it from) and served from the bucket once the content is in:
# 1. serve killed mid-object (HUBMIRROR_TEST_KILL=store-upload): the store's temporary files hold no
#    byte of it (on the code before, the fetch went to a partial file on local disk first), nothing is
#    under its id, gc aborts the unfinished upload;
# 2. asked again: 503 with Retry-After, the temporary files never holding a byte while the (slowed)
#    fetch runs, then the object in the bucket byte for byte, and the client served it byte for byte;
# 3. a corrupt byte from upstream: the upload aborted (nothing under the id, no upload left), and the
#    next ask fetches it again, right.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
size=20000000
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/od-big",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "big.safetensors", "size": $size, "seed": 51},
             {"path": "other.safetensors", "size": $size, "seed": 52}]}
 ]}
JSON
check "a Ceph cluster with its gateway starts" start_rgw
rgw_store t0879 4M
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
fake_sha() { curl -fsS -L "$FAKE_API/acme/od-big/resolve/main/$1" | sha256sum | cut -c1-64; }
big=$(fake_sha big.safetensors)
other=$(fake_sha other.safetensors)
uploads() { rgw_s3 GET "/?prefix=t0879%2F&uploads=" >/dev/null; grep -o '<UploadId>' "$T/s3.body" | wc -l; }
tmp_bytes() { find "$HUBMIRROR_DATA/store/tmp" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
fault() { curl -fsS -X POST -d "$1" "$FAKE_API/_fake/faults" >/dev/null; }
od() { start_serve --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*'; }
ask() { # FILE: the status of a client's GET (its body to $T/got, its headers to $T/got.h)
	curl -sS -D "$T/got.h" -o "$T/got" -w '%{http_code}' "$M/acme/od-big/resolve/main/$1"
}
in_bucket() { # SHA: wait (at most 120 s) for the content's object in the bucket, while serve runs
	local i
	for i in $(seq 1 1200); do
		[ "$(rgw_s3 HEAD "/t0879/blobs/${1:0:2}/$1")" = 200 ] && return 0
		sleep 0.1
	done
	return 1
}
"$HUBMIRROR" init >/dev/null 2>&1

# 1. killed mid-object
HUBMIRROR_TEST_KILL=store-upload od || finish
serve_pid=${_pids[-1]}
check "the repo is listed on demand" curl -fsS -o /dev/null "$M/api/models/acme/od-big"
st=$(ask big.safetensors)
check "the client is asked to come again (status $st)" test "$st" = 503
for i in $(seq 1 1200); do # (at most 120 s: a serve that does not die is failed, not waited for)
	kill -0 "$serve_pid" 2>/dev/null || break
	sleep 0.1
done
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null; st=$?
check "serve killed itself mid-object, the fetch streaming into the bucket (status $st)" test "$st" = 137
check "the store's temporary files hold no byte of it ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "no object under the content's id" test "$(rgw_s3 HEAD "/t0879/blobs/${big:0:2}/$big")" = 404
check "its multipart upload is left unfinished" test "$(uploads)" = 1
"$HUBMIRROR" gc --partial-age 0 --json >"$T/gc.json"
check "gc aborts the orphan upload" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["bucket_uploads_aborted"] == 1, d' "$T/gc.json"
check "none is left" test "$(uploads)" = 0

# 2. whole, the local disk watched while the (slowed) fetch runs
check "serve starts again" od
fault '{"match": "big.safetensors", "kind": "slow", "rate": 8000000, "count": 2}'
st=$(ask big.safetensors)
check "the client is asked to come again (status $st)" test "$st" = 503
check "with Retry-After" grep -qi '^Retry-After: [0-9]' "$T/got.h"
peak=0
for i in $(seq 1 1200); do
	n=$(tmp_bytes)
	[ "$n" -gt "$peak" ] && peak=$n
	[ "$(rgw_s3 HEAD "/t0879/blobs/${big:0:2}/$big")" = 200 ] && break
	sleep 0.1
done
check "the content lands in the bucket" in_bucket "$big"
check "the temporary files never held a byte of it (peak $peak bytes)" test "$peak" = 0
check "byte for byte" test "$(rgw_s3 GET "/t0879/blobs/${big:0:2}/$big")" = 200 -a \
	"$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$big"
check "the cache keeps no copy of a content over its bound" \
	test ! -e "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
st=$(ask big.safetensors)
check "asked again, the client is served it (status $st)" test "$st" = 200
check "byte for byte" test "$(sha256sum <"$T/got" | cut -d' ' -f1)" = "$big"
check "no upload is left" test "$(uploads)" = 0

# 3. a corrupt byte from upstream
fault '{"match": "other.safetensors", "kind": "corrupt", "offset": 18000000, "count": 1}'
st=$(ask other.safetensors)
check "the client is asked to come again (status $st)" test "$st" = 503
for i in $(seq 1 1200); do
	grep -q "content ${other:0:12} not kept" "$T/serve.err" && break
	sleep 0.1
done
check "the fetch is refused" grep -q "content ${other:0:12} not kept" "$T/serve.err"
check "nothing under the content's id" test "$(rgw_s3 HEAD "/t0879/blobs/${other:0:2}/$other")" = 404
check "its upload was aborted, not left" test "$(uploads)" = 0
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0
st=$(ask other.safetensors)
check "asked again, it is fetched again (status $st)" test "$st" = 503
check "and lands in the bucket" in_bucket "$other"
check "right" test "$(rgw_s3 GET "/t0879/blobs/${other:0:2}/$other")" = 200 -a \
	"$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$other"
st=$(ask other.safetensors)
check "then served (status $st)" test "$st" = 200 -a "$(sha256sum <"$T/got" | cut -d' ' -f1)" = "$other"
check "verify passes" "$HUBMIRROR" verify
check "serve stops clean" serve_stops_clean
finish
