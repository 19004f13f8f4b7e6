#!/usr/bin/env bash
# t0305-sync-names: names upstream may list that would break what comes after sync: a file "a" next
# to "a/b" (no tree holds both), a path 200 folders deep (made no torrent, on every sync), a name with
# a right-to-left override (shows as another name; BitTorrent clients strip it), a ".git/" path. Each
# is left out with the count in the sync report, the rest syncs, gets its torrent and serves the same
# file list in the tree and the torrent (docs/security.md).
. "$HM_SRC/tests/integration/lib.sh"
"$PY" - "$T/spec.json" <<'PY'
import json, sys
deep = "/".join(["d"] * 200) + "/x.txt"
files = [{"path": "ok.txt", "content": "ok\n"},
         {"path": "a", "content": "a file\n"},
         {"path": "a/b", "content": "in a folder\n"},
         {"path": deep, "content": "deep\n"},
         {"path": "x\u202egnp.exe", "content": "not a png\n"},
         {"path": ".git/config", "content": "[core]\n"},
         {"path": "sub/.GIT/HEAD", "content": "ref\n"}]
json.dump({"repos": [{"hub": "hf", "type": "model", "id": "acme/names", "files": files}]}, open(sys.argv[1], "w"))
PY
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/names >/dev/null
"$HUBMIRROR" sync --json >"$T/s1.json" 2>"$T/s1.err"; st=$?
check "sync succeeds" test "$st" = 0
check "the report counts the 5 names left out, and a torrent is made" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1])); x = r["repos"][0]
assert x["outcome"] == "ok" and x["skipped_unsafe"] == 5 and r["torrents_made"] == 1, r' "$T/s1.json"
check "the log says so" grep -q "skipped 5 entries with unsafe paths" "$T/s1.err"
"$HUBMIRROR" sync --json >"$T/s2.json" 2>&1
check "the next sync has nothing to redo" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1])); assert r["failed"] == 0 and r["repos"][0]["outcome"] == "unchanged", r' "$T/s2.json"
check "serve starts" start_serve --p2p-listen off
check "the tree, the torrent and the catalog list the same files" "$PY" - "$M" <<'PY'
import json, sys, urllib.request
import libtorrent as lt
m = sys.argv[1]
tree = sorted(e["path"] for e in json.load(urllib.request.urlopen(m + "/api/models/acme/names/tree/main?recursive=true"))
              if e["type"] == "file")
want = [".gitattributes", "a/b", "ok.txt"]
assert tree == want, tree
ti = lt.torrent_info(lt.bdecode(urllib.request.urlopen(m + "/api/p2p/torrent/hf/model/acme/names").read()))
fs = ti.files()
tor = sorted(fs.file_path(i).split("/", 1)[1] for i in range(fs.num_files()) if not fs.file_flags(i) & lt.file_storage.flag_pad_file)
assert tor == want, tor
PY
finish
