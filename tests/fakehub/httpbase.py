"""HTTP plumbing shared by every route: request parsing, answers, ranges, faults.

One Handler class serves both hosts (the server object says which: 'api' or
'cdn').  Route modules call the send_* helpers, which always set a correct
Content-Length (keep-alive), skip the body on HEAD, count bytes in the stats
and apply the body faults (truncate / corrupt / reset / slow rate).  A route
that has answered raises Answered to unwind.
"""

import hashlib
import json
import re
import socket
import struct
import sys
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

from state import BODY_KINDS, START_KINDS

JSON_TYPE = "application/json; charset=utf-8"
EXPOSE = ("X-Repo-Commit,X-Request-Id,X-Error-Code,X-Error-Message,X-Total-Count,ETag,Link,"
          "Accept-Ranges,Content-Range,X-Linked-Size,X-Linked-ETag,X-Xet-Hash")


class Answered(Exception):
    """Raised after a complete answer was sent, to leave the route."""


class AbortConnection(Exception):
    """Raised after the connection was torn down on purpose (reset fault)."""


def truthy(value):
    return str(value).lower() in ("1", "true", "yes", "on")


def parse_range(header, size):
    """(start, end) for a single-range header, '416' if unsatisfiable, None to ignore."""
    m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", header or "")
    if not m or m.groups() == ("", ""):
        return None  # absent, malformed or multi-range: send the whole body
    first, last = m.groups()
    if first == "":
        n = int(last)
        if n == 0 or size == 0:
            return "416"
        return max(0, size - n), size
    start = int(first)
    if start >= size:
        return "416"  # includes any range on an empty file, like the Hub
    end = size if last == "" else min(int(last) + 1, size)
    if end <= start:
        return None
    return start, end


def weak_etag(body):
    return 'W/"%x-%s"' % (len(body), hashlib.sha1(body).hexdigest()[:27])


def etag_matches(header, etag):
    if not header:
        return False
    bare = etag[2:] if etag.startswith("W/") else etag
    for item in header.split(","):
        item = item.strip()
        if item == "*" or (item[2:] if item.startswith("W/") else item) == bare:
            return True
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Without TCP_NODELAY, the second answer on a keep-alive connection waits ~40 ms for the
    # client's delayed ACK (Nagle): a sync of thousands of small files would measure that, not us.
    disable_nagle_algorithm = True
    server_version = "fakehub/1.0"
    sys_version = ""

    def version_string(self):
        return self.server_version

    # ---- entry points ----------------------------------------------------
    def do_GET(self):
        self.dispatch()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_OPTIONS = do_GET

    def log_message(self, fmt, *args):
        if not self.server.app.quiet:
            sys.stderr.write("fakehub %s %s - %s\n" % (self.server.role, self.address_string(),
                                                       fmt % args))

    def dispatch(self):
        self.app = self.server.app
        self.role = self.server.role
        split = urlsplit(self.path)
        self.raw_path = split.path or "/"
        self.raw_query = split.query
        self.query = parse_qs(split.query, keep_blank_values=True)
        self.segments = self.raw_path.split("/")[1:]
        if len(self.segments) > 1 and self.segments[-1] == "":
            self.segments.pop()
        self.entry = None
        self.sent_status = None
        self.throttle = None
        try:
            self.body = self.read_body()
            self.route()
        except (Answered, AbortConnection):
            pass
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        except Exception:
            traceback.print_exc()
            if self.sent_status is None:
                self.send_json(500, {"error": "fakehub internal error"}, etag=False)
            else:
                self.close_connection = True

    def route(self):
        import control
        if self.raw_path.startswith("/_fake/") or self.raw_path == "/_fake":
            control.handle(self)
            return
        kind = self.route_kind()
        self.entry = self.app.stats.begin(self.command, self.path, self.role, kind,
                                          self.has_auth(), self.headers.get("Range"))
        self.kind = kind
        self.start_faults()
        if self.role == "cdn":
            import cdn
            cdn.handle(self)
        elif self.raw_path.startswith("/api/v1/"):
            import msapi
            msapi.handle(self)
        else:
            import hfapi
            hfapi.handle(self)

    def route_kind(self):
        p = self.raw_path
        if self.role == "cdn":
            return "cdn"
        if p.startswith("/api/v1/"):
            return "ms-file" if self.segments[-1] == "repo" else "ms-api"
        if p.startswith("/api/resolve-cache/") or "/resolve/" in p:
            return "resolve"
        if p.startswith("/api/"):
            return "api"
        if "/raw/" in p:
            return "raw"
        return "other"

    def has_auth(self):
        return bool(self.headers.get("Authorization")) or "m_session_id=" in (
            self.headers.get("Cookie") or "")

    # ---- request helpers -------------------------------------------------
    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def q(self, name, default=None):
        values = self.query.get(name)
        return values[0] if values else default

    def json_body(self):
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            self.send_json(400, {"error": "invalid JSON body"}, etag=False)
            raise Answered()

    @staticmethod
    def unq(segment):
        return unquote(segment)

    # ---- faults ----------------------------------------------------------
    def start_faults(self):
        rule = self.app.faults.take(self.path, self.role, self.command, START_KINDS)
        if rule is None:
            return
        if rule.kind == "slow":
            time.sleep(float(rule.get("seconds", 0 if rule.get("rate") else 1)))
            if rule.get("rate"):
                self.throttle = float(rule.get("rate"))
            return
        if rule.kind == "ratelimit":
            after = int(rule.get("retry_after", 1))
            headers = [("Retry-After", str(after)), ("RateLimit", '"api";r=0;t=%d' % after),
                       ("RateLimit-Policy", '"fixed window";"api";q=500;w=300')]
            self.send_json(429, {"error": "You have exceeded our hourly quotas for action 'api'."
                                 " We invite you to retry later."}, headers, etag=False)
            raise Answered()
        status = int(rule.get("status", 500))
        body = rule.get("body")
        headers = list((rule.get("headers") or {}).items())
        if body is None:
            self.send_json(status, {"error": "injected fault %d" % status}, headers, etag=False)
        else:
            self.send_bytes(status, body.encode(), headers, "text/plain; charset=utf-8")
        raise Answered()

    def take_fault(self, kinds):
        return self.app.faults.take(self.path, self.role, self.command, kinds)

    # ---- answers ---------------------------------------------------------
    def begin(self, status, headers, length=None):
        """Send the status line and headers (plus the common ones)."""
        self.send_response(status)
        self.sent_status = status
        if self.entry is not None:
            self.entry["status"] = status
        names = {k.lower() for k, _ in headers}
        if self.role == "api":
            self.send_header("X-Request-Id", "Root=1-%s" % uuid.uuid4().hex[:24])
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Access-Control-Expose-Headers", EXPOSE)
            if "vary" not in names:
                self.send_header("Vary", "Origin")
        for k, v in headers:
            self.send_header(k, v)
        if length is not None and "content-length" not in names:
            self.send_header("Content-Length", str(length))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()

    def send_bytes(self, status, body, headers=(), content_type="text/plain; charset=utf-8",
                   content=False):
        headers = list(headers)
        if content_type and not any(k.lower() == "content-type" for k, _ in headers):
            headers.append(("Content-Type", content_type))
        self.begin(status, headers, len(body))
        if self.command != "HEAD":
            self.write_body(iter([body]), len(body), status, content)

    def send_json(self, status, obj, headers=(), etag=True):
        body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
        headers = list(headers)
        if etag and status == 200:
            tag = weak_etag(body)
            headers.append(("ETag", tag))
            if etag_matches(self.headers.get("If-None-Match"), tag):
                self.begin(304, [(k, v) for k, v in headers if k.lower() != "content-type"])
                return
        self.send_bytes(status, body, headers, JSON_TYPE)

    def send_redirect(self, status, location, headers=()):
        text = {301: "Moved Permanently", 302: "Found", 307: "Temporary Redirect"}[status]
        body = ("%s. Redirecting to %s" % (text, location)).encode()
        self.send_bytes(status, body, [("Location", location)] + list(headers))

    def send_blob(self, blob, headers, content_type="application/octet-stream"):
        """A file's bytes with Range support: 200, 206 or 416."""
        size = blob.size
        status, start, end = 200, 0, size
        headers = list(headers) + [("Content-Type", content_type)]
        rng = self.headers.get("Range")
        if rng and self.command in ("GET", "HEAD") and not self.take_fault(("ignore_range",)):
            r = parse_range(rng, size)
            if r == "416":
                body = b""
                self.send_bytes(416, body, [(k, v) for k, v in headers if k.lower() not in (
                    "content-type", "etag")] + [("Content-Range", "bytes */%d" % size)],
                    "text/plain; charset=utf-8")
                return
            if r:
                status, (start, end) = 206, r
                headers.append(("Content-Range", "bytes %d-%d/%d" % (start, end - 1, size)))
        self.begin(status, headers, end - start)
        if self.command != "HEAD":
            self.write_body(blob.iter_range(start, end), end - start, status, True)

    def write_body(self, chunks, length, status, content):
        """Write a body of `length` bytes, applying body faults to 200/206 answers."""
        fault = self.take_fault(BODY_KINDS) if status in (200, 206) and length > 0 else None
        limit = length
        if fault and fault.kind in ("truncate", "reset"):
            limit = min(length, int(fault.get("bytes", length // 2)))
        corrupt_at = int(fault.get("offset", 0)) if fault and fault.kind == "corrupt" else -1
        sent = 0
        for chunk in chunks:
            if sent >= limit:
                break
            chunk = chunk[:limit - sent]
            if sent <= corrupt_at < sent + len(chunk):
                chunk = bytearray(chunk)
                chunk[corrupt_at - sent] ^= 0xFF
            self.write_chunk(chunk)
            sent += len(chunk)
            self.app.stats.add_bytes(self.role, len(chunk), content)
        if fault and fault.kind == "truncate":
            self.close_connection = True
            self.wfile.flush()
        elif fault and fault.kind == "reset":
            self.abort_reset()

    def write_chunk(self, chunk):
        if not self.throttle:
            self.wfile.write(chunk)
            return
        step = max(1, int(self.throttle / 20))
        view = memoryview(chunk)
        for off in range(0, len(view), step):
            self.wfile.write(view[off:off + step])
            time.sleep(len(view[off:off + step]) / self.throttle)

    def abort_reset(self):
        """Tear the connection down with a TCP reset (SO_LINGER 0)."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.rfile.close()
            self.connection.close()
        except OSError:
            pass
        raise AbortConnection()
