#!/usr/bin/python3
"""minitracker.py --listen IP:PORT: a BitTorrent tracker for benchmarks (BEP 3, compact peers of BEP 23),
for torrents the mirror's own tracker does not serve (swarm_bench.py's v1 torrent for transmission,
which cannot read hybrid torrents). Every info-hash is accepted, peers expire after 5 minutes, the
announce interval is 10 s. Not for anything but a bench's closed network."""
import argparse
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PEERS = {}      # info_hash bytes -> {(ip, port): last seen}
LOCK = threading.Lock()


def bencode(v):
    if isinstance(v, int):
        return b"i%de" % v
    if isinstance(v, bytes):
        return b"%d:%s" % (len(v), v)
    if isinstance(v, str):
        return bencode(v.encode())
    if isinstance(v, dict):
        return b"d" + b"".join(bencode(k) + bencode(v[k]) for k in sorted(v)) + b"e"
    raise TypeError(type(v))


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query, keep_blank_values=True, encoding="latin-1")
        try:
            ih = q["info_hash"][0].encode("latin-1")
            port = int(q["port"][0])
        except (KeyError, ValueError):
            self.answer({"failure reason": "info_hash and port wanted"})
            return
        me = (self.client_address[0], port)
        now = time.monotonic()
        with LOCK:
            swarm = PEERS.setdefault(ih, {})
            if q.get("event", [""])[0] == "stopped":
                swarm.pop(me, None)
            else:
                swarm[me] = now
            for p in [p for p, t in swarm.items() if now - t > 300]:
                del swarm[p]
            others = [p for p in swarm if p != me][:200]
        peers = b"".join(socket.inet_aton(ip) + struct.pack(">H", pt) for ip, pt in others)
        self.answer({"interval": 10, "min interval": 2, "peers": peers})

    def answer(self, d):
        body = bencode(d)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    a = ap.parse_args()
    host, port = a.listen.rsplit(":", 1)
    ThreadingHTTPServer((host, int(port)), Handler).serve_forever()


if __name__ == "__main__":
    main()
