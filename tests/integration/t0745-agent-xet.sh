#!/usr/bin/env bash
# t0745-agent-xet: the agent's local endpoint answers Xet reads (docs/agent.md, "Xet through the
# agent"), and the bytes still come through the agent's cache and swarm. @huggingface/hub's
# downloadFile through the endpoint, Xet on (its default), reads the file byte for byte: its token,
# reconstruction and xorb ranges all asked of the endpoint, the mirror's log holding only HEADs of
# resolve, file-info answers and one-byte capability checks of the xorb URLs, and the agent's status
# counting the file's bytes as fetched by it. Then huggingface_hub's flow (hf_xet) replayed with curl:
# resolve HEAD's Xet headers pointing at the endpoint, xet-read-token with the endpoint's CAS, the v1
# reconstruction whole and with a Range put together from the endpoint's xorb ranges, several ranges
# at once, each byte equal to the mirror's own virtual xorb (a file of two virtual xorbs:
# t0746-agent-xet-runs). The guards stay the mirror's: a forged
# capability is refused, a fetch URL without its offsets is not served, no Xet token is kept on the
# agent's disk or logged. A second agent's endpoint reads the file by Xet from the first as its peer.
# With the mirror down, resolve offers no Xet and the file still reads plainly.
. "$HM_SRC/tests/integration/lib.sh"
need_node_module @huggingface/hub

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/xa",
   "files": [{"path": "config.json", "content": "{\"xa\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 71}]}
 ]}
JSON
check "fake upstream starts (stating Xet hashes)" start_fakehub --repos "$T/spec.json" --xet
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/xa >/dev/null && "$HUBMIRROR" sync >/dev/null
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
up() { curl -fsS "$FAKE_API/api/models/$1/tree/main" | "$PY" -c 'import json,sys
for e in json.load(sys.stdin):
    if e["path"] == sys.argv[1]:
        print(e["lfs"]["oid"] if sys.argv[2] == "sha" else e["xetHash"])' "$2" "$3"; }
sha=$(up acme/xa model.safetensors sha); xh=$(up acme/xa model.safetensors xet); size=3000000
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --http 0
E=$(agent_endpoint)
echo "# endpoint $E, mirror $M"

# ---- @huggingface/hub's downloadFile through the endpoint ----
node "$HM_SRC/tests/js/xetdownload.mjs" --hub-url "$E" --repo acme/xa --path model.safetensors --sha256 "$sha" \
	--xet-hash "$xh" >"$T/js.out" 2>&1
sed 's/^/# /' "$T/js.out"
check "downloadFile: offered by Xet through the endpoint, upstream's hash" grep -q "^ok 1 " "$T/js.out"
check "downloadFile: the bytes, equal" grep -q "^ok 2 " "$T/js.out"
check "the client asked the endpoint for the token, the v2 reconstruction and a xorb range, and nothing else" bash -c "
	grep -q '^# GET $E/api/models/acme/xa/xet-read-token/' '$T/js.out' &&
	grep -q '^# GET $E/xet-cas/v2/reconstructions/$xh\$' '$T/js.out' &&
	grep -q '^# GET $E/xet-cas/xorb/$sha/0?cap=...' '$T/js.out' && ! grep '^# [A-Z]* http' '$T/js.out' | grep -v '$E/'"
check "the mirror sent no file body: resolve HEADs and file-info answers, xorb checks of one byte" bash -c "
	! grep -E '\"GET /acme/xa/resolve/main/model.safetensors HTTP/1.1\" 2[0-9][0-9] [0-9]{5,}' '$T/access.log' &&
	grep -q '\"GET /xet-cas/xorb/$sha/0?... HTTP/1.1\" 206 ' '$T/access.log' &&
	! grep '/xet-cas/xorb/' '$T/access.log' | grep -vE '\" 206 [0-9]{1,3} '"
# field KEY...: the sum of these numbers of the agent's status of the snapshot
field() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys
s = [s for s in json.load(sys.stdin)["snapshots"] if s["spec"] == "hf:acme/xa"][0]
print(sum(s[k] for k in sys.argv[1:]))' "$@"; }
check "the agent fetched the file's bytes itself (swarm and fill: $(field downloaded fetched_over_http) bytes)" \
	test "$(field downloaded fetched_over_http)" -ge "$size"

# ---- a second instance: its endpoint's Xet read takes the bytes from the first agent ----
# (the first one pulls the snapshot: what its endpoint's reads alone fetched over HTTP ranges is
# hardly offered to peers yet, docs/agent.md, "Not yet")
check "the first agent pulls the snapshot (nothing more to fetch), and seeds it" \
	"$HUBMIRROR" pull --mirror "$M" --hf-cache "$T/hfa" hf:acme/xa
export HUBMIRROR_AGENT_SOCKET=$T/b.sock
check "a second agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cb" --listen 127.0.0.1:0 --http 0
EB=$(agent_endpoint)
node "$HM_SRC/tests/js/xetdownload.mjs" --hub-url "$EB" --repo acme/xa --path model.safetensors --sha256 "$sha" \
	>"$T/jsb.out" 2>&1
check "downloadFile through the second endpoint, by Xet: the bytes, equal" \
	bash -c "grep -q '^ok 1 ' '$T/jsb.out' && grep -q '^ok 2 ' '$T/jsb.out'"
echo "# second agent: $(field downloaded) bytes from peers, $(field fetched_over_http) over HTTP ranges"
check "  its bytes came from the first agent, at most a quarter from the mirror" bash -c "
	[ $(field downloaded) -ge $((size * 3 / 4)) ] && [ $(field fetched_over_http) -le $((size / 4)) ]"
check "the second agent stops" "$HUBMIRROR" agent --stop
export HUBMIRROR_AGENT_SOCKET=$T/agent.sock

# ---- huggingface_hub's flow (hf_xet), replayed ----
curl -sS -I "$E/acme/xa/resolve/main/model.safetensors" | tr -d '\r' >"$T/head"
hdr() { grep -i "^$1:" "$T/head" | cut -d' ' -f2-; }
check "resolve HEAD through the endpoint: X-Xet-Hash is upstream's" test "$(hdr X-Xet-Hash)" = "$xh"
check "  X-Xet-Refresh-Route, and Link's xet-auth and xet-reconstruction-info at the endpoint" bash -c "
	grep -qi '^X-Xet-Refresh-Route: /api/models/acme/xa/xet-read-token/[0-9a-f]\{40\}' '$T/head' &&
	grep -qi '^Link: <$E/api/models/acme/xa/xet-read-token/[0-9a-f]\{40\}>; rel=\"xet-auth\", <$E/xet-cas/v1/reconstructions/$xh>; rel=\"xet-reconstruction-info\"' '$T/head'"
commit=$(grep -io 'xet-read-token/[0-9a-f]*' "$T/head" | head -1 | cut -d/ -f2)
curl -fsS -D "$T/th" "$E/api/models/acme/xa/xet-read-token/$commit" >"$T/tok.json"
tok=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["accessToken"])' "$T/tok.json")
check "xet-read-token through the endpoint: casUrl is the endpoint's CAS, a token, its expiry" "$PY" -c '
import json, sys, time
d = json.load(open(sys.argv[1]))
assert d["casUrl"] == sys.argv[2] + "/xet-cas", d
assert time.time() < d["exp"] < time.time() + 7200, d
assert d["accessToken"], d' "$T/tok.json" "$E"
check "  and the headers hf_xet reads: X-Xet-Cas-Url, X-Xet-Access-Token, X-Xet-Token-Expiration" bash -c "
	grep -qi '^X-Xet-Cas-Url: $E/xet-cas' '$T/th' && grep -qi '^X-Xet-Token-Expiration: [0-9]' '$T/th' &&
	grep -qi '^X-Xet-Access-Token: .' '$T/th'"
cas() { curl -sS -o "$T/cas.out" -w '%{http_code}' "$@"; }
# put a file together as hf_xet does (helpers/xetjoin.py: each term's chunks from its fetch_info's url_range)
check "v1 reconstruction of the whole file through the endpoint" test "$(cas -H "Authorization: Bearer $tok" "$E/xet-cas/v1/reconstructions/$xh")" = 200
check "the file put together from the endpoint's xorb ranges is the file" bash -c "
	'$PY' '$HM_SRC/tests/integration/helpers/xetjoin.py' '$T/cas.out' '$T/whole' '$E' && [ \"\$(sha256sum <'$T/whole' | cut -c1-64)\" = $sha ]"
check "v1 reconstruction with Range" test "$(cas -H "Authorization: Bearer $tok" -H 'Range: bytes=1000000-1999999' "$E/xet-cas/v1/reconstructions/$xh")" = 200
check "  gives exactly those bytes (its terms start mid-file, mid-run)" bash -c "
	'$PY' '$HM_SRC/tests/integration/helpers/xetjoin.py' '$T/cas.out' '$T/part' '$E' && head -c 1000000 '$T/part' >'$T/part1' &&
	cmp '$T/part1' <(tail -c +1000001 '$T/whole' | head -c 1000000)"
check "a Range past the end: the mirror's 416" test "$(cas -H "Authorization: Bearer $tok" -H 'Range: bytes=3000000-' "$E/xet-cas/v1/reconstructions/$xh")" = 416
cas -H "Authorization: Bearer $tok" "$E/xet-cas/v2/reconstructions/$xh" >/dev/null
url=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(list(d["xorbs"].values())[0][0]["url"])' "$T/cas.out")
check "v2's fetch URLs point at the endpoint, with where their bytes start" bash -c "[[ '$url' == $E/xet-cas/xorb/$sha/0\?cap=*\&at=0:0 ]]"
mirror_url=${url/$E/$M}; mirror_url=${mirror_url%&at=*}
check "several ranges come as multipart/byteranges, each byte the mirror's own virtual xorb's" bash -c "
	curl -fsS -D '$T/mh' -H 'Range: bytes=0-7,100-199,70000-200000' '$url' >'$T/mp' &&
	grep -qi '^Content-Type: multipart/byteranges; boundary=' '$T/mh' && [ \"\$(grep -ac 'Content-Range: bytes' '$T/mp')\" = 3 ] &&
	for r in 0-7 100-199 70000-200000; do
		curl -fsS -r \$r '$url' >'$T/a.bin' && curl -fsS -r \$r '$mirror_url' >'$T/m.bin' && cmp -s '$T/a.bin' '$T/m.bin' || exit 1
	done"
forged=$("$PY" -c 'import sys; u = sys.argv[1]; i = u.index("&at="); print(u[:i - 1] + ("0" if u[i - 1] != "0" else "1") + u[i:])' "$url")
check "a forged capability: the mirror refuses it, and so does the endpoint (403)" test "$(cas -r 0-7 "$forged")" = 403
check "a fetch URL without its offsets is not served (404)" test "$(cas -r 0-7 "${url%&at=*}")" = 404
check "nor without a Range (416)" test "$(cas "$url")" = 416
check "nor ranges adding up to more than a xorb (416)" test "$(cas -H 'Range: bytes=0-40000000,0-40000000' "$url")" = 416

check "no Xet token or capability is kept on the agent's disk" bash -c "! grep -rqE 'hmxet1|cap=' '$T/cache/agent'"
check "nor written to its log" bash -c "! grep -qE 'hmxet1|cap=' '$T/cache/agent.log'"

# ---- the mirror down: no Xet offered (its tokens need it), the file reads plainly ----
check "serve stops clean (no sanitizer report)" serve_stops_clean
curl -sS -I "$E/acme/xa/resolve/main/model.safetensors" | tr -d '\r' >"$T/off.h"
check "offline: resolve HEAD offers no Xet" bash -c "grep -qi '^X-Hubmirror-Offline' '$T/off.h' && ! grep -qi '^X-Xet-Hash' '$T/off.h'"
check "  and the file still downloads whole from the cache" \
	test "$(curl -fsS "$E/acme/xa/resolve/main/model.safetensors" | sha256sum | cut -c1-64)" = "$sha"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
