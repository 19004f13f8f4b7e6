#!/usr/bin/python3
"""git_bench.py - git clone + Git LFS from the mirror against curl of the same files from it.

  /usr/bin/python3 bench/git_bench.py [--hubmirror PATH] [--mib 1024] [--runs 3]

As root (drop_caches). A model (one MIB MiB LFS file, another of 20 MiB, a 2 MiB regular tokenizer, small regular files) is
synced from the fake upstream into a mirror, which then serves it. Side by side, page cache dropped
before each, best of RUNS:

  curl:       every file fetched from the mirror's resolve URLs with curl, one after the other (as a
              script does), then every byte read once (sha256, compared with upstream's);
  git clone:  `git clone` with git-lfs installed (smudge: the large files through the LFS batch API
              and the mirror's object URLs), then every byte of the checkout read once likewise;
  git clone, the repository built: the same, the mirror's git repository already built (the first
              clone of a snapshot builds it: git fast-import of the regular files).

Prints a table for docs/benchmarks.md; the target is git clone <= 1.3x curl.
"""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import benchlib  # noqa: E402  (bench/ is the script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bundle_bench import drop_caches, settle  # noqa: E402  (the same cold-cache discipline)
from ondemand_bench import sha256_of, wait_file  # noqa: E402


def check_all(d, files, what):
    for f in files:
        if sha256_of(os.path.join(d, f["path"])) != f["sha256"]:
            sys.exit("%s: %s: not upstream's bytes (%d bytes here, %d upstream)"
                     % (what, f["path"], os.path.getsize(os.path.join(d, f["path"])), f["size"]))


def main():
    a, work = benchlib.args("gitbench", mib=1024, runs=3)
    spec = {"repos": [{"hub": "hf", "type": "model", "id": "bench/git",
                       "files": [{"path": "config.json", "content": "{\"bench\": true}\n"},
                                 {"path": "generation_config.json", "content": "{\"max_length\": 32}\n"},
                                 {"path": "tokenizer.json", "size": 2 << 20, "seed": 779, "lfs": False},
                                 {"path": "model-00002.safetensors", "size": 20 << 20, "seed": 778},
                                 {"path": "model.safetensors", "size": a.mib << 20, "seed": 777}]}]}
    fake, ready = benchlib.start_fakehub(work, spec)
    serve = None
    home = os.path.join(work, "home")
    os.makedirs(home)
    genv = dict(os.environ, HOME=home, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    try:
        wait_file(ready, fake, "the fake upstream")
        api = json.load(open(ready))["api"]
        data = os.path.join(work, "data")
        env = dict(os.environ, HUBMIRROR_DATA=data, HUBMIRROR_CONFIG="/dev/null", HUBMIRROR_HF_UPSTREAM=api)
        subprocess.run([a.hubmirror, "add", "hf:bench/git"], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([a.hubmirror, "sync"], env=env, check=True, stdout=subprocess.DEVNULL)
        repos = json.load(urllib.request.urlopen(api + "/_fake/repos"))["repos"]
        r = [x for x in repos if x["id"] == "bench/git"][0]
        files = [c for c in r["commits"] if c["id"] == r["sha"]][0]["files"]
        total = sum(f["size"] for f in files)
        mready = os.path.join(work, "mready")
        serve = subprocess.Popen([a.hubmirror, "serve", "--listen", "127.0.0.1:0", "--ready-file", mready,
                                  "--p2p-listen", "off"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_file(mready, serve, "serve")
        m = open(mready).read().strip()
        subprocess.run(["git", "lfs", "install", "--skip-repo"], env=genv, check=True, stdout=subprocess.DEVNULL)
        best = {}
        out = os.path.join(work, "out")
        for run in range(a.runs):
            # 1. curl, file after file
            settle(out)
            os.makedirs(out)
            drop_caches()
            t = time.monotonic()
            for f in files:
                p = os.path.join(out, f["path"])
                os.makedirs(os.path.dirname(p), exist_ok=True)
                subprocess.run(["curl", "-fsS", "-o", p, "%s/bench/git/resolve/main/%s" % (m, f["path"])], check=True)
            check_all(out, files, "curl")
            best["curl"] = min(best.get("curl", 1e9), time.monotonic() - t)
            # 2. git clone, the repository built from nothing first (the first clone of a snapshot), then
            # again with it built
            for label, fresh in (("git clone + LFS (first clone: the repository is built)", True),
                                 ("git clone + LFS", False)):
                settle(out)
                if fresh:
                    shutil.rmtree(os.path.join(data, "git"), ignore_errors=True)
                drop_caches()
                t = time.monotonic()
                subprocess.run(["git", "clone", "-q", m + "/bench/git", out], env=genv, check=True)
                check_all(out, files, label)
                best[label] = min(best.get(label, 1e9), time.monotonic() - t)
        print("| case (%d MiB model: %d files, best of %d, caches dropped, every byte read back) | seconds | MiB/s | ratio |"
              % (total >> 20, len(files), a.runs))
        print("|---|---|---|---|")
        for k in ("curl", "git clone + LFS", "git clone + LFS (first clone: the repository is built)"):
            ratio = "%.2f (target <= 1.3)" % (best[k] / best["curl"]) if k != "curl" else ""
            print("| %s | %.2f | %.0f | %s |" % (k, best[k], total / 1048576.0 / best[k], ratio))
    finally:
        benchlib.stop(serve, fake, work=work)


if __name__ == "__main__":
    main()
