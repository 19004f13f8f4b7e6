#!/usr/bin/python3
"""slowproxy.py --mirror URL --port N --rate BYTES_PER_S [--ready-file F]: an HTTP front for a real
mirror on 127.0.0.1:N that sends every answer body at most at RATE (each connection on its own), so
that a download through it takes long enough to be cut: a test kills it (-9) in the middle and starts
it again on the same port, as a mirror restarting would. The client's Host header goes through, so
the URLs the mirror writes (a torrent's web seed and tracker) point back here. Writes its own base URL
to the ready file once listening. With --hold-after BYTES --hold-file F, once the bodies of all its
answers together have sent BYTES, every answer waits until F exists before its next chunk (a mirror
that has sent part of a file and is slow to send the rest, for as long as a test needs)."""
import argparse
import http.client
import http.server
import os
import socketserver
import threading
import time
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rate", type=int, required=True)
    ap.add_argument("--ready-file")
    ap.add_argument("--hold-after", type=int)
    ap.add_argument("--hold-file")
    a = ap.parse_args()
    up = urllib.parse.urlsplit(a.mirror)
    total = [0]
    lock = threading.Lock()

    def hold(n):
        with lock:
            total[0] += n
            held = a.hold_after is not None and total[0] >= a.hold_after
        while held and not os.path.exists(a.hold_file):
            time.sleep(0.05)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def forward(self, head):
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "accept-encoding")}
            conn.request("HEAD" if head else "GET", self.path, headers=headers)
            r = conn.getresponse()
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "keep-alive"):
                    self.send_header(k, v)
            self.end_headers()
            if head:
                conn.close()
                return
            start, sent = time.monotonic(), 0
            while True:
                chunk = r.read(16384)
                if not chunk:
                    break
                hold(len(chunk))
                self.wfile.write(chunk)
                sent += len(chunk)
                ahead = sent / a.rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
            conn.close()

        def do_GET(self):
            self.forward(False)

        def do_HEAD(self):
            self.forward(True)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    srv = Server(("127.0.0.1", a.port), Handler)
    if a.ready_file:
        with open(a.ready_file, "w") as f:
            f.write("http://127.0.0.1:%d" % a.port)
    srv.serve_forever()


if __name__ == "__main__":
    main()
