#!/usr/bin/python3
"""ocilying.py --ready-file F --mirror URL --mode body|layer: an HTTP front for a real mirror whose
registry (/v2/) lies, for what the agent as a registry mirror may trust (t0444). Every GET and HEAD
goes to URL unchanged (its Range and Authorization too), except the manifests:

- body: a manifest's bytes are changed (a space after the JSON) and its Docker-Content-Digest is not:
  a manifest that is not the digest it is named by.
- layer: each layer's digest in a manifest is replaced by another (the sha256 of its text), and the
  manifest's digest header made to match, so the manifest is self-consistent but names layers of
  other bytes than the files'; an index points at its manifests so changed (asked by their new
  digests). A HEAD or GET of a blob by a changed digest goes to the mirror as the original digest,
  so the mirror admits it: only the agent's own check of the bytes can refuse it.

Writes its own base URL to the ready file, and the changed digests (NEW OLD per line) to F.map."""
import argparse
import hashlib
import http.server
import json
import re
import threading
import urllib.error
import urllib.request

MANIFEST = re.compile(r"^/v2/(.+)/manifests/([^/?]+)(\?.*)?$")
BLOB = re.compile(r"^/v2/(.+)/blobs/(sha256:[0-9a-f]{64})(\?.*)?$")


def digest(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready-file", required=True)
    ap.add_argument("--mirror", required=True)
    ap.add_argument("--mode", choices=["body", "layer"], required=True)
    a = ap.parse_args()
    lock = threading.Lock()
    blobs = {}  # a changed layer digest -> the original
    docs = {}  # a changed manifest's digest -> its bytes

    def fetch(method, path, headers):
        fwd = {k: v for k, v in headers.items() if k.lower() in ("range", "authorization", "host")}
        req = urllib.request.Request(a.mirror + path, headers=fwd, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def change_manifest(name, j, headers):
        for layer in j.get("layers", []):
            new = "sha256:" + hashlib.sha256(layer["digest"].encode()).hexdigest()
            with lock:
                blobs[new] = layer["digest"]
            layer["digest"] = new
        for m in j.get("manifests", []):
            st, _, body = fetch("GET", "/v2/%s/manifests/%s" % (name, m["digest"]), headers)
            if st != 200:
                continue
            sub = json.dumps(change_manifest(name, json.loads(body), headers)).encode()
            with lock:
                docs[digest(sub)] = sub
            m["digest"], m["size"] = digest(sub), len(sub)
        return j

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, head):
            path = self.path
            mm, bm = MANIFEST.match(path), BLOB.match(path)
            with lock:
                if bm and bm.group(2) in blobs:
                    path = "/v2/%s/blobs/%s%s" % (bm.group(1), blobs[bm.group(2)], bm.group(3) or "")
                kept = docs.get(mm.group(2)) if mm else None
            if kept is not None:
                status, headers, body = 200, {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}, kept
            else:
                status, headers, body = fetch("HEAD" if head and not mm else "GET", path, self.headers)
            extra = {}
            if mm and status == 200 and kept is None:
                if a.mode == "body":
                    body = body + b" "
                else:
                    body = json.dumps(change_manifest(mm.group(1), json.loads(body), self.headers)).encode()
                    extra["Docker-Content-Digest"] = digest(body)
            elif kept is not None:
                extra["Docker-Content-Digest"] = digest(body)
            self.send_response(status)
            for k, v in headers.items():
                if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server") and \
                        k not in extra:
                    self.send_header(k, v)
            for k, v in extra.items():
                self.send_header(k, v)
            length = headers.get("Content-Length") if head and not mm else None
            self.send_header("Content-Length", length if length is not None else str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            with lock, open(a.ready_file + ".map", "w") as f:
                f.write("".join("%s %s\n" % kv for kv in blobs.items()))

        def do_GET(self):
            self.answer(False)

        def do_HEAD(self):
            self.answer(True)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(a.ready_file, "w") as f:
        f.write("http://127.0.0.1:%d\n" % srv.server_address[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
