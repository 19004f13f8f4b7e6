#!/usr/bin/python3
"""s3_bench.py - the S3 front's numbers (docs/protocols/s3.md), side by side in one run.

  /usr/bin/python3 bench/s3_bench.py [--hubmirror PATH] [--gib 1] [--streams 16] [--rounds 3]

Needs nginx and curl (apt-get install nginx-light curl), and root for dropping the page cache. A
repository with a GIB GiB file, synced from the fake upstream, is served by `hubmirror serve` (with its
torrent and seed) and, the same blob file in the store, by nginx (one worker, sendfile). Every case starts with
the page cache dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`): disk is part of the path. The
cases take turns round by round (each of the three first in turn) and the median of ROUNDS is printed,
with ratios:

  1. the whole file with one curl: nginx, the mirror's resolve route, the mirror's S3 GetObject;
  2. the file in STREAMS ranged GETs at once, one curl each (a model streamer's pattern): the same
     three;
  3. through an agent's local endpoint (`agent --http`, a fresh cache each time, the bytes coming from
     the mirror's seed and web seed and verified): STREAMS ranged GETs of S3 GetObject, and of the
     endpoint's resolve route.

Every byte curl fetched is read once (into /dev/null through curl); sizes are checked.
"""
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


def one_get(url, size):
    t = time.monotonic()
    out = subprocess.run(["curl", "-fsS", "-o", "/dev/null", "-w", "%{size_download}", url], capture_output=True,
                         text=True, check=True).stdout
    assert int(out) == size, (url, out, size)
    return time.monotonic() - t


def ranged_gets(url, size, streams):
    step = (size + streams - 1) // streams
    t = time.monotonic()
    procs = [subprocess.Popen(["curl", "-fsS", "-r", "%d-%d" % (a, min(size, a + step) - 1), "-o", "/dev/null", "-w",
                               "%{size_download}", url], stdout=subprocess.PIPE, text=True)
             for a in range(0, size, step)]
    got = sum(int(p.communicate()[0]) for p in procs)
    assert all(p.returncode == 0 for p in procs) and got == size, (url, got, size)
    return time.monotonic() - t


def agent_case(hm, work, m, label, run, path, size, streams):
    """A fresh agent with a local endpoint; STREAMS ranged GETs of path (after its endpoint) timed."""
    env = dict(os.environ, HUBMIRROR_AGENT_SOCKET=os.path.join(work, "agent-%s-%d.sock" % (label, run)))
    cache = os.path.join(work, "cache-%s-%d" % (label, run))
    subprocess.run([hm, "agent", "--mirror", m, "--cache", cache, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        st = subprocess.run([hm, "status", "--json"], env=env, capture_output=True, text=True, check=True).stdout
        port = __import__("json").loads(st)["http_port"]
        drop_caches()
        return ranged_gets("http://127.0.0.1:%d%s" % (port, path), size, streams)
    finally:
        subprocess.run([hm, "agent", "--stop"], env=env, stdout=subprocess.DEVNULL)
        shutil.rmtree(cache, ignore_errors=True)


def main():
    ap = benchlib.parser()
    ap.add_argument("--gib", type=int, default=1)
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not os.path.exists("/usr/sbin/nginx"):
        raise SystemExit("s3_bench: nginx is missing (apt-get install nginx-light)")
    work = tempfile.mkdtemp(prefix="hm-s3bench-", dir="/var/tmp")
    data = os.path.join(work, "data")
    size = a.gib << 30
    fake, fready = benchlib.start_fakehub(work, {"repos": [{"hub": "hf", "type": "model", "id": "bench/big", "files": [
        {"path": "config.json", "content": "{}\n"}, {"path": "model.safetensors", "size": size, "seed": 7}]}]})
    hm = ng = None
    benchlib.wait_for(fready)
    env = dict(os.environ, HUBMIRROR_DATA=data,
               HUBMIRROR_HF_UPSTREAM=__import__("json").load(open(fready))["api"])
    subprocess.run([a.hubmirror, "add", "hf:bench/big"], env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([a.hubmirror, "sync"], env=env, check=True, stdout=subprocess.DEVNULL)
    blob = subprocess.run(["find", os.path.join(data, "store"), "-type", "f", "-size", "+%dk" % (size // 1024 - 1)],
                          capture_output=True, text=True, check=True).stdout.split()[0]
    blobs = os.path.dirname(os.path.dirname(blob))
    assert os.path.getsize(blob) == size
    hm_port, ng_port = serve_bench.free_port(), serve_bench.free_port()
    ready = os.path.join(work, "url")
    hm = subprocess.Popen([a.hubmirror, "serve", "--data", data, "--listen", "127.0.0.1:%d" % hm_port,
                           "--ready-file", ready, "--p2p-listen", "127.0.0.1:0"], stderr=subprocess.DEVNULL)
    conf = os.path.join(work, "nginx.conf")
    open(conf, "w").write("""user root; worker_processes 1; daemon off; pid %s/nginx.pid; error_log %s/nginx.err;
events { worker_connections 1024; }
http { access_log off; sendfile on; tcp_nopush on;
  types { application/octet-stream safetensors; }
  server { listen 127.0.0.1:%d; root %s; } }
""" % (work, work, ng_port, blobs))
    ng = subprocess.Popen(["/usr/sbin/nginx", "-c", conf], stderr=subprocess.DEVNULL)
    try:
        benchlib.wait_for(ready)
        time.sleep(0.5)  # (nginx)
        m = "http://127.0.0.1:%d" % hm_port
        urls = {"nginx": "http://127.0.0.1:%d/%s" % (ng_port, os.path.relpath(blob, blobs)),
                "resolve": m + "/bench/big/resolve/main/model.safetensors",
                "s3": m + "/s3/hf/bench/big/main/model.safetensors"}
        t = {k: [] for k in ("1-nginx", "1-resolve", "1-s3", "n-nginx", "n-resolve", "n-s3", "agent-s3",
                             "agent-resolve")}
        for run in range(a.rounds):
            order = list(urls.items())
            order = order[run % len(order):] + order[:run % len(order)]  # each case first in turn
            for k, u in order:
                drop_caches()
                t["1-" + k].append(one_get(u, size))
                drop_caches()
                t["n-" + k].append(ranged_gets(u, size, a.streams))
            t["agent-s3"].append(agent_case(a.hubmirror, work, m, "s3", run, "/s3/hf/bench/big/main/model.safetensors",
                                            size, a.streams))
            t["agent-resolve"].append(agent_case(a.hubmirror, work, m, "resolve", run,
                                                 "/bench/big/resolve/main/model.safetensors", size, a.streams))
        med = {k: statistics.median(v) for k, v in t.items()}
        mbs = {k: size / v / 1e6 for k, v in med.items()}
        rows = [
            ("one GET, curl: nginx (1 worker, sendfile)", mbs["1-nginx"], ""),
            ("one GET, curl: mirror resolve", mbs["1-resolve"], "%.2fx nginx" % (med["1-nginx"] / med["1-resolve"])),
            ("one GET, curl: mirror S3 GetObject", mbs["1-s3"], "%.2fx nginx, %.2fx resolve" %
             (med["1-nginx"] / med["1-s3"], med["1-resolve"] / med["1-s3"])),
            ("%d ranged GETs, curl: nginx" % a.streams, mbs["n-nginx"], ""),
            ("%d ranged GETs, curl: mirror resolve" % a.streams, mbs["n-resolve"],
             "%.2fx nginx" % (med["n-nginx"] / med["n-resolve"])),
            ("%d ranged GETs, curl: mirror S3 GetObject" % a.streams, mbs["n-s3"], "%.2fx nginx, %.2fx resolve" %
             (med["n-nginx"] / med["n-s3"], med["n-resolve"] / med["n-s3"])),
            ("%d ranged GETs through a fresh agent: endpoint resolve" % a.streams, mbs["agent-resolve"], ""),
            ("%d ranged GETs through a fresh agent: S3 GetObject" % a.streams, mbs["agent-s3"],
             "%.2fx the endpoint's resolve" % (med["agent-resolve"] / med["agent-s3"])),
        ]
        print("%d GiB file, page cache dropped before every case, median of %d rounds (time ratios: > 1 is "
              "faster than the other)" % (a.gib, a.rounds))
        print("| case | MB/s | ratio |")
        print("|---|---|---|")
        for r in rows:
            print("| %s | %.0f | %s |" % r)
    finally:
        benchlib.stop(hm, ng, fake, work=work)


if __name__ == "__main__":
    main()
