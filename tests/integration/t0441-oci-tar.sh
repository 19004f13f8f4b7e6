#!/usr/bin/env bash
# t0441-oci-tar: the mirror's OCI images of tar layers (docs/protocols/oci.md, "Tar layers"): under
# image/hf/ORG/NAME a snapshot is an index of linux/amd64 and linux/arm64 images whose layers are
# each one file as a tar entry named by its path (a long name, a non-ASCII one, an empty file, a
# file in a folder), made on the fly from the store: skopeo copies one, every layer untars (GNU tar
# and Python's tarfile) to the upstream file, byte for byte, with mode 0644, owner 0 and mtime 0; a
# layer's digest is the sha256 of its bytes, computed once off the loop and kept in the catalog (a
# second pull and a restarted serve compute nothing, same digests); Range across the header, the file
# and the zeros; a tar layer is no blob of the raw artifact; a guarded repo's image wants its token.
. "$HM_SRC/tests/integration/lib.sh"
command -v skopeo >/dev/null || skip "needs skopeo (Debian's)"
LONG="deep/$(printf 'folder-%02d/' $(seq 1 14))weights-with-a-name-past-a-hundred-characters.bin"
"$PY" - "$LONG" >"$T/spec.json" <<'PY'
import json, sys
print(json.dumps({
 "tokens": {},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/x", "branches": {"main": "c1"},
   "commits": [{"key": "c1", "title": "one", "files": [
     {"path": "config.json", "content": "{\"architectures\": [\"LlamaForCausalLM\"]}\n"},
     {"path": "model.safetensors", "size": 3000000, "seed": 5},
     {"path": "sub/notes.txt", "content": "n\n"},
     {"path": "empty.txt", "content": ""},
     {"path": "caf\u00e9/r\u00e9sum\u00e9.md", "content": "# caf\u00e9\n"},
     {"path": sys.argv[1], "size": 1000, "seed": 6}]}]},
  {"hub": "hf", "type": "model", "id": "acme/guarded",
   "files": [{"path": "config.json", "content": "{\"g\": 1}\n"}]}
 ]}))
PY
sync_from_fake hf:acme/x hf:acme/guarded
printf 'tok-reader-abcdefgh hf:acme/guarded\n' >"$T/tokens"
chmod 600 "$T/tokens"
check "serve starts" start_serve --p2p-listen off --tokens "$T/tokens"
R=${M#http://}
SK="skopeo --override-os linux --override-arch amd64"
computed() { grep -c "tar layers' digests computed" "$T/serve.err"; }

check "the image's index: linux/amd64 and linux/arm64" bash -c "curl -fsS -D '$T/ih' '$M/v2/image/hf/acme/x/manifests/main' >'$T/index.json' && grep -qi '^Content-Type: application/vnd.oci.image.index.v1+json' '$T/ih' && '$PY' -c '
import json, sys
i = json.load(open(sys.argv[1]))
assert i[\"mediaType\"] == \"application/vnd.oci.image.index.v1+json\", i
assert sorted(m[\"platform\"][\"architecture\"] for m in i[\"manifests\"]) == [\"amd64\", \"arm64\"], i
assert all(m[\"platform\"][\"os\"] == \"linux\" for m in i[\"manifests\"]), i
' '$T/index.json'"
check "the digests were computed off the loop, once" test "$(computed)" = 1
check "skopeo copy of the image to dir:" bash -c "$SK copy --src-tls-verify=false docker://$R/image/hf/acme/x:main dir:$T/out >/dev/null 2>'$T/copy.err' || { cat '$T/copy.err'; false; }"
"$PY" - "$T/out/manifest.json" >"$T/layers" <<'PY' || fail "the amd64 manifest: one tar layer per file, the config's diff_ids"
import json, os, sys
m = json.load(open(sys.argv[1]))
d = os.path.dirname(sys.argv[1])
assert m["mediaType"] == "application/vnd.oci.image.manifest.v1+json", m
assert m["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json", m
c = json.load(open(os.path.join(d, m["config"]["digest"].split(":")[1])))
assert c["architecture"] == "amd64" and c["os"] == "linux", c
assert c["rootfs"]["diff_ids"] == [l["digest"] for l in m["layers"]], c
assert all(l["mediaType"] == "application/vnd.oci.image.layer.v1.tar" for l in m["layers"]), m
assert len(m["layers"]) == 7, m  # and the fake hub's .gitattributes
for l in m["layers"]:
    print(l["digest"].split(":")[1], l["annotations"]["org.cncf.model.filepath"])
PY
bad=0
while read -r sha path; do
	got=$(sha256sum <"$T/out/$sha" | cut -d' ' -f1)
	[ "$got" = "$sha" ] || { echo "# $path: layer $sha, bytes $got"; bad=1; }
	rm -rf "$T/x" && mkdir "$T/x" && tar -xf "$T/out/$sha" -C "$T/x" || { echo "# $path: tar -x fails"; bad=1; continue; }
	[ "$(cd "$T/x" && find . -type f)" = "./$path" ] || { echo "# $path: the tar holds $(cd "$T/x" && find . -type f)"; bad=1; }
	cmp -s "$T/x/$path" <(curl -fsSL "$FAKE_API/acme/x/resolve/main/$(printf %s "$path" | "$PY" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.stdin.read()))')") ||
		{ echo "# $path: not upstream's bytes"; bad=1; }
done <"$T/layers"
check "every layer is the sha256 of its bytes and untars (GNU tar) to the upstream file alone, by its path" test "$bad" = 0
check "each a tar entry of mode 0644, owner 0:0, mtime 0, the file's size (Python's tarfile)" "$PY" - "$T/out" "$T/layers" <<'PY'
import os, sys, tarfile
for line in open(sys.argv[2]):
    sha, path = line.rstrip("\n").split(" ", 1)
    with tarfile.open(os.path.join(sys.argv[1], sha)) as t:
        (m,) = t.getmembers()
        assert m.name == path and m.isreg() and m.mode == 0o644 and m.uid == 0 and m.gid == 0 and m.mtime == 0, m
        assert len(t.extractfile(m).read()) == m.size, m
PY
w=$(awk '$2 == "model.safetensors" { print $1 }' "$T/layers")
size=$(stat -c %s "$T/out/$w")
check "a tar layer's HEAD: its size and digest" bash -c "[ \"\$(curl -sSI '$M/v2/image/hf/acme/x/blobs/sha256:$w' | tr -d '\r' | awk 'tolower(\$1) == \"content-length:\" { print \$2 }')\" = $size ] && curl -sSI '$M/v2/image/hf/acme/x/blobs/sha256:$w' | grep -qi 'Docker-Content-Digest: sha256:$w'"
rng() { [ "$(curl -s -o "$T/part" -w '%{http_code}' -r "$1-$2" "$M/v2/image/hf/acme/x/blobs/sha256:$w")" = 206 ] && cmp "$T/part" <(tail -c +$(($1 + 1)) "$T/out/$w" | head -c $(($2 - $1 + 1))); }
export -f rng
export M T w
check "Range inside the header" rng 0 99
check "Range across the header and the file" rng 400 1999
check "Range inside the file" rng 100000 199999
check "Range across the file, its padding and the end" rng $((size - 3000)) $((size - 1))
check "Range inside the zeros" rng $((size - 700)) $((size - 10))
check "a Range past the end: 416" test "$(curl -s -o /dev/null -w '%{http_code}' -r "$size-" "$M/v2/image/hf/acme/x/blobs/sha256:$w")" = 416
check "a tar layer is no blob of the raw artifact: 404 BLOB_UNKNOWN" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/v2/hf/acme/x/blobs/sha256:$w")" = 404
raw=$(curl -fsS "$M/v2/hf/acme/x/manifests/main" | "$PY" -c 'import json,sys; print([l["digest"] for l in json.load(sys.stdin)["layers"] if l["annotations"]["org.cncf.model.filepath"] == "model.safetensors"][0])')
check "... nor a raw layer one of the image" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/v2/image/hf/acme/x/blobs/$raw")" = 404
idx=$(sha256sum <"$T/index.json" | cut -d' ' -f1)
check "the index by its digest" bash -c "curl -fsS '$M/v2/image/hf/acme/x/manifests/sha256:$idx' | cmp - '$T/index.json'"
check "the arm64 manifest by its digest" bash -c "curl -fsS -D '$T/mh' '$M/v2/image/hf/acme/x/manifests/'\$('$PY' -c 'import json,sys; print([m[\"digest\"] for m in json.load(open(sys.argv[1]))[\"manifests\"] if m[\"platform\"][\"architecture\"] == \"arm64\"][0])' '$T/index.json') | grep -q '\"layers\"' && grep -qi '^Content-Type: application/vnd.oci.image.manifest.v1+json' '$T/mh'"
check "a second pull computes nothing" bash -c "$SK copy --src-tls-verify=false docker://$R/image/hf/acme/x:main dir:$T/out2 >/dev/null && cmp '$T/out/manifest.json' '$T/out2/manifest.json' && [ \"\$(grep -c \"tar layers' digests computed\" '$T/serve.err')\" = 1 ]"
check "the guarded repo's image without a token: 401" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/v2/image/hf/acme/guarded/manifests/main")" = 401
check "... with it: the index" bash -c "curl -fsS -u x:tok-reader-abcdefgh '$M/v2/image/hf/acme/guarded/manifests/main' | grep -q 'index.v1+json'"
check "tags/list of the image" bash -c "curl -fsS '$M/v2/image/hf/acme/x/tags/list' | grep -q '\"main\"'"
check "serve stops clean" serve_stops_clean
check "serve starts again" start_serve --p2p-listen off --tokens "$T/tokens"
check "a restarted serve gives the same index, its digests kept" bash -c "curl -fsS '$M/v2/image/hf/acme/x/manifests/main' | cmp - '$T/index.json' && ! grep -q \"tar layers' digests computed\" '$T/serve.err'"
check "serve stops clean (again)" serve_stops_clean
finish
