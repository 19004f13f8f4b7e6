#!/usr/bin/env bash
# t0602-p2p-closed: what HTTP guards, the swarm does not give away (docs/security.md). An attacker who
# knows a closed or token-guarded repo's info-hash (torrents are deterministic: anyone who can list the
# files can compute it) asks the mirror's BitTorrent seed for it with a magnet link, and its tracker
# for the swarm: nothing, while the same attack on an open repo gets every byte (so the attack works).
# Private upstream repos are closed like gated ones, and not shown at all. The tracker holds a flood from one
# address to a handful of places, and its counters cannot be driven negative.
. "$HM_SRC/tests/integration/lib.sh"
"$PY" -c 'import libtorrent' 2>/dev/null || { echo "1..0 # SKIP python3-libtorrent missing"; exit 77; }
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"approved": ["acme/gate"], "read": ["acme/priv"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/open",
   "files": [{"path": "w.bin", "size": 300000, "seed": 61}]},
  {"hub": "hf", "type": "model", "id": "acme/gate", "gated": "manual",
   "files": [{"path": "w.bin", "size": 300000, "seed": 62}]},
  {"hub": "hf", "type": "model", "id": "acme/priv", "private": true,
   "files": [{"path": "w.bin", "size": 300000, "seed": 63}]},
  {"hub": "hf", "type": "model", "id": "acme/team",
   "files": [{"path": "w.bin", "size": 300000, "seed": 64}]}
 ]}
JSON
cat >"$T/tokens" <<'TOK'
team-token-0001 hf:acme/team
TOK
chmod 600 "$T/tokens" # (a tokens file others can read is refused)
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/open hf:acme/gate hf:acme/priv hf:acme/team >/dev/null
HF_TOKEN=hf_ok "$HUBMIRROR" sync --json >"$T/sync.json"
check "sync fetches all four (the token reads the gated and the private one)" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1])); assert r["failed"] == 0 and r["torrents_made"] == 4, r' "$T/sync.json"
btih() { "$PY" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select t.btih from torrents t join snapshots s on s.id=t.snapshot_id join repos r on r.id=s.repo_id where r.name=?", (sys.argv[2],)).fetchone()[0])' "$HUBMIRROR_DATA/catalog.db" "$1"; }
b_open=$(btih acme/open) b_gate=$(btih acme/gate) b_priv=$(btih acme/priv) b_team=$(btih acme/team)

check "serve starts with its seed and tokens for acme/team" start_serve --tokens "$T/tokens" --p2p-listen 127.0.0.1:0 --p2p-rescan 1
port=$(sed -n 's/.*seeding over BitTorrent on port \([0-9]*\).*/\1/p' "$T/serve.err" | head -1)
check "the log names the seed's port" test -n "$port"

# magnet BTIH SECONDS: ask the seed for a torrent by info-hash alone (BEP 9), as an attacker would.
# Prints "metadata=0|1 bytes=N".
magnet() {
	"$PY" - "$1" "$port" "$T/mag-$1" "$2" <<'PY'
import libtorrent as lt, sys, time
btih, port, out, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
s = lt.session({"listen_interfaces": "127.0.0.1:0", "enable_dht": False, "enable_lsd": False,
                "enable_upnp": False, "enable_natpmp": False, "allow_multiple_connections_per_ip": True,
                "enable_outgoing_utp": False, "enable_incoming_utp": False})
p = lt.parse_magnet_uri("magnet:?xt=urn:btih:" + btih)
p.save_path = out
h = s.add_torrent(p)
end = time.time() + secs
while time.time() < end:
    h.connect_peer(("127.0.0.1", port))
    st = h.status()
    if st.has_metadata and st.is_seeding:
        break
    time.sleep(0.25)
st = h.status()
print("metadata=%d bytes=%d" % (st.has_metadata, st.total_wanted_done if st.has_metadata else 0))
PY
}
got=$(magnet "$b_open" 20)
# (the fake upstream adds a .gitattributes of 568 bytes to every repo)
check "control: a magnet link gets an open repo's bytes from the seed ($got)" test "$got" = "metadata=1 bytes=300568"
for r in gate priv team; do
	b=$(eval echo "\$b_$r")
	got=$(magnet "$b" 4)
	check "a magnet link gets nothing of acme/$r from the seed ($got)" test "$got" = "metadata=0 bytes=0"
done
announce() { curl -fsS "$M/announce?info_hash=$("$PY" -c 'import sys,urllib.parse; print(urllib.parse.quote(bytes.fromhex(sys.argv[1])))' "$1")&peer_id=-XX0001-abcdefghijkl&port=${2:-6881}&uploaded=${3:-0}&downloaded=0&left=10"; }
announce "$b_open" >"$T/a1"; announce "$b_gate" >"$T/a2"; announce "$b_priv" >"$T/a3"; announce "$b_team" >"$T/a4"
check "the tracker serves the open repo's swarm" grep -q '8:intervali' "$T/a1"
check "and refuses the gated one's" grep -q 'closed on this mirror' "$T/a2"
check "and the private one's" grep -q 'closed on this mirror' "$T/a3"
check "and the guarded one's without its key" grep -q 'needs the key' "$T/a4"
check "the catalog shows the open repo's swarm only" "$PY" - "$M" <<'PY'
import json, sys, urllib.request
m = sys.argv[1]
def swarm(name):
    return json.load(urllib.request.urlopen(m + "/api/catalog/repos/hf/model/" + name))["swarm"]
assert swarm("acme/open") and swarm("acme/open")["btih"], swarm("acme/open")
assert swarm("acme/gate") is None, swarm("acme/gate")
try:
    urllib.request.urlopen(m + "/api/catalog/repos/hf/model/acme/priv")
    assert False, "the private repo is shown"
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
PY
check "a private upstream repo nobody may read here is not shown (404 RepoNotFound)" bash -c "
	[ \"\$(curl -s -D - -o /dev/null '$M/api/models/acme/priv' | tr -d '\r' | grep -ci -e '^HTTP/1.1 404' -e '^x-error-code: RepoNotFound')\" = 2 ]"
expect_status 22 "and its files are not found" curl -fsS -o /dev/null "$M/acme/priv/resolve/main/w.bin"
curl -s -o /dev/null -w '%{http_code}' "$M/acme/priv/resolve/main/w.bin" >"$T/code"
check "as for a repo the mirror lacks (404)" grep -qx 404 "$T/code"
expect_status 22 "its torrent too" curl -fsS -o /dev/null "$M/api/p2p/torrent/hf/model/acme/priv"
check "the open repo's files are served" curl -fsS -o /dev/null "$M/acme/open/resolve/main/w.bin"
curl -fsS -H "Authorization: Bearer team-token-0001" -o "$T/team.torrent" "$M/api/p2p/torrent/hf/model/acme/team"
timeout 60 "$PY" "$HM_SRC/tests/integration/helpers/ltget.py" "$T/team.torrent" "$T/team" >"$T/team.log" 2>&1
sed 's/^/# /' "$T/team.log"
check "a token holder still gets the guarded repo over the web seed (capability)" grep -q complete "$T/team.log"

# One address floods a swarm with 5000 ports: it keeps a handful of places; a peer from another
# address still joins and is in the answers.
check "an announce flood from one address is held to a handful of places" "$PY" - "$M" "$b_open" <<'PY'
import http.client, sys, urllib.parse
m, btih = sys.argv[1], sys.argv[2]
host, port = m.split("//")[1].split(":")
ih = urllib.parse.quote(bytes.fromhex(btih))
def ask(c, p, peer_id, numwant=200):
    c.request("GET", "/announce?info_hash=%s&peer_id=%s&port=%d&uploaded=0&downloaded=0&left=1&numwant=%d"
              % (ih, peer_id, p, numwant))
    return c.getresponse().read()
c = http.client.HTTPConnection(host, int(port), timeout=30)
for p in range(1, 5001):
    body = ask(c, p, "-FL0001-%012d" % p)
    assert b"failure" not in body, body
other = http.client.HTTPConnection(host, int(port), timeout=30, source_address=("127.0.0.2", 0))
body = ask(other, 7000, "-OK0001-aaaaaaaaaaaa")
assert b"failure" not in body, body
# compact peers: 6 bytes each after "5:peers<len>:"
k = body.index(b"5:peers") + 7
n = int(body[k:body.index(b":", k)])
peers = body[body.index(b":", k) + 1:][:n]
addrs = [(".".join(str(x) for x in peers[i:i + 4]), peers[i + 4] * 256 + peers[i + 5]) for i in range(0, n, 6)]
flood = [a for a in addrs if a[0] == "127.0.0.1"]
assert 1 <= len(flood) <= 8, addrs
# and the newcomer is in the next answer the flooder gets
body = ask(c, 5001, "-FL0001-%012d" % 5001)
assert bytes([127, 0, 0, 2, 7000 >> 8, 7000 & 255]) in body, body
print("# flood answers name %d of the flooder's ports; the other address is in" % len(flood))
PY
big=9223372036854775807
announce "$b_open" 6001 "$big" >/dev/null
announce "$b_open" 6002 "$big" >/dev/null
check "peers reporting INT64_MAX uploaded bytes twice: /metrics saturates, never negative" \
	test "$(metric hubmirror_tracker_peer_uploaded_bytes)" = "$big"
check "serve logged no sanitizer report" bash -c '! grep -q "runtime error" "$T/serve.err"'
finish
