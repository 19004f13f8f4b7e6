#!/usr/bin/python3
"""mount_bench.py - what an ML engineer waits for: `hubmirror mount` against curl from the mirror.

  /usr/bin/python3 bench/mount_bench.py [--hubmirror PATH] [--mib 512]

As root (FUSE). One model (config.json, a tokenizer and one big weights file) is synced from the fake
upstream; `hubmirror serve` runs on loopback. Side by side, in one run:

  curl:  GET every file from the mirror's resolve URLs (what HF_ENDPOINT clients do), to local disk;
  mount: `hubmirror mount` (returns once the files are visible), then read config.json, then the
         last MiB of the weights (what a loader's header/index read looks like), then every byte.

Prints a table for docs/benchmarks.md.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


def start(cmd, ready, env):
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(400):
        if os.path.exists(ready) and os.path.getsize(ready):
            return p
        time.sleep(0.025)
    sys.exit("did not start: %s" % cmd[:3])


def timed(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def read_all(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hubmirror", default=os.path.join(TOP, "build", "mirror", "cli", "hubmirror"))
    ap.add_argument("--mib", type=int, default=512)
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        sys.exit("mount_bench.py mounts with FUSE: run it as root, with /dev/fuse")
    work = tempfile.mkdtemp(prefix="hm-mountbench-")
    env = dict(os.environ, HUBMIRROR_DATA=os.path.join(work, "data"))
    spec = os.path.join(work, "spec.json")
    json.dump({"repos": [{"hub": "hf", "type": "model", "id": "bench/model", "files": [
        {"path": "config.json", "content": "{\"bench\": true}\n"},
        {"path": "tokenizer.json", "size": 2 << 20, "seed": 2},
        {"path": "model.safetensors", "size": a.mib << 20, "seed": 1}]}]}, open(spec, "w"))
    procs, mnt = [], os.path.join(work, "mnt")
    try:
        procs.append(start([sys.executable, os.path.join(TOP, "tests", "fakehub", "fakehub.py"), "--quiet",
                            "--ready-file", os.path.join(work, "fake"), "--repos", spec], os.path.join(work, "fake"), env))
        env["HUBMIRROR_HF_UPSTREAM"] = json.load(open(os.path.join(work, "fake")))["api"]
        subprocess.run([a.hubmirror, "add", "hf:bench/model"], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([a.hubmirror, "sync"], env=env, check=True, stdout=subprocess.DEVNULL)
        procs.append(start([a.hubmirror, "serve", "--listen", "127.0.0.1:0", "--p2p-listen", "127.0.0.1:0",
                            "--ready-file", os.path.join(work, "url")], os.path.join(work, "url"), env))
        m = open(os.path.join(work, "url")).read().strip()
        rows = []

        dl = os.path.join(work, "curl")
        os.makedirs(dl)
        t_curl = timed(lambda: [subprocess.run(["curl", "-fsS", "-o", os.path.join(dl, f),
                                                "%s/bench/model/resolve/main/%s" % (m, f)], check=True)
                                for f in ("config.json", "tokenizer.json", "model.safetensors")])
        rows.append(("curl from the mirror: every file to disk", t_curl))

        os.makedirs(mnt)
        t_mount = timed(lambda: subprocess.run([a.hubmirror, "mount", "--mirror", m, "--cache", os.path.join(work, "cache"),
                                                "--no-hf-cache", "--listen", "127.0.0.1:0", "hf:bench/model", mnt],
                                               env=env, check=True, stdout=subprocess.DEVNULL))
        rows.append(("mount: the command returns, files listed", t_mount))
        rows.append(("mount: then read config.json", timed(lambda: read_all(os.path.join(mnt, "config.json")))))

        def tail():
            with open(os.path.join(mnt, "model.safetensors"), "rb") as f:
                f.seek(-(1 << 20), os.SEEK_END)
                f.read()
        rows.append(("mount: then read the last MiB of the weights", timed(tail)))
        rows.append(("mount: then read every byte of the weights", timed(lambda: read_all(os.path.join(mnt, "model.safetensors")))))
        same = subprocess.run(["cmp", os.path.join(mnt, "model.safetensors"), os.path.join(dl, "model.safetensors")]).returncode == 0
        total = sum(r[1] for r in rows[1:])
        print("a %d MiB model on loopback (2 cores); bytes identical: %s" % (a.mib + 2, "yes" if same else "NO"))
        print()
        print("| step | seconds |")
        print("|---|---|")
        for name, secs in rows:
            print("| %s | %.3f |" % (name, secs))
        print("| mount: all of the above | %.3f |" % total)
        print()
        print("ratio mount (everything) / curl: %.2f" % (total / t_curl))
    finally:
        subprocess.run([a.hubmirror, "umount", mnt], stderr=subprocess.DEVNULL)
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
