#!/usr/bin/env bash
# t0312-sync-xet: every file a sync stores gets its Xet identity beside it (store/xet/<h0h1>/<sha256>,
# docs/protocols/xet.md; none for one under 8 KiB, computed when asked), in the same pass as its sha256; the Xet hash it names is the one
# the fake upstream states (tests/fakehub/xet.py, an implementation of its own) and the catalog records
# it. An upstream that states a wrong Xet hash for a file gets it refused as a corrupt download is,
# with nothing stored. gc deletes an identity with its blob.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/x",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 11},
             {"path": "small.bin", "size": 5000, "seed": 12}]},
  {"hub": "hf", "type": "model", "id": "acme/liar",
   "files": [{"path": "lie.safetensors", "size": 700000, "seed": 13}]}
 ]}
JSON
# the fake Hub states a wrong Xet hash for every file called lie.safetensors
check "fake upstream starts" start_fakehub --repos "$T/spec.json" --xet-lie lie.safetensors
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
hm() { "$HUBMIRROR" "$@"; }
store="$HUBMIRROR_DATA/store"
ident="$HM_BUILD/tests/unit/xet-ident"

# upstream's view: path -> (sha256, xetHash) from its tree
curl -fsS "$FAKE_API/api/models/acme/x/tree/main" >"$T/tree.json"
up() { "$PY" -c 'import json,sys
for e in json.load(open(sys.argv[1])):
    if e["path"] == sys.argv[2]:
        print(e["lfs"]["oid"] if sys.argv[3] == "sha" else e["xetHash"])' "$T/tree.json" "$@"; }
sha=$(up model.safetensors sha); xh=$(up model.safetensors xet)
sha2=$(up small.bin sha); xh2=$(up small.bin xet)
check "the fake upstream states Xet hashes for its LFS files" [ ${#xh} = 64 -a ${#xh2} = 64 ]

hm add hf:acme/x hf:acme/liar >/dev/null
hm sync >"$T/sync.out" 2>&1
sed 's/^/# /' "$T/sync.out"
check "acme/x syncs" grep -q "ok *hf:acme/x " "$T/sync.out"
check "a stored content has its identity beside it" bash -c "[ -f $store/blobs/${sha:0:2}/$sha ] && [ -s $store/xet/${sha:0:2}/$sha ]"
check "one under 8 KiB (one chunk) none: computed when asked" bash -c "[ -f $store/blobs/${sha2:0:2}/$sha2 ] && [ ! -e $store/xet/${sha2:0:2}/$sha2 ]"
# the identity file's header names the file hash (bytes 24..56, in the hashes' text form)
idhash() { "$PY" -c 'import sys
b = open(sys.argv[1], "rb").read(56)
assert b[:8] == b"hmxetid\x01", b[:8]
print("".join("%016x" % int.from_bytes(b[24 + 8 * w:32 + 8 * w], "little") for w in range(4)))' "$store/xet/${1:0:2}/$1"; }
check "the identity names upstream's Xet hash" [ "$(idhash $sha)" = $xh ]
check "and so does the mirror's own computation from the blob (xet-ident)" bash -c \
	"[ \"\$('$ident' $store/blobs/${sha:0:2}/$sha | sed -n 's/^file //p')\" = $xh ]"
xet_of() { "$PY" -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT xet_hash FROM blob_xet WHERE sha256 = ?", (sys.argv[2],)).fetchone()[0])' \
	"$HUBMIRROR_DATA/catalog.db" "$1"; }
check "the catalog records it, the small content's too" [ "$(xet_of $sha)" = $xh -a "$(xet_of $sha2)" = $xh2 ]

# the liar: its bytes are right (sha256), its Xet hash is not
lie=$(curl -fsS "$FAKE_API/api/models/acme/liar/tree/main" | "$PY" -c 'import json,sys
print([e for e in json.load(sys.stdin) if e["path"] == "lie.safetensors"][0]["lfs"]["oid"])')
check "a file whose stated Xet hash is wrong is refused" bash -c "! grep -q 'ok *hf:acme/liar ' '$T/sync.out' &&
	grep -qi 'hash' '$T/sync.out'"
check "nothing of it is stored" bash -c "[ ! -e $store/blobs/${lie:0:2}/$lie ] && [ ! -e $store/xet/${lie:0:2}/$lie ]"

# gc deletes an identity with its blob
hm remove hf:acme/x >/dev/null
hm gc >/dev/null 2>&1
check "gc deletes the identities with their blobs" bash -c "
	for s in $sha $sha2; do [ ! -e $store/blobs/\${s:0:2}/\$s ] && [ ! -e $store/xet/\${s:0:2}/\$s ] || exit 1; done"
finish
