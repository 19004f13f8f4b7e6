#!/usr/bin/python3
"""oci_bench.py - the OCI registry's pull against plain HTTP (docs/protocols/oci.md), side by side in one run.

  /usr/bin/python3 bench/oci_bench.py [--hubmirror PATH] [--gib 1] [--files 4] [--rounds 3]

Needs skopeo and curl, and root for dropping the page cache. A repository of FILES weight files of
GIB GiB in all (and a config.json), synced from the fake upstream, is served by `hubmirror serve`.
Every case writes the snapshot's files to a fresh folder on the same disk, and starts with the page
cache dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`): disk is on both ends of the path. The
cases take turns round by round (each first in turn) and the median of ROUNDS is printed, with the
ratios to curl:

  1. curl: each file of the snapshot through the Hub API's resolve route, one after the other, into
     the folder (what `hf download` does with one worker);
  2. skopeo copy of the ModelPack artifact (hf/bench/big:main, raw layers) to dir:;
  3. skopeo copy of the image (image/hf/bench/big:main, tar layers) to dir:, its layers' digests kept
     already: the first pull that computes them is timed once, before the rounds.

Sizes are checked; skopeo checks every layer's digest as it copies.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import benchlib  # noqa: E402
import serve_bench  # noqa: E402  (free_port)


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def timed(cmd):
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t


def main():
    ap = benchlib.parser()
    ap.add_argument("--gib", type=int, default=1)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not shutil.which("skopeo"):
        raise SystemExit("oci_bench: skopeo is missing (apt-get install skopeo)")
    work = tempfile.mkdtemp(prefix="hm-ocibench-", dir="/var/tmp")
    data = os.path.join(work, "data")
    each = (a.gib << 30) // a.files
    files = [{"path": "config.json", "content": "{\"architectures\": [\"Bench\"]}\n"}] + [
        {"path": "model-%05d-of-%05d.safetensors" % (i + 1, a.files), "size": each, "seed": 7 + i}
        for i in range(a.files)]
    fake, fready = benchlib.start_fakehub(work, {"repos": [{"hub": "hf", "type": "model", "id": "bench/big",
                                                            "files": files}]})
    hm = None
    try:
        benchlib.wait_for(fready)
        env = dict(os.environ, HUBMIRROR_DATA=data, HUBMIRROR_HF_UPSTREAM=json.load(open(fready))["api"])
        subprocess.run([a.hubmirror, "add", "hf:bench/big"], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([a.hubmirror, "sync"], env=env, check=True, stdout=subprocess.DEVNULL)
        port = serve_bench.free_port()
        ready = os.path.join(work, "url")
        hm = subprocess.Popen([a.hubmirror, "serve", "--data", data, "--listen", "127.0.0.1:%d" % port,
                               "--ready-file", ready, "--p2p-listen", "off"], stderr=subprocess.DEVNULL)
        benchlib.wait_for(ready)
        m = "127.0.0.1:%d" % port
        sk = ["skopeo", "--override-os", "linux", "--override-arch", "amd64", "copy", "--src-tls-verify=false"]
        paths = [f["path"] for f in files] + [".gitattributes"]
        total = sum(f["size"] if "size" in f else len(f["content"]) for f in files)

        def curl_case(out):
            os.makedirs(out)
            t = time.monotonic()
            for p in paths:
                subprocess.run(["curl", "-fsSL", "-o", os.path.join(out, p.replace("/", "_")),
                                "http://%s/bench/big/resolve/main/%s" % (m, p)], check=True)
            return time.monotonic() - t

        def sk_case(name):
            return lambda out: timed(sk + ["docker://%s/%s:main" % (m, name), "dir:" + out])

        drop_caches()
        first = sk_case("image/hf/bench/big")(os.path.join(work, "first"))
        shutil.rmtree(os.path.join(work, "first"))
        cases = [("curl, file by file", curl_case), ("skopeo, ModelPack (raw)", sk_case("hf/bench/big")),
                 ("skopeo, image (tar)", sk_case("image/hf/bench/big"))]
        times = {c[0]: [] for c in cases}
        for r in range(a.rounds):
            for k in range(len(cases)):
                name, fn = cases[(r + k) % len(cases)]
                out = os.path.join(work, "out")
                drop_caches()
                times[name].append(fn(out))
                got = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
                assert got >= total, (name, got, total)
                shutil.rmtree(out)
        print("oci_bench: %d files, %.2f GiB, %d rounds, page cache dropped before each case" %
              (len(paths), total / (1 << 30), a.rounds))
        print("  first pull of the image (its tar layers' digests computed): %.2f s" % first)
        base = statistics.median(times[cases[0][0]])
        for name, _ in cases:
            med = statistics.median(times[name])
            print("  %-26s median %6.2f s  %7.1f MiB/s  %.2fx curl   (%s)" %
                  (name, med, total / med / (1 << 20), med / base, ", ".join("%.2f" % t for t in times[name])))
    finally:
        benchlib.stop(hm, fake, work=work)


if __name__ == "__main__":
    main()
