#!/usr/bin/env bash
# t0858-upload-parts-xet: a file uploaded in parts (Git LFS multipart, as huggingface_hub sends an
# object of 128 MiB and more when the mirror offers it) gets its Xet identity as one uploaded whole does
# (docs/protocols/xet.md, "The identity beside each blob"): computed in the completion's one read of the
# file, saved beside the blob, its Xet hash (the one the project's xet-ident computes from the bytes) in
# the catalog, and the file offered through Xet (resolve's X-Xet-Hash, a reconstruction of all of it).
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
TOK
chmod 600 "$T/tokens"
check "serve starts with a local namespace" start_serve --local acme --tokens "$T/tokens" || finish
W=hf_writer_acme_0001
store="$HUBMIRROR_DATA/store"
# the big file in 3 parts of 64 MiB (the last short), and a small one in one PUT, then one commit
"$PY" - "$M" "$T" <<'PY' >"$T/up.out" 2>&1
import hashlib, os, sys
sys.path.insert(0, os.path.join(os.environ["HM_SRC"], "tests/integration/helpers"))
from hfupload import Api
m, t = sys.argv[1:3]
big = hashlib.shake_256(b"t0858-big").digest(8 << 20) * 16 + hashlib.shake_256(b"tail").digest(3 << 20)
small = hashlib.shake_256(b"t0858-small").digest(3_000_000)
w = Api(m, "hf_writer_acme_0001")
w.create_repo("acme/parts")
seen = []
orig = w.multipart
w.multipart = lambda *a: (seen.append(a[0]), orig(*a))
w.lfs_upload("acme/parts", [big, small])
assert seen == [hashlib.sha256(big).hexdigest()], seen
ops = [{"key": "lfsFile", "value": {"path": p, "algo": "sha256", "oid": hashlib.sha256(c).hexdigest(), "size": len(c)}}
       for p, c in (("big.bin", big), ("small.bin", small))]
w.commit("acme/parts", ops, "parts")
for name, c in (("big", big), ("small", small)):
    open(os.path.join(t, name + ".bin"), "wb").write(c)
print("uploaded")
PY
st=$?
sed 's/^/# /' "$T/up.out"
check "the big file went up in parts and the small one whole, then the commit" test "$st" = 0
xet_of() { "$PY" -c 'import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("SELECT xet_hash FROM blob_xet WHERE sha256 = ?", (sys.argv[2],)).fetchone()
print(r[0] if r else "")' "$HUBMIRROR_DATA/catalog.db" "$1"; }
idhash() { "$PY" -c 'import sys
b = open(sys.argv[1], "rb").read(56)
assert b[:8] == b"hmxetid\x01", b[:8]
print("".join("%016x" % int.from_bytes(b[24 + 8 * w:32 + 8 * w], "little") for w in range(4)))' "$store/xet/${1:0:2}/$1"; }
for f in big small; do
	sha=$(sha256sum <"$T/$f.bin" | cut -c1-64)
	want=$("$HM_BUILD/tests/unit/xet-ident" "$T/$f.bin" | sed -n 's/^file //p')
	check "$f: stored, its identity beside it" bash -c "[ -f $store/blobs/${sha:0:2}/$sha ] && [ -s $store/xet/${sha:0:2}/$sha ]"
	check "$f: the identity names the Xet hash xet-ident computes from its bytes" [ "$(idhash $sha 2>/dev/null)" = "$want" ]
	[ $f = big ] && check "$f: the catalog records it at once" [ "$(xet_of $sha)" = "$want" ]
	curl -fsS -I -H "Authorization: Bearer $W" "$M/acme/parts/resolve/main/$f.bin" | tr -d '\r' >"$T/$f.head"
	check "$f: resolve offers it through Xet (X-Xet-Hash)" grep -qix "x-xet-hash: $want" "$T/$f.head"
	commit=$(grep -io 'xet-read-token/[0-9a-f]*' "$T/$f.head" | head -1 | cut -d/ -f2)
	tok=$(curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/parts/xet-read-token/$commit" |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
	curl -fsS -H "Authorization: Bearer $tok" "$M/xet-cas/v1/reconstructions/$want" >"$T/$f.rec"
	check "$f: its reconstruction covers every byte" "$PY" -c 'import json, os, sys
r = json.load(open(sys.argv[1]))
assert sum(t["unpacked_length"] for t in r["terms"]) == os.path.getsize(sys.argv[2]), r["terms"][:2]' "$T/$f.rec" "$T/$f.bin"
done
check "serve stops clean" serve_stops_clean
finish
