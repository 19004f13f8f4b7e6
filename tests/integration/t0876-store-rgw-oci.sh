#!/usr/bin/env bash
# t0876-store-rgw-oci: the OCI front of a mirror whose store is in a bucket, its local cache emptied:
# an image of tar layers (image/hf/ORG/NAME) is made from contents the cache does not hold, and each
# is brought in from the bucket on a worker of serve, never on its loop (the loop never waits on the
# bucket: on the code before, the layers' digests and a layer's answer brought contents in on the
# loop, which stalled every other client for as long as the gateway took). skopeo copies the image,
# and every layer untars to the upstream file, byte for byte; the debug log names the thread each
# content was brought in on, never serve's loop (its process id).
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
command -v skopeo >/dev/null || skip "needs skopeo (Debian's)"
check "a Ceph cluster with its gateway starts" start_rgw
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/x",
   "files": [{"path": "config.json", "content": "{\"architectures\": [\"LlamaForCausalLM\"]}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 5},
             {"path": "sub/notes.txt", "content": "n\n"}]}
 ]}
JSON
rgw_store t0876 64M
check "sync into the bucket" sync_from_fake hf:acme/x
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
check "the cache is empty" test -z "$(find "$HUBMIRROR_DATA/store/blobs" -type f)"
SERVE_LOG_LEVEL=debug
check "serve starts" start_serve --p2p-listen off
unset SERVE_LOG_LEVEL
serve_pid=${_pids[-1]}
R=${M#http://}
SK="skopeo --override-os linux --override-arch amd64"

check "the image's index" bash -c "curl -fsS '$M/v2/image/hf/acme/x/manifests/main' | grep -q 'index.v1+json'"
check "the layers' digests were computed" grep -q "tar layers' digests computed" "$T/serve.err"
find "$HUBMIRROR_DATA/store/blobs" -type f -delete # (the digests brought them in: the layers' answers again)
check "skopeo copy of the image to dir:" bash -c "$SK copy --src-tls-verify=false docker://$R/image/hf/acme/x:main \
	dir:$T/out >/dev/null 2>'$T/copy.err' || { cat '$T/copy.err'; false; }"
"$PY" - "$T/out/manifest.json" >"$T/layers" <<'PY' || fail "the amd64 manifest's layers"
import json, sys
m = json.load(open(sys.argv[1]))
for l in m["layers"]:
    print(l["digest"].split(":")[1], l["annotations"]["org.cncf.model.filepath"])
PY
check "a layer for each file (and the fake hub's .gitattributes)" test "$(wc -l <"$T/layers")" = 4
bad=0
while read -r sha path; do
	got=$(sha256sum <"$T/out/$sha" | cut -d' ' -f1)
	[ "$got" = "$sha" ] || { echo "# $path: layer $sha, bytes $got"; bad=1; }
	rm -rf "$T/x" && mkdir "$T/x" && tar -xf "$T/out/$sha" -C "$T/x" || { echo "# $path: tar -x fails"; bad=1; continue; }
	cmp -s "$T/x/$path" <(curl -fsSL "$FAKE_API/acme/x/resolve/main/$path") || { echo "# $path: not upstream's bytes"; bad=1; }
done <"$T/layers"
check "every layer is the sha256 of its bytes and untars to the upstream file" test "$bad" = 0
grep "brought into the cache from the bucket, on thread" "$T/serve.err" | sed 's/^/# /' | head -12
fills=$(grep -c "brought into the cache from the bucket, on thread" "$T/serve.err")
check "contents were brought in from the bucket, for the digests and for the layers ($fills)" test "$fills" -ge 8
check "none on serve's loop (thread $serve_pid)" \
	bash -c "! grep -q 'brought into the cache from the bucket, on thread $serve_pid\$' '$T/serve.err'"
check "serve stops clean" serve_stops_clean
finish
