#!/usr/bin/env bash
# t0808-bundle-trust: a bundle is the exporting operator's word, not this mirror's. A bundle of a few
# KB that names a gated repository's content (its sha256 is public on the Hub) under an open name,
# without carrying it, is refused, and so is one that carries other bytes under that name; nothing of
# it is tracked and the gated content stays closed. A bundle's access options are not taken: a new
# repository gets none (import --keep-options takes them) and a tracked one keeps its own, and the
# report says so.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"approved": ["acme/gated"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual", "gitattributes": false,
   "files": [{"path": "secret.json", "content": "{\"secret\": 42}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/pub", "gitattributes": false,
   "files": [{"path": "config.json", "content": "{\"pub\": 1}\n"},
             {"path": "w.bin", "size": 200000, "seed": 81}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/gated >/dev/null && "$HUBMIRROR" add --preheat hf:acme/pub >/dev/null
check "both sync (the gated one with its approved token)" env HF_TOKEN=hf_ok "$HUBMIRROR" sync --no-progress
check "serve starts" start_serve --p2p-listen off
check "the gated content is closed on this mirror" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/acme/gated/resolve/main/secret.json")" != 200
check "export the open repo (its options say preheat)" "$HUBMIRROR" export --output "$T/pub.tar" hf:acme/pub
SECRET=$(curl -fsS "$FAKE_API/_fake/repos" | "$PY" -c 'import json,sys
r=[r for r in json.load(sys.stdin)["repos"] if r["id"]=="acme/gated"][0]; c=[c for c in r["commits"] if c["id"]==r["sha"]][0]
print([f["sha256"] for f in c["files"] if f["path"]=="secret.json"][0])')
# the attacks: the open bundle's manifest with its repo renamed and a file naming the gated content
"$PY" - "$T/pub.tar" "$T" "$SECRET" <<'PY'
import hashlib, io, json, sys, tarfile
src, out, secret = sys.argv[1], sys.argv[2], sys.argv[3]
with tarfile.open(src) as t:
    members = [(m.name, t.extractfile(m).read()) for m in t.getmembers()]
m = json.loads(members[0][1])
size = len(b'{"secret": 42}\n')
r = m["repos"][0]
r["name"] = "evil/leak"
r["options"] = {"open": True, "preheat": True}
for s in r["snapshots"]:
    s["files"] = [f for f in s["files"] if f["path"] != "config.json"] + \
                 [{"path": "leak.json", "size": size, "sha256": secret, "lfs_oid": None,
                   # (the Hub lists it too: the blob's git id)
                   "git_oid": hashlib.sha1(b"blob %d\0" % size + b'{"secret": 42}\n').hexdigest()}]
m["blobs"].append({"sha256": secret, "size": size})
def write(name, entries):
    with tarfile.open(out + "/" + name, "w", format=tarfile.PAX_FORMAT) as t:
        for n, d in entries:
            ti = tarfile.TarInfo(n); ti.size = len(d); t.addfile(ti, io.BytesIO(d))
man = ("manifest.json", json.dumps(m).encode())
blobs = [e for e in members[1:]]
write("leak.tar", [man] + blobs)                                   # names it, does not carry it
write("junk.tar", [man] + blobs + [("blobs/" + secret, b"x" * size)])  # carries other bytes under its name
PY
for h in leak junk; do
	"$HUBMIRROR" import "$T/$h.tar" 2>"$T/$h.err"; st=$?
	sed 's/^/# /' "$T/$h.err"
	check "[$h] the bundle is refused (status $st)" test "$st" = 1
	check "[$h] evil/leak is not tracked" bash -c "! '$HUBMIRROR' ls --json | grep -q evil/leak"
	check "[$h] it is not served" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/evil/leak/resolve/main/leak.json")" != 200
done
check "the refusal names the content it does not carry" grep -q "names content $SECRET for hf:evil/leak (leak.json) without carrying it" "$T/leak.err"
check "the other says the bytes are not that content" grep -q "does not hash to its name" "$T/junk.err"
check "the gated content is still closed" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/acme/gated/resolve/main/secret.json")" != 200

# options: a new repo gets none, a tracked one keeps its own
"$HUBMIRROR" import --data "$T/fresh" --json "$T/pub.tar" >"$T/fresh.json"
check "into a mirror that does not track it: imported, its options left out and counted" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1])); assert d["repos"] == 1 and d["options_dropped"] == 1 and d["options_kept"] == 0, d' "$T/fresh.json"
preheat_of() { "$PY" -c 'import json,sqlite3,sys
o = sqlite3.connect(sys.argv[1]).execute("select options from repos where name = ?", ("acme/pub",)).fetchone()[0]
print(json.loads(o or "{}").get("preheat", False))' "$1/catalog.db"; }
check "the new repo has no preheat" test "$(preheat_of "$T/fresh")" = False
"$HUBMIRROR" import --data "$T/fresh" "$T/pub.tar" >"$T/fresh2.out"
sed 's/^/# /' "$T/fresh2.out"
check "imported again, the report says it kept the repo's own options" grep -q "1 repo already tracked keeps its own options" "$T/fresh2.out"
check "import --keep-options" "$HUBMIRROR" import --data "$T/fresh3" --keep-options "$T/pub.tar"
check "gives a new repo the bundle's options" test "$(preheat_of "$T/fresh3")" = True
finish
