#!/usr/bin/python3
"""hostile.py - hostile HTTP clients for t0420-serve-hostile, over raw sockets to 127.0.0.1 only.

    hostile.py SCENARIO BASE_URL [ARGS...]

Each scenario prints '# ' lines about what it saw and exits 0 when the server behaved, 1 (with the
reason) when it did not. Standard library only.
"""
import hashlib
import json
import os
import re
import resource
import selectors
import signal
import socket
import sys
import threading
import time
import urllib.parse

HOST = "127.0.0.1"
PORT = 0
FAILS = []
# Under AddressSanitizer the server's RSS holds shadow memory and a quarantine of freed blocks: it is
# printed, not checked.
ASAN = os.environ.get("HM_ASAN") == "1"


def note(msg):
    print("# " + msg, flush=True)


def expect(cond, msg):
    if not cond:
        FAILS.append(msg)
        note("FAIL: " + msg)
    return cond


def done():
    if FAILS:
        print("%d problem(s): %s" % (len(FAILS), "; ".join(FAILS[:10])), file=sys.stderr)
        sys.exit(1)
    sys.exit(0)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Conn:
    """One client connection with a small buffered HTTP/1.1 response reader."""

    def __init__(self, timeout=10.0, rcvbuf=None):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(timeout)
        self.s.connect((HOST, PORT))
        self.buf = bytearray()
        self.pos = 0

    def send(self, data):
        """False when the server already closed (it may answer and close before reading it all)."""
        try:
            self.s.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def _fill(self):
        if self.pos and self.pos == len(self.buf):
            self.buf.clear()
            self.pos = 0
        elif self.pos > (1 << 20):
            del self.buf[:self.pos]
            self.pos = 0
        d = self.s.recv(1 << 16)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return line
            if len(self.buf) - self.pos > 65536:
                raise ValueError("response line too long")
            self._fill()

    def _take(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def response(self, head=False):
        """(status, {lower-case header: value}, body). Raises EOFError if the server closed first."""
        line = self._line()
        m = re.match(rb"HTTP/1\.[01] (\d{3}) ", line + b" ")
        if not m:
            raise ValueError("bad status line %r" % line[:80])
        status = int(m.group(1))
        headers = {}
        while True:
            h = self._line()
            if not h:
                break
            k, _, v = h.partition(b":")
            headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
        n = int(headers.get("content-length", "0"))
        body = b"" if head or status in (204, 304) else self._take(n)
        return status, headers, body

    def closed_within(self, seconds):
        """True when the server closes the connection (EOF or reset) within seconds; buffered
        bytes are discarded."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return False
            self.s.settimeout(left)
            try:
                if not self.s.recv(1 << 16):
                    return True
            except (ConnectionResetError, BrokenPipeError):
                return True
            except socket.timeout:
                return False

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def get(path, head=False, extra=b"", timeout=10.0):
    c = Conn(timeout)
    try:
        c.send(b"%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n%s\r\n" %
               (b"HEAD" if head else b"GET", path.encode() if isinstance(path, str) else path, extra))
        return c.response(head)
    finally:
        c.close()


def one(raw, timeout=10.0):
    """Send raw bytes on a fresh connection and read one response: (status, headers, body), or
    (None, {}, reason) when the server closed without answering."""
    c = Conn(timeout)
    try:
        c.send(raw)
        try:
            return c.response(raw.startswith(b"HEAD "))
        except (EOFError, ConnectionResetError) as e:
            return None, {}, str(e).encode()
    finally:
        c.close()


def healthy():
    st, _, body = get("/healthz")
    return st == 200 and b'"status":"ok"' in body


# ---- traversal --------------------------------------------------------------------------------------

# Route answers that are wrong but harmless (no crash, nothing from outside the snapshot), reported to
# the routes' owner: printed instead of failing. Remove an entry once its route is fixed.
KNOWN_ROUTE_BUGS = [
    # none known: add a compiled regex of a target here (with why) only while its route is being fixed
]

def scenario_traversal(data_dir, secret_text):
    """Hostile repo, revision and file parts: a 200 only ever carries acme/tiny's own bytes."""
    q = urllib.parse.quote
    st, _, body = get("/api/models/acme/tiny/tree/main?recursive=true")
    expect(st == 200, "tree of acme/tiny: %s" % st)
    tree = json.loads(body)
    files = [e["path"] for e in tree if e["type"] == "file"]
    dirs = {e["path"] for e in tree if e["type"] == "directory"}
    allowed_paths = set(files) | dirs
    allowed = set()
    for f in files:
        for kind in ("resolve", "raw"):
            st, _, b = get("/acme/tiny/%s/main/%s" % (kind, q(f)))
            expect(st == 200, "%s %s: %s" % (kind, f, st))
            allowed.add(hashlib.sha256(b).hexdigest())
    note("acme/tiny: %d files, %d folders" % (len(files), len(dirs)))
    # the ModelScope copy (ms:acme/tiny): its files are in the snapshot too
    st, _, body = get("/api/v1/models/acme/tiny/repo/files?Recursive=true")
    expect(st == 200, "ModelScope listing of acme/tiny: %s" % st)
    for f in json.loads(body)["Data"]["Files"]:
        if f["Type"] == "blob":
            st, _, b = get("/api/v1/models/acme/tiny/repo?FilePath=%s" % q(f["Path"], safe=""))
            expect(st == 200, "ModelScope download %s: %s" % (f["Path"], st))
            allowed.add(hashlib.sha256(b).hexdigest())
            allowed_paths.add(f["Path"])
    forbidden = [secret_text.encode(), b"SQLite format 3", b"root:x:0:0", b"root:*:0:0"]
    with open(os.path.join(data_dir, "catalog.db"), "rb") as f:
        forbidden.append(f.read(4096)[100:160])  # catalog bytes past the header
    secret_sha = hashlib.sha256(secret_text.encode()).hexdigest()

    repos = ["acme/..", "..%2F..", "%2e%2e/%2e%2e", "acme%2Ftiny", "acme/tiny%00", "acme%00/tiny",
             "acme/tiny%2F..", "acme/%2e%2e", ".%2E/acme", "acme%5Ctiny", "acme\\tiny", "acme/tiny%2F..%2Fother",
             "%2Fetc/passwd", "acme/.", "acme/tiny%2500", "acme/other%2F..%2Ftiny", "..", "%2e%2e",
             "acme/%2E%2e%2f%2E%2e%2fother", "acme/tiny/..", "acme//tiny", "/acme/tiny"]
    # \xff and friends: bytes that are not UTF-8 must not break the JSON answers
    revs = ["..", "%2e%2e", "%ff", "main%c0%ae", "refs/pr/%ff", "refs/pr/\xff", "%2E%2e%2f%2E%2e", "main%2F..%2F..",
            "main%00", "%00", "main%5C..", "main\\..", "refs/pr/..", "refs%2F..%2F..%2Fetc", "main%2F..",
            "%2Fetc%2Fpasswd", ".", "refs/convert/%2e%2e",
            "..%2F..%2F..%2F..%2Fetc%2Fpasswd", "refs/pr/%2e%2e%2f%2e%2e", "main/..", "%252e%252e", "main%0a",
            "main%0d%0aX-Evil:%201"]
    paths = ["../../../../etc/passwd", "..%2F..%2F..%2Fetc%2Fpasswd", "%2e%2e/%2e%2e/etc/passwd",
             "%2E%2e%2f%2E%2e%2f%2E%2e%2fetc%2fpasswd", "%2Fetc%2Fpasswd", "/etc/passwd", "//etc/passwd",
             "..%5c..%5c..%5cetc%5cpasswd", "..\\..\\..\\etc\\passwd", "config.json%00.txt", "config.json%00",
             "%00", "%00/config.json", "%ff", "sub/%fe%ff", "\xff\xfe", "sub/../config.json",
             "sub/%2e%2e/config.json", "./config.json", "sub//notes.txt", "sub/./notes.txt", "catalog.db",
             "../catalog.db", "../../catalog.db",
             "%252e%252e/%252e%252e/etc/passwd", "%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd", "..;/..;/etc/passwd",
             "config.json/../../../../etc/passwd", "sub%2F..%2F..%2F..%2Fother%2Fresolve%2Fmain%2Fsecret.txt",
             "%2Fproc%2Fself%2Fenviron", "%2e", "%2e%2e", "...", "sub%5cnotes.txt", "config.json%0d%0aX-Evil:%201",
             q(data_dir + "/catalog.db", safe=""), data_dir + "/catalog.db", "/" + data_dir + "/catalog.db"]
    for up in range(1, 8):
        paths.append("..%2F" * up + "catalog.db")
        paths.append("../" * up + "catalog.db")
        paths.append("%2e%2e%2f" * up + "store%2fblobs%2f" + secret_sha[:2] + "%2f" + secret_sha)
        paths.append("../" * up + "store/blobs/%s/%s" % (secret_sha[:2], secret_sha))
        paths.append("../" * up + "etc/passwd")
    # legitimate odd names still work
    paths += ["dots..name.txt", "sub%2Fnotes.txt"]

    reqs = []

    def each(values, *forms):
        """Every form (a target with %s where the value goes, each %s the same value) for each value."""
        for v in values:
            reqs.extend(f % ((v,) * f.count("%s")) for f in forms)

    each(repos, "/%s/resolve/main/config.json", "/%s/raw/main/config.json", "/api/models/%s/tree/main",
         "/api/models/%s/tree/main/sub", "/api/models/%s/revision/main")
    each(revs, "/acme/tiny/resolve/%s/config.json", "/acme/tiny/raw/%s/model.safetensors",
         "/api/models/acme/tiny/tree/%s", "/api/models/acme/tiny/tree/%s/sub", "/api/models/acme/tiny/revision/%s",
         "/api/models/acme/tiny/treesize/%s")
    each(paths, "/acme/tiny/resolve/main/%s", "/acme/tiny/raw/main/%s", "/api/models/acme/tiny/tree/main/%s",
         "/api/models/acme/tiny/tree/main/%s?recursive=true", "/api/models/acme/tiny/treesize/main/%s")
    # ModelScope and catalog routes take paths and revisions from the query
    each(["..%2F..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "%00", "%ff", "%c0%ae%c0%ae%2F",
          "sub%2F..%2Fconfiguration.json", "..%5C..%5Cetc%5Cpasswd", "..", "%2e%2e%2f%2e%2e%2fcatalog.db",
          q(data_dir + "/catalog.db", safe=""),
          "configuration.json%00", "sub%2F%2Fnotes.txt", "%0d%0aX-Evil:%201"],
         "/api/v1/models/acme/tiny/repo?FilePath=%s",
         "/api/v1/models/acme/tiny/repo?Revision=%s&FilePath=configuration.json",
         "/api/v1/models/acme/tiny/repo/files?Root=%s&Recursive=true",
         "/api/v1/models/acme/tiny/repo/files?Revision=%s",
         "/api/v1/datasets/acme/tiny/repo/tree?Root=%s&PageSize=%s&PageNumber=%s",
         "/api/v1/models/acme/tiny/revisions?Revision=%s",
         "/api/catalog/repos/hf/model/acme/tiny/files?dir=%s&cursor=%s",
         "/api/catalog/repos?q=%s&hub=%s&type=%s&org=%s&tag=%s&status=%s&sort=%s&order=%s&cursor=%s")
    each(repos, "/api/v1/models/%s/repo?FilePath=configuration.json", "/api/catalog/repos/hf/model/%s/files",
         "/api/catalog/repos/ms/model/%s")
    # whole targets
    reqs += ["/../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "//etc/passwd", "/etc/passwd",
             "/acme/tiny/resolve/main/config.json/../../../../../etc/passwd",
             "http://127.0.0.1/acme/tiny/resolve/main/..%2F..%2F..%2Fetc%2Fpasswd",
             "http://x/../../etc/passwd", "/catalog.db", "/store/blobs/%s/%s" % (secret_sha[:2], secret_sha),
             "/datasets/..%2F..%2Fetc/resolve/main/passwd", "/api/datasets/../models/acme/tiny/tree/main",
             "/api/models/acme/tiny/tree/main?cursor=..%2F..%2F&recursive=true",
             "/api/models/acme/tiny/tree/main?cursor=%00"]

    by_status = {}
    known = []

    def wrong(target, what):
        """A wrong answer: fails, unless it is a known (and harmless) route bug."""
        if any(k.match(target) for k in KNOWN_ROUTE_BUGS):
            known.append(what)
        else:
            expect(False, what)

    for target in reqs:
        raw = target.encode("latin-1")
        for method in (b"GET", b"HEAD") if "/resolve/" in target else (b"GET",):
            st, hd, body = one(b"%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % (method, raw))
            by_status[st] = by_status.get(st, 0) + 1
            what = "%s %s -> %s" % (method.decode(), target, st)
            if st is None:
                expect(False, what + " (closed without an answer)")
                continue
            if st >= 500:
                wrong(target, what + " (server error: %r)" % body[:100])
            if "x-evil" in hd:
                expect(False, what + " (header injected)")
            for f in forbidden:
                if f and f in body:
                    expect(False, what + " (forbidden bytes in the body)")
            if st in (200, 206) and method == b"GET":
                if "/resolve/" in target or "/raw/" in target or "/repo?" in target:
                    if hashlib.sha256(body).hexdigest() not in allowed:
                        expect(False, what + " (a body that is no file of acme/tiny)")
                elif body:
                    try:
                        j = json.loads(body)
                    except ValueError:
                        expect(False, what + " (not JSON)")
                        continue
                    if "/treesize/" in target:
                        # echoes the asked path; only a real folder may weigh anything
                        if j.get("size") and j.get("path") not in allowed_paths:
                            wrong(target, what + " (weighs %r)" % j)
                        continue
                    items = j if isinstance(j, list) else [j]
                    if isinstance(j, dict) and isinstance(j.get("Data"), dict):
                        items = [{"path": f.get("Path")} for f in j["Data"].get("Files") or []]  # ModelScope
                    for it in items:
                        p = it.get("path") if isinstance(it, dict) else None
                        if p and p not in allowed_paths:
                            expect(False, what + " (lists %r)" % p)
    # paths-info with hostile paths, as JSON and as a form
    hostile = ["../../etc/passwd", "/etc/passwd", "sub/..", "", ".", "..", "sub//notes.txt", "sub/./notes.txt",
               "config.json\u0000x", "..\\..\\etc\\passwd", data_dir + "/catalog.db", "../other/secret.txt",
               "../../../store/blobs/%s/%s" % (secret_sha[:2], secret_sha), 5, None, ["x"], {"a": 1}]
    for body in (json.dumps({"paths": hostile, "expand": True}).encode(),
                 b'{"paths": "../../etc/passwd"}', b'{"paths": [' + b'"..",' * 2000 + b'"x"]}',
                 b"{not json", b"\x00\xff" * 100):
        st, _, out = one(b"POST /api/models/acme/tiny/paths-info/main HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                         b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        expect(st in (200, 400), "paths-info JSON %r -> %s" % (body[:40], st))
        if st == 200:
            listed = [e.get("path") for e in json.loads(out)]
            expect(all(p in allowed_paths for p in listed), "paths-info JSON lists %r" % listed)
    form = "&".join("paths=" + q(p if isinstance(p, str) else "x", safe="") for p in hostile)
    form += "&paths=%00&paths=%zz&paths&=&&paths=config.json"
    st, _, out = one(b"POST /api/models/acme/tiny/paths-info/main HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                     b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s" %
                     (len(form), form.encode()))
    listed = [e.get("path") for e in json.loads(out)] if st == 200 else None
    expect(st == 200 and listed == ["config.json"], "paths-info form -> %s %r" % (st, listed))
    for k in known:
        note("known route bug: " + k)
    note("%d hostile targets, answers by status: %s" %
         (len(reqs), ", ".join("%s: %d" % (k, v) for k, v in sorted(by_status.items(), key=lambda x: str(x[0])))))
    expect(healthy(), "healthz after the traversal attempts")
    done()


# ---- limits -----------------------------------------------------------------------------------------

def scenario_limits():
    def oversized(name, raw, ok=(431, 400, 413, 414)):
        c = Conn(10)
        t0 = time.monotonic()
        sent = c.send(raw)
        try:
            st, hd, _ = c.response()
        except (EOFError, ConnectionResetError) as e:
            st, hd = None, {}
            note("%s: no answer (%s), request %s" % (name, e, "sent" if sent else "cut short"))
        closed = c.closed_within(5)
        note("%s: %s, connection %s after %.2f s" % (name, st, "closed" if closed else "open", time.monotonic() - t0))
        expect(st in ok, "%s answered %s" % (name, st))
        expect(closed, "%s: connection not closed" % name)
        c.close()
        return st

    line = b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: t\r\n\r\n"
    oversized("100 KB request line", line)
    oversized("100 KB query", b"GET /healthz?" + b"q=1&" * 25000 + b" HTTP/1.1\r\nHost: t\r\n\r\n")
    oversized("20 KB header value", b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: " + b"v" * 20000 + b"\r\n\r\n")
    oversized("40 KB of headers", b"GET /healthz HTTP/1.1\r\nHost: t\r\n" +
              b"".join(b"X-Pad-%04d: %s\r\n" % (i, b"p" * 390) for i in range(100)) + b"\r\n")
    many = b"GET /healthz HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(200)) + b"\r\n"
    st = oversized("200 headers", many)
    expect(st == 431, "200 headers: 431 expected, got %s" % st)
    # just under the limits: served
    fine = b"GET /healthz HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(90)) + b"\r\n"
    st, _, _ = one(fine)
    expect(st == 200, "90 headers answered %s" % st)
    st, _, _ = one(b"GET /healthz?" + b"q" * 12000 + b" HTTP/1.1\r\nHost: t\r\n\r\n")
    expect(st == 200, "12 KB request line answered %s" % st)
    # bodies
    pi = b"POST /api/models/acme/tiny/paths-info/main HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
    big = b'{"paths": ["' + b"x" * (2 << 20) + b'"]}'
    oversized("2 MiB paths-info body", pi + b"Content-Length: %d\r\n\r\n" % len(big) + big, ok=(413,))
    oversized("2 MiB paths-info body, declared only", pi + b"Content-Length: %d\r\n\r\n" % len(big), ok=(413,))
    chunks = b"".join(b"10000\r\n" + b"y" * 0x10000 + b"\r\n" for _ in range(40)) + b"0\r\n\r\n"
    oversized("2.5 MiB chunked paths-info body", pi + b"Transfer-Encoding: chunked\r\n\r\n" + chunks, ok=(413,))
    oversized("absurd Content-Length", pi + b"Content-Length: 99999999999999999999999\r\n\r\n", ok=(400, 413))
    small = b'{"paths": ["config.json"]}'
    st, _, body = one(pi + b"Content-Length: %d\r\n\r\n%s" % (len(small), small))
    expect(st == 200 and b"config.json" in body, "small paths-info answered %s" % st)
    expect(healthy(), "healthz after the oversized requests")
    done()


# ---- pipelining -------------------------------------------------------------------------------------

def scenario_pipeline(n):
    n = int(n)
    c = Conn(60)
    req = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
    # the last request tells the order apart: its answer must come after all the others
    blob = req * n + b"GET /no/such/thing/resolve/main/x HTTP/1.1\r\nHost: t\r\n\r\n"
    writer = threading.Thread(target=c.send, args=(blob,))
    other = {"lat": [], "bad": 0, "stop": False}

    def second_client():
        while not other["stop"]:
            t0 = time.monotonic()
            try:
                st, _, _ = get("/healthz", timeout=30)
            except Exception:  # noqa: BLE001 - any failure counts
                st = None
            other["lat"].append(time.monotonic() - t0)
            other["bad"] += st != 200
            time.sleep(0.01)

    t0 = time.monotonic()
    writer.start()
    sc = threading.Thread(target=second_client)
    sc.start()
    got, statuses = 0, []
    try:
        for _ in range(n + 1):
            st, hd, body = c.response()
            statuses.append(st)
            got += 1
    except (EOFError, ConnectionResetError, socket.timeout) as e:
        note("pipeline: stopped after %d answers: %s" % (got, e))
    elapsed = time.monotonic() - t0
    other["stop"] = True
    writer.join()
    sc.join()
    ok200 = statuses[:n].count(200)
    note("pipeline: %d answers to %d requests in %.2f s (%d x 200, then %s)" %
         (got, n + 1, elapsed, ok200, statuses[n] if len(statuses) > n else "-"))
    lat = other["lat"]
    note("second client meanwhile: %d requests, max %.3f s, mean %.4f s, %d failed" %
         (len(lat), max(lat or [0]), sum(lat) / max(1, len(lat)), other["bad"]))
    expect(got == n + 1 and ok200 == n and statuses[n] == 404, "all %d answered in order" % n)
    expect(elapsed < 30, "pipeline took %.1f s" % elapsed)
    expect(lat and other["bad"] == 0 and max(lat) < 30, "second client served meanwhile")
    # still usable afterwards
    c.send(req)
    st, _, _ = c.response()
    expect(st == 200, "the pipelining connection still answers: %s" % st)
    c.close()
    expect(healthy(), "healthz after pipelining")
    done()


# ---- slowloris ------------------------------------------------------------------------------------

def scenario_slowloris(n, header_timeout):
    n, header_timeout = int(n), float(header_timeout)
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(n):
        s = socket.create_connection((HOST, PORT), timeout=5)
        s.setblocking(False)
        conns.append({"s": s, "start": time.monotonic(), "closed": None})
        s.send(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        sel.register(s, selectors.EVENT_READ, conns[-1])
    note("slowloris: %d connections sent a partial request" % n)
    lat, fails = [], 0
    end = time.monotonic() + header_timeout + 3
    next_trickle = time.monotonic() + 0.3
    next_probe = time.monotonic()
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_trickle:
            for c in conns:
                if c["closed"] is None:
                    try:
                        c["s"].send(b"a")
                    except OSError:
                        c["closed"] = now
            next_trickle = now + 0.3
        if now >= next_probe:
            t0 = time.monotonic()
            try:
                st, _, _ = get("/healthz", timeout=10)
            except Exception:  # noqa: BLE001
                st = None
            lat.append(time.monotonic() - t0)
            fails += st != 200
            next_probe = time.monotonic() + 0.2
        for key, _ in sel.select(timeout=0.05):
            c = key.data
            try:
                d = c["s"].recv(4096)
            except (ConnectionResetError, BlockingIOError):
                d = b""
            if not d and c["closed"] is None:
                c["closed"] = time.monotonic()
                sel.unregister(c["s"])
    alive = [c for c in conns if c["closed"] is None]
    ages = [c["closed"] - c["start"] for c in conns if c["closed"] is not None]
    note("slowloris: normal client made %d requests meanwhile, max %.3f s, %d failed" %
         (len(lat), max(lat or [0]), fails))
    if ages:
        note("slowloris: %d of %d closed by the server, after %.2f to %.2f s (header timeout %.1f s)" %
             (len(ages), n, min(ages), max(ages), header_timeout))
    expect(fails == 0 and lat, "normal client answered during slowloris")
    expect(not alive, "%d trickling connections still open after %.1f s" % (len(alive), header_timeout + 3))
    expect(not ages or min(ages) > header_timeout * 0.5, "closed too early (%.2f s)" % min(ages or [0]))
    for c in conns:
        c["s"].close()
    expect(healthy(), "healthz after slowloris")
    done()


# ---- slow reader ----------------------------------------------------------------------------------

def scenario_slowread(path, sha, size, pid, seconds, write_timeout):
    size, pid, seconds, write_timeout = int(size), int(pid), float(seconds), float(write_timeout)
    rss0 = rss_kib(pid)
    slow = Conn(30, rcvbuf=4096)
    slow.send(b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path.encode())
    read_slow = 0
    peak = [rss0]
    results = []

    def fast(k):
        for _ in range(2):
            t0 = time.monotonic()
            st, _, body = get(path, timeout=30)
            results.append((st, hashlib.sha256(body).hexdigest(), time.monotonic() - t0))
            peak[0] = max(peak[0], rss_kib(pid))

    fasts = [threading.Thread(target=fast, args=(k,)) for k in range(4)]
    t0 = time.monotonic()
    started = False
    while time.monotonic() - t0 < seconds:
        try:
            if slow.s.recv(1):
                read_slow += 1
        except socket.timeout:
            pass
        if not started and time.monotonic() - t0 > 0.3:
            for t in fasts:
                t.start()
            started = True
        peak[0] = max(peak[0], rss_kib(pid))
        time.sleep(0.01)
    stopped = time.monotonic()
    for t in fasts:
        t.join()
    good = [r for r in results if r[0] == 200 and r[1] == sha]
    note("slow reader: %d bytes in %.1f s; meanwhile %d full-speed downloads of %d bytes, %d correct, "
         "slowest %.2f s" % (read_slow, seconds, len(results), size, len(good), max([r[2] for r in results] or [0])))
    note("server VmRSS: %d KiB before, peak %d KiB (+%d KiB)%s" %
         (rss0, peak[0], peak[0] - rss0, " (not checked under ASan)" if ASAN else ""))
    expect(len(good) == 8, "full-speed downloads: %d of 8 correct" % len(good))
    expect(max([r[2] for r in results] or [99]) < 10, "full-speed downloads were stalled")
    expect(ASAN or peak[0] - rss0 < size // 1024 // 2, "RSS grew by %d KiB for a %d byte file" % (peak[0] - rss0, size))
    # The slow reader now stops reading: the write timeout closes it, short of the whole file.
    time.sleep(max(0.0, write_timeout + 1.5 - (time.monotonic() - stopped)))
    total = read_slow
    slow.s.settimeout(3)
    eof = False
    try:
        while True:
            d = slow.s.recv(1 << 16)
            if not d:
                eof = True
                break
            total += len(d)
    except (ConnectionResetError, socket.timeout) as e:
        eof = isinstance(e, ConnectionResetError)
    note("stalled reader: closed by the server: %s, after %d of %d bytes" % (eof, total, size))
    expect(eof and total < size, "a reader that stops is dropped by the write timeout")
    slow.close()
    expect(healthy(), "healthz after the slow reader")
    done()


def log_tail(log_path, lines=15):
    """Print the end of the server's log (when the script was given its path)."""
    if not log_path:
        return
    try:
        with open(log_path, errors="replace") as f:
            tail = f.readlines()[-lines:]
    except OSError as e:
        tail = ["cannot read %s: %s\n" % (log_path, e)]
    note("server log tail (%s):" % log_path)
    for line in tail:
        note("  " + line.rstrip("\n"))


# ---- many idle connections -----------------------------------------------------------------------

def scenario_idle(n, pid, idle_timeout, limit_mib, log_path=None):
    """n idle connections (half of them after one request): a new client is served, VmRSS stays
    under limit_mib, and the idle timeout closes them all. log_path: the server's log, whose tail is
    printed when a request goes unanswered."""
    n, pid, idle_timeout, limit_mib = int(n), int(pid), float(idle_timeout), float(limit_mib)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 200), hard))
    rss0 = rss_kib(pid)
    t0 = time.monotonic()
    conns = []
    sent = {}  # connection index -> (what, seconds after t0 it was sent, whether send() took it all)
    # Half of them ask once first, so both fresh and kept-alive idle connections are held; one in
    # twenty of those sends a 900 KB body, which an idle connection must not keep.
    body = json.dumps({"paths": ["x" * 900000]}).encode()
    big = b"POST /api/models/acme/tiny/paths-info/main HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" \
          b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    for i in range(n):
        c = Conn(10)
        conns.append(c)
        if i % 2 == 0:
            what = "POST paths-info (%d-byte body)" % len(body) if i % 20 == 0 else "GET /healthz"
            t = time.monotonic() - t0
            sent[i] = (what, t, c.send(big if i % 20 == 0 else b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"),
                       time.monotonic() - t0 - t)
    t_read = time.monotonic() - t0
    for i in range(0, n, 2):
        what, t, whole, took = sent[i]
        try:
            st, _, _ = conns[i].response()
        except (OSError, EOFError, ValueError) as e:
            st = "%s: %s" % (type(e).__name__, e)
        if st != 200:
            now = time.monotonic() - t0
            note("request %d of %d: %s, sent at +%.2f s in %.2f s (%s), responses read from +%.2f s, "
                 "failed at +%.2f s, %.2f s after it was sent" % (i, n, what, t, took, "all taken" if whole
                                                                  else "send failed", t_read, now, now - t))
            expect(False, "keep-alive request %d (%s) answered %s" % (i, what, st))
            log_tail(log_path)
            break
    opened = time.monotonic() - t0
    t1 = time.monotonic()
    ok = healthy()
    lat = time.monotonic() - t1
    rss = rss_kib(pid)
    note("%d idle connections opened in %.2f s; a new client answered in %.3f s; server VmRSS %d KiB "
         "(%d KiB before, %.1f KiB per connection)%s" % (n, opened, lat, rss, rss0, (rss - rss0) / n,
                                                         " (not checked under ASan)" if ASAN else ""))
    expect(ok, "healthz with %d idle connections" % n)
    expect(ASAN or rss < limit_mib * 1024, "VmRSS %d KiB with %d idle connections (limit %d MiB)" % (rss, n, limit_mib))
    # the idle timeout frees them all
    deadline = time.monotonic() + idle_timeout + 3
    still = 0
    for c in conns:
        if not c.closed_within(max(0.05, deadline - time.monotonic())):
            still += 1
        c.close()
    note("after the idle timeout (%.1f s): %d of %d still open" % (idle_timeout, still, n))
    expect(still == 0, "%d idle connections outlived the idle timeout" % still)
    expect(healthy(), "healthz after the idle connections")
    done()


# ---- a server that falls behind ------------------------------------------------------------------

def scenario_stalled(pid, header_timeout, log_path=None):
    """A client sends a 900 KB request in time, but the server falls behind (here: it is stopped)
    past its header timeout: once it runs again, the bytes waiting in its receive buffer are read and
    the request answered, not reset. The server reads at most 128 KiB of a connection per loop turn
    and runs due timers between turns, so this is what a loaded server used to get wrong."""
    pid, header_timeout = int(pid), float(header_timeout)
    body = json.dumps({"paths": ["x" * 900000]}).encode()
    head = b"POST /api/models/acme/tiny/paths-info/main HTTP/1.1\r\nHost: t\r\n" \
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    c = Conn(header_timeout + 10)
    c.send(head + body[:1000])
    time.sleep(0.3)  # the server reads the start: its header timer runs from there
    t0 = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        sender = threading.Thread(target=c.send, args=(body[1000:],), daemon=True)
        sender.start()
        time.sleep(header_timeout + 1)
    finally:
        os.kill(pid, signal.SIGCONT)
    try:
        st, _, _ = c.response()
    except (OSError, EOFError, ValueError) as e:
        st = "%s: %s" % (type(e).__name__, e)
    note("%d-byte request sent while the server was stopped for %.1f s (header timeout %.1f s): %s "
         "after %.2f s" % (len(head) + len(body), header_timeout + 1, header_timeout, st,
                           time.monotonic() - t0))
    if not expect(st == 200, "a request that arrived in time while the server was behind answered %s" % st):
        log_tail(log_path)
    c.close()
    expect(healthy(), "healthz after the stalled server")
    done()


# ---- garbage and clients that vanish ---------------------------------------------------------------

def scenario_garbage(big_path):
    cases = {
        "random bytes": os.urandom(65536),
        "NUL bytes": b"\x00" * 4096,
        "binary request line": b"\xff\xfe\xfd / HTTP/1.1\r\n\r\n",
        "NUL in the target": b"GET /hea\x00lthz HTTP/1.1\r\nHost: t\r\n\r\n",
        "NUL in a header": b"GET /healthz HTTP/1.1\r\nHost: t\r\nX: a\x00b\r\n\r\n",
        "HTTP/9.9": b"GET /healthz HTTP/9.9\r\nHost: t\r\n\r\n",
        "HTTP/0.9": b"GET /healthz\r\n\r\n",
        "only CRLFs": b"\r\n" * 1000,
        "bare LFs": b"GET /healthz HTTP/1.1\nHost: t\n\n",
        "header without colon": b"GET /healthz HTTP/1.1\r\nHost t\r\n\r\n",
        "space before colon": b"GET /healthz HTTP/1.1\r\nHost : t\r\n\r\n",
        "obsolete line folding": b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n  continued\r\n\r\n",
        "unknown method": b"FROB /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
        "lowercase method": b"get /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
        "long method": b"G" * 5000 + b" /healthz HTTP/1.1\r\n\r\n",
        "negative length": b"POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n",
        "two lengths": b"POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        "length and chunked": b"POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "bad chunk size": b"POST /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "huge chunk size": b"POST /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                           b"ffffffffffffffffffff\r\n",
        "smuggling pair": b"POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
                          b"GET /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: t\r\n\r\n0\r\n\r\n",
        "CONNECT": b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n",
        "OPTIONS *": b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n",
        "upgrade": b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
                   b"\x81\x85garbage",
        "expect 100-continue": b"POST /api/models/acme/tiny/paths-info/main HTTP/1.1\r\nHost: t\r\n"
                               b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n",
        "TLS hello": bytes.fromhex("16030100a5010000a10303") + os.urandom(160),
        "HTTP/2 preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00" * 64,
        "absolute-form": b"GET http://evil.example/healthz HTTP/1.1\r\nHost: t\r\n\r\n",
        "absolute-form without path": b"GET http://evil.example HTTP/1.1\r\nHost: t\r\n\r\n",
        "empty target": b"GET  HTTP/1.1\r\nHost: t\r\n\r\n",
        "target without slash": b"GET healthz HTTP/1.1\r\nHost: t\r\n\r\n",
        "bad percent escapes": b"GET /%zz/%/%4/resolve/%%/x HTTP/1.1\r\nHost: t\r\n\r\n",
        "query only": b"GET /?&&==&%00=%zz HTTP/1.1\r\nHost: t\r\n\r\n",
        "tree with garbage query": b"GET /api/models/acme/tiny/tree/main?limit=-99999999999999999999&cursor=%ff%fe"
                                   b"&recursive=%00 HTTP/1.1\r\nHost: t\r\n\r\n",
        "listing with garbage query": b"GET /api/models?limit=0&search=%25%5f&author=%ff&cursor=%c3 HTTP/1.1\r\n"
                                      b"Host: t\r\n\r\n",
        "Range garbage": b"GET /acme/tiny/resolve/main/config.json HTTP/1.1\r\nHost: t\r\n"
                         b"Range: bytes=-0-,99999999999999999999999-1\r\n\r\n",
        "Range overflow": b"GET /acme/tiny/resolve/main/config.json HTTP/1.1\r\nHost: t\r\n"
                          b"Range: bytes=9223372036854775807-\r\n\r\n",
        "Range negative": b"GET /acme/tiny/resolve/main/config.json HTTP/1.1\r\nHost: t\r\n"
                          b"Range: bytes=-9223372036854775808\r\n\r\n",
        "Host garbage": b"GET /api/datasets?limit=1 HTTP/1.1\r\nHost: \xff\xfe<script>\r\n"
                        b"X-Forwarded-Host: a\"b\r\nX-Forwarded-Proto: javascript\r\n\r\n",
        "many empty headers": b"GET /healthz HTTP/1.1\r\nHost: t\r\n" + b":\r\n" * 50 + b"\r\n",
        "If-None-Match garbage": b"GET /api/models/acme/tiny HTTP/1.1\r\nHost: t\r\nIf-None-Match: " +
                                 b"W/\"" * 2000 + b"\r\n\r\n",
    }
    results = {}

    def run(name, raw):
        try:
            c = Conn(5)
            c.send(raw)
            try:
                st, _, _ = c.response(raw.startswith(b"HEAD"))
                results[name] = str(st)
            except (EOFError, ConnectionResetError):
                results[name] = "closed"
            except socket.timeout:
                results[name] = "no answer yet"
            except ValueError as e:
                results[name] = "unparsable answer: %s" % e
            c.close()
        except OSError as e:
            results[name] = "error %s" % e

    threads = [threading.Thread(target=run, args=kv) for kv in cases.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # what other parsers (a proxy in front) read otherwise is refused, not guessed at
    strict = {"bare LFs": "400", "space before colon": "400", "obsolete line folding": "400",
              "HTTP/0.9": "400", "HTTP/9.9": "505"}
    for name in cases:
        note("%-28s -> %s" % (name, results.get(name)))
        if name in strict:
            expect(results.get(name) == strict[name], "%s: %s, not %s" % (name, results.get(name), strict[name]))
        else:
            expect(not results.get(name, "").startswith(("5", "unparsable", "error")), "%s: %s" % (name, results.get(name)))
    expect(healthy(), "healthz after garbage")

    # Clients that vanish mid-response.
    vanished = 0
    for how in ("close", "reset", "close before reading", "pipelined then close", "half-close"):
        for _ in range(5):
            c = Conn(10)
            req = b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % big_path.encode()
            if how == "pipelined then close":
                c.send(req * 50)
                c.s.recv(1000)
            elif how == "close before reading":
                c.send(req)
            elif how == "half-close":
                c.send(req)
                c.s.shutdown(socket.SHUT_WR)
                st, _, body = c.response()
                expect(st == 200 and len(body) > 1000, "a half-closed client still gets its answer")
            else:
                c.send(req)
                c.s.recv(1024)
                if how == "reset":
                    c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            c.close()
            vanished += 1
    note("%d clients vanished mid-response" % vanished)
    expect(healthy(), "healthz after clients vanished")
    done()


def main():
    global HOST, PORT
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    u = urllib.parse.urlsplit(sys.argv[2])
    HOST, PORT = u.hostname, u.port
    assert HOST == "127.0.0.1", "hostile clients talk to 127.0.0.1 only"
    fn = globals().get("scenario_" + sys.argv[1])
    if not fn:
        print("unknown scenario %s" % sys.argv[1], file=sys.stderr)
        sys.exit(2)
    fn(*sys.argv[3:])


if __name__ == "__main__":
    main()
