#!/usr/bin/env bash
# t0601-p2p-seeder: the mirror is a BitTorrent seed of its own torrents. A libtorrent client given
# the torrent without a web seed finds the mirror through the mirror's tracker and gets every piece
# from the mirror's libtorrent session; a repo synced while serve runs joins at the next rescan, one
# removed and collected leaves it; /metrics counts what the seed uploaded.
. "$HM_SRC/tests/integration/lib.sh"
"$PY" -c 'import libtorrent' 2>/dev/null || { echo "1..0 # SKIP python3-libtorrent missing"; exit 77; }
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/seeded",
   "files": [{"path": "config.json", "content": "{\"seeded\": true}\n"},
             {"path": "model.safetensors", "size": 2500000, "seed": 41},
             {"path": "tokenizer/vocab.txt", "content": "x\ny\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/later",
   "files": [{"path": "weights.bin", "size": 700000, "seed": 42}]}
 ]}
JSON
sync_from_fake hf:acme/seeded
check "serve starts with its BitTorrent seed" start_serve --p2p-rescan 1
check "the log names the seed's port" grep -q "seeding over BitTorrent on port [1-9]" "$T/serve.err"
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
verify() { "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf "$1" "$2"; }

curl -fsS -o "$T/seeded.torrent" "$M/api/p2p/torrent/hf/model/acme/seeded?webseed=0"
timeout 60 "$PY" "$HM_SRC/tests/integration/helpers/ltget.py" "$T/seeded.torrent" "$T/c1" >"$T/c1.log" 2>&1
check "a client with no web seed gets the model from the mirror's seed" grep -q "complete" "$T/c1.log"
sed 's/^/# /' "$T/c1.log"
check "every byte matches upstream" verify acme/seeded "$T/c1/seeded"
check "nothing came through the web seed" bash -c '! grep -q "/p2p/seed/" "$T/access.log"'
check "/metrics: one torrent seeded" test "$(metric hubmirror_seeder_torrents)" = 1
check "/metrics: the model's bytes uploaded by the seed" metric_at_least hubmirror_seeder_uploaded_bytes_total 2500000

# A sync while serve runs (another process): the new torrent is seeded after the next rescan.
"$HUBMIRROR" add hf:acme/later >/dev/null && "$HUBMIRROR" sync hf:acme/later >/dev/null
sleep 2.5
curl -fsS -o "$T/later.torrent" "$M/api/p2p/torrent/hf/model/acme/later?webseed=0"
timeout 60 "$PY" "$HM_SRC/tests/integration/helpers/ltget.py" "$T/later.torrent" "$T/c2" >"$T/c2.log" 2>&1
check "a repo synced while serving is seeded after the rescan" grep -q "complete" "$T/c2.log"
check "and its bytes match upstream" verify acme/later "$T/c2/later"

# Removed and collected: no longer seeded, its seed folder gone.
later=$("$PY" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select t.btih from torrents t join snapshots s on s.id=t.snapshot_id join repos r on r.id=s.repo_id where r.name=\"acme/later\"").fetchone()[0])' "$HUBMIRROR_DATA/catalog.db")
check "its seed folder exists while seeded" test -d "$HUBMIRROR_DATA/p2p/seed/$later"
"$HUBMIRROR" remove hf:acme/later >/dev/null && "$HUBMIRROR" gc >/dev/null
sleep 2.5
check "after remove + gc the seed folder is gone" test ! -e "$HUBMIRROR_DATA/p2p/seed/$later"
check "and so is the torrent file" test ! -e "$HUBMIRROR_DATA/torrents/$later.torrent"
check "/metrics: one torrent seeded again" test "$(metric hubmirror_seeder_torrents)" = 1
# --p2p-super-seed: a lone client with the usual torrent (web seed included) still completes. (Without
# the web seed, libtorrent 2.0.8's super-seeding leaves a lone peer stalled near the end.)
start_serve --p2p-super-seed
curl -fsS -o "$T/super.torrent" "$M/api/p2p/torrent/hf/model/acme/seeded"
timeout 60 "$PY" "$HM_SRC/tests/integration/helpers/ltget.py" "$T/super.torrent" "$T/c3" >"$T/c3.log" 2>&1
check "with --p2p-super-seed a lone client completes" grep -q "complete" "$T/c3.log"
check "and its bytes match upstream" verify acme/seeded "$T/c3/seeded"
# A blob damaged on disk: the seed finds it out at the piece's first check, stops seeding that torrent
# and says so; it never writes into the store (upload-only).
blob=$("$PY" -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["repos"] if x["id"]=="acme/seeded"][0]; f=[f for f in r["commits"][-1]["files"] if f["path"]=="model.safetensors"][0]; print(f["sha256"][:2] + "/" + f["sha256"])' "$T/up.json")
printf 'X' | dd of="$HUBMIRROR_DATA/store/blobs/$blob" bs=1 seek=1000 conv=notrunc 2>/dev/null
damaged=$(sha256sum "$HUBMIRROR_DATA/store/blobs/$blob")
start_serve --p2p-rescan 1
curl -fsS -o "$T/seeded2.torrent" "$M/api/p2p/torrent/hf/model/acme/seeded?webseed=0"   # this serve's tracker
timeout 20 "$PY" "$HM_SRC/tests/integration/helpers/ltget.py" --timeout 8 "$T/seeded2.torrent" "$T/c4" >"$T/c4.log" 2>&1
check "a client cannot complete from a seed with a damaged blob" bash -c '! grep -q complete "$T/c4.log"'
sleep 1.5
check "the seed reports the damage and stops seeding it" grep -q "pieces failed their check: a blob in the store is damaged" "$T/serve.err"
check "the seed did not write into the store" test "$(sha256sum "$HUBMIRROR_DATA/store/blobs/$blob")" = "$damaged"
check "/metrics: the damaged torrent is not counted as seeded" test "$(metric hubmirror_seeder_torrents)" = 0
# --auth all: BitTorrent clients send no token, so a token holder's torrent carries a capability in
# its tracker and web seed URLs; without it the swarm's doors stay shut.
printf 'hm_secret_token *\n' >"$T/tokens"; chmod 600 "$T/tokens"
cp "$T/c1/seeded/model.safetensors" "$HUBMIRROR_DATA/store/blobs/$blob"   # repaired (as verify + sync would)
rm -rf "$HUBMIRROR_DATA/p2p/seed"                                          # a fresh seed for this serve
start_serve --tokens "$T/tokens" --auth all --p2p-rescan 1
expect_status 22 "the torrent needs a token" curl -fsS -o /dev/null "$M/api/p2p/torrent/hf/model/acme/seeded"
curl -fsS -H "Authorization: Bearer hm_secret_token" -o "$T/keyed.torrent" "$M/api/p2p/torrent/hf/model/acme/seeded"
check "a token holder's torrent carries a capability for tracker and web seed" "$PY" -c '
import libtorrent as lt, sys
ti = lt.torrent_info(sys.argv[1])
tr = [t.url for t in ti.trackers()]
assert "/announce?hmcap=" in tr[0], tr
assert "/p2p/kseed/" in ti.web_seeds()[0]["url"], ti.web_seeds()' "$T/keyed.torrent"
timeout 60 "$PY" "$HM_SRC/tests/integration/helpers/ltget.py" "$T/keyed.torrent" "$T/c5" >"$T/c5.log" 2>&1
check "a client with it gets the model through the guarded swarm" grep -q "complete" "$T/c5.log"
check "and its bytes match upstream" verify acme/seeded "$T/c5/seeded"
seedurl=$("$PY" -c 'import libtorrent as lt, sys; print(lt.torrent_info(sys.argv[1]).web_seeds()[0]["url"])' "$T/keyed.torrent")
check "the keyed web seed serves a file" bash -c "curl -fsS '${seedurl}seeded/config.json' | grep -q seeded"
btih=$(curl -fsS -H "Authorization: Bearer hm_secret_token" "$M/api/p2p/torrent/hf/model/acme/seeded?meta=1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["btih"])')
expect_status 22 "the plain web seed is shut" curl -fsS -o /dev/null "$M/p2p/seed/$btih/seeded/config.json"
expect_status 22 "a forged capability is refused" curl -fsS -o /dev/null "$M/p2p/kseed/0.0123456789abcdef0123456789abcdef/$btih/seeded/config.json"
check "the tracker wants the key" bash -c "curl -fsS '$M/announce?info_hash=$("$PY" -c 'import sys,urllib.parse; print(urllib.parse.quote(bytes.fromhex(sys.argv[1])))' "$btih")&peer_id=-XX0001-abcdefghijkl&port=6881&uploaded=0&downloaded=0&left=10' | grep -q 'needs the key'"
expect_status 2 "--p2p-listen needs HOST:PORT or off" "$HUBMIRROR" serve --p2p-listen nowhere 2>/dev/null
finish
