#!/usr/bin/python3
"""bundle_bench.py - air-gapped bundles against plain tar, side by side in one run.

  /usr/bin/python3 bench/bundle_bench.py [--hubmirror PATH] [--gib 2] [--runs 2]

Builds a data directory with a GIB GiB model (as serve_bench.py does), then, with each step's
earlier output deleted outside its time, the page cache dropped before it and the written files
synced inside its time (the disk is part of the real path):
  1. `hubmirror export` of the model vs `tar -cf` of the same stored files;
  2. `hubmirror import` of that bundle into an empty data directory (every byte hashed and checked,
     fsynced, the catalog written, the torrent made) vs `tar -xf` of the plain archive (checks
     nothing) followed by reading every extracted byte once (sha256sum), as a verifying user would.
Prints the best of RUNS for each and the ratios (target <= 1.2); paste into docs/benchmarks.md.
"""
import os
import shutil
import subprocess
import sys
import time

import benchlib  # noqa: E402  (bench/ is the script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import serve_bench  # noqa: E402  (make_data)


def drop_caches():
    subprocess.run(["sync"], check=True)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def settle(*paths):
    """Delete a step's earlier output outside its time, and let the disk settle: on a filesystem
    mounted with discard (this machine's), freeing 2 GiB sends discards that slow whatever runs
    next, so a step must not pay for deleting what the step before it wrote."""
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        elif os.path.exists(p):
            os.remove(p)
    subprocess.run(["sync"], check=True)
    time.sleep(2)


def timed(cmd, cwd=None, clean=()):
    """Seconds for cmd from a cold page cache until what it wrote is on disk (sync inside the time:
    otherwise whichever runs next pays for the other's writeback)."""
    settle(*clean)
    drop_caches()
    t = time.monotonic()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["sync"], check=True)
    return time.monotonic() - t


def main():
    a, work = benchlib.args("bundlebench", gib=2, runs=2)
    try:
        data = os.path.join(work, "data")
        serve_bench.make_data(a.hubmirror, data, a.gib)
        blobs = os.path.join(data, "store", "blobs")
        rels = [os.path.relpath(os.path.join(d, f), blobs) for d, _, fs in os.walk(blobs) for f in fs]
        bundle, plain = os.path.join(work, "b.tar"), os.path.join(work, "p.tar")
        best = {}
        for _ in range(a.runs):
            for k, cmd, cwd, out in (("export", [a.hubmirror, "export", "--data", data, "--output", bundle, "hf:bench/big"], None, bundle),
                                     ("tar -c", ["tar", "-cf", plain] + rels, blobs, plain)):
                best[k] = min(best.get(k, 1e9), timed(cmd, cwd, (out,)))
            dst, out = os.path.join(work, "imported"), os.path.join(work, "untarred")
            best["import"] = min(best.get("import", 1e9), timed([a.hubmirror, "import", "--data", dst, bundle], None, (dst,)))
            settle(out)
            os.makedirs(out)
            drop_caches()
            t = time.monotonic()
            subprocess.run(["tar", "-xf", plain], cwd=out, check=True)
            subprocess.run(["sync"], check=True)  # import fsyncs each content: so must the peer
            subprocess.run(["sha256sum"] + rels, cwd=out, check=True, stdout=subprocess.DEVNULL)
            best["tar -x + sha256sum"] = min(best.get("tar -x + sha256sum", 1e9), time.monotonic() - t)
        size = os.path.getsize(bundle) / 1048576.0
        print("| case (%d GiB model, best of %d, caches dropped) | seconds | MiB/s | ratio |" % (a.gib, a.runs))
        print("|---|---|---|---|")
        for k, peer in (("export", "tar -c"), ("tar -c", None), ("import", "tar -x + sha256sum"), ("tar -x + sha256sum", None)):
            ratio = "%.2f (target <= 1.2)" % (best[k] / best[peer]) if peer else ""
            print("| %s | %.2f | %.0f | %s |" % (k, best[k], size / best[k], ratio))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
