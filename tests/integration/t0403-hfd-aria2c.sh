#!/usr/bin/env bash
# t0403-hfd-aria2c: the git-free hfd.sh flow against the mirror: list the files with the tree API,
# then download every file with aria2c -x4 (several ranged connections per file) from the resolve
# URLs; every byte checked against upstream's sha256.
. "$HM_SRC/tests/integration/lib.sh"
command -v aria2c >/dev/null || { echo "# aria2c missing"; exit 77; }
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/hfd",
   "files": [{"path": "config.json", "content": "{\"hfd\": true}\n"},
             {"path": "tokenizer/vocab.txt", "content": "a\nb\nc\n"},
             {"path": "model-00001-of-00002.safetensors", "size": 3500000, "seed": 21},
             {"path": "model-00002-of-00002.safetensors", "size": 2100000, "seed": 22}]}
 ]}
JSON
sync_from_fake hf:acme/hfd
check "serve starts" start_serve
# hfd.sh: the file list from the tree (paginated), then one aria2c input entry per file
"$PY" - "$M" "$T/aria2.txt" <<'PY'
import json, re, sys, urllib.request
m, out = sys.argv[1], sys.argv[2]
url, files = m + "/api/models/acme/hfd/tree/main?recursive=true&limit=2", []
while url:
    r = urllib.request.urlopen(url)
    files += [e["path"] for e in json.load(r) if e["type"] == "file"]
    link = re.match(r'<([^>]+)>;\s+rel="next"', r.headers.get("Link") or "")
    url = link.group(1) if link else None
with open(out, "w") as f:
    for p in files:
        f.write("%s/acme/hfd/resolve/main/%s\n  out=%s\n" % (m, p, p))
print(len(files))
PY
check "tree listed 5 files over several pages" test "$(grep -c resolve "$T/aria2.txt")" = 5
aria2c -x4 -s4 -j4 -k1M --min-split-size=1M --file-allocation=none --quiet -d "$T/dl" -i "$T/aria2.txt"; st=$?
check "aria2c downloaded everything" test "$st" = 0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
check "every byte matches upstream's sha256" "$PY" - "$T/up.json" "$T/dl" <<'PY'
import hashlib, json, os, sys
spec, d = json.load(open(sys.argv[1])), sys.argv[2]
files = spec["repos"][0]["commits"][-1]["files"]
for f in files:
    got = hashlib.sha256(open(os.path.join(d, f["path"]), "rb").read()).hexdigest()
    assert got == f["sha256"], f["path"]
PY
check "aria2c really split the big files into ranges" bash -c "grep -c ' 206 ' '$T/access.log' | awk '{exit !(\$1 >= 4)}'"
finish
