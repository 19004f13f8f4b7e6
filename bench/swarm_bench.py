#!/usr/bin/python3
"""swarm_bench.py - N instances fetch the same model from one mirror: HTTP against BitTorrent.

  /usr/bin/python3 bench/swarm_bench.py [--hubmirror PATH] [--clients 8] [--mib 256] [--mbit 400] [--super-seed]

As root. Builds a small network of namespaces on a bridge: the mirror and N clients, every node's
uplink shaped to the same rate (tc tbf on its veth), as GPU instances with equal NICs. The model (one
big file plus small ones) is synced from the fake upstream first. Then, in one run:

  http: N clients fetch every file at once with curl from the mirror's resolve URLs (the classic
        HF_ENDPOINT setup; the mirror's HTTP serves like nginx, see serve_bench.py);
  p2p:  N python3-libtorrent clients get the torrent from the mirror (no web seed: the mirror's own
        BitTorrent seed is the only origin) and share pieces through the mirror's tracker.

For each: seconds until the last client has every byte (p2p: verified by libtorrent; http: sha256
checked after), and the bytes the mirror sent (its veth's tx counter), as copies of the model.
Prints a table for docs/benchmarks.md.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
LTGET = os.path.join(TOP, "tests", "integration", "ltget.py")
PREFIX = "hmsb"          # names of namespaces, links and the bridge
NET = "10.79.0."


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode()


def ns(name, *cmd):
    return ["ip", "netns", "exec", name] + list(cmd)


class Net:
    """A bridge in the root namespace and one namespace per node, each on a shaped veth."""

    def __init__(self, n_nodes, mbit):
        self.nodes = []
        self.teardown()
        sh("ip", "link", "add", PREFIX + "br", "type", "bridge")
        sh("ip", "link", "set", PREFIX + "br", "up")
        for i in range(n_nodes):
            name, host, peer = "%s%d" % (PREFIX, i), "%sh%d" % (PREFIX, i), "%sp%d" % (PREFIX, i)
            sh("ip", "netns", "add", name)
            sh("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
            sh("ip", "link", "set", peer, "netns", name)
            sh("ip", "link", "set", host, "master", PREFIX + "br")
            sh("ip", "link", "set", host, "up")
            sh(*ns(name, "ip", "link", "set", "lo", "up"))
            sh(*ns(name, "ip", "addr", "add", "%s%d/24" % (NET, i + 1), "dev", peer))
            sh(*ns(name, "ip", "link", "set", peer, "up"))
            # the node's uplink: what it can send
            sh(*ns(name, "tc", "qdisc", "add", "dev", peer, "root", "tbf", "rate", "%dmbit" % mbit,
                   "burst", "256kb", "latency", "100ms"))
            self.nodes.append((name, peer, "%s%d" % (NET, i + 1)))

    def tx_bytes(self, i):
        name, peer, _ = self.nodes[i]
        return int(sh(*ns(name, "cat", "/sys/class/net/%s/statistics/tx_bytes" % peer)).strip())

    @staticmethod
    def teardown():
        for line in sh("ip", "netns", "list", check=False).splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(PREFIX):
                sh("ip", "netns", "del", name, check=False)
        sh("ip", "link", "del", PREFIX + "br", check=False)


def start_fakehub(work, spec):
    ready = os.path.join(work, "fake.ready")
    p = subprocess.Popen([sys.executable, os.path.join(TOP, "tests", "fakehub", "fakehub.py"), "--ready-file", ready,
                          "--quiet", "--repos", spec], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(ready) and os.path.getsize(ready):
            break
        time.sleep(0.05)
    return p, json.load(open(ready))["api"]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hubmirror", default=os.path.join(TOP, "build", "mirror", "cli", "hubmirror"))
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--mbit", type=int, default=400, help="every node's uplink")
    ap.add_argument("--super-seed", action="store_true", help="serve --p2p-super-seed")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("swarm_bench.py builds network namespaces: run it as root")
    work = tempfile.mkdtemp(prefix="hm-swarmbench-")
    data = os.path.join(work, "data")
    spec = os.path.join(work, "spec.json")
    size = a.mib << 20
    json.dump({"repos": [{"hub": "hf", "type": "model", "id": "bench/model", "files": [
        {"path": "config.json", "content": "{\"bench\": true}\n"},
        {"path": "tokenizer.json", "size": 2 << 20, "seed": 2},
        {"path": "model.safetensors", "size": size, "seed": 1}]}]}, open(spec, "w"))
    fake, api = start_fakehub(work, spec)
    procs = []
    net = None
    try:
        env = dict(os.environ, HUBMIRROR_DATA=data, HUBMIRROR_HF_UPSTREAM=api)
        subprocess.run([a.hubmirror, "add", "hf:bench/model"], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([a.hubmirror, "sync"], env=env, check=True, stdout=subprocess.DEVNULL)
        files = json.load(urllib.request.urlopen(api + "/_fake/repos"))["repos"][0]["commits"][-1]["files"]
        total = sum(f["size"] for f in files)

        net = Net(a.clients + 1, a.mbit)
        mirror_ns, _, mirror_ip = net.nodes[0]
        ready = os.path.join(work, "url")
        procs.append(subprocess.Popen(ns(mirror_ns, a.hubmirror, "serve", "--data", data, "--listen", mirror_ip + ":8080",
                                         "--p2p-listen", mirror_ip + ":6881", "--ready-file", ready,
                                         *(["--p2p-super-seed"] if a.super_seed else [])),
                                      stderr=open(os.path.join(work, "serve.err"), "w")))
        for _ in range(200):
            if os.path.exists(ready):
                break
            time.sleep(0.05)
        m = open(ready).read().strip()
        rows = []

        # http: every client fetches every file at once
        base_tx = net.tx_bytes(0)
        t0 = time.monotonic()
        cps = []
        for i in range(1, a.clients + 1):
            name, _, _ = net.nodes[i]
            d = os.path.join(work, "http%d" % i)
            os.makedirs(d)
            for f in files:
                cps.append((subprocess.Popen(ns(name, "curl", "-fsS", "-o", os.path.join(d, f["path"]),
                                                "%s/bench/model/resolve/main/%s" % (m, f["path"]))), d, f))
        ok = all(p.wait() == 0 for p, _, _ in cps)
        http_s = time.monotonic() - t0
        http_tx = net.tx_bytes(0) - base_tx
        ok = ok and all(sha256(os.path.join(d, f["path"])) == f["sha256"] for _, d, f in cps)
        rows.append(("http (curl from the mirror)", http_s, http_tx, ok))
        for i in range(1, a.clients + 1):
            shutil.rmtree(os.path.join(work, "http%d" % i), ignore_errors=True)

        # p2p: the torrent without a web seed; the mirror's seed and the peers
        tor = os.path.join(work, "model.torrent")
        subprocess.run(ns(net.nodes[1][0], "curl", "-fsS", "-o", tor, m + "/api/p2p/torrent/hf/model/bench/model?webseed=0"),
                       check=True)
        base_tx = net.tx_bytes(0)
        t0 = time.monotonic()
        lps = []
        for i in range(1, a.clients + 1):
            name, _, ip = net.nodes[i]
            log = os.path.join(work, "p2p%d.log" % i)
            lps.append((subprocess.Popen(ns(name, sys.executable, LTGET, "--listen", ip + ":6881", "--seed", "600",
                                            "--timeout", "600", tor, os.path.join(work, "p2p%d" % i)),
                                         stdout=open(log, "w"), stderr=subprocess.STDOUT), log))
        done = set()
        while len(done) < len(lps) and time.monotonic() - t0 < 600:
            for k, (p, log) in enumerate(lps):
                if k not in done and ("complete:" in open(log).read() or p.poll() is not None):
                    done.add(k)
            time.sleep(0.05)
        p2p_s = time.monotonic() - t0
        p2p_tx = net.tx_bytes(0) - base_tx
        ok = all("complete:" in open(log).read() for _, log in lps)
        rows.append(("p2p (libtorrent, mirror seed%s + peers)" % (", super-seeding" if a.super_seed else ""), p2p_s, p2p_tx, ok))
        for p, _ in lps:
            p.terminate()

        floor = total / (a.mbit * 1e6 / 8)
        print("%d clients, a %.0f MiB model, every uplink %d Mbit/s (one copy through the mirror's uplink: %.1f s)"
              % (a.clients, total / 1048576.0, a.mbit, floor))
        print()
        print("| case | all clients done | mirror sent | copies of the model | ok |")
        print("|---|---|---|---|---|")
        for name, secs, tx, good in rows:
            print("| %s | %.1f s | %.0f MiB | %.2f | %s |" % (name, secs, tx / 1048576.0, tx / total, "yes" if good else "NO"))
        print()
        print("ratio http/p2p time: %.2fx; mirror bytes p2p/http: %.2f" % (rows[0][1] / rows[1][1], rows[1][2] / rows[0][2]))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        if net:
            net.teardown()
        fake.terminate()
        fake.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
