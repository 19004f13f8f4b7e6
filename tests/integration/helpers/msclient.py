#!/usr/bin/python3
"""msclient.py MIRROR_URL - a ModelScope SDK-style client flow against the mirror, stdlib only.

Does what the modelscope SDK does (docs/protocols/modelscope.md), in both the old and the new style, and checks
every byte against the listing's Sha256:
  models:   existence, info with Revision, revisions, files listing (Recursive), download of every file
            with the old SDK's Range bytes=0-(size-1) and a resumed Range bytes=N-;
  datasets: info (numeric Id), tree by numeric Id with PageSize 100 (old SDK: loop until a short
            page) and by owner/name with PageSize 200 (new SDK), download with Source=SDK, the side
            calls (download/increase, download/uv/...).
Prints "ok - ..." / "not ok - ..." lines; exits 1 on any failure.
"""
import hashlib
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

BASE = sys.argv[1].rstrip("/")
MODEL = sys.argv[2] if len(sys.argv) > 2 else "acme/ms-llm"
DATASET = sys.argv[3] if len(sys.argv) > 3 else "acme/ms-rows"
failed = 0
n = 0


def check(name, cond):
    global failed, n
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, name))
    if not cond:
        failed += 1


def get(path, headers=None, method="GET", data=None):
    req = urllib.request.Request(BASE + path, headers=headers or {}, method=method, data=data)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def envelope(path):
    st, _, body = get(path)
    d = json.loads(body)
    ok = st == 200 and d.get("Code") == 200 and d.get("Success") is True and "RequestId" in d
    return ok, d.get("Data")


q = urllib.parse.quote_plus

# --- models ---
st, _, _ = get("/api/v1/models/%s" % MODEL)
check("model exists", st == 200)
ok, info = envelope("/api/v1/models/%s?Revision=master" % MODEL)
check("model info envelope", ok and info["Name"] == MODEL.split("/")[1])
ok, revs = envelope("/api/v1/models/%s/revisions" % MODEL)
check("revisions list master", ok and any(b["Revision"] == "master" and isinstance(b["CreatedAt"], int)
                                          for b in revs["RevisionMap"]["Branches"]))
ok, data = envelope("/api/v1/models/%s/repo/files?Revision=master&Recursive=True" % MODEL)
files = [f for f in data["Files"] if f["Type"] == "blob"] if ok else []
check("files listing with Sha256", ok and files and all(len(f["Sha256"]) == 64 and len(f["Revision"]) == 40
                                                         for f in files))
check("listing has folders as tree entries", ok and any(f["Type"] == "tree" for f in data["Files"]))
good = True
for f in files:
    if f["Path"] in (".gitignore", ".gitattributes"):
        continue  # the SDK skips these
    url = "/api/v1/models/%s/repo?Revision=%s&FilePath=%s" % (MODEL, q("master"), q(f["Path"]))
    hdr = {"Range": "bytes=0-%d" % (f["Size"] - 1)} if f["Size"] else {}
    st, h, body = get(url, hdr)
    if f["Size"] and st != 206 or hashlib.sha256(body).hexdigest() != f["Sha256"]:
        good = False
        print("#   %s: status %d, %d bytes" % (f["Path"], st, len(body)))
check("every model file downloads with Range and matches Sha256", good and len(files) >= 2)
big = max(files, key=lambda f: f["Size"])
url = "/api/v1/models/%s/repo?Revision=master&FilePath=%s" % (MODEL, q(big["Path"]))
st, h, head = get(url, {"Range": "bytes=0-999"})
st2, h2, tail = get(url, {"Range": "bytes=1000-"})
check("resumed download (bytes=N-) completes the file",
      st == 206 and st2 == 206 and hashlib.sha256(head + tail).hexdigest() == big["Sha256"]
      and h2.get("Content-Range") == "bytes 1000-%d/%d" % (big["Size"] - 1, big["Size"]))
st, _, body = get("/api/v1/models/%s/repo?Revision=master&FilePath=nope.bin" % MODEL)
check("missing file: 404 envelope", st == 404 and json.loads(body)["Success"] is False)
st, _, body = get("/api/v1/models/acme/does-not-exist")
check("missing model: 404 envelope", st == 404 and json.loads(body)["Code"] == 404)
st, _, body = get("/api/v1/models/%s/repo/files?Revision=nosuchbranch" % MODEL)
check("missing revision: 404", st == 404)

# --- datasets ---
ok, dinfo = envelope("/api/v1/datasets/%s" % DATASET)
check("dataset info has a numeric Id", ok and isinstance(dinfo["Id"], int) and dinfo["Type"] is not None)
did = dinfo["Id"] if ok else 0


def tree_pages(dataset, size):
    """The dataset's whole tree as an SDK pages through it: PageSize size, until a short page (or an error)."""
    files, page = [], 1
    while True:
        ok, d = envelope("/api/v1/datasets/%s/repo/tree?Revision=master&Root=/&Recursive=True&PageNumber=%d&PageSize=%d"
                         % (dataset, page, size))
        if not ok:
            break
        files += d["Files"]
        if len(d["Files"]) < size:
            break
        page += 1
    return files


old = tree_pages(did, 100)  # the old SDK: numeric id, PageSize 100
new = tree_pages(DATASET, 200)  # the new SDK: owner/name, PageSize 200
blobs = [f for f in new if f["Type"] == "blob"]
check("tree by numeric id and by name agree", old == new and len(blobs) == int(sys.argv[4] if len(sys.argv) > 4 else 0) + 1)
good = True
for f in blobs[:50] + blobs[-5:]:
    st, _, body = get("/api/v1/datasets/%s/repo?Source=SDK&Revision=master&FilePath=%s&View=False" % (DATASET, q(f["Path"])))
    good &= st == 200 and hashlib.sha256(body).hexdigest() == f["Sha256"]
check("dataset files download and match Sha256", good)
st, _, body = get("/api/v1/datasets/%s/download/increase" % DATASET, method="POST", data=b"{}")
check("download/increase answered 200", st == 200 and json.loads(body)["Success"])
st, _, _ = get("/api/v1/datasets/%s/download/uv/local" % DATASET, method="POST", data=b"{}")
check("download/uv answered 200", st == 200)
print("1..%d" % n)
sys.exit(1 if failed else 0)
