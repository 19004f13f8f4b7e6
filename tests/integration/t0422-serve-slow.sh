#!/usr/bin/env bash
# t0422-serve-slow: no request holds the server's loop (docs/security.md). The big answers (a repo info
# of 300,000 files, a tree page that walks them, a ModelScope listing) and searches are built on a
# worker thread: while one is built, small requests on other connections (a file download, /healthz,
# a tiny repo's info) are answered first. Checked by order, never by a clock: the small answers are
# complete while the big one has not sent a byte (before, the loop built it first and sent its head
# before it even read the small requests). Requests pipelined behind a deferred one come back in order;
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
PY
check "serve starts" start_serve --p2p-listen off

check "small requests on other connections are answered while the big repo info is built" "$PY" - "$M" <<'PY'
import socket, sys, json
host, port = sys.argv[1].split("//")[1].split(":")

def read_answer(s):
    """One whole HTTP/1.1 answer (Content-Length framed): (head, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, "closed before the head"
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    while len(rest) < n:
        chunk = s.recv(1 << 20)
        assert chunk, "closed in the body"
        rest += chunk
    return head.decode(), rest

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
