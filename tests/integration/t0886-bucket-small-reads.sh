#!/usr/bin/env bash
# t0886-bucket-small-reads: with a bucket of Ceph's RADOS Gateway behind the store and a local cache of
# 2 MiB, emptied, the readers that go through a content once read it where the store has it, never
# bringing it into the cache (store_read by ranges, store_slurp for a small one whole, its sha256
# checked), and none of them waits on the bucket on serve's loop:
# 0. a sync that compares a regular file's git id with its twin's on ModelScope (t0309), the twin
#    (2.5 MB) bigger than the cache, hashes it from ranges of the bucket, every byte, none brought in;
# 1. a git clone of the repo (GIT_LFS_SKIP_SMUDGE=1) gives upstream's bytes of its regular files, one
#    of them (2.5 MB) bigger than the cache; the OCI artifact's manifest and config say config.json's
#    architecture and dtype; a preupload in a local repo follows its .gitattributes; the card is
#    rendered from README.md; `hubmirror verify` passes. Watched with inotify, the store's tmp/ and
#    blobs/ never get a file named by any content; the debug log has reads of the bucket, and none on
#    serve's loop (its process id), and no fill. An OCI image of tar layers that holds a content bigger
#    than the cache (big.txt) answers: that layer's digest hashed from ranges of the bucket, the layer
#    sent straight from it (whole, and two Ranges across the header's end and the file's end) is the
#    tar of upstream's big.txt alone, its sha256 the manifest's digest; big.txt never brought in;
# 2. config.json's, README.md's and .gitattributes' objects overwritten in the bucket with other bytes
#    of the same size: the manifest, the card and the preupload are refused with words that say the
#    store's copy is damaged, never built from those bytes; big.txt's overwritten too, a whole read of
#    its tar layer ends short (its last byte held until the whole hashed to its id), logged; its layer's
#    digest forgotten (the catalog's row dropped), the image is refused (500), the log names the damaged
#    object, and no digest is kept.
# Fails on the code before it: the sync brought the twin into the cache to hash it (checks of 0), the clone, the OCI config, the preupload and the card brought contents
# into the cache (the watch names them; the 2.5 MB file past the cache's bound), the OCI config and
# the preupload's .gitattributes on serve's loop; the image brought big.txt in past the bound (then
# was refused: 500, its layer never served; checks of 1b and big.txt's damaged layer of 2); a
# damaged config.json gave a manifest without it (200), a damaged .gitattributes a preupload by the
# default rules (200).
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
command -v git >/dev/null || skip "git is not installed (bash .ci/setup installs it)"
check "a Ceph cluster with its gateway starts" start_rgw
big_size=2500000
cat >"$T/spec.json" <<JSON
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/small", "gitattributes": false,
   "files": [{"path": "config.json", "content": "{\"architectures\": [\"LlamaForCausalLM\"], \"torch_dtype\": \"bfloat16\"}\n"},
             {"path": "README.md", "content": "---\nlicense: mit\n---\n# The t0886 card\n"},
             {"path": "notes/a.txt", "content": "alpha\n"},
             {"path": "notes/b.txt", "content": "beta\n"},
             {"path": "big.txt", "size": $big_size, "seed": 61, "lfs": false},
             {"path": "model.safetensors", "size": 3000000, "seed": 62}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-twin", "gitattributes": false,
   "files": [{"path": "big.bin", "size": $big_size, "seed": 61}]}
 ]}
JSON
rgw_store t0886 2M
# 0. big.txt's twin on ModelScope (the same bytes, known by sha256) is fetched first (the Hugging Face
# listing answered a second late, as t0309 does): big.txt's job compares its git id with the twin's,
# hashed from ranges of the bucket, never brought into the cache
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
curl -fsS -X POST -d '{"match": "/api/models/acme/small/revision/", "kind": "slow", "seconds": 1, "count": 1}' \
	"$FAKE_API/_fake/faults" >/dev/null
"$HUBMIRROR" add hf:acme/small ms:acme/ms-twin >/dev/null
check "sync into the bucket" "$HUBMIRROR" --log-level debug sync --no-progress 2>"$T/sync.err"
fetches() { # how many times upstream sent the bytes of a file whose path ends with $1
	curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c '
import json,sys
print(sum(1 for r in json.load(sys.stdin)["recent"]
          if r["kind"] in ("resolve", "ms-file", "cdn") and r["status"] == 200
          and (r["path"].split("?")[0].endswith("/" + sys.argv[1]) or "FilePath=" + sys.argv[1] in r["path"])))' "$1"; }
n=$(( $(fetches big.txt) + $(fetches big.bin) ))
check "the twin content came from upstream once ($n)" test "$n" = 1
W=hf_w_team_0886
printf '%s hf:team/*:write\n' "$W" >"$T/tokens"
chmod 600 "$T/tokens"
SERVE_LOG_LEVEL=debug
check "serve starts (debug log)" start_serve --local team --tokens "$T/tokens" --p2p-listen off
unset SERVE_LOG_LEVEL
serve_pid=${_pids[-1]}
check "a local repo with a .gitattributes of its own" bash -c "
	curl -fsS -o /dev/null -X POST -H 'Authorization: Bearer $W' -H 'Content-Type: application/json' \
		-d '{\"name\":\"loc\",\"organization\":\"team\",\"type\":\"model\"}' '$M/api/repos/create' &&
	printf '{\"key\":\"header\",\"value\":{\"summary\":\"attrs\"}}\n{\"key\":\"file\",\"value\":{\"path\":\".gitattributes\",\"content\":\"%s\",\"encoding\":\"base64\"}}\n' \
		\"\$(printf '*.custom filter=lfs diff=lfs merge=lfs -text\n' | base64 -w0)\" |
	curl -fsS -H 'Authorization: Bearer $W' -H 'Content-Type: application/x-ndjson' -X POST --data-binary @- \
		'$M/api/models/team/loc/commit/main' | grep -q commitOid"
store_bytes() { find "$HUBMIRROR_DATA/store" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
sha_of() { "$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"select sha256 from files where path = ? order by snapshot_id desc", (sys.argv[2],)).fetchone()[0])' "$HUBMIRROR_DATA/catalog.db" "$1"; }
config=$(sha_of config.json)
card=$(sha_of README.md)
attrs=$(sha_of .gitattributes)
big=$(sha_of big.txt)
echo "# config.json ${config:0:12}, README.md ${card:0:12}, .gitattributes ${attrs:0:12}, big.txt ${big:0:12}"
check "its git id was hashed from the bucket's ranges, every byte" grep -q \
	"${big:0:12}: its git id hashed from the bucket's ranges ($big_size bytes), not brought into the cache" "$T/sync.err"
check "and never brought into the cache" bash -c "! grep -q '${big:0:12}: brought into the cache' '$T/sync.err'"
check "which holds no copy of it" test ! -e "$HUBMIRROR_DATA/store/blobs/${big:0:2}/$big"
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
check "the cache is empty" test -z "$(find "$HUBMIRROR_DATA/store/blobs" -type f)"
check "the store's folder is watched" watch_store

# ---- 1. the readers, from the bucket ----
export HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
mkdir -p "$HOME"
check "git clone of the repo" env GIT_LFS_SKIP_SMUDGE=1 git clone -q "$M/acme/small" "$T/c1"
bad=0
for f in config.json README.md notes/a.txt notes/b.txt big.txt; do
	curl -fsSL -o "$T/up" "$FAKE_API/acme/small/resolve/main/$f" && cmp -s "$T/c1/$f" "$T/up" ||
		{ echo "# $f: not upstream's bytes ($(stat -c %s "$T/c1/$f" 2>&1) against $(stat -c %s "$T/up"))"; bad=1; }
done
check "its regular files are upstream's, byte for byte (big.txt: $big_size bytes)" test "$bad" = 0

manifest() { curl -sS -o "$T/manifest.json" -w '%{http_code}' \
	-H 'Accept: application/vnd.oci.image.manifest.v1+json' "$M/v2/hf/acme/small/manifests/main"; }
check "the OCI artifact's manifest" test "$(manifest)" = 200
cdigest=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["config"]["digest"])' "$T/manifest.json")
check "its config" curl -fsS -o "$T/config.json" "$M/v2/hf/acme/small/blobs/$cdigest"
check "... says config.json's architecture and dtype" "$PY" -c 'import json, sys
c = json.load(open(sys.argv[1]))["config"]
assert c.get("architecture") == "LlamaForCausalLM" and c.get("precision") == "bfloat16", c' "$T/config.json"

preupload() { curl -sS -o "$T/pre.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $W" \
	-H 'Content-Type: application/json' -d '{"files": [{"path": "w.custom", "size": 5, "sample": "aGVsbG8="}]}' \
	"$M/api/models/team/loc/preupload/main"; }
check "a preupload" test "$(preupload)" = 200
check "... follows the repo's .gitattributes (w.custom by LFS)" \
	"$PY" -c 'import json, sys; assert json.load(open(sys.argv[1]))["files"][0]["uploadMode"] == "lfs"' "$T/pre.json"

card() { curl -sS -o "$T/card.json" -w '%{http_code}' "$M/api/catalog/repos/hf/model/acme/small/card"; }
check "the card" test "$(card)" = 200
check "... rendered from README.md" grep -q "The t0886 card" "$T/card.json"
check "hubmirror verify passes" "$HUBMIRROR" verify

# a marker made after the reads ended: once the watch names it, it has read every event before it
touch "$HUBMIRROR_DATA/store/tmp/t0886-end"
for i in $(seq 600); do grep -q "^tmp/t0886-end$" "$T/made" && break; kill -0 $watcher || break; sleep 0.1; done
check "the watch read every event" grep -q "^tmp/t0886-end$" "$T/made"
rm -f "$HUBMIRROR_DATA/store/tmp/t0886-end"
grep -E "[0-9a-f]{64}" "$T/made" | sed 's/^/# made: /' | head -12
check "nothing was made in the store for any content (no fill, no copy in the cache)" \
	bash -c "! grep -qE '[0-9a-f]{64}' '$T/made'"
check "the cache is still empty" test -z "$(find "$HUBMIRROR_DATA/store/blobs" -type f)"
reads=$(grep -c "read from the bucket, not brought into the cache, on thread" "$T/serve.err")
check "serve read the bucket by ranges ($reads reads)" test "$reads" -ge 4
bad=0
for s in "$config" "$attrs" "$card" "$big"; do
	grep -q "${s:0:12}: .* read from the bucket, not brought into the cache" "$T/serve.err" ||
		{ echo "# no read of ${s:0:12} from the bucket"; bad=1; }
done
check "... of config.json, .gitattributes, README.md and big.txt" test "$bad" = 0
check "none on serve's loop (thread $serve_pid)" \
	bash -c "! grep -q 'read from the bucket, not brought into the cache, on thread $serve_pid\$' '$T/serve.err'"
check "and no fill" bash -c "! grep -q 'brought into the cache from the bucket' '$T/serve.err'"

# ---- 1b. an OCI image of tar layers: its layers' digests are made on a worker, of a content within the
# cache's bound from the whole file brought into the cache (t0876), of one bigger (big.txt) from ranges of
# the bucket, never brought in; its layer is sent straight from the bucket, framed ----
curl -fsSL -o "$T/up-big" "$FAKE_API/acme/small/resolve/main/big.txt"
check "the OCI image's index answers" bash -c "curl -fsS -o '$T/index.json' '$M/v2/image/hf/acme/small/manifests/main'"
ldigest=$("$PY" - "$M/v2/image/hf/acme/small" "$T/index.json" <<'PY'
import json, sys, urllib.request
base, index = sys.argv[1], json.load(open(sys.argv[2]))
req = urllib.request.Request(base + "/manifests/" + index["manifests"][0]["digest"],
                             headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
m = json.load(urllib.request.urlopen(req))
print([l["digest"] for l in m["layers"] if l["annotations"]["org.cncf.model.filepath"] == "big.txt"][0])
PY
)
check "... and its manifest, with a layer for big.txt (${ldigest:7:12})" test -n "$ldigest"
check "... whose digest was hashed from the bucket's ranges" \
	grep -q "${big:0:12} ($big_size bytes): its tar layer's digest hashed from the store's ranges, not brought into the cache" \
	"$T/serve.err"
check "big.txt's tar layer, whole" curl -fsS -o "$T/layer" "$M/v2/image/hf/acme/small/blobs/$ldigest"
check "... its sha256 is the manifest's digest" test "sha256:$(sha256sum <"$T/layer" | cut -d' ' -f1)" = "$ldigest"
hl=$("$PY" - "$T/layer" "$T/up-big" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1], "r:") as t:
    ms = t.getmembers()
    assert [m.name for m in ms] == ["big.txt"] and ms[0].isfile(), [m.name for m in ms]
    assert t.extractfile(ms[0]).read() == open(sys.argv[2], "rb").read(), "not upstream's bytes"
    print(ms[0].offset_data)
PY
)
check "... is the tar of upstream's big.txt alone ($hl bytes of header)" test -n "$hl"
ranged() { # FIRST LAST: that Range of the layer is the same bytes of the whole one
	curl -fsS -o "$T/part" -H "Range: bytes=$1-$2" "$M/v2/image/hf/acme/small/blobs/$ldigest" &&
		cmp -s "$T/part" <(tail -c +$(($1 + 1)) "$T/layer" | head -c $(($2 - $1 + 1)))
}
check "a HEAD of it says the layer's length" bash -c "curl -fsSI '$M/v2/image/hf/acme/small/blobs/$ldigest' |
	tr -d '\\r' | grep -qix 'content-length: $(stat -c %s "$T/layer")'"
check "a Range across the header's end and the file's start" ranged $((hl - 100)) $((hl + 100))
check "a Range across the file's end and the zeros" ranged $((hl + big_size - 100)) $((hl + big_size + 100))
touch "$HUBMIRROR_DATA/store/tmp/t0886-end2"
for i in $(seq 600); do grep -q "^tmp/t0886-end2$" "$T/made" && break; kill -0 $watcher || break; sleep 0.1; done
check "the watch read every event" grep -q "^tmp/t0886-end2$" "$T/made"
rm -f "$HUBMIRROR_DATA/store/tmp/t0886-end2"
check "... and big.txt was never brought into the store" bash -c "! grep -q '$big' '$T/made'"
check "the store's folder holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 2097152

# ---- 2. damaged objects: refused, never read as their contents ----
damage() { # SHA: its object overwritten with as many other bytes
	test "$(rgw_s3 GET "/t0886/blobs/${1:0:2}/$1")" = 200 || return 1
	tr 'a-zA-Z' 'b-zaB-ZA' <"$T/s3.body" >"$T/damaged"
	test "$(stat -c %s "$T/damaged")" = "$(stat -c %s "$T/s3.body")" && ! cmp -s "$T/damaged" "$T/s3.body" &&
		test "$(rgw_s3 PUT "/t0886/blobs/${1:0:2}/$1" "$T/damaged")" = 200
}
check "config.json's object overwritten in the bucket (same size)" damage "$config"
check "README.md's too" damage "$card"
check ".gitattributes' too" damage "$attrs"
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
check "big.txt's object overwritten in the bucket (same size)" damage "$big"
n=$(curl -sS -o "$T/layer2" -w '%{size_download}' "$M/v2/image/hf/acme/small/blobs/$ldigest" 2>"$T/curl.err")
check "a whole read of its tar layer ends short ($n of $(stat -c %s "$T/layer") bytes)" \
	test "$n" -lt "$(stat -c %s "$T/layer")"
check "... serve's log names it" grep -q "the store's bucket's ${big:0:12} is not its content" "$T/serve.err"
tars() { "$PY" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=30)
if sys.argv[2] == "drop":
    c.execute("delete from oci_tars where sha256 = ?", (sys.argv[3],)); c.commit()
print(c.execute("select count(*) from oci_tars where sha256 = ?", (sys.argv[3],)).fetchone()[0])' \
	"$HUBMIRROR_DATA/catalog.db" "$@"; }
check "big.txt's layer digest forgotten (its catalog row dropped)" test "$(tars drop "$big")" = 0
check "the image's index is refused then (500)" test \
	"$(curl -sS -o /dev/null -w '%{http_code}' "$M/v2/image/hf/acme/small/manifests/main")" = 500
check "... the log says big.txt's copy in the bucket is damaged, no digest kept" grep -q \
	"the tar layer of big.txt ($big): the store's copy of $big (the bucket's object) hashes to [0-9a-f]*: damaged, no digest kept" \
	"$T/serve.err"
check "... and none was kept" test "$(tars count "$big")" = 0
check "the manifest is refused (500)" test "$(manifest)" = 500
check "... with words that say config.json's copy is damaged" \
	grep -q "config.json cannot be read from the mirror's store: .*${config}.*damaged" "$T/manifest.json"
check "the card is refused (503)" test "$(card)" = 503
check "... its answer says the card's file is damaged" grep -q "damaged" "$T/card.json"
check "the preupload is refused (503)" test "$(preupload)" = 503
check "... with words that name the .gitattributes and say it is damaged" \
	grep -q "gitattributes cannot be read from the mirror's store: .*${attrs}.*damaged" "$T/pre.json"
check "the log names each damaged content" bash -c "for s in $config $card $attrs; do
	grep -q \"the store's copy of \$s (the bucket's object) hashes to .*damaged\" '$T/serve.err' || exit 1; done"
check "serve stops clean" serve_stops_clean
finish
