#!/usr/bin/python3
"""ondemand_bench.py - a first download through a mirror fetching on demand, against the same
download straight from the upstream, side by side in one run.

  /usr/bin/python3 bench/ondemand_bench.py [--hubmirror PATH] [--mib 1024] [--runs 3] [--rate BYTES/S]

The fake upstream serves a model with one MIB MiB file (its hashes computed before any timing). Each
run, with the page cache dropped before each step and what was written synced inside its time:
  1. curl -L of the file straight from the upstream (the Hub's redirect to its CDN) into a file;
  2. a fresh `hubmirror serve --on-demand 'hf:*'` (empty data directory), then curl of the same file
     from it into a file: the mirror lists the repo, fetches the file from upstream, hashes and
     stores it, and streams it to curl as it lands (the last byte once verified).
Both files are then read once and checked against the upstream's sha256 (outside the time). The
same pair again with curl writing to /dev/null: a client on another machine, whose disk is not the
mirror's (here both copies land on one disk, and the mirror's is the one the next client gets).
--rate caps the upstream's body rate (the fake's slow fault on its CDN host, for both paths): the
mirror node's link to the internet, rather than a loopback fake at memory speed.
Prints the best of RUNS for each and the ratio (target <= 1.1); paste into docs/benchmarks.md.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

import benchlib  # noqa: E402  (bench/ is the script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bundle_bench import drop_caches, settle  # noqa: E402  (the same cold-cache discipline)


sha256_of = benchlib.sha256_of  # (git_bench imports it from here)


def wait_file(path, proc, what):
    for _ in range(400):
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return
        if proc.poll() is not None:
            sys.exit("%s exited early" % what)
        time.sleep(0.05)
    sys.exit("%s did not start" % what)


def main():
    a, work = benchlib.args("odbench", mib=1024, runs=3, rate=0)
    spec = {"repos": [{"hub": "hf", "type": "model", "id": "bench/od",
                       "files": [{"path": "config.json", "content": "{\"bench\": true}\n"},
                                 {"path": "model.safetensors", "size": a.mib << 20, "seed": 777}]}]}
    fake, ready = benchlib.start_fakehub(work, spec)
    serve = None
    try:
        wait_file(ready, fake, "the fake upstream")
        api = json.load(open(ready))["api"]
        url = api + "/bench/od/resolve/main/model.safetensors"
        # warm the fake (it hashes the big file) and learn its sha256
        repos = json.load(urllib.request.urlopen(api + "/_fake/repos?hashes=1"))["repos"]
        files = [r for r in repos if r["id"] == "bench/od"][0]["commits"][-1]["files"]
        want = [f for f in files if f["path"] == "model.safetensors"][0]["sha256"]
        if a.rate:
            rule = json.dumps({"match": "", "host": "cdn", "kind": "slow", "rate": a.rate, "count": -1}).encode()
            urllib.request.urlopen(urllib.request.Request(api + "/_fake/faults", data=rule, method="POST")).read()
        best = {}
        out = os.path.join(work, "got.bin")
        for run in range(2 * a.runs):
            sink = out if run % 2 == 0 else "/dev/null"
            tag = "" if sink == out else ", to /dev/null"
            # 1. straight from the upstream
            settle(out)
            drop_caches()
            t = time.monotonic()
            subprocess.run(["curl", "-fsSL", "-o", sink, url], check=True)
            subprocess.run(["sync"], check=True)
            k = "curl from upstream" + tag
            best[k] = min(best.get(k, 1e9), time.monotonic() - t)
            if sink == out and sha256_of(out) != want:
                sys.exit("upstream bytes do not match")
            # 2. through a fresh mirror, on demand
            data = os.path.join(work, "data")
            settle(out, data)
            mready = os.path.join(work, "mready")
            if os.path.exists(mready):
                os.remove(mready)
            env = dict(os.environ, HUBMIRROR_DATA=data, HUBMIRROR_CONFIG="/dev/null")
            subprocess.run([a.hubmirror, "init"], env=env, check=True, stdout=subprocess.DEVNULL)
            serve = subprocess.Popen([a.hubmirror, "serve", "--listen", "127.0.0.1:0", "--ready-file", mready,
                                      "--p2p-listen", "off", "--hf-upstream", api, "--on-demand", "hf:*"],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_file(mready, serve, "serve")
            m = open(mready).read().strip()
            drop_caches()
            t = time.monotonic()
            subprocess.run(["curl", "-fsS", "-o", sink, m + "/bench/od/resolve/main/model.safetensors"], check=True)
            subprocess.run(["sync"], check=True)
            k = "curl from the mirror, on demand" + tag
            best[k] = min(best.get(k, 1e9), time.monotonic() - t)
            serve.terminate()
            serve.wait()
            serve = None
            if sink == out and sha256_of(out) != want:
                sys.exit("mirror bytes do not match")
            blob = os.path.join(data, "store", "blobs", want[:2], want)
            if not os.path.exists(blob):
                sys.exit("the mirror did not keep the content")
        size = float(a.mib)
        print("| case (%d MiB file, best of %d, caches dropped%s) | seconds | MiB/s | ratio |"
              % (a.mib, a.runs, ", upstream at %d MB/s" % (a.rate // 1000000) if a.rate else ""))
        print("|---|---|---|---|")
        for tag in ("", ", to /dev/null"):
            up = best["curl from upstream" + tag]
            for k in ("curl from the mirror, on demand" + tag, "curl from upstream" + tag):
                ratio = "%.2f (target <= 1.1)" % (best[k] / up) if not k.startswith("curl from upstream") else ""
                print("| %s | %.2f | %.0f | %s |" % (k, best[k], size / best[k], ratio))
    finally:
        benchlib.stop(serve, fake, work=work)


if __name__ == "__main__":
    main()
