#!/usr/bin/env bash
# t0885-store-rgw-sync-xet: a sync through Xet into a mirror whose store is in a bucket, of a file bigger
# than the local cache (docs/protocols/xet.md, "Sync through Xet"; docs/operations.md section 8): the
# first revision streams into the bucket; a revision that changes 1% of it takes the chunks it shares
# with the first from the bucket by ranged reads (the debug log names them), never bringing the first
# revision into the cache (on the code before, the first stored chunk brought the whole content in,
# past the cache's bound), and fetches at most a tenth of the file from upstream; both revisions are in
# the bucket byte for byte, and the store's folder holds no more than the cache.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
MIB=$((1024 * 1024))
SIZE=$((8 * MIB))
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/mid",
   "files": [{"path": "w.safetensors", "size": $SIZE, "seed": 32, "blocks": "unique"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json" --xet
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
rgw_store t0885 4M
ctl() { curl -fsS -X POST -H 'Content-Type: application/json' --data "$2" "$FAKE_API/_fake/$1" >/dev/null; }
stat_of() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c "import json,sys; s=json.load(sys.stdin); print($1)"; }
sha_up() { curl -fsS "$FAKE_API/api/models/acme/mid/tree/main" | "$PY" -c 'import json,sys
print([e["lfs"]["oid"] for e in json.load(sys.stdin) if e["path"] == "w.safetensors"][0])'; }
in_bucket() { # SHA: its object in the bucket hashes to it
	[ "$(rgw_s3 GET "/t0885/blobs/${1:0:2}/$1")" = 200 ] && [ "$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$1" ]
}
store_bytes() { find "$HUBMIRROR_DATA/store" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
xorb_reqs() { stat_of 'sum(1 for r in s["recent"] if r["path"].startswith("/xorbs/"))'; }
plain_reqs() { stat_of 'sum(1 for r in s["recent"] if r["path"].startswith("/repos/"))'; }

"$HUBMIRROR" add hf:acme/mid >/dev/null
ctl reset '{}'
"$HUBMIRROR" sync >"$T/sync1.out" 2>&1
sed 's/^/# /' "$T/sync1.out"
check "the first revision syncs" grep -q "ok *hf:acme/mid " "$T/sync1.out"
check "through Xet, no plain download" [ "$(xorb_reqs)" -gt 0 -a "$(plain_reqs)" = 0 ]
one=$(sha_up)
check "it is in the bucket byte for byte" in_bucket "$one"
check "the cache keeps no copy of it" test ! -e "$HUBMIRROR_DATA/store/blobs/${one:0:2}/$one"

# a revision changing 1% of it (4 places of 20 KiB)
ctl commit "$("$PY" -c 'import json,sys
size = int(sys.argv[1])
p = [{"offset": (k * size) // 4 + 12345, "size": 20 * 1024, "seed": 3200 + k} for k in range(4)]
print(json.dumps({"repo": "acme/mid", "files": [{"path": "w.safetensors", "size": size, "seed": 32,
    "blocks": "unique", "patches": p}]}))' "$SIZE")"
ctl reset '{}'
"$HUBMIRROR" --log-level debug sync hf:acme/mid >"$T/sync2.out" 2>&1
grep -v "read from the bucket" "$T/sync2.out" | sed 's/^/# /' | tail -5
two=$(sha_up)
got=$(stat_of 's["content_bytes"]["cdn"]')
echo "# a 1% change cost $got bytes from upstream, of $SIZE"
check "the 1% revision syncs" grep -q "ok *hf:acme/mid " "$T/sync2.out"
check "it fetched at most a tenth of the file from upstream (t0313 measures the 5% on 64 MiB)" [ "$got" -gt 0 -a "$got" -le $((SIZE / 10)) ]
check "and nothing over plain HTTP" [ "$(plain_reqs)" = 0 ]
shared=$(grep -F "${one:0:12}: " "$T/sync2.out" | grep -F "read from the bucket, not brought into the cache" |
	sed 's/.*: \([0-9]*\) bytes at.*/\1/' | awk '{ n += $1 } END { print n + 0 }')
check "the chunks it shares with the first were read from the bucket by ranges ($shared bytes)" \
	[ "$shared" -ge $((SIZE / 2)) ]
check "the first revision never came into the cache" test ! -e "$HUBMIRROR_DATA/store/blobs/${one:0:2}/$one"
check "the new revision is in the bucket byte for byte" in_bucket "$two"
check "the store's folder holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
check "verify passes" "$HUBMIRROR" verify
finish
