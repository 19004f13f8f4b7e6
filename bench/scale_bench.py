#!/usr/bin/python3
"""scale_bench.py - the mirror's own limits: huge snapshots' torrents, a tracker under many peers,
serve seeding hundreds of snapshots.

  /usr/bin/python3 bench/scale_bench.py [--hubmirror PATH] [--baseline PATH] [--cases torrents,tracker,seed]
                                        [--peers 10000] [--repos 700]

torrents: bundles made by tests/integration/helpers/mkbundle.py (100,000 files of 2-4 KB; one 2 GiB
          file; 1,000 files of 1 MiB) imported with `hubmirror import`, which stores, hashes and makes
          the torrent, page cache dropped first. Prints the import time (with --baseline, the same
          import by another hubmirror binary beside it, and the ratio), the torrent's size and piece
          size, and serve's RSS once it seeds that torrent.
tracker:  PEERS simulated peers, each from its own loopback address (127.1.x.y: the tracker keeps at
          most 8 places per address), announce one torrent over a fresh connection each, as BitTorrent
          clients do, from two client processes; then again (re-announces). Prints announces per
          second and serve's RSS before and after, and its CPU time.
seed:     REPOS small repositories (10 files and 1 MiB each) imported, then serve started: the time
          until it seeds them all, its RSS, and its CPU use over 30 idle seconds.

As root (drop_caches). Prints tables for docs/benchmarks.md.
"""
import http.client
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import benchlib  # noqa: E402  (bench/ is the script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bundle_bench import drop_caches, settle  # noqa: E402  (the same cache dropping and settling)

MKBUNDLE = os.path.join(TOP, "tests", "integration", "helpers", "mkbundle.py")


def env(data):
    e = dict(os.environ)
    e.update(HUBMIRROR_DATA=data, HUBMIRROR_CONFIG="/dev/null", HUBMIRROR_P2P_LISTEN="127.0.0.1:0")
    return e


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def serve(hm, data, work, *args):
    ready = os.path.join(work, "ready")
    if os.path.exists(ready):
        os.unlink(ready)
    p = subprocess.Popen([hm, "serve", "--listen", "127.0.0.1:0", "--ready-file", ready] + list(args),
                         env=env(data), stderr=open(os.path.join(work, "serve.err"), "w"))
    for _ in range(1200):
        if os.path.exists(ready) and os.path.getsize(ready):
            return p, open(ready).read().strip()
        time.sleep(0.05)
    p.kill()
    raise SystemExit("serve did not start: " + open(os.path.join(work, "serve.err")).read())


def metric(base, name):
    for line in urllib.request.urlopen(base + "/metrics").read().decode().splitlines():
        if line.split(" ")[0] == name:
            return float(line.split()[1])
    return 0.0


def wait_seeding(base, n, limit=600):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if metric(base, "hubmirror_seeder_torrents") >= n:
            return time.monotonic() - t0
        time.sleep(0.2)
    return None


def import_once(hm, bundle, data):
    settle(data)
    drop_caches()
    t0 = time.monotonic()
    subprocess.run([hm, "import", bundle], env=env(data), check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def case_torrents(a, work):
    shapes = [("100,000 files of 2-4 KB", ["--files", "100000"]),
              ("one 2 GiB file", ["--files", "0", "--big-mib", "2048"]),
              ("1,000 files of 1 MiB", ["--files", "1000", "--distinct", "1000", "--min-size", "1048576",
                                        "--max-size", "1048576"])]
    rows = []
    for label, args in shapes:
        bundle = os.path.join(work, "b.tar")
        subprocess.run([sys.executable, MKBUNDLE, bundle, "hf:datasets/scale/shape"] + args, check=True)
        data = os.path.join(work, "data")
        base_t = import_once(a.baseline, bundle, data) if a.baseline else None
        t = import_once(a.hubmirror, bundle, data)
        tdir = os.path.join(data, "torrents")
        tor = [f for f in os.listdir(tdir) if f.endswith(".torrent")]
        size = os.path.getsize(os.path.join(tdir, tor[0]))
        p, base = serve(a.hubmirror, data, work, "--p2p-listen", "127.0.0.1:0")
        try:
            wait_seeding(base, 1)
            repo = json.load(urllib.request.urlopen(base + "/api/catalog/repos/hf/dataset/scale/shape"))
            rss = rss_kb(p.pid)
        finally:
            p.terminate()
            p.wait()
        rows.append((label, t, base_t, size, repo["swarm"]["piece_size"], rss))
        os.unlink(bundle)
        shutil.rmtree(data)
    print("\n| snapshot | import (store + hash + torrent) | baseline | torrent | piece | serve RSS seeding it |")
    print("|---|---|---|---|---|---|")
    for label, t, bt, size, piece, rss in rows:
        print("| %s | %.2f s | %s | %.1f MB | %d KiB | %d MB |" % (
            label, t, "%.2f s (%.2fx)" % (bt, t / bt) if bt else "-", size / 1e6, piece // 1024, rss // 1024))


def announcer(args):
    port, btih, first, count, rounds = args
    ih = "".join("%%%02x" % b for b in bytes.fromhex(btih))
    ok = fail = 0
    for rnd in range(rounds):
        for i in range(first, first + count):
            ip = "127.1.%d.%d" % (i // 250, i % 250 + 1)
            c = http.client.HTTPConnection("127.0.0.1", port, source_address=(ip, 0), timeout=30)
            try:
                c.request("GET", "/announce?info_hash=%s&peer_id=-HB0001-%012d&port=%d&uploaded=0&downloaded=0"
                          "&left=%d&compact=1&numwant=50%s" % (ih, i, 6881 + rnd, 1000, "&event=started" if not rnd else ""))
                body = c.getresponse().read()
                if b"failure" in body:
                    fail += 1
                else:
                    ok += 1
            except OSError:
                fail += 1
            finally:
                c.close()
    return ok, fail


def case_tracker(a, work):
    bundle = os.path.join(work, "t.tar")
    data = os.path.join(work, "data")
    subprocess.run([sys.executable, MKBUNDLE, bundle, "hf:scale/tracked", "--files", "10"], check=True)
    shutil.rmtree(data, ignore_errors=True)
    subprocess.run([a.hubmirror, "import", bundle], env=env(data), check=True, stdout=subprocess.DEVNULL)
    p, base = serve(a.hubmirror, data, work, "--p2p-listen", "off")
    try:
        btih = json.load(urllib.request.urlopen(base + "/api/catalog/repos/hf/model/scale/tracked"))["swarm"]["btih"]
        port = int(base.rsplit(":", 1)[1])
        rss0, cpu0 = rss_kb(p.pid), cpu_s(p.pid)
        half = a.peers // 2
        rows = []
        for label, rounds in (("first announces (event=started)", 1), ("re-announces", 1)):
            t0 = time.monotonic()
            with multiprocessing.Pool(2) as pool:
                res = pool.map(announcer, [(port, btih, 0, half, rounds), (port, btih, half, a.peers - half, rounds)])
            dt = time.monotonic() - t0
            ok = sum(r[0] for r in res)
            fail = sum(r[1] for r in res)
            rows.append((label, ok, fail, dt, rss_kb(p.pid), cpu_s(p.pid) - cpu0))
        scrape = json.load(urllib.request.urlopen(base + "/api/catalog/repos/hf/model/scale/tracked"))["swarm"]
    finally:
        p.terminate()
        p.wait()
    print("\n%d simulated peers on one torrent, each from its own loopback address, a fresh connection per"
          " announce, two client processes (the machine's 2 cores shared with serve):\n" % a.peers)
    print("| round | answered | refused | time | announces/s | serve RSS (before: %d MB) | serve CPU so far |"
          % (rss0 // 1024))
    print("|---|---|---|---|---|---|---|")
    for label, ok, fail, dt, rss, cpu in rows:
        print("| %s | %d | %d | %.1f s | %.0f | %d MB | %.1f s |" % (label, ok, fail, dt, ok / dt, rss // 1024, cpu))
    print("\nThe tracker's counts afterwards: %d leechers, %d seeders." % (scrape.get("leechers", -1),
                                                                         scrape.get("seeders", -1)))


def case_seed(a, work):
    bundle = os.path.join(work, "s.tar")
    data = os.path.join(work, "data")
    subprocess.run([sys.executable, MKBUNDLE, bundle, "hf:scale/model", "--files", "10", "--big-mib", "1",
                    "--repos", str(a.repos)], check=True)
    shutil.rmtree(data, ignore_errors=True)
    t0 = time.monotonic()
    subprocess.run([a.hubmirror, "import", bundle], env=env(data), check=True, stdout=subprocess.DEVNULL)
    t_import = time.monotonic() - t0
    t0 = time.monotonic()
    p, base = serve(a.hubmirror, data, work, "--p2p-listen", "127.0.0.1:0")
    try:
        t_ready = time.monotonic() - t0
        t_seed = wait_seeding(base, a.repos)
        rss1, cpu1 = rss_kb(p.pid), cpu_s(p.pid)
        time.sleep(30)
        rss2, cpu2 = rss_kb(p.pid), cpu_s(p.pid)
    finally:
        p.terminate()
        p.wait()
    print("\nserve seeding %d snapshots (11 files, 1 MiB each; imported in %.1f s with their torrents):\n"
          % (a.repos, t_import))
    print("| ready | seeding all | RSS then | RSS 30 s later | CPU over those 30 idle s |")
    print("|---|---|---|---|---|")
    print("| %.1f s | %s | %d MB | %d MB | %.1f%% of a core |" % (
        t_ready, "%.1f s" % (t_ready + t_seed) if t_seed is not None else "not within 600 s",
        rss1 // 1024, rss2 // 1024, (cpu2 - cpu1) / 30 * 100))


def main():
    ap = benchlib.parser()
    ap.add_argument("--baseline", help="another hubmirror binary to import the same bundles with")
    ap.add_argument("--cases", default="torrents,tracker,seed")
    ap.add_argument("--peers", type=int, default=10000)
    ap.add_argument("--repos", type=int, default=700)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="hm-scale-")
    try:
        for c in a.cases.split(","):
            {"torrents": case_torrents, "tracker": case_tracker, "seed": case_seed}[c](a, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
