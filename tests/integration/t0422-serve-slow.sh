#!/usr/bin/env bash
# t0422-serve-slow: no request holds the server's loop (docs/security.md). The big answers (a repo info
# of 300,000 files, a tree page that walks them, a ModelScope listing) and searches are built on a
# worker thread: while one is built, small requests on other connections (a file download, /healthz,
# a tiny repo's info) are answered first; so are the other walks of a whole snapshot (treesize, the
# catalog API's file page, a torrent's meta=1 file list, paths-info), and the catalog's totals and
# /metrics wait for a worker. Checked by order, never by a clock: the small answers are complete while
# the big one has not sent a byte (before, the loop built it first and sent its head before it even
# read the small requests). Requests pipelined behind a deferred one come back in order;
# clients that leave while their answer is built, and a shutdown with one in flight, harm nothing
# (under ASan: no error, no leak).
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/tiny",
            "files": [{"path": "w.bin", "size": 100000, "seed": 7}]}]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/tiny >/dev/null && "$HUBMIRROR" sync >/dev/null
check "and a 300,000-file dataset in the same catalog" "$PY" - "$HUBMIRROR_DATA/catalog.db" "$HM_SRC/bench" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import catalog_bench
catalog_bench.generate(sys.argv[1], 200, 300000)
import sqlite3
db = sqlite3.connect(sys.argv[1])  # a torrent for it (its meta=1 lists every file; no .torrent needed)
db.execute("INSERT INTO torrents SELECT s.id, ?, ?, 'corpus', 4194304, 0 FROM snapshots s JOIN repos r "
           "ON r.id = s.repo_id WHERE r.name = 'big/corpus'", ("1" * 40, "2" * 64))
db.commit()
PY
check "serve starts" start_serve --p2p-listen off

check "small requests on other connections are answered while the big repo info is built" "$PY" - "$M" <<'PY'
import socket, sys, json
host, port = sys.argv[1].split("//")[1].split(":")

import os
sys.path.insert(0, os.path.join(os.environ["HM_SRC"], "tests", "integration", "helpers"))
from rawhttp import read_answer

big = socket.create_connection((host, int(port)))
big.sendall(b"GET /api/datasets/big/corpus?blobs=true HTTP/1.1\r\nHost: x\r\n\r\n")
small = socket.create_connection((host, int(port)))
for path, want in (("/healthz", b'"status":"ok"'), ("/acme/tiny/resolve/main/w.bin", None),
                   ("/api/models/acme/tiny", b'"rfilename":"w.bin"')):
    small.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
    head, body = read_answer(small)
    assert head.startswith("HTTP/1.1 200"), (path, head)
    assert (len(body) == 100000) if want is None else (want in body), (path, body[:200])
# every small answer is in; the big one has not sent a byte yet
big.setblocking(False)
try:
    early = big.recv(1)
except BlockingIOError:
    early = None
assert early is None, "the big answer came first"
big.setblocking(True)
head, body = read_answer(big)
assert head.startswith("HTTP/1.1 200"), head
assert len(json.loads(body)["siblings"]) == 300000
print("# 3 small answers complete before the first byte of the 300,000-file repo info")
PY

check "each walk of the big repo runs off the loop: a small request is answered while it is computed" "$PY" - "$M" <<'PY'
import socket, sys, json
host, port = sys.argv[1].split("//")[1].split(":")

import os
sys.path.insert(0, os.path.join(os.environ["HM_SRC"], "tests", "integration", "helpers"))
from rawhttp import read_answer

def send(req):
    s = socket.create_connection((host, int(port)))
    s.sendall(req)
    return s

def get(path):
    return send(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())

def healthz():
    head, body = read_answer(get("/healthz"))
    assert head.startswith("HTTP/1.1 200") and b'"status":"ok"' in body, head

def silent(s):
    s.setblocking(False)
    try:
        early = s.recv(1)
    except BlockingIOError:
        early = None
    s.setblocking(True)
    return early is None

paths = json.dumps({"paths": ["data/shard-%03d/part-%06d.parquet" % (j // 1000, j) for j in range(0, 300000, 30)]})
post = ("POST /api/datasets/big/corpus/paths-info/main HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: %d\r\n\r\n%s" % (len(paths), paths)).encode()
walks = [  # (name, request, check of the answer)
    ("treesize", "/api/datasets/big/corpus/treesize/main", lambda o: o == {"path": "", "size": 30000000}),
    ("catalog files", "/api/catalog/repos/hf/dataset/big/corpus/files",
     lambda o: o["entries"] == [{"path": "data", "type": "directory", "size": 30000000, "files": 300000}]),
    ("torrent meta", "/api/p2p/torrent/hf/dataset/big/corpus?meta=1", lambda o: len(o["files"]) == 300000),
    ("paths-info", post, lambda o: len(o) == 10000),
]
# while each is computed on a worker, /healthz on another connection is answered first
for name, req, ok in walks:
    s = send(req) if isinstance(req, bytes) else get(req)
    healthz()
    assert silent(s), name + ": answered before a small request on another connection"
    head, body = read_answer(s)
    assert head.startswith("HTTP/1.1 200") and ok(json.loads(body)), (name, head, body[:200])
# and the catalog's totals and /metrics (a count of every file): with both workers busy on repo infos,
# they wait for one, and a small request goes by
busy = [get("/api/datasets/big/corpus?blobs=true") for _ in range(2)]
healthz()  # the loop has read the two: they are on the workers
waiting = [("stats", get("/api/catalog/stats")), ("metrics", get("/metrics"))]
healthz()
for name, s in waiting:
    assert silent(s), name + ": answered on the loop"
for s in busy:
    assert read_answer(s)[0].startswith("HTTP/1.1 200")
head, body = read_answer(waiting[0][1])
assert head.startswith("HTTP/1.1 200") and json.loads(body)["files"] == 300202, (head, body)
head, body = read_answer(waiting[1][1])
assert head.startswith("HTTP/1.1 200") and b"hubmirror_repos 202\n" in body, (head, body[:200])
print("# treesize, catalog files, torrent meta=1, paths-info of 10,000 paths, stats and /metrics: off the loop")
PY

check "pipelined requests behind deferred ones come back in order" "$PY" - "$M" <<'PY'
import socket, sys
host, port = sys.argv[1].split("//")[1].split(":")
paths = ["/api/models/acme/tiny", "/healthz", "/api/datasets/big/corpus/tree/main?limit=5", "/healthz",
         "/api/catalog/repos?q=qwen&limit=1", "/api/models?search=acme", "/healthz"]
s = socket.create_connection((host, int(port)))
s.sendall(b"".join(("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (p, "Connection: close\r\n" if i == len(paths) - 1 else "")).encode()
                   for i, p in enumerate(paths)))
data = b""
while True:
    chunk = s.recv(1 << 20)
    if not chunk:
        break
    data += chunk
bodies = []
while data:
    head, rest = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200"), head
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    bodies.append(rest[:n])
    data = rest[n:]
kinds = ["tree" if b'"type":"directory"' in b else "list" if b.startswith(b'[{"_id"') else
         "info" if b'"id":"acme/tiny"' in b else "health" if b'"status":"ok"' in b else
         "search" if b'"total"' in b else "?" for b in bodies]
assert kinds == ["info", "health", "tree", "health", "search", "list", "health"], kinds
PY
check "the listings and searches were built on workers" metric_at_least hubmirror_http_deferred_total 6

check "clients that leave while their answer is built harm nothing" "$PY" - "$M" <<'PY'
import socket, struct, sys, urllib.request
host, port = sys.argv[1].split("//")[1].split(":")
for i in range(6):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"GET /api/datasets/big/corpus HTTP/1.1\r\nHost: x\r\n\r\n")
    if i % 2:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset
    s.close()
# the next request waits behind them for a worker, and is answered
assert b'"rfilename":"w.bin"' in urllib.request.urlopen(sys.argv[1] + "/api/models/acme/tiny", timeout=120).read()
assert urllib.request.urlopen(sys.argv[1] + "/healthz").status == 200
PY

spid=${_pids[-1]}
check "a shutdown while an answer is built" "$PY" - "$M" "$spid" <<'PY'
import os, signal, socket, sys
host, port = sys.argv[1].split("//")[1].split(":")
s = socket.create_connection((host, int(port)))
s.sendall(b"GET /api/datasets/big/corpus HTTP/1.1\r\nHost: x\r\n\r\n")
t = socket.create_connection((host, int(port)))
t.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
assert t.recv(100).startswith(b"HTTP/1.1 200")  # the loop has read both: the big one is on a worker
os.kill(int(sys.argv[2]), signal.SIGTERM)
s.settimeout(120)
while s.recv(1 << 20):
    pass  # closed, answered or not
PY
wait "$spid"; st=$?
check "ends cleanly (exit 0)" test "$st" = 0
check "with no sanitizer report" bash -c "! grep -q 'Sanitizer' '$T/serve.err'"
finish
