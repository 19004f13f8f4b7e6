#!/usr/bin/env bash
# t0822-peer-mirrors: several mirrors as one swarm (serve --peer-mirror). Two mirrors synced from the
# same upstream hand out the same info-hash; a torrent from one lists both as trackers (a BEP 12
# tier each, itself first) and as web seeds; a BitTorrent client downloading through that torrent
# completes, every piece verified, when the first mirror is killed halfway.
. "$HM_SRC/tests/integration/lib.sh"
"$PY" -c 'import libtorrent' 2>/dev/null || skip "python3-libtorrent is not installed (bash .ci/setup installs it)"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/twice",
   "files": [{"path": "config.json", "content": "{\"twice\": 1}\n"},
             {"path": "model.safetensors", "size": 6000000, "seed": 51}]}
 ]}
JSON
check "synced into mirror A" sync_from_fake hf:acme/twice
check "synced into mirror B" bash -c "'$HUBMIRROR' add --data '$T/b' hf:acme/twice >/dev/null && '$HUBMIRROR' sync --data '$T/b' --no-progress >/dev/null"
check "mirror B starts" start_serve --data "$T/b" --p2p-listen off
B=$M; bpid=${_pids[-1]}
check "mirror A starts, naming B its peer" start_serve --p2p-listen off --peer-mirror "$B/"
A=$M; apid=${_pids[-1]}
btih() { curl -fsS "$1/api/catalog/repos/hf/model/acme/twice" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["swarm"]["btih"])'; }
check "both hand out the same info-hash" test "$(btih "$A")" = "$(btih "$B")"
curl -fsS -o "$T/a.torrent" "$A/api/p2p/torrent/hf/model/acme/twice"
check "A's torrent lists A then B as trackers, a tier each, and both as web seeds" "$PY" - "$T/a.torrent" "$A" "$B" "$(btih "$A")" <<'PY'
import sys
import libtorrent as lt
data = open(sys.argv[1], "rb").read()
d = lt.bdecode(data)
a, b, h = sys.argv[2], sys.argv[3], sys.argv[4]
assert d[b"announce"] == (a + "/announce").encode(), d[b"announce"]
assert d[b"announce-list"] == [[(a + "/announce").encode()], [(b + "/announce").encode()]], d[b"announce-list"]
assert d[b"url-list"] == [("%s/p2p/seed/%s/" % (a, h)).encode(), ("%s/p2p/seed/%s/" % (b, h)).encode()], d[b"url-list"]
assert str(lt.torrent_info(sys.argv[1]).info_hashes().v1) == h
PY
# the client fetches at 2 MB/s; A goes away after a second, B finishes the job
"$PY" "$HM_SRC/tests/integration/helpers/ltget.py" --rate 2000000 --timeout 60 "$T/a.torrent" "$T/got" >"$T/lt.out" 2>&1 &
lpid=$!
sleep 1.2
kill "$apid"
wait "$lpid"; st=$?
sed 's/^/# /' "$T/lt.out"
check "the download completed after A went away" test "$st" = 0
check "every byte is upstream's" test "$(sha256sum <"$T/got/twice/model.safetensors" 2>/dev/null | cut -c1-64)" = "$(curl -fsS -L "$FAKE_API/acme/twice/resolve/main/model.safetensors" | sha256sum | cut -c1-64)"
check "B's web seed served part of it" bash -c "curl -fsS '$B/metrics' | awk '\$1 ~ /^hubmirror_http_requests_total[{]route=\"webseed\",status=\"20/ { s += \$2 } END { exit !(s > 0) }'"
# an instance that knows both mirrors keeps working with the first one down: metadata and the
# torrent from the next (pull through the agent, into the HF cache)
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
pc=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/twice"][0]["sha"])' "$T/up.json")
timeout 60 "$HUBMIRROR" pull --mirror "$A,$B" --cache "$T/cache" --hf-cache "$T/hfc" --listen 127.0.0.1:0 hf:acme/twice >"$T/pull.out" 2>&1
st=$?
check "pull with the first of two mirrors down succeeds" test "$st" = 0
check "... every file byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/twice \
	"$T/hfc/models--acme--twice/snapshots/$pc"
timeout 20 "$HUBMIRROR" agent --stop >/dev/null 2>&1
# both up: an instance shares the ranges it takes from the mirrors between them (its fill asks each
# piece run of one mirror by its number), every byte still checked
webseed_bytes() { curl -fsS "$1/metrics" | awk '$1 == "hubmirror_webseed_bytes_total" { print $2; f = 1 } END { if (!f) print 0 }'; }
check "mirror A starts again" start_serve --p2p-listen off --peer-mirror "$B/"
A=$M
a0=$(webseed_bytes "$A"); b0=$(webseed_bytes "$B")
HUBMIRROR_AGENT_SOCKET="$T/agent2.sock" timeout 60 "$HUBMIRROR" pull --mirror "$A,$B" --cache "$T/cache2" --hf-cache "$T/hfc2" \
	--listen 127.0.0.1:0 hf:acme/twice >"$T/pull2.out" 2>&1
st=$?
check "pull with both mirrors up succeeds" test "$st" = 0
check "... every file byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/twice \
	"$T/hfc2/models--acme--twice/snapshots/$pc"
a1=$(webseed_bytes "$A"); b1=$(webseed_bytes "$B")
echo "# ranges served: A $((a1 - a0)) bytes, B $((b1 - b0)) bytes"
# (alone, the agent asks runs of up to 4 MiB of each mirror in turn, from a random piece; where the
# runs end, and which requests finish first, varies: each mirror sends 0.2-4.2 MB of the 6 MB)
check "... with ranges from both mirrors, 100 kB or more each" test $((a1 - a0)) -ge 100000 -a $((b1 - b0)) -ge 100000
HUBMIRROR_AGENT_SOCKET="$T/agent2.sock" timeout 20 "$HUBMIRROR" agent --stop >/dev/null 2>&1
expect_status 2 "a peer mirror that is not a URL is refused" "$HUBMIRROR" serve --listen 127.0.0.1:0 --peer-mirror "ftp://x"
finish
