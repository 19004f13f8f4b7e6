#!/usr/bin/python3
"""loader_bench.py - model loaders through a mount against the same loaders on local disk.

  /usr/bin/python3 bench/loader_bench.py [--hubmirror PATH] [--mib 512] [--shards 4] [--gguf-mib 256] [--runs 4]

As root (FUSE). A checkpoint of --shards safetensors shards (valid headers over generated tensors, --mib in
all; --shards 160 is a big model's layout) and a GGUF file (--gguf-mib) are synced from the fake upstream; `hubmirror serve` runs on
loopback. The loaders are bench/st_loader.py: safetensors' load_file (mmap, header, every tensor copied
out in file order; 4 threads, one shard at a time each) and llama.cpp's mmap pattern over a GGUF file (a
page fault per page, in order). Side by side, in one run; the local side and the mount side take turns
at going first (an even --runs: each goes first in half of them):

  fresh:  curl fetches the shards in parallel from the mirror to local disk, then the loader reads
          them there (page cache dropped first)  vs  `hubmirror mount` on an agent with an empty cache
          (started untimed, as systemd would), then the loader through the mount: loading overlaps
          fetching (the mount fetches the shards the checkpoint's index names from the start, while
          the loader starts; a second row has the mount with --prefetch none: its reads alone fetch);
  cold:   the loader on local disk, page cache dropped  vs  the loader through the mount of a snapshot
          the agent holds whole, page cache dropped;
  warm:   the same again, page cache warm (a second load).
  The GGUF reader the same way (fresh and cold).

Every byte curl fetched is read by the loader once; the loaders' checksums must agree. The checkpoint
and the GGUF file are two repos (a mount of the checkpoint prefetches its shards, never the GGUF
file). Prints a table for docs/benchmarks.md with the medians (of an even count, the mean of the middle two) and the ratios.
"""
import base64
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from statistics import median  # of an even count, the mean of the middle two

import benchlib  # noqa: E402  (bench/ is the script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bundle_bench import settle  # noqa: E402
from mount_bench import drop_caches, mirror_up, stop  # noqa: E402

LOADER = os.path.join(HERE, "st_loader.py")


def safetensors_head(size, tensors, first=0):
    """A safetensors header for a file of size bytes holding `tensors` F16 tensors over its data, named
    model.layers.N.weight from N = first on."""

    def body(hlen):
        data = size - 8 - hlen
        per = (data // tensors) // 2 * 2
        hdr, at = {"__metadata__": {"format": "pt"}}, 0
        for k in range(tensors):
            end = at + per if k < tensors - 1 else data
            hdr["model.layers.%d.weight" % (first + k)] = {"dtype": "F16", "shape": [(end - at) // 2], "data_offsets": [at, end]}
            at = end
        return json.dumps(hdr, separators=(",", ":")).encode()

    n = len(body(0)) + 64  # room for the offsets' digits, then 8-aligned as safetensors writes it
    n += (8 - n % 8) % 8
    b = body(n)
    assert len(b) <= n
    return struct.pack("<Q", n) + b.ljust(n, b" ")


def gguf_head():
    """A GGUF header's first bytes (magic, version, counts): enough to look like one."""
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 0)


def load(mode, files):
    t = time.monotonic()
    out = subprocess.run([sys.executable, LOADER, mode] + files, check=True, capture_output=True, text=True).stdout
    return time.monotonic() - t, json.loads(out)


def main():
    ap = benchlib.parser()
    ap.add_argument("--mib", type=int, default=512, help="the checkpoint's size, in --shards shards")
    ap.add_argument("--shards", type=int, default=4, help="safetensors shards (loaded on 4 threads, one at a time each)")
    ap.add_argument("--gguf-mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=4, help="an even number: each side goes first in half of them")
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        sys.exit("loader_bench.py mounts with FUSE: run it as root, with /dev/fuse")
    if subprocess.run([sys.executable, "-c", "import numpy"], capture_output=True).returncode:
        sys.exit("the loaders need numpy: apt-get install python3-numpy")
    work = tempfile.mkdtemp(prefix="hm-loaderbench-")
    shard = (a.mib << 20) // a.shards
    shards = ["model-%05d-of-%05d.safetensors" % (i + 1, a.shards) for i in range(a.shards)]
    # the index a sharded checkpoint comes with: which shard holds each tensor (as safetensors_head
    # names them)
    index = {"metadata": {"total_size": a.mib << 20},
             "weight_map": {"model.layers.%d.weight" % (i * 64 + k): s for i, s in enumerate(shards) for k in range(64)}}
    files = [{"path": "config.json", "content": "{\"model_type\": \"llama\"}\n"},
             {"path": "model.safetensors.index.json", "content": json.dumps(index) + "\n"}]
    for i, s in enumerate(shards):
        files.append({"path": s, "size": shard, "seed": 300 + i,
                      "head_b64": base64.b64encode(safetensors_head(shard, 64, i * 64)).decode()})
    gguf = "model-Q4_K_M.gguf"
    gguf_files = [{"path": "config.json", "content": "{\"model_type\": \"llama\"}\n"},
                  {"path": gguf, "size": a.gguf_mib << 20, "seed": 399,
                   "head_b64": base64.b64encode(gguf_head()).decode()}]
    procs, mnt = [], os.path.join(work, "mnt")
    t = {}
    sums = {}

    def add(key, secs, got=None):
        t.setdefault(key, []).append(secs)
        if got is not None:
            sums.setdefault(key.split()[0].split("-")[0], set()).add((got["bytes"], got["checksum"]))

    try:
        env, procs, m = mirror_up(a.hubmirror, work, [{"hub": "hf", "type": "model", "id": "bench/ckpt", "files": files},
                                                     {"hub": "hf", "type": "model", "id": "bench/gguf", "files": gguf_files}])
        url = lambda f: "%s/bench/%s/resolve/main/%s" % (m, "gguf" if f == gguf else "ckpt", f)
        def local_cases(run):
            """curl in parallel then the loaders (fresh), then the loaders again, page cache dropped
            (cold) and not (warm)."""
            dl = os.path.join(work, "local")
            settle(dl)
            os.makedirs(dl)
            local = [os.path.join(dl, s) for s in shards]
            drop_caches()
            t0 = time.monotonic()
            # in parallel, at most 8 at once (4 shards: all of them)
            cs = []
            for f in shards:
                while sum(c.poll() is None for c in cs) >= 8:
                    time.sleep(0.005)
                cs.append(subprocess.Popen(["curl", "-fsS", "-o", os.path.join(dl, f), url(f)]))
            if any(c.wait() for c in cs):
                sys.exit("curl failed")
            secs, got = load("safetensors", local)
            add("st fresh local", time.monotonic() - t0, got)
            t0 = time.monotonic()
            subprocess.run(["curl", "-fsS", "-o", os.path.join(dl, gguf), url(gguf)], check=True)
            secs, got = load("pagefault", [os.path.join(dl, gguf)])
            add("gguf fresh local", time.monotonic() - t0, got)
            for what, mode, paths in (("st", "safetensors", local), ("gguf", "pagefault", [os.path.join(dl, gguf)])):
                drop_caches()
                secs, got = load(mode, paths)
                add("%s cold local" % what, secs, got)
                secs, got = load(mode, paths)
                add("%s warm local" % what, secs, got)
            settle(dl)

        def mount_cases(run):
            """A mount on an agent with an empty cache and the loader through it (fresh; for the
            checkpoint also with --prefetch none: the reads alone fetch), then the snapshot pulled
            whole and settled, and the loader again, page cache dropped (cold) and not (warm)."""
            # (the two fresh checkpoint mounts take turns at going first too)
            for what in ("st-none", "st", "gguf") if run % 4 < 2 else ("st", "st-none", "gguf"):
                mode, names = ("pagefault", [gguf]) if what == "gguf" else ("safetensors", shards)
                spec = "hf:bench/gguf" if what == "gguf" else "hf:bench/ckpt"
                paths = [os.path.join(mnt, f) for f in names]
                cache = os.path.join(work, "cache-%d-%s" % (run, what))
                env["HUBMIRROR_AGENT_SOCKET"] = os.path.join(work, "agent-%d-%s.sock" % (run, what))
                subprocess.run([a.hubmirror, "agent", "--mirror", m, "--cache", cache, "--listen", "127.0.0.1:0"],
                               env=env, check=True, stdout=subprocess.DEVNULL)
                os.makedirs(mnt, exist_ok=True)
                drop_caches()
                t0 = time.monotonic()
                subprocess.run([a.hubmirror, "mount", "--no-hf-cache"] + (["--prefetch", "none"] if what == "st-none" else [])
                               + [spec, mnt], env=env, check=True, stdout=subprocess.DEVNULL)
                secs, got = load(mode, paths)
                add("%s fresh mount" % what, time.monotonic() - t0, got)
                if what == "st-none":
                    subprocess.run([a.hubmirror, "umount", mnt], env=env, stderr=subprocess.DEVNULL)
                    subprocess.run([a.hubmirror, "agent", "--stop"], env=env, stdout=subprocess.DEVNULL)
                    settle(cache)
                    continue
                # the snapshot held whole, settled (kept by sha256 in the background once quiet, and
                # its files served from the cache directly)
                subprocess.run([a.hubmirror, "pull", "--no-hf-cache", spec], env=env, check=True,
                               stdout=subprocess.DEVNULL)
                for _ in range(600):
                    st = json.loads(subprocess.run([a.hubmirror, "status", "--json"], env=env, check=True,
                                                   capture_output=True, text=True).stdout)["snapshots"][0]
                    if st["kept"] and st["served_directly"] >= len(names):
                        break
                    time.sleep(0.1)
                else:
                    print("# the agent did not settle: %s" % st)
                drop_caches()
                secs, got = load(mode, paths)
                add("%s cold mount" % what, secs, got)
                secs, got = load(mode, paths)
                add("%s warm mount" % what, secs, got)
                subprocess.run([a.hubmirror, "umount", mnt], env=env, stderr=subprocess.DEVNULL)
                subprocess.run([a.hubmirror, "agent", "--stop"], env=env, stdout=subprocess.DEVNULL)
                settle(cache)

        for run in range(a.runs):
            # The two sides take turns at going first: on this machine (a VM) the same case cost up to
            # twice as much CPU and time right after some cases as after others (curl's fetch of 512
            # MiB took 0.47 s after another curl case, 0.96 s after a mount case), so a fixed order
            # favours one side.
            for side in ((local_cases, mount_cases) if run % 2 == 0 else (mount_cases, local_cases)):
                side(run)
        print("a %d MiB checkpoint (%d safetensors shards, 64 tensors each) and a %d MiB GGUF file on loopback "
              "(2 cores), medians of %d runs" % (a.mib, a.shards, a.gguf_mib, a.runs))
        print("the loaders' bytes and checksums agree across every case: %s" %
              ("yes" if all(len(v) == 1 for v in sums.values()) and len(sums) == 2 else "NO %s" % sums))
        print()
        print("| case | local disk | mount | mount / local |")
        print("|---|---|---|---|")
        rows = (("st fresh", "safetensors loader, fresh: curl (%d in parallel) then load, vs mount then load" % min(8, a.shards)),
                ("st-none fresh", "the same, the mount with --prefetch none (its reads alone fetch)"),
                ("st cold", "safetensors loader, held whole, page cache dropped"),
                ("st warm", "safetensors loader, second load (page cache warm)"),
                ("gguf fresh", "GGUF page-fault reader, fresh: curl then read, vs mount then read"),
                ("gguf cold", "GGUF page-fault reader, held whole, page cache dropped"),
                ("gguf warm", "GGUF page-fault reader, second read (page cache warm)"))
        local_of = lambda key: t[key.replace("st-none", "st") + " local"]
        for key, name in rows:
            lo, mo = median(local_of(key)), median(t[key + " mount"])
            print("| %s | %.3f s | %.3f s | %.2f |" % (name, lo, mo, mo / lo))
        print()
        for key, _ in rows:
            print("%s, run by run (mount/local): %s" % (key, " ".join(
                "%.2f" % (x / y) for x, y in zip(t[key + " mount"], local_of(key)))))
    finally:
        stop(a.hubmirror, procs, work, mnt)


if __name__ == "__main__":
    main()
