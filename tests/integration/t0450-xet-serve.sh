#!/usr/bin/env bash
# t0450-xet-serve: the mirror serves Xet reads (docs/protocols/xet.md) from the plain files it stores.
# @huggingface/hub's downloadFile of a mirrored LFS file goes through Xet (xet-read-token, the v2
# reconstruction, xorb ranges: the access log shows them and no plain resolve body) and gets the file
# byte for byte, with no request to the fake upstream; the file is offered with upstream's own Xet hash
# (tree, paths-info, resolve's X-Xet-Hash). huggingface_hub's flow replayed with curl (resolve HEAD's
# headers, the token JSON, the v1 reconstruction with Range, xorb ranges one and several at a time,
# the file put together again). The guards: a guarded repo's token only for a grant, a gated repo's
# not at all, a private one's is 404 as its resolve, --auth all; a token of one repo does not read
# another's file; a forged or altered token (a later expiry: an expired one is test-mirror-xet-token's),
# and a fetch URL's capability used for another xorb, are refused. An identity file
# that went missing or bad is computed again from the blob. Tokens never reach a log.
. "$HM_SRC/tests/integration/lib.sh"
need_node_module @huggingface/hub

cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_approved": {"approved": ["acme/gated"], "read": ["acme/private"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/open",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 11},
             {"path": "tiny.bin", "size": 9000, "seed": 14}]},
  {"hub": "hf", "type": "model", "id": "acme/secret",
   "files": [{"path": "secret.safetensors", "size": 400000, "seed": 12}]},
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual",
   "files": [{"path": "gated.safetensors", "size": 300000, "seed": 13}]},
  {"hub": "hf", "type": "model", "id": "acme/private", "private": true,
   "files": [{"path": "private.safetensors", "size": 300000, "seed": 15}]}
 ]}
JSON
check "fake upstream starts (stating Xet hashes)" start_fakehub --repos "$T/spec.json" --xet
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/open hf:acme/secret hf:acme/gated hf:acme/private >/dev/null
HF_TOKEN=hf_approved "$HUBMIRROR" sync >/dev/null 2>&1
tree() { curl -fsS "$FAKE_API/api/models/$1/tree/main"; }
field() { "$PY" -c 'import json,sys
for e in json.load(sys.stdin):
    if e["path"] == sys.argv[1]:
        print(e["lfs"]["oid"] if sys.argv[2] == "sha" else e["xetHash"])' "$@"; }
sha=$(tree acme/open | field model.safetensors sha); xh=$(tree acme/open | field model.safetensors xet)
tsha=$(tree acme/open | field tiny.bin sha); sxh=$(tree acme/secret | field secret.safetensors xet)
gxh=$(tree acme/gated | field gated.safetensors xet)
cat >"$T/tokens" <<'TOK'
team-0123456789 hf:acme/secret
other-987654321 hf:acme/elsewhere
TOK
chmod 600 "$T/tokens"
check "serve starts (tokens listed)" start_serve --tokens "$T/tokens"
upstream_requests() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["total"])'; }

# ---- what the mirror lists and resolves ----
check "the tree carries upstream's xetHash" bash -c "[ \"\$(curl -fsS '$M/api/models/acme/open/tree/main' |
	'$PY' -c 'import json,sys; print([e for e in json.load(sys.stdin) if e[\"path\"] == \"model.safetensors\"][0][\"xetHash\"])')\" = $xh ]"
check "paths-info too" bash -c "curl -fsS -X POST -d 'paths=model.safetensors' '$M/api/models/acme/open/paths-info/main' |
	grep -q '\"xetHash\":\"$xh\"'"
curl -sS -I "$M/acme/open/resolve/main/model.safetensors" | tr -d '\r' >"$T/head"
hdr() { grep -i "^$1:" "$T/head" | cut -d' ' -f2-; }
check "resolve HEAD: X-Xet-Hash is upstream's" test "$(hdr X-Xet-Hash)" = "$xh"
check "resolve HEAD: Link xet-auth and xet-reconstruction-info, at the mirror" bash -c "
	grep -qi '^Link: <$M/api/models/acme/open/xet-read-token/[0-9a-f]\{40\}>; rel=\"xet-auth\", <$M/xet-cas/v1/reconstructions/$xh>; rel=\"xet-reconstruction-info\"' '$T/head'"
check "a plain GET still gets the bytes" bash -c "[ \"\$(curl -fsS '$M/acme/open/resolve/main/model.safetensors' | sha256sum | cut -c1-64)\" = $sha ]"

# ---- @huggingface/hub, unchanged but for hubUrl ----
mark=$(wc -l <"$T/access.log"); req0=$(upstream_requests)
node "$HM_SRC/tests/js/xetdownload.mjs" --hub-url "$M" --repo acme/open --path model.safetensors --sha256 "$sha" \
	--xet-hash "$xh" >"$T/js.out" 2>&1
sed 's/^/# /' "$T/js.out"
check "downloadFile: offered by Xet, upstream's hash" grep -q "^ok 1 " "$T/js.out"
check "downloadFile: the bytes, equal" grep -q "^ok 2 " "$T/js.out"
tail -n +$((mark + 1)) "$T/access.log" >"$T/js.log"
check "the client read the token, the v2 reconstruction and a xorb range" bash -c "
	grep -q 'GET /api/models/acme/open/xet-read-token/' '$T/js.log' && grep -q 'GET /xet-cas/v2/reconstructions/$xh ' '$T/js.log' &&
	grep -q 'GET /xet-cas/xorb/$sha/0?\.\.\. HTTP/1.1\" 206' '$T/js.log'"
check "and no plain resolve body (resolve answered the file-info form only)" bash -c "
	! grep 'resolve/main/model.safetensors' '$T/js.log' | grep -v '\" 200 [0-9]\{1,4\} '"
check "no request reached the fake upstream" test "$(upstream_requests)" = "$req0"

# ---- huggingface_hub's flow, replayed ----
commit=$(grep -io 'xet-read-token/[0-9a-f]*' "$T/head" | head -1 | cut -d/ -f2)
curl -fsS -D "$T/th" "$M/api/models/acme/open/xet-read-token/$commit" >"$T/tok.json"
tok=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["accessToken"])' "$T/tok.json")
check "xet-read-token: accessToken, exp (seconds ahead), casUrl (the mirror's)" "$PY" -c '
import json, sys, time
d = json.load(open(sys.argv[1]))
assert d["casUrl"] == sys.argv[2] + "/xet-cas", d
assert time.time() < d["exp"] < time.time() + 7200, d
assert d["accessToken"].startswith("hmxet1."), d' "$T/tok.json" "$M"
check "  and the headers X-Xet-Access-Token, X-Xet-Cas-Url, X-Xet-Token-Expiration" bash -c "
	grep -qi '^X-Xet-Cas-Url: $M/xet-cas' '$T/th' && grep -qi '^X-Xet-Token-Expiration: [0-9]' '$T/th' && grep -qi '^X-Xet-Access-Token: hmxet1' '$T/th'"
cas() { curl -sS -o "$T/cas.out" -w '%{http_code}' "$@"; }
check "v1 reconstruction of the whole file" test "$(cas -H "Authorization: Bearer $tok" "$M/xet-cas/v1/reconstructions/$xh")" = 200
# put it together as hf_xet does (helpers/xetjoin.py: each term's chunks from its fetch_info's url_range)
check "the file put together from its xorb ranges is the file" bash -c "
	'$PY' '$HM_SRC/tests/integration/helpers/xetjoin.py' '$T/cas.out' '$T/whole' && [ \"\$(sha256sum <'$T/whole' | cut -c1-64)\" = $sha ]"
check "v1 reconstruction with Range" test "$(cas -H "Authorization: Bearer $tok" -H 'Range: bytes=1000000-1999999' "$M/xet-cas/v1/reconstructions/$xh")" = 200
check "  gives exactly those bytes" bash -c "
	'$PY' '$HM_SRC/tests/integration/helpers/xetjoin.py' '$T/cas.out' '$T/part' && head -c 1000000 '$T/part' >'$T/part1' &&
	[ \"\$(sha256sum <'$T/part1')\" = \"\$(curl -fsS -r 1000000-1999999 '$M/acme/open/resolve/main/model.safetensors' | sha256sum)\" ]"
check "a Range past the end: 416" test "$(cas -H "Authorization: Bearer $tok" -H 'Range: bytes=3000000-' "$M/xet-cas/v1/reconstructions/$xh")" = 416
cas -H "Authorization: Bearer $tok" "$M/xet-cas/v2/reconstructions/$xh" >/dev/null
url=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(list(d["xorbs"].values())[0][0]["url"])' "$T/cas.out")
check "several ranges of a xorb come as multipart/byteranges" bash -c "
	curl -fsS -D '$T/mh' -H 'Range: bytes=0-7,100-199' '$url' >'$T/mp' && grep -qi '^Content-Type: multipart/byteranges; boundary=' '$T/mh' &&
	[ \"\$(grep -ac 'Content-Range: bytes' '$T/mp')\" = 2 ]"
check "a fetch URL's capability does not fetch another run" test "$(cas "${url/\/0\?/\/1?}")" = 403
check "  nor another content" test "$(cas "${url/$sha/$tsha}")" = 403

# ---- tokens: forged, altered, expired, another repo's ----
check "no token: 401" test "$(cas "$M/xet-cas/v1/reconstructions/$xh")" = 401
check "an operator's token is not a Xet token: 403" test "$(cas -H 'Authorization: Bearer team-0123456789' "$M/xet-cas/v1/reconstructions/$xh")" = 403
forged=$("$PY" -c 'import sys; t = sys.argv[1]; print(t[:-1] + ("0" if t[-1] != "0" else "1"))' "$tok")
check "a forged MAC: 403" test "$(cas -H "Authorization: Bearer $forged" "$M/xet-cas/v1/reconstructions/$xh")" = 403
# the same token with its expiry moved a day ahead (the claims are base64url; the MAC is over them)
longer=$("$PY" -c '
import base64, sys
t = sys.argv[1]; head, b, rest = t.split(".", 2)
c = base64.urlsafe_b64decode(b + "=" * (-len(b) % 4)).decode().split("\n")
c[6] = str(int(c[6]) + 86400)
print(head + "." + base64.urlsafe_b64encode("\n".join(c).encode()).decode().rstrip("=") + "." + rest)' "$tok")
check "claims altered (a later expiry): 403" test "$(cas -H "Authorization: Bearer $longer" "$M/xet-cas/v1/reconstructions/$xh")" = 403
check "a token of acme/open does not read acme/secret's file" bash -c "
	[ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $tok' '$M/xet-cas/v1/reconstructions/$sxh')\" = 404 ]"
ttok=$(curl -fsS -H 'Authorization: Bearer team-0123456789' "$M/api/models/acme/secret/xet-read-token/main" |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
check "the team's token gets acme/secret's Xet token, and reads its file" \
	test "$(cas -H "Authorization: Bearer $ttok" "$M/xet-cas/v1/reconstructions/$sxh")" = 200
check "  but not acme/open's file with it" test "$(cas -H "Authorization: Bearer $ttok" "$M/xet-cas/v1/reconstructions/$xh")" = 404

# ---- the guards of resolve, on xet-read-token ----
code() { curl -sS -o /dev/null -w '%{http_code}' "$@"; }
check "guarded repo: anonymous gets no Xet token (401)" test "$(code "$M/api/models/acme/secret/xet-read-token/main")" = 401
check "guarded repo: another grant gets none (403)" \
	test "$(code -H 'Authorization: Bearer other-987654321' "$M/api/models/acme/secret/xet-read-token/main")" = 403
check "gated repo (not opened): no Xet token (401 GatedRepo), as resolve" bash -c "
	[ \"\$(curl -sS -D - -o /dev/null '$M/api/models/acme/gated/xet-read-token/main' | grep -ci '^X-Error-Code: GatedRepo')\" = 1 ] &&
	[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/acme/gated/resolve/main/gated.safetensors')\" = 401 ]"
check "private upstream repo (not opened): no Xet token (404), as resolve" bash -c "
	[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/api/models/acme/private/xet-read-token/main')\" = 404 ] &&
	[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/acme/private/resolve/main/private.safetensors')\" = 404 ]"
check "unknown repo: 404" test "$(code "$M/api/models/acme/nope/xet-read-token/main")" = 404
check "tokens never reach the logs" bash -c "! grep -qE 'hmxet1|team-0123|cap=' '$T/access.log' '$T/serve.err'"
check "serve stops clean (no sanitizer report)" serve_stops_clean

# ---- --auth all; an identity file gone and one gone bad are computed again ----
rm -f "$HUBMIRROR_DATA/store/xet/${sha:0:2}/$sha"
chmod u+w "$HUBMIRROR_DATA/store/xet/${tsha:0:2}/$tsha" 2>/dev/null
printf 'garbage' >"$HUBMIRROR_DATA/store/xet/${tsha:0:2}/$tsha" 2>/dev/null ||
	{ rm -f "$HUBMIRROR_DATA/store/xet/${tsha:0:2}/$tsha"; printf 'garbage' >"$HUBMIRROR_DATA/store/xet/${tsha:0:2}/$tsha"; }
check "serve starts with --auth all" start_serve --tokens "$T/tokens" --auth all
check "--auth all: anonymous gets no Xet token" test "$(code "$M/api/models/acme/open/xet-read-token/main")" = 401
atok=$(curl -fsS -H 'Authorization: Bearer other-987654321' "$M/api/models/acme/open/xet-read-token/main" |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
check "--auth all: a valid token gets one, and the CAS takes it" \
	test "$(cas -H "Authorization: Bearer $atok" "$M/xet-cas/v2/reconstructions/$xh")" = 200
check "the missing identity was computed again from the blob" test -s "$HUBMIRROR_DATA/store/xet/${sha:0:2}/$sha"
txh=$(tree acme/open | field tiny.bin xet)
check "a bad identity too, when asked (the file read back by Xet)" bash -c "
	[ \"\$(curl -sS -o '$T/t.out' -w '%{http_code}' -H 'Authorization: Bearer $atok' '$M/xet-cas/v1/reconstructions/$txh')\" = 200 ] &&
	'$PY' '$HM_SRC/tests/integration/helpers/xetjoin.py' '$T/t.out' '$T/tiny' && [ \"\$(sha256sum <'$T/tiny' | cut -c1-64)\" = $tsha ]"
check "serve stops clean again" serve_stops_clean
finish
