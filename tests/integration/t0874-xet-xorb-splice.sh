#!/usr/bin/env bash
# t0874-xet-xorb-splice: a xorb range leaves the mirror as it is read (docs/protocols/xet.md, "Virtual
# xorbs"): chunk headers and multipart framing made in memory, spliced between pieces of the stored
# blob sent with sendfile (httpd_respond_spliced), never the run built whole first. What is checked is
# what a client can see of it, against a model of the virtual xorb built here from the blob and the
# reconstruction's chunk sizes: a whole run, byte for byte (headers each the spec's 8 bytes, data the
# file's); single ranges that start or end inside a chunk header, a single byte, the last byte;
# several ranges (overlapping too) as multipart/byteranges, each part exact, but never more than the
# run in all; HEAD's length with no body; keep-alive (xorb ranges, then a plain file, on one
# connection); a client that goes away in mid-body harms no one; the same over TLS; and
# @huggingface/hub's downloadFile through Xet still reads the file byte for byte.
. "$HM_SRC/tests/integration/lib.sh"
need_node_module @huggingface/hub
command -v openssl >/dev/null || { echo "openssl is missing (.ci/setup installs it)"; exit 1; }

ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/srv.key" -out "$T/srv.pem" \
	-days 30 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/splice",
   "files": [{"path": "model.safetensors", "size": 3000000, "seed": 74}]}
 ]}
JSON
check "fake upstream starts (stating Xet hashes)" start_fakehub --repos "$T/spec.json" --xet
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/splice >/dev/null
"$HUBMIRROR" sync >/dev/null 2>&1
tree() { curl -fsS "$FAKE_API/api/models/acme/splice/tree/main"; }
field() { "$PY" -c 'import json,sys
for e in json.load(sys.stdin):
    if e["path"] == sys.argv[1]:
        print(e["lfs"]["oid"] if sys.argv[2] == "sha" else e["xetHash"])' "$@"; }
sha=$(tree | field model.safetensors sha); xh=$(tree | field model.safetensors xet)
check "serve starts (with a certificate: HTTPS and plain HTTP on one port)" \
	start_serve --p2p-listen off --tls-cert "$T/srv.pem" --tls-key "$T/srv.key"
S=${M/http:/https:}
curl -fsS -o "$T/file" "$M/acme/splice/resolve/main/model.safetensors"
check "the plain file is the file" test "$(sha256sum <"$T/file" | cut -c1-64)" = "$sha"

tok=$(curl -fsS "$M/api/models/acme/splice/xet-read-token/main" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
curl -fsS -o "$T/recon.json" -H "Authorization: Bearer $tok" "$M/xet-cas/v2/reconstructions/$xh"
url=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["xorbs"][d["terms"][0]["hash"]][0]["url"])' \
	"$T/recon.json")
len=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["xorbs"][d["terms"][0]["hash"]][0]["ranges"][0]
assert r["bytes"]["start"] == 0, r; print(r["bytes"]["end"] + 1)' "$T/recon.json")
check "the reconstruction names one run of the file, its length stated" test "$len" -gt 3000000

# the model: the run parsed as the spec's chunks (8-byte headers: version 0, length, scheme 0 = none,
# length again), their data in order must be the file; ranges of it are cut from that whole
curl -fsS -D "$T/wh" -o "$T/run" "$url"
check "the whole run (no Range): 200, Content-Length right" bash -c "
	grep -q '^HTTP/1.1 200' '$T/wh' && grep -qi '^Content-Length: $len' '$T/wh' && [ \$(stat -c %s '$T/run') = $len ]"
check "  chunk by chunk: the spec's headers, the file's bytes, in order" "$PY" -c '
import sys
run, data = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
off = pos = n = 0
while off < len(run):
    h = run[off:off + 8]
    size = h[1] | h[2] << 8 | h[3] << 16
    assert h[0] == 0 and h[4] == 0 and h[5:8] == h[1:4] and 0 < size <= 131072, (off, h)
    assert run[off + 8:off + 8 + size] == data[pos:pos + size], off
    off += 8 + size; pos += size; n += 1
assert pos == len(data) and n > 10, (pos, n)' "$T/run" "$T/file"

cut() { tail -c +$(($1 + 1)) "$T/run" | head -c $(($2 - $1 + 1)); }
one() { # one A B [CURL ARGS...]: bytes A-B of the run by Range, as the model has them
	local a=$1 b=$2; shift 2
	curl -fsS -D "$T/rh" -H "Range: bytes=$a-$b" "$@" "$url" >"$T/got" &&
		grep -q '^HTTP/1.1 206' "$T/rh" && grep -qi "^Content-Range: bytes $a-$b/$len" "$T/rh" &&
		cmp -s "$T/got" <(cut "$a" "$b")
}
check "a range inside the first chunk header" one 2 5
check "a range from inside a header into its chunk's data" one 3 20000
check "a range from a chunk's data into the next header and beyond" one 60000 200000
check "a single byte" one 7 7
check "the last byte" one $((len - 1)) $((len - 1))
check "the run's second half" one $((len / 2)) $((len - 1))

cat >"$T/mp.py" <<'PY'
import re, sys
body, head, run, spec = open(sys.argv[1], "rb").read(), open(sys.argv[2]).read(), open(sys.argv[3], "rb").read(), sys.argv[4]
b = re.search(r"(?im)^content-type: multipart/byteranges; boundary=(\S+)", head).group(1).encode()
ranges = [tuple(int(x) for x in r.split("-")) for r in spec.split(",")]
parts = body.split(b"--" + b)
assert parts[0] == b"" and parts[-1] == b"--\r\n", (parts[0][:20], parts[-1][:20])
parts = parts[1:-1]
assert len(parts) == len(ranges), len(parts)
for p, (x, y) in zip(parts, ranges):
    h, _, d = p.partition(b"\r\n\r\n")
    assert b"Content-Range: bytes %d-%d/%d" % (x, y, len(run)) in h, h
    assert d == run[x:y + 1] + b"\r\n", (x, y)
PY
several() { # several SPEC [CURL ARGS...]: the parts of a multi-range request, each as the model has it
	local spec=$1; shift
	curl -fsS -D "$T/mh" -H "Range: bytes=$spec" "$@" "$url" >"$T/mp" && grep -q '^HTTP/1.1 206' "$T/mh" &&
		"$PY" "$T/mp.py" "$T/mp" "$T/mh" "$T/run" "$spec"
}
check "several ranges: multipart/byteranges, each part exact" several "0-7,100-199,70000-140000,$((len - 10))-$((len - 1))"
check "overlapping ranges are sent as asked" several "5-500,400-900"
many=$("$PY" -c 'import sys; print(",".join(["0-%d" % (int(sys.argv[1]) - 1)] * 2))' "$len")
check "ranges that ask for more than the run in all: 416 (the answer is planned in memory)" \
	test "$(curl -sS -o /dev/null -w '%{http_code}' -H "Range: bytes=$many" "$url")" = 416
many=$("$PY" -c 'print(",".join(["0-%d" % (i * 2) for i in range(1, 1025)]))')
check "  and 1024 small overlapping ones are taken (what a run holds, no more)" \
	test "$(curl -sS -o /dev/null -w '%{http_code}' -H "Range: bytes=$many" "$url")" = 206
check "HEAD: the length, no body" bash -c "
	curl -fsS -I -H 'Range: bytes=3-20000' '$url' | tr -d '\r' >'$T/hh' && grep -qi '^Content-Length: 19998' '$T/hh'"
check "keep-alive: two xorb ranges then a plain file's on one connection" bash -c "
	[ \"\$(curl -fsS -H 'Range: bytes=10-99999' -o '$T/k1' -o '$T/k2' -o '$T/k3' -w '%{num_connects}\n' \
		'$url' '$url' '$M/acme/splice/resolve/main/model.safetensors' | paste -sd' ')\" = '1 0 0' ] &&
	cmp -s '$T/k1' <(tail -c +11 '$T/run' | head -c 99990) && cmp -s '$T/k2' '$T/k1' &&
	cmp -s '$T/k3' <(tail -c +11 '$T/file' | head -c 99990)"
curl -sS "$url" 2>/dev/null | head -c 1000 >/dev/null
check "a client gone in mid-body harms no one: the next gets the run whole" bash -c "
	curl -fsS '$url' | cmp -s - '$T/run'"

check "over TLS: the whole run" bash -c "curl -fsS --cacert '$T/srv.pem' '${url/http:/https:}' | cmp -s - '$T/run'"
url_plain=$url; url=${url/http:/https:}
check "over TLS: a range from inside a header" one 3 150000 --cacert "$T/srv.pem"
check "over TLS: several ranges" several "0-7,100-199,70000-140000" --cacert "$T/srv.pem"
url=$url_plain

node "$HM_SRC/tests/js/xetdownload.mjs" --hub-url "$M" --repo acme/splice --path model.safetensors --sha256 "$sha" \
	--xet-hash "$xh" >"$T/js.out" 2>&1
sed 's/^/# /' "$T/js.out"
check "@huggingface/hub's downloadFile through Xet: the bytes, equal" grep -q "^ok 2 " "$T/js.out"
check "serve stops clean (no sanitizer report)" serve_stops_clean
finish
