#!/usr/bin/python3
"""benchlib.py - what the benchmarks here share: the common part of their command lines (--hubmirror,
the build's binary), the fake upstream started on a spec, a file's sha256, and stopping what a run
started (its processes, then its work folder)."""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parser():
    """An ArgumentParser that already takes --hubmirror (default: this checkout's build)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--hubmirror", default=os.path.join(TOP, "build", "mirror", "cli", "hubmirror"))
    return ap


def args(name, **ints):
    """A run's command line, parsed: --hubmirror and an int option per keyword (big_mib=2048 is
    --big-mib, 2048 by default), with a fresh work folder (hm-NAME-...) to do it in."""
    ap = parser()
    for k, v in ints.items():
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    return ap.parse_args(), tempfile.mkdtemp(prefix="hm-%s-" % name)


def start_fakehub(work, spec):
    """tests/fakehub serving spec (written to work/spec.json; its cache in work/fakecache). Returns the
    process and the file it writes its addresses to once it listens."""
    with open(os.path.join(work, "spec.json"), "w") as f:
        json.dump(spec, f)
    ready = os.path.join(work, "ready")
    fake = subprocess.Popen(["/usr/bin/python3", os.path.join(TOP, "tests", "fakehub", "fakehub.py"),
                             "--repos", os.path.join(work, "spec.json"), "--ready-file", ready, "--quiet",
                             "--cache-dir", os.path.join(work, "fakecache")], stdout=subprocess.DEVNULL)
    return fake, ready


def wait_for(path, seconds=60):
    """Wait until the file at path exists and is not empty (a server's ready file); False on timeout."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if os.path.exists(path) and os.path.getsize(path):
            return True
        time.sleep(0.05)
    return False


def sha256_of(path):
    """The file's SHA-256, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def stop(*procs, work=None):
    """Terminate each process a run started (None: it never started), reap them, then remove work."""
    for p in procs:
        if p is not None:
            p.terminate()
    for p in procs:
        if p is not None:
            p.wait()
    if work:
        shutil.rmtree(work, ignore_errors=True)
