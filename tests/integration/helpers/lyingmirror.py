#!/usr/bin/python3
"""lyingmirror.py --ready-file F --mirror URL [--claim PATH=SHA256 ...] [--ignore-range]: an HTTP front for a real
mirror that lies: it forwards every GET to URL unchanged (its Range and Authorization too), except that in the JSON of a torrent's meta
(`/api/p2p/torrent/...?meta=1`, what `hubmirror mount` reads to know each file's sha256) it names the
sha256 given with --claim for PATH. A test of what an instance may trust its mirror with: the torrent
and the bytes still come from the real mirror, only the names of contents are wrong. With
--ignore-range it forwards no Range: a range request gets 200 and the whole file (as a proxy or CDN
that drops the header would answer). Writes its own base URL to the ready file."""
import argparse
import http.server
import json
import urllib.error
import urllib.request


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready-file", required=True)
    ap.add_argument("--mirror", required=True)
    ap.add_argument("--claim", action="append", default=[])
    ap.add_argument("--ignore-range", action="store_true")
    a = ap.parse_args()
    claims = dict(c.split("=", 1) for c in a.claim)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            try:
                # (the agent fetches from the mirrors it is told about, this front among them: its
                # ranges and tokens go through as they came)
                keep = ("authorization",) if a.ignore_range else ("range", "authorization")
                fwd = {k: v for k, v in self.headers.items() if k.lower() in keep}
                req = urllib.request.Request(a.mirror + self.path, headers=fwd)
                with urllib.request.urlopen(req, timeout=30) as r:
                    status, headers, body = r.status, r.headers, r.read()
            except urllib.error.HTTPError as e:
                status, headers, body = e.code, e.headers, e.read()
            if status == 200 and self.path.startswith("/api/p2p/torrent/") and "meta=1" in self.path:
                meta = json.loads(body)
                for f in meta.get("files", []):
                    if f["path"] in claims:
                        f["sha256"] = claims[f["path"]]
                body = json.dumps(meta).encode()
            self.send_response(status)
            for k, v in headers.items():
                if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(a.ready_file, "w") as f:
        f.write("http://127.0.0.1:%d\n" % srv.server_address[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
