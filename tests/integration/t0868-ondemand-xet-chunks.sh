#!/usr/bin/env bash
# t0868-ondemand-xet-chunks: an on-demand fetch goes through Xet where the listing states upstream's Xet
# hash (docs/protocols/xet.md, "On-demand fetches through Xet"), as a sync does: xorb ranges from the
# fake upstream's CAS (tests/fakehub/xetcas.py), no plain download, and the chunks recorded; a second
# file that shares all but 1% of its chunks with the first (another repo's, which the CAS places in the
# first one's xorbs) then costs at most 5% of its bytes from upstream, the rest read from the store, and
# it is proven as any (sha256, upstream's Xet hash). (8 MiB, two patches of 10,000 bytes: a patch costs
# the chunks about it, ~64 KiB each, so more patches on a file this small would cost more than 5%.) A file whose stated Xet hash no reconstruction
# answers falls back to plain HTTP, where the writer's check refuses it as before (t0856).
. "$HM_SRC/tests/integration/lib.sh"
MIB=$((1024 * 1024))
SIZE=$((8 * MIB))
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/a",
   "files": [{"path": "w.safetensors", "size": $SIZE, "seed": 32, "blocks": "unique"}]},
  {"hub": "hf", "type": "model", "id": "acme/b",
   "files": [{"path": "w.safetensors", "size": $SIZE, "seed": 32, "blocks": "unique",
              "patches": [{"offset": 1234567, "size": 10000, "seed": 3200},
                          {"offset": 5432100, "size": 10000, "seed": 3201}]}]},
  {"hub": "hf", "type": "model", "id": "acme/c",
   "files": [{"path": "lie.safetensors", "size": 900000, "seed": 62}]}
 ]}
JSON
# every file offered through Xet; the one called lie.safetensors with a wrong Xet hash
check "fake upstream starts" start_fakehub --repos "$T/spec.json" --xet-lie lie.safetensors
check "serve with --on-demand starts" start_serve --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*'
store="$HUBMIRROR_DATA/store"
stat_of() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c "import json,sys; s=json.load(sys.stdin); print($1)"; }
xorb_reqs() { stat_of 'sum(1 for r in s["recent"] if r["path"].startswith("/xorbs/"))'; }
plain_reqs() { stat_of 'sum(1 for r in s["recent"] if r["path"].startswith("/repos/"))'; }
cdn_bytes() { stat_of 's["content_bytes"]["cdn"]'; }
sql() { "$PY" -c 'import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2], sys.argv[3:]):
    print(*row)' "$HUBMIRROR_DATA/catalog.db" "$@"; }
export -f sql
export PY
up() { curl -fsS "$FAKE_API/api/models/$1/tree/main" | "$PY" -c 'import json,sys
for e in json.load(sys.stdin):
    if e["path"] == sys.argv[1]:
        print(e["lfs"]["oid"] if sys.argv[2] == "sha" else e["xetHash"])' "$2" "$3"; }
asha=$(up acme/a w.safetensors sha); axh=$(up acme/a w.safetensors xet)
bsha=$(up acme/b w.safetensors sha); bxh=$(up acme/b w.safetensors xet)
check "two files, 1% apart, each with its Xet hash" bash -c "[ $asha != $bsha ] && [ ${#axh} = 64 ] && [ ${#bxh} = 64 ]"

x0=$(xorb_reqs); p0=$(plain_reqs); c0=$(cdn_bytes)
check "the first file comes through the mirror, on demand, right" \
	test "$(curl -fsS "$M/acme/a/resolve/main/w.safetensors" | sha256sum | cut -c1-64)" = "$asha"
# (the client's last byte goes once verified; the commit into the store follows on a worker)
in_store() { for _ in $(seq 240); do grep -q "content ${1:0:12} in (" "$T/serve.err" && return 0; sleep 0.5; done; false; }
check "  and it lands in the store" in_store "$asha"
x1=$(xorb_reqs); p1=$(plain_reqs); c1=$(cdn_bytes)
echo "# first file: $((x1 - x0)) xorb ranges, $((p1 - p0)) plain downloads, $((c1 - c0)) bytes from the CDN"
check "through Xet: xorb ranges, no plain download" bash -c "[ $((x1 - x0)) -gt 0 ] && [ $((p1 - p0)) = 0 ]"
check "its chunks are recorded (xet_ranges)" [ "$(sql 'SELECT count(*) FROM xet_ranges WHERE sha256 = ?' "$asha")" -gt 0 ]
check "stored with upstream's Xet hash (checked by the writer, recorded)" bash -c \
	"[ -f $store/blobs/${asha:0:2}/$asha ] && [ \"\$(sql 'SELECT xet_hash FROM blob_xet WHERE sha256 = ?' $asha)\" = $axh ]"
check "the log says upstream's Xet hash was checked" grep -q "content ${asha:0:12} in (.*upstream's Xet hash too" \
	"$T/serve.err"

check "the second file comes, right" \
	test "$(curl -fsS "$M/acme/b/resolve/main/w.safetensors" | sha256sum | cut -c1-64)" = "$bsha"
check "  and it lands in the store" in_store "$bsha"
x2=$(xorb_reqs); p2=$(plain_reqs); c2=$(cdn_bytes)
echo "# second file: $((x2 - x1)) xorb ranges, $((p2 - p1)) plain downloads, $((c2 - c1)) bytes from the CDN" \
	"($(( (c2 - c1) * 1000 / SIZE )) per mille of it)"
check "it cost at most 5% of its bytes from upstream (the rest from the store), no plain download" \
	bash -c "[ $((c2 - c1)) -gt 0 ] && [ $((c2 - c1)) -le $((SIZE / 20)) ] && [ $((p2 - p1)) = 0 ]"
check "it is stored with upstream's Xet hash" \
	[ "$(sql 'SELECT xet_hash FROM blob_xet WHERE sha256 = ?' "$bsha")" = "$bxh" ]
check "byte for byte the stored blob is upstream's" bash -c \
	"[ \"\$(sha256sum <$store/blobs/${bsha:0:2}/$bsha | cut -c1-64)\" = $bsha ]"

# a stated Xet hash no reconstruction answers: plain HTTP, where the writer refuses the bytes
lie=$(curl -fsS -L "$FAKE_API/acme/c/resolve/main/lie.safetensors" | sha256sum | cut -c1-64)
curl -fsS -o "$T/lie.bin" "$M/acme/c/resolve/main/lie.safetensors"; st=$?
check "a Xet failure falls back to plain HTTP" grep -q "content ${lie:0:12}: Xet: .*; over plain HTTP" "$T/serve.err"
check "  where the wrong Xet hash is refused (curl $st), nothing stored" bash -c \
	"[ $st != 0 ] && [ ! -e $store/blobs/${lie:0:2}/$lie ]"
check "serve stops clean" serve_stops_clean
finish
