#!/usr/bin/env bash
# t0863-store-rgw-sync: a mirror whose store is a bucket of Ceph's RADOS Gateway ([store] url,
# s3-endpoint, the keys from the environment) with a local cache of 4 MiB ([store] cache-size): a sync
# puts every content in the bucket under its id (blobs/<h0h1>/<sha256>), read back here byte for byte
# with curl's own SigV4, while the data directory keeps at most the cache; the hub API resolves every
# file byte for byte, whole and in ranges, from the bucket, the cache staying within its bound; verify
# reads the bucket back; and with the bucket's copy of a content gone, verify names it missing.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/llm",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "a.safetensors", "size": 3000000, "seed": 1},
             {"path": "b.safetensors", "size": 2500000, "seed": 2},
             {"path": "c.safetensors", "size": 2000000, "seed": 3},
             {"path": "sub/d.bin", "size": 1500000, "seed": 4}]}
 ]}
JSON
rgw_store t0863 4M
cache_bytes() { find "$HUBMIRROR_DATA/store/blobs" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
s3get() { # KEY OUT: the object as the gateway has it, signed by curl itself
	curl -fsS -o "$2" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 \
		--user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$RGW_ENDPOINT/$RGW_BUCKET/t0863/$1"
}
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/llm >/dev/null
"$HUBMIRROR" sync >"$T/sync.out" 2>&1; st=$?
sed "s/^/# /" "$T/sync.out"
check "sync into the bucket" test "$st" = 0
# the files and their contents, from the catalog
"$PY" - "$HUBMIRROR_DATA/catalog.db" >"$T/files" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for path, sha, size in db.execute("select distinct path, sha256, size from files"):
    print(path, sha, size)
PY
check "the catalog names the five files" test "$(wc -l <"$T/files")" -ge 5
bad=0
while read -r path sha size; do
	s3get "blobs/${sha:0:2}/$sha" "$T/obj" && [ "$(sha256sum <"$T/obj" | cut -d' ' -f1)" = "$sha" ] &&
		[ "$(stat -c %s "$T/obj")" = "$size" ] || { echo "# $path: not in the bucket as $sha"; bad=1; }
done <"$T/files"
check "every content is in the bucket under its id, byte for byte" test "$bad" = 0
check "the local disk holds at most the cache ($(cache_bytes) bytes)" test "$(cache_bytes)" -le 4194304
check "no partial file is left" test -z "$(ls -A "$HUBMIRROR_DATA/store/tmp")"

# the cache emptied: every byte served next comes from the bucket
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
check "serve starts" start_serve
bad=0
while read -r path sha size; do
	got=$(curl -fsS "$M/acme/llm/resolve/main/$path" | sha256sum | cut -d' ' -f1)
	[ "$got" = "$sha" ] || { echo "# $path: resolve gave $got"; bad=1; }
	[ "$(cache_bytes)" -le 4194304 ] || { echo "# after $path: the cache holds $(cache_bytes)"; bad=1; }
done <"$T/files"
check "resolve serves every file byte for byte from the bucket" test "$bad" = 0
check "and the cache stays within its bound ($(cache_bytes) bytes)" test "$(cache_bytes)" -le 4194304
read -r _ asha _ < <(grep '^a.safetensors ' "$T/files")
s3get "blobs/${asha:0:2}/$asha" "$T/a.full"
curl -fsS -H 'Range: bytes=1000000-1999999' "$M/acme/llm/resolve/main/a.safetensors" >"$T/a.range"
check "a range byte for byte" cmp -s "$T/a.range" <(tail -c +1000001 "$T/a.full" | head -c 1000000)
curl -fsS -H 'Range: bytes=2999990-' "$M/acme/llm/resolve/main/a.safetensors" >"$T/a.tail"
check "the last bytes" cmp -s "$T/a.tail" <(tail -c 10 "$T/a.full")
# the other fronts read the same way: Git LFS, the S3 API, the swarm's web seed, each from an emptied cache
btih=$("$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select btih || \" \" || name from torrents").fetchone()[0])' \
	"$HUBMIRROR_DATA/catalog.db")
front() { # NAME URL-OF(path sha): every file through that front, byte for byte, from an emptied cache
	local bad=0 path sha size got
	find "$HUBMIRROR_DATA/store/blobs" -type f -delete
	while read -r path sha size; do
		got=$(curl -fsS "$($2 "$path" "$sha")" | sha256sum | cut -d' ' -f1)
		[ "$got" = "$sha" ] || { echo "# $1: $path gave $got"; bad=1; }
	done <"$T/files"
	return "$bad"
}
lfs_url() { echo "$M/acme/llm.git/info/lfs/objects/$2"; }
s3_url() { echo "$M/s3/hf/acme/llm/main/$1"; }
seed_url() { echo "$M/p2p/seed/${btih% *}/${btih#* }/$1"; }
check "Git LFS serves every content from the bucket" front lfs lfs_url
check "the S3 API serves every file from the bucket" front s3 s3_url
check "the swarm's web seed serves every file from the bucket" front seed seed_url
check "metrics: the cache's misses, brought in from the bucket" metric_at_least 'hubmirror_store_cache_reads_total{result="miss"}' 5
check "metrics: the bytes read from the bucket" metric_at_least hubmirror_store_bucket_read_bytes_total 9000000
check "metrics: no call failed" test "$(metric hubmirror_store_bucket_errors_total)" = 0
check "the cache filled as files were read, within its bound ($(cache_bytes) bytes)" \
	bash -c '[ "$(find "$HUBMIRROR_DATA/store/blobs" -type f | wc -l)" -ge 1 ]'
check "serve stops clean" serve_stops_clean

check "verify reads every content back from the bucket" "$HUBMIRROR" verify
# the bucket's copy of b gone (and the cache's): verify says it is missing
read -r _ bsha _ < <(grep '^b.safetensors ' "$T/files")
curl -fsS -X DELETE -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 \
	--user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$RGW_ENDPOINT/$RGW_BUCKET/t0863/blobs/${bsha:0:2}/$bsha"
rm -f "$HUBMIRROR_DATA/store/blobs/${bsha:0:2}/$bsha"
"$HUBMIRROR" verify --json >"$T/v.json"
check "verify names the content the bucket lost" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["missing"] == 1 and d["damaged"][0]["sha256"] == sys.argv[2], d' "$T/v.json" "$bsha"
check "the next sync puts it back" "$HUBMIRROR" sync
check "and it is in the bucket again" s3get "blobs/${bsha:0:2}/$bsha" "$T/b"
check "byte for byte" test "$(sha256sum <"$T/b" | cut -d' ' -f1)" = "$bsha"
finish
