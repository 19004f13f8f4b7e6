#!/usr/bin/env bash
# t0313-sync-xet-chunks: a sync fetches through Xet the chunks its store lacks (docs/protocols/xet.md,
# "Sync through Xet"). The fake upstream's CAS (tests/fakehub/xetcas.py) places a 64 MiB file's chunks
# in xorbs (every fourth chunk LZ4), and a revision that changes 1% of it names the old xorbs for the
# rest: the mirror fetches at most 5% of the file for it (the bytes counted by the fake upstream), and
# the file is proven by sha256 and its Xet hash. A reset and a 429 in the middle of a xorb are resumed
# and retried as the plain path does; a xorb that lies (a flipped byte) is refused and the file comes
# over plain HTTP, nothing of the lie stored; a sync killed in the middle of a xorb leaves the store
# consistent and the next one resumes after its partial file through Xet. `--xet off` and `[sync] xet = off` fetch plainly. (Those
# on an 8 MiB file: the fake upstream's chunking in Python costs seconds per 10 MiB.)
. "$HM_SRC/tests/integration/lib.sh"
MIB=$((1024 * 1024))
SIZE=$((64 * MIB))
MID=$((8 * MIB))
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "model.safetensors", "size": $SIZE, "seed": 31, "blocks": "unique"}]},
  {"hub": "hf", "type": "model", "id": "acme/mid",
   "files": [{"path": "w.safetensors", "size": $MID, "seed": 32, "blocks": "unique"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json" --xet
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
hm() { "$HUBMIRROR" "$@"; }
store="$HUBMIRROR_DATA/store"
ctl() { curl -fsS -X POST -H 'Content-Type: application/json' --data "$2" "$FAKE_API/_fake/$1" >/dev/null; }
stat_of() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c "import json,sys; s=json.load(sys.stdin); print($1)"; }
# REPO PATH sha|xet: the file's sha256 or Xet hash, as upstream lists them now
up() { curl -fsS "$FAKE_API/api/models/$1/tree/main" | "$PY" -c 'import json,sys
for e in json.load(sys.stdin):
    if e["path"] == sys.argv[1]:
        print(e["lfs"]["oid"] if sys.argv[2] == "sha" else e["xetHash"])' "$2" "$3"; }
# REPO PATH: the stored blob of upstream's file has its sha256 and its Xet hash (the mirror's own
# computation from the blob, tests/unit/xet-ident)
proven() {
	local sha xh b
	sha=$(up "$1" "$2" sha); xh=$(up "$1" "$2" xet)
	b=$store/blobs/${sha:0:2}/$sha
	[ -f "$b" ] && [ "$(sha256sum <"$b" | cut -d' ' -f1)" = "$sha" ] &&
		[ "$("$HM_BUILD/tests/unit/xet-ident" "$b" | sed -n 's/^file //p')" = "$xh" ]
}
# REPO PATH: the identity the store kept of the blob (store/xet/, made of the chunks the Xet fetch
# checked, not found again) is the one the chunker finds in the blob's bytes: same chunks, same file hash
identity_kept() {
	local sha b
	sha=$(up "$1" "$2" sha); b=$store/blobs/${sha:0:2}/$sha
	"$HM_BUILD/tests/unit/xet-ident" "$b" >"$T/ident.txt" && "$PY" - "$store/xet/${sha:0:2}/$sha" "$T/ident.txt" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"hmxetid\x01", "no identity file"
n = int.from_bytes(d[16:24], "little")
hexof = lambda h: "".join("%016x" % int.from_bytes(h[8 * w:8 * w + 8], "little") for w in range(4))
kept = [(int.from_bytes(d[56 + 36 * i:60 + 36 * i], "little"), hexof(d[60 + 36 * i:92 + 36 * i])) for i in range(n)]
want = [(int(l.split()[2]), l.split()[3]) for l in open(sys.argv[2]) if l.startswith("chunk ")]
fh = [l.split()[1] for l in open(sys.argv[2]) if l.startswith("file ")][0]
assert kept == want and hexof(d[24:56]) == fh, (len(kept), len(want))
PY
}
xorb_reqs() { stat_of 'sum(1 for r in s["recent"] if r["path"].startswith("/xorbs/"))'; }
plain_reqs() { stat_of 'sum(1 for r in s["recent"] if r["path"].startswith("/repos/"))'; }
cdn_bytes() { stat_of 's["content_bytes"]["cdn"]'; }
ranges() { "$PY" -c 'import sqlite3,sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM xet_ranges").fetchone()[0])' "$HUBMIRROR_DATA/catalog.db"; }
blobs() { find "$store/blobs" -type f | wc -l; }
# REPO PATH SIZE SEED N LEN: a new revision of the file, N patches of LEN random bytes spread over it
revise() {
	ctl commit "$("$PY" -c 'import json,sys
repo, path = sys.argv[1:3]
size, seed, seed2, n, ln = (int(a) for a in sys.argv[3:8])
p = [{"offset": (k * size) // n + 12345, "size": ln, "seed": seed2 * 100 + k} for k in range(n)]
print(json.dumps({"repo": repo, "files": [{"path": path, "size": size, "seed": seed, "blocks": "unique",
    "patches": p}]}))' "$@")"
}
mid() { revise acme/mid w.safetensors $MID 32 "$@"; }

hm add hf:acme/big hf:acme/mid >/dev/null
ctl reset '{}'
hm sync >"$T/sync1.out" 2>&1
sed 's/^/# /' "$T/sync1.out"
check "the first revisions sync" grep -q "ok *hf:acme/big " "$T/sync1.out"
check "through Xet: xorb ranges, no plain download" [ "$(xorb_reqs)" -gt 0 -a "$(plain_reqs)" = 0 ]
check "the file is proven (sha256 and Xet hash)" proven acme/big model.safetensors
check "the catalog places the files' chunks (xet_ranges)" [ "$(ranges)" -gt 500 ]

# a revision changing 1% of the big file (8 places of 82 KiB)
revise acme/big model.safetensors $SIZE 31 1 8 $((82 * 1024))
ctl reset '{}'
hm sync hf:acme/big >"$T/sync2.out" 2>&1
sed 's/^/# /' "$T/sync2.out"
got=$(cdn_bytes)
echo "# a 1% change cost $got bytes from upstream, of $SIZE ($((got * 1000 / SIZE)) per mille)"
check "the 1% revision syncs" grep -q "ok *hf:acme/big " "$T/sync2.out"
check "it fetched at most 5% of the file" [ "$got" -gt 0 -a "$got" -le $((SIZE / 20)) ]
check "and nothing over plain HTTP" [ "$(plain_reqs)" = 0 ]
check "the new revision is proven (sha256 and Xet hash)" proven acme/big model.safetensors
check "its identity, kept from the chunks the fetch checked, is the chunker's" identity_kept acme/big model.safetensors

# faults in the middle of xorbs: a reset after 30 KB, then a 429, each once; the sync goes on
mid 2 4 $((20 * 1024))
ctl reset '{}'
ctl faults '[{"match": "^/xorbs/", "host": "cdn", "kind": "reset", "bytes": 30000, "count": 1},
	{"match": "^/xorbs/", "host": "cdn", "kind": "ratelimit", "retry_after": 1, "count": 1}]'
hm sync hf:acme/mid >"$T/sync3.out" 2>&1
sed 's/^/# /' "$T/sync3.out"
check "a reset and a 429 mid-xorb: the revision still syncs" grep -q "ok *hf:acme/mid " "$T/sync3.out"
check "the reset and the 429 both fired" [ "$(curl -fsS "$FAKE_API/_fake/faults" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 0 ]
# (a reset is resumed by the HTTP client itself, or by Xet's next attempt: "Xet: ...; trying again";
# the sanitized build's timing took the first way once, the normal build's the second)
grep -q "Xet: .*trying again" "$T/sync3.out" && echo "# Xet tried again" || echo "# the HTTP client resumed the range"
check "the xorb range the reset cut was asked again" [ "$(stat_of 'max(__import__("collections").Counter(
	r["path"] for r in s["recent"] if r["host"] == "cdn" and r["path"].startswith("/xorbs/")).values())')" -ge 2 ]
check "the 429 was met" [ "$(stat_of 'sum(1 for r in s["recent"] if r["status"] == 429)')" -ge 1 ]
check "and the faults were resumed through Xet (under a third of the file)" \
	[ "$(plain_reqs)" = 0 -a "$(cdn_bytes)" -le $((MID / 3)) ]
check "the revision after the faults is proven" proven acme/mid w.safetensors

# a xorb that lies: one byte of its body flipped; refused, the file comes over plain HTTP
mid 3 4 $((20 * 1024))
ctl reset '{}'
ctl faults '{"match": "^/xorbs/", "host": "cdn", "kind": "corrupt", "offset": 20, "count": 1}'
before=$(blobs)
hm sync hf:acme/mid >"$T/sync4.out" 2>&1
sed 's/^/# /' "$T/sync4.out"
check "a lying xorb: the revision syncs" grep -q "ok *hf:acme/mid " "$T/sync4.out"
check "its bytes refused, the file came over plain HTTP" bash -c \
	"grep -q 'Xet: .*over plain HTTP' '$T/sync4.out' && [ $(plain_reqs) -ge 1 ]"
check "the file is proven" proven acme/mid w.safetensors
check "nothing of the lie is stored (one new blob: the right one)" [ "$(blobs)" = $((before + 1)) ]

# killed in the middle of a xorb's range (sent at 100 kB/s): the store stays consistent, and the next
# run resumes after the partial file's bytes, through Xet
mid 6 4 $((20 * 1024))
ctl reset '{}'
ctl faults '{"match": "^/xorbs/", "host": "cdn", "kind": "slow", "rate": 100000, "count": -1}'
"$HUBMIRROR" sync hf:acme/mid >"$T/sync7.out" 2>&1 &
pid=$!
# until a xorb range is being sent and the partial file holds bytes (no time is asserted)
while { [ "$(xorb_reqs)" = 0 ] || [ -z "$(find "$store/tmp" -name '*.part' -size +0)" ]; } &&
	kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
part=$(find "$store/tmp" -name '*.part' -size +0 -printf '%s\n' | head -1)
echo "# killed with a partial file of ${part:-no} bytes"
check "killed mid-xorb: a partial file is left" [ -n "$part" ]
check "the store is consistent" "$PY" "$HM_SRC/tests/integration/helpers/checkstore.py" "$HUBMIRROR_DATA" \
	--expect-fake "$FAKE_API"
ctl reset '{}'
hm sync hf:acme/mid >"$T/sync8.out" 2>&1
sed 's/^/# /' "$T/sync8.out"
check "the next run resumes it" grep -q "ok *hf:acme/mid " "$T/sync8.out"
check "through Xet (no plain request)" [ "$(xorb_reqs)" -ge 1 -a "$(plain_reqs)" = 0 ]
check "the resumed file is proven" proven acme/mid w.safetensors

# --xet off, and [sync] xet = off: plain HTTP, no Xet request
mid 4 2 1000
ctl reset '{}'
hm sync --xet off hf:acme/mid >"$T/sync5.out" 2>&1
check "--xet off: the revision syncs" grep -q "ok *hf:acme/mid " "$T/sync5.out"
check "over plain HTTP only" [ "$(xorb_reqs)" = 0 -a "$(plain_reqs)" -ge 1 ]
expect_status 2 "--xet takes on or off" hm sync --xet maybe
printf '[sync]\nxet = off\n' >"$T/hm.conf"
mid 5 2 1000
ctl reset '{}'
hm sync --config "$T/hm.conf" hf:acme/mid >"$T/sync6.out" 2>&1
check "[sync] xet = off: the revision syncs" grep -q "ok *hf:acme/mid " "$T/sync6.out"
check "over plain HTTP only" [ "$(xorb_reqs)" = 0 -a "$(plain_reqs)" -ge 1 ]
check "and proven" proven acme/mid w.safetensors

# a mirror of this mirror syncs through this one's CAS (its virtual xorbs: docs/protocols/xet.md)
check "serve starts" start_serve
B=$T/second
"$HUBMIRROR" init --data "$B" >/dev/null 2>&1
"$HUBMIRROR" add --data "$B" hf:acme/mid >/dev/null
"$HUBMIRROR" sync --data "$B" --hf-upstream "$M" hf:acme/mid >"$T/sync9.out" 2>&1
sed 's/^/# /' "$T/sync9.out"
check "a second mirror syncs from this one" grep -q "ok *hf:acme/mid " "$T/sync9.out"
check "through this one's Xet CAS" bash -c "grep -q 'GET /xet-cas/v1/reconstructions/' '$T/access.log' &&
	grep -q 'GET /xet-cas/xorb/.* 206 ' '$T/access.log'"
sha=$(up acme/mid w.safetensors sha)
check "its copy is upstream's bytes" bash -c "[ \"\$(sha256sum <'$B/store/blobs/${sha:0:2}/$sha' | cut -d' ' -f1)\" = $sha ]"
finish
