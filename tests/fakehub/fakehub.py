#!/usr/bin/python3
"""fakehub: a fake Hugging Face Hub + ModelScope upstream for hubmirror's tests.

It serves, from a deterministic JSON spec of repositories, the HTTP APIs that
the mirror talks to upstream, as described in docs/protocols/huggingface.md and
docs/protocols/modelscope.md, including the real Hub's awkward answers (relative
307s, signed 302s to another host, Xet headers, 401 for unknown repos, ...).

Two listening hosts: the API host (127.0.0.1) and a "CDN" host (127.0.0.2, a
different loopback address so it really is another host).  Tests drive it
through a control API under /_fake/ (stats, fault injection, new commits).
Standard library only; starts instantly (content and hashes are lazy).

    python3 tests/fakehub/fakehub.py [--repos spec.json] [--ready-file F] ...

After binding it prints one JSON line {"api": URL, "cdn": URL, "pid": N}.
See tests/fakehub/README.md.
"""

import argparse
import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # keep the source tree clean of __pycache__

import cdn  # noqa: E402
import demo  # noqa: E402
from content import BlobStore  # noqa: E402
from httpbase import Handler  # noqa: E402
from repos import SpecError, World  # noqa: E402
from state import Config, Faults, Stats  # noqa: E402

RATE_QUOTAS = {"api": 500, "resolvers": 3000}
RATE_WINDOW = 300


class App:
    """Everything the request handlers share."""

    def __init__(self, world, config, quiet):
        self.world = world
        self.config = config
        self.quiet = quiet
        self.stats = Stats()
        self.faults = Faults()
        self.secret = secrets.token_bytes(32)
        self.api_base = self.cdn_base = None
        self._rate = {}
        self._rate_lock = threading.Lock()

    def sign(self, path, expires, ttl):
        msg = ("%s\n%s\n%s" % (path, expires, ttl)).encode()
        return hmac.new(self.secret, msg, hashlib.sha256).hexdigest()

    def cdn_url(self, repo, f):
        return cdn.signed_url(self, repo, f)

    def rate(self, bucket):
        """(remaining, seconds to reset, quota) of a fixed 300 s window; never enforced."""
        now = time.time()
        with self._rate_lock:
            start, used = self._rate.get(bucket, (now, 0))
            if now - start >= RATE_WINDOW:
                start, used = now, 0
            used += 1
            self._rate[bucket] = (start, used)
        quota = RATE_QUOTAS[bucket]
        return max(0, quota - used), max(1, int(start + RATE_WINDOW - now)), quota


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repos", help="repository spec (JSON); default: the built-in demo set")
    p.add_argument("--tokens", help="JSON file {token: {approved: [...], read: [...]}}")
    p.add_argument("--host", default="127.0.0.1", help="API host address")
    p.add_argument("--cdn-host", default="127.0.0.2", help="CDN host address")
    p.add_argument("--port", type=int, default=0, help="API port (0 = ephemeral)")
    p.add_argument("--cdn-port", type=int, default=0, help="CDN port (0 = ephemeral)")
    p.add_argument("--ready-file", help="write the ready JSON here (atomically)")
    p.add_argument("--cache-dir", help="where hashes of big blobs are cached")
    p.add_argument("--tree-page-size", type=int, help="tree/listing page size (default 1000)")
    p.add_argument("--cdn-expires", type=int, help="lifetime of signed CDN URLs, seconds")
    p.add_argument("--ms-cdn-threshold", type=int,
                   help="ModelScope LFS files at least this big redirect to the CDN")
    p.add_argument("--prehash", action="store_true",
                   help="hash every file in a background thread after startup (big specs)")
    p.add_argument("--xet", action="store_true",
                   help="state the Xet hashes of LFS files (xetHash, X-Xet-Hash): computed, a second a 3 MB")
    p.add_argument("--xet-lie", metavar="PATH",
                   help="state a wrong Xet hash for the file at PATH (in every repo): a mirror must refuse it")
    p.add_argument("--quiet", action="store_true", help="no request log on stderr")
    return p.parse_args(argv)


def load_spec(args):
    spec = demo.spec()
    if args.repos:
        with open(args.repos) as f:
            spec = json.load(f)
    if args.tokens:
        with open(args.tokens) as f:
            tokens = json.load(f)
        spec.setdefault("tokens", {}).update(tokens.get("tokens", tokens))
    return spec


def make_server(app, host, port, role):
    server = ThreadingHTTPServer((host, port), Handler, bind_and_activate=False)
    server.request_queue_size = 128
    server.allow_reuse_address = True
    server.daemon_threads = True
    server.server_bind()
    server.server_activate()
    server.app = app
    server.role = role
    return server


def write_ready(path, line):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(line + "\n")
    os.replace(tmp, path)


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    own_cache = args.cache_dir is None
    cache_dir = tempfile.mkdtemp(prefix="fakehub-cache-") if own_cache else args.cache_dir
    os.makedirs(cache_dir, exist_ok=True)
    world = World(BlobStore(cache_dir, xet=args.xet or bool(args.xet_lie), xet_lie=args.xet_lie))
    try:
        world.load(load_spec(args))
    except (OSError, ValueError, KeyError, SpecError) as e:
        sys.stderr.write("fakehub: bad spec: %s\n" % e)
        return 2
    config = Config(tree_page_size=args.tree_page_size, cdn_expires=args.cdn_expires,
                    ms_cdn_threshold=args.ms_cdn_threshold)
    app = App(world, config, args.quiet)
    api = make_server(app, args.host, args.port, "api")
    cdn_server = make_server(app, args.cdn_host, args.cdn_port, "cdn")
    app.api_base = "http://%s:%d" % api.server_address[:2]
    app.cdn_base = "http://%s:%d" % cdn_server.server_address[:2]

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
               for s in (api, cdn_server)]
    for t in threads:
        t.start()

    if args.prehash:
        threading.Thread(target=world.prehash, daemon=True).start()
    line = json.dumps({"api": app.api_base, "cdn": app.cdn_base, "pid": os.getpid()})
    print(line, flush=True)
    if args.ready_file:
        write_ready(args.ready_file, line)
    while not stop.wait(0.5):
        pass
    for s in (api, cdn_server):
        s.shutdown()
        s.server_close()
    if own_cache:
        shutil.rmtree(cache_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
