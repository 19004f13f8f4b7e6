#!/usr/bin/env bash
# t0856-ondemand-xet: a file an on-demand mirror fetches from upstream is checked against the Xet hash
# upstream states on its resolve (X-Xet-Hash, on the Hub's redirect to its CDN and not on the CDN's
# answer: read along the redirects, as huggingface_hub reads it). A match records it (the identity
# beside the blob, the catalog's Xet hash, the mirror's own resolve stating it); a mismatch refuses the
# file as a corrupt download is: the client's answer ends short, and nothing of it is stored.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/xo",
   "files": [{"path": "config.json", "content": "{\"xo\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 61}]},
  {"hub": "hf", "type": "model", "id": "acme/xm",
   "files": [{"path": "config.json", "content": "{\"xm\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 63}]},
  {"hub": "hf", "type": "model", "id": "acme/xliar",
   "files": [{"path": "config.json", "content": "{}\n"},
             {"path": "lie.safetensors", "size": 900000, "seed": 62}]}
 ]}
JSON
# the fake Hub states a wrong Xet hash for every file called lie.safetensors (its tree and its resolve)
check "fake upstream starts" start_fakehub --repos "$T/spec.json" --xet-lie lie.safetensors
check "serve with --on-demand starts" start_serve --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*'
store="$HUBMIRROR_DATA/store"
# upstream's resolve, not followed: the redirect states the Xet hash, the CDN's answer does not
hdr() { curl -sS -o /dev/null -D - "$1" | tr -d '\r' | sed -n "s/^$2: //Ip" | head -1; }
up_xet=$(hdr "$FAKE_API/acme/xo/resolve/main/model.safetensors" x-xet-hash)
cdn=$(hdr "$FAKE_API/acme/xo/resolve/main/model.safetensors" location)
check "upstream states the Xet hash on its redirect" [ ${#up_xet} = 64 ]
check "... and not on its CDN's answer (the mirror must read it along the redirects)" \
	[ -n "$cdn" -a -z "$(hdr "$cdn" x-xet-hash)" ]
sha=$(curl -fsS -L "$FAKE_API/acme/xo/resolve/main/model.safetensors" | sha256sum | cut -c1-64)
lie=$(curl -fsS -L "$FAKE_API/acme/xliar/resolve/main/lie.safetensors" | sha256sum | cut -c1-64)
xet_of() { "$PY" -c 'import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("SELECT xet_hash FROM blob_xet WHERE sha256 = ?", (sys.argv[2],)).fetchone()
print(r[0] if r else "")' "$HUBMIRROR_DATA/catalog.db" "$1"; }

# a match: the file comes, and its Xet hash is recorded
plain_reqs() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c 'import json,sys
print(sum(1 for r in json.load(sys.stdin)["recent"] if r["path"].startswith("/repos/")))'; }
p0=$(plain_reqs)
check "a file upstream states the right Xet hash for comes through the mirror, right" \
	test "$(curl -fsS "$M/acme/xo/resolve/main/model.safetensors" | sha256sum | cut -c1-64)" = "$sha"
# the client has every byte once they are verified; the commit (and the identity's record) follows
for _ in $(seq 100); do grep -q "content ${sha:0:12} in" "$T/serve.err" && break; sleep 0.1; done
check "it is stored with its identity beside it" bash -c "[ -f $store/blobs/${sha:0:2}/$sha ] && [ -s $store/xet/${sha:0:2}/$sha ]"
# (the file repeats itself every MiB, so its terms name the same xorb's chunks again: a term's fetch
# range holds chunks of others before it; the Xet path took those for a lie and went plain)
check "it came through Xet, no plain download" test "$(plain_reqs)" = "$p0"
check "the catalog records upstream's Xet hash for it" [ "$(xet_of $sha)" = "$up_xet" ]
check "the log says upstream's Xet hash was checked" grep -q "content ${sha:0:12} in (.*upstream's Xet hash too" "$T/serve.err"
check "the mirror's own resolve states the same Xet hash" \
	[ "$(hdr "$M/acme/xo/resolve/main/model.safetensors" x-xet-hash)" = "$up_xet" ]

# a CAS that gives the terms of a xorb one fetch range where they overlap or touch: each term's
# chunks are taken from it, the rest not fetched
curl -fsS -X POST "$FAKE_API/_fake/config" -d '{"xet_fetch_merged": true}' >/dev/null
msha=$(curl -fsS -L "$FAKE_API/acme/xm/resolve/main/model.safetensors" | sha256sum | cut -c1-64)
p0=$(plain_reqs)
check "a file whose terms share one fetch range comes through the mirror, right" \
	test "$(curl -fsS "$M/acme/xm/resolve/main/model.safetensors" | sha256sum | cut -c1-64)" = "$msha"
check "  through Xet, no plain download" test "$(plain_reqs)" = "$p0"
check "  checked against upstream's Xet hash" grep -q "content ${msha:0:12} in (.*upstream's Xet hash too" "$T/serve.err"

# a mismatch: the bytes are right by sha256, the Xet hash upstream states is not theirs
curl -fsS -o "$T/lie.bin" "$M/acme/xliar/resolve/main/lie.safetensors"; st=$?
check "the client's download of a file whose stated Xet hash is wrong fails (curl $st)" test "$st" != 0
check "it holds less than the whole file" test "$(stat -c %s "$T/lie.bin" 2>/dev/null || echo 0)" -lt 900000
check "the log says why" grep -q "content ${lie:0:12} not kept: content hash mismatch" "$T/serve.err"
check "nothing of it is stored: no blob, no identity, no partial file" bash -c "[ ! -e $store/blobs/${lie:0:2}/$lie ] &&
	[ ! -e $store/xet/${lie:0:2}/$lie ] && ! find $store -name '$lie.part' | grep -q ."
check "... no Xet hash in the catalog" [ -z "$(xet_of $lie)" ]
curl -fsS -o "$T/lie2.bin" "$M/acme/xliar/resolve/main/lie.safetensors"; st=$?
check "asking again is refused again (curl $st), still nothing stored" bash -c "[ $st != 0 ] && [ ! -e $store/blobs/${lie:0:2}/$lie ]"
check "serve stops clean" serve_stops_clean
finish
