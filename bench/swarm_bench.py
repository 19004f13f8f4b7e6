#!/usr/bin/python3
"""swarm_bench.py - N instances fetch the same model from one mirror: HTTP against BitTorrent.

  /usr/bin/python3 bench/swarm_bench.py [--hubmirror PATH] [--clients 8] [--mib 256] [--mbit 400] [--super-seed]
                                        [--cases http,p2p,mount,pull] [--runs 1] [--mirrors 1|2]

As root. Builds a small network of namespaces on a bridge: the mirror and N clients, every node's
uplink shaped to the same rate (tc tbf on its veth), as GPU instances with equal NICs. The model (one
big file plus small ones) is synced from the fake upstream first. Then, in one run:

  http: N clients fetch every file at once with curl from the mirror's resolve URLs (the classic
        HF_ENDPOINT setup; the mirror's HTTP serves like nginx, see serve_bench.py);
  p2p:  N python3-libtorrent clients (TCP only) get the torrent from the mirror (no web seed: the
        mirror's own BitTorrent seed is the only origin) and share pieces through the mirror's tracker.
  transmission: N transmission-cli 3.00 clients (TCP only) given a v1 torrent of the same files with
        the same piece size (3.00 cannot read hybrid torrents), seeded by python3-libtorrent in the
        mirror's namespace through bench/minitracker.py.
  mount: N clients run `hubmirror mount` (the mirror's torrent with its web seed, as a user gets it)
        and, the moment it returns, read every file of the mount once, whole; `--runs` repeats it.
        Each client's mount starts its own instance agent, which keeps seeding after the umount (as on
        a real instance) until every client is done.
  pull: the same with `hubmirror pull` (no FUSE, as in a container): every client's agent fetches the
        snapshot whole and verified; once the last pull is done (the time and CPU stop there), every
        file is read from each agent's cache and compared.

With --mirrors 2, a second mirror (its own namespace and uplink, synced from the same upstream, so
the same torrent) serves beside the first; each names the other with --peer-mirror, and the mount
and pull cases' agents are given both (--mirror A,B). The bytes each mirror sent are shown apart.

For each: seconds until the last client has every byte (p2p: verified by libtorrent; http: sha256
checked after; mount: every byte read through FUSE compared with the mirror's copy, and every wrong
16 KiB block counted and named), the bytes the mirror sent (its veth's tx counter) as copies of the
model, and the machine's CPU use meanwhile: its share of 2 cores, and CPU-seconds (every process and
the kernel, the mirror's included) per GiB the clients got. Prints a table for docs/benchmarks.md.
"""
import json
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
LTGET = os.path.join(TOP, "tests", "integration", "helpers", "ltget.py")
PREFIX = "hmsb"          # names of namespaces, links and the bridge
NET = "10.79.0."

# Run in a client's namespace after its mount returns: read a file of the mount once, whole, in
# 1 MiB reads (as cp does), compare with the reference copy, print one JSON line.
CHECK = r"""
import json, sys, time
got, ref = sys.argv[1], sys.argv[2]
t0, wrong, first, n = time.monotonic(), 0, [], 0
with open(got, "rb") as g, open(ref, "rb") as r:
    off = 0
    while True:
        a, b = g.read(1 << 20), r.read(1 << 20)
        if a != b:
            for k in range(0, max(len(a), len(b)), 16384):
                x, y = a[k:k + 16384], b[k:k + 16384]
                if x != y:
                    wrong += 1
                    if len(first) < 4:
                        first.append({"offset": off + k, "zeros": x.count(0) - y.count(0), "len": len(x)})
        if not b and not a:
            break
        n += len(a)
        off += len(b)
print(json.dumps({"file": got, "bytes": n, "wrong_blocks": wrong, "first_wrong": first,
                  "seconds": time.monotonic() - t0}))
"""


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
        # a namespace goes (and its veth pair with it) once its last process has: wait for that, then
        # remove what is left
        for _ in range(100):
            if PREFIX + "h" not in sh("ip", "-br", "link", check=False):
                break
            time.sleep(0.05)
        for line in sh("ip", "-br", "link", check=False).splitlines():
            link = line.split()[0].split("@")[0] if line.split() else ""
            if link.startswith(PREFIX + "h"):
                sh("ip", "link", "del", link, check=False)
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


sha256 = benchlib.sha256_of


def cpu_ticks():
    """(busy, total) jiffies of the whole machine."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


def cpu_share(since):
    busy, total = cpu_ticks()
    return (busy - since[0]) / max(total - since[1], 1)


def cpu_seconds(since):
    """CPU-seconds the whole machine spent since (every process, the kernel's softirqs included)."""
    return (cpu_ticks()[0] - since[0]) / os.sysconf("SC_CLK_TCK")


def mirrors_tx(net, n):
    """What each of the n mirrors (the first nodes) has sent so far, from their veths."""
    return [net.tx_bytes(k) for k in range(n)]


def mirror_split(net, m):
    """What the mirror has sent so far: (BitTorrent seed payload, web seed bytes) from its /metrics."""
    out = sh(*ns(net.nodes[-1][0], "curl", "-fsS", m + "/metrics"))
    v = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("hubmirror_seeder_uploaded_bytes_total", "hubmirror_webseed_bytes_total"):
            v[parts[0]] = int(float(parts[1]))
    return v.get("hubmirror_seeder_uploaded_bytes_total", 0), v.get("hubmirror_webseed_bytes_total", 0)


def mount_run(a, net, work, m, files, run, kind="mount"):
    """One run of the mount case (every client mounts and reads every file) or of the pull case (every
    client pulls the snapshot whole, then every file is read from its agent's cache); returns
    (seconds, tx, reads)."""
    procs = []
    base_tx, base_split = mirrors_tx(net, a.mirrors), mirror_split(net, m.split(",")[0])
    cpu0 = cpu_ticks()
    t0 = time.monotonic()
    for i in range(1, a.clients + 1):
        name, _, ip = net.nodes[a.mirrors - 1 + i]
        d = os.path.join(work, "mnt%d-%d" % (run, i))
        mnt, cache = os.path.join(d, "mnt"), os.path.join(d, "cache")
        os.makedirs(mnt)
        os.makedirs(cache)
        where = mnt if kind == "mount" else "$P"
        checks = " && ".join("%s -c \"$CHECK\" %s %s" % (sys.executable, os.path.join(where, f["path"]),
                                                            os.path.join(work, "ref", f["path"]))
                             for f in sorted(files, key=lambda f: -f["size"]))
        if kind == "mount" and a.reader == "sha256sum":
            # what a user would time from outside: mount, coreutils sha256sum of every file, umount
            checks = "sha256sum %s > %s/sums" % (" ".join(os.path.join(mnt, f["path"]) for f in files), d)
        if kind == "mount":
            script = ("%s mount --mirror %s --cache %s --no-hf-cache --listen %s:6881 hf:bench/model %s && { %s; }; "
                      "r=$?; %s umount %s; exit $r") % (a.hubmirror, m, cache, ip, mnt, checks, a.hubmirror, mnt)
        else:
            # the pull alone is timed and counted; every byte is compared after the last pull is done
            script = "%s pull --mirror %s --cache %s --no-hf-cache --listen %s:6881 hf:bench/model >/dev/null" % (
                a.hubmirror, m, cache, ip)
        log = os.path.join(d, "log")
        # each instance's own agent (its socket in the client's folder); it keeps seeding after the
        # umount, as on a real instance, until every client is done
        env = dict(os.environ, CHECK=CHECK, HUBMIRROR_AGENT_SOCKET=os.path.join(d, "agent.sock"))
        procs.append((subprocess.Popen(ns(name, "sh", "-c", script), env=env,
                                       stdout=open(log, "w"), stderr=subprocess.STDOUT), log))
    reads = []
    while procs and time.monotonic() - t0 < 600 and any(p.poll() is None for p, _ in procs):
        time.sleep(0.05)
    secs = time.monotonic() - t0
    cpu, cpu_s = cpu_share(cpu0), cpu_seconds(cpu0)
    if kind == "mount" and a.reader == "sha256sum":
        want = {os.path.join(work, "mnt%d-%d" % (run, i), "mnt", f["path"]): f["sha256"]
                for i in range(1, a.clients + 1) for f in files}
        for i in range(1, a.clients + 1):
            sums = os.path.join(work, "mnt%d-%d" % (run, i), "sums")
            got = dict(reversed(line.split()) for line in open(sums)) if os.path.exists(sums) else {}
            for path, sha in want.items():
                if path.startswith(os.path.join(work, "mnt%d-%d" % (run, i), "")):
                    ok = got.get(path) == sha
                    reads.append({"file": path, "bytes": 0, "wrong_blocks": 0 if ok else -1,
                                  "first_wrong": [] if ok else ["sha256sum: %s" % got.get(path)]})
    if kind == "pull":
        checks = []
        for i in range(1, a.clients + 1):
            name = net.nodes[a.mirrors - 1 + i][0]
            d = os.path.join(work, "mnt%d-%d" % (run, i))
            env = dict(os.environ, CHECK=CHECK, HUBMIRROR_AGENT_SOCKET=os.path.join(d, "agent.sock"))
            script = ("P=$(%s status --json | %s -c 'import json,sys; print(json.load(sys.stdin)[\"snapshots\"][0][\"path\"])') "
                      "&& { %s; }") % (a.hubmirror, sys.executable, " && ".join(
                          "%s -c \"$CHECK\" $P/%s %s" % (sys.executable, f["path"], os.path.join(work, "ref", f["path"]))
                          for f in files))
            checks.append(subprocess.Popen(ns(name, "sh", "-c", script), env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT))
        for c, (p, log) in zip(checks, procs):
            out = c.communicate()[0].decode()
            with open(log, "a") as f:
                f.write(out)
            if c.returncode != 0:
                reads.append({"file": log, "bytes": 0, "wrong_blocks": -1, "first_wrong": [out[-500:]]})
    tx = [x - b for x, b in zip(mirrors_tx(net, a.mirrors), base_tx)]
    split = mirror_split(net, m.split(",")[0])
    filled, each = 0, []
    for i in range(1, a.clients + 1):
        st = subprocess.run([a.hubmirror, "status", "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, HUBMIRROR_AGENT_SOCKET=os.path.join(work, "mnt%d-%d" % (run, i),
                                                                                    "agent.sock")))
        try:
            each.append(sum(s.get("fetched_over_http", 0) for s in json.loads(st.stdout)["snapshots"]))
            filled += each[-1]
        except (ValueError, KeyError):
            pass
    print("%s run %d: the mirror sent %.0f MiB as its BitTorrent seed and %.0f MiB over HTTP ranges, of which "
          "the agents' fill took %.0f MiB (the rest: web seeds)" % (
              kind, run, (split[0] - base_split[0]) / 2**20, (split[1] - base_split[1]) / 2**20, filled / 2**20),
          file=sys.stderr)
    if os.environ.get("HM_BENCH_DEBUG"):
        print("  fill per agent (MiB): %s" % " ".join("%.0f" % (x / 2**20) for x in each), file=sys.stderr)
        for i in range(1, a.clients + 1):
            log = os.path.join(work, "mnt%d-%d" % (run, i), "cache", "agent.log")
            if os.path.exists(log):
                print("  agent %d: %s" % (i, open(log).read().strip().replace("\n", "\n    ")), file=sys.stderr)
    for p, log in procs:
        if p.poll() is None:
            p.kill()
        for line in open(log):
            if line.startswith("{"):
                reads.append(json.loads(line))
        if p.wait() != 0:
            reads.append({"file": log, "bytes": 0, "wrong_blocks": -1, "first_wrong": [open(log).read()[-500:]]})
    if os.environ.get("HM_BENCH_DEBUG"):
        for _, log in procs:
            print(open(log).read(), file=sys.stderr)
    for i in range(1, a.clients + 1):
        sock = os.path.join(work, "mnt%d-%d" % (run, i), "agent.sock")
        if os.path.exists(sock):
            subprocess.run([a.hubmirror, "agent", "--stop", "--socket", sock], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    for i in range(1, a.clients + 1):
        shutil.rmtree(os.path.join(work, "mnt%d-%d" % (run, i)), ignore_errors=True)
    return secs, tx, reads, cpu, cpu_s


def main():
    ap = benchlib.parser()
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--mbit", type=int, default=400, help="every node's uplink")
    ap.add_argument("--super-seed", action="store_true", help="serve --p2p-super-seed")
    ap.add_argument("--cases", default="http,p2p,mount", help="which of http,p2p,transmission,mount,pull to run")
    ap.add_argument("--runs", type=int, default=1, help="runs of the mount case")
    ap.add_argument("--mirrors", type=int, default=1, choices=(1, 2), help="mirrors serving one swarm")
    ap.add_argument("--reader", default="compare", choices=("compare", "sha256sum"),
                    help="mount case: compare every byte with the mirror's copy (1 MiB reads), or time what a "
                         "user would: coreutils sha256sum of every file through the mount (checked after)")
    a = ap.parse_args()
    cases = set(a.cases.split(","))
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
        if a.mirrors == 2:
            env2 = dict(env, HUBMIRROR_DATA=data + "2")
            subprocess.run([a.hubmirror, "add", "hf:bench/model"], env=env2, check=True, stdout=subprocess.DEVNULL)
            subprocess.run([a.hubmirror, "sync"], env=env2, check=True, stdout=subprocess.DEVNULL)
        files = json.load(urllib.request.urlopen(api + "/_fake/repos"))["repos"][0]["commits"][-1]["files"]
        total = sum(f["size"] for f in files)

        net = Net(a.clients + a.mirrors, a.mbit)
        urls = ["http://%s:8080" % net.nodes[k][2] for k in range(a.mirrors)]
        for k in range(a.mirrors):
            mirror_ns, _, mirror_ip = net.nodes[k]
            ready = os.path.join(work, "url%d" % k)
            peers = [u for j, u in enumerate(urls) if j != k]
            procs.append(subprocess.Popen(ns(mirror_ns, a.hubmirror, "serve", "--data", data + ("2" if k else ""),
                                             "--listen", mirror_ip + ":8080", "--p2p-listen", mirror_ip + ":6881",
                                             "--ready-file", ready, *(["--p2p-super-seed"] if a.super_seed else []),
                                             *(["--peer-mirror", ",".join(peers)] if peers else [])),
                                          stderr=open(os.path.join(work, "serve%d.err" % k), "w")))
            for _ in range(200):
                if os.path.exists(ready):
                    break
                time.sleep(0.05)
        m = open(os.path.join(work, "url0")).read().strip()
        mlist = ",".join(urls)
        client0 = net.nodes[a.mirrors][0]
        rows = []

        # the reference copy every read is compared with, fetched once
        os.makedirs(os.path.join(work, "ref"))
        for f in files:
            subprocess.run(ns(client0, "curl", "-fsS", "-o", os.path.join(work, "ref", f["path"]),
                              "%s/bench/model/resolve/main/%s" % (m, f["path"])), check=True)
            if sha256(os.path.join(work, "ref", f["path"])) != f["sha256"]:
                sys.exit("the mirror's copy of %s is not the upstream's" % f["path"])

        # http: every client fetches every file at once
        if "http" in cases:
            base_tx, cpu0 = mirrors_tx(net, a.mirrors), cpu_ticks()
            t0 = time.monotonic()
            cps = []
            for i in range(1, a.clients + 1):
                name, _, _ = net.nodes[a.mirrors - 1 + i]
                d = os.path.join(work, "http%d" % i)
                os.makedirs(d)
                for f in files:
                    cps.append((subprocess.Popen(ns(name, "curl", "-fsS", "-o", os.path.join(d, f["path"]),
                                                    "%s/bench/model/resolve/main/%s" % (m, f["path"]))), d, f))
            ok = all(p.wait() == 0 for p, _, _ in cps)
            http_s = time.monotonic() - t0
            http_tx, cpu, cpu_s = [x - b for x, b in zip(mirrors_tx(net, a.mirrors), base_tx)], cpu_share(cpu0), \
                cpu_seconds(cpu0)
            ok = ok and all(sha256(os.path.join(d, f["path"])) == f["sha256"] for _, d, f in cps)
            rows.append(("http (curl from the mirror)", http_s, http_tx, cpu, "yes" if ok else "NO", cpu_s))
            for i in range(1, a.clients + 1):
                shutil.rmtree(os.path.join(work, "http%d" % i), ignore_errors=True)

        # p2p: the torrent without a web seed; the mirror's seed and the peers
        if "p2p" in cases:
            tor = os.path.join(work, "model.torrent")
            subprocess.run(ns(client0, "curl", "-fsS", "-o", tor,
                              m + "/api/p2p/torrent/hf/model/bench/model?webseed=0"), check=True)
            base_tx, cpu0 = mirrors_tx(net, a.mirrors), cpu_ticks()
            t0 = time.monotonic()
            lps = []
            for i in range(1, a.clients + 1):
                name, _, ip = net.nodes[a.mirrors - 1 + i]
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
            p2p_tx, cpu, cpu_s = [x - b for x, b in zip(mirrors_tx(net, a.mirrors), base_tx)], cpu_share(cpu0), \
                cpu_seconds(cpu0)
            ok = all("complete:" in open(log).read() for _, log in lps)
            rows.append(("p2p (libtorrent, mirror seed%s + peers)" % (", super-seeding" if a.super_seed else ""),
                         p2p_s, p2p_tx, cpu, "yes" if ok else "NO", cpu_s))
            for p, _ in lps:
                p.terminate()
                p.wait()
            for i in range(1, a.clients + 1):
                shutil.rmtree(os.path.join(work, "p2p%d" % i), ignore_errors=True)

        # transmission: N transmission-cli 3.00 clients (TCP, plaintext preferred, no DHT, LPD or uTP) given
        # a v1 torrent of the same files with the same piece size (3.00 cannot read hybrid torrents),
        # seeded from the mirror's namespace by python3-libtorrent through a tracker of the bench's own
        if "transmission" in cases:
            import libtorrent as lt
            mirror_ns, _, mirror_ip = net.nodes[0]
            hyb = os.path.join(work, "hybrid.torrent")
            subprocess.run(ns(client0, "curl", "-fsS", "-o", hyb, m + "/api/p2p/torrent/hf/model/bench/model"),
                           check=True)
            tdir = os.path.join(work, "tseed")
            os.makedirs(os.path.join(tdir, "model"))
            for f in files:
                os.link(os.path.join(work, "ref", f["path"]), os.path.join(tdir, "model", f["path"]))
            fs = lt.file_storage()
            lt.add_files(fs, os.path.join(tdir, "model"))
            ct = lt.create_torrent(fs, lt.torrent_info(hyb).piece_length(), flags=lt.create_torrent.v1_only)
            ct.add_tracker("http://%s:6969/announce" % mirror_ip)
            lt.set_piece_hashes(ct, tdir)
            v1 = os.path.join(work, "v1.torrent")
            open(v1, "wb").write(lt.bencode(ct.generate()))
            side = [subprocess.Popen(ns(mirror_ns, sys.executable, os.path.join(HERE, "minitracker.py"), "--listen",
                                        mirror_ip + ":6969"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
            slog = os.path.join(work, "tseed.log")
            side.append(subprocess.Popen(ns(mirror_ns, sys.executable, LTGET, "--listen", mirror_ip + ":6882", "--seed",
                                            "900", "--timeout", "120", v1, tdir), stdout=open(slog, "w"),
                                         stderr=subprocess.STDOUT))
            for _ in range(1200):
                if "complete:" in open(slog).read():
                    break
                time.sleep(0.1)
            base_tx, cpu0 = mirrors_tx(net, a.mirrors), cpu_ticks()
            t0 = time.monotonic()
            tps = []
            for i in range(1, a.clients + 1):
                name, _, ip = net.nodes[a.mirrors - 1 + i]
                d = os.path.join(work, "tr%d" % i)
                os.makedirs(os.path.join(d, "conf"))
                os.makedirs(os.path.join(d, "dl"))
                json.dump({"dht-enabled": False, "lpd-enabled": False, "utp-enabled": False, "pex-enabled": True,
                           "port-forwarding-enabled": False, "encryption": 0, "speed-limit-up-enabled": False,
                           "speed-limit-down-enabled": False, "ratio-limit-enabled": False, "rpc-enabled": False,
                           "peer-limit-global": 200, "peer-limit-per-torrent": 60, "bind-address-ipv4": ip,
                           "message-level": 1}, open(os.path.join(d, "conf", "settings.json"), "w"))
                done = os.path.join(d, "done.sh")
                open(done, "w").write("#!/bin/sh\ntouch %s/done\n" % d)
                os.chmod(done, 0o755)
                tps.append((subprocess.Popen(ns(name, "transmission-cli", "-g", os.path.join(d, "conf"), "-w",
                                                os.path.join(d, "dl"), "-p", "51413", "-et", "-M", "-f", done, v1),
                                             stdout=open(os.path.join(d, "log"), "w"), stderr=subprocess.STDOUT), d))
            while time.monotonic() - t0 < 600 and not all(os.path.exists(os.path.join(d, "done")) for _, d in tps):
                time.sleep(0.05)
            tr_s = time.monotonic() - t0
            tr_tx, cpu, cpu_s = [x - b for x, b in zip(mirrors_tx(net, a.mirrors), base_tx)], cpu_share(cpu0), \
                cpu_seconds(cpu0)
            ok = all(os.path.exists(os.path.join(d, "done")) and
                     sha256(os.path.join(d, "dl", "model", f["path"])) == f["sha256"] for _, d in tps for f in files)
            rows.append(("transmission 3.00 (v1 torrent, a libtorrent seed + peers)", tr_s, tr_tx, cpu,
                         "yes" if ok else "NO", cpu_s))
            for p, _ in tps:
                p.terminate()
                p.wait()
            for p in side:
                p.terminate()
                p.wait()
            for i in range(1, a.clients + 1):
                shutil.rmtree(os.path.join(work, "tr%d" % i), ignore_errors=True)

        # mount: what a user runs on every instance, then every byte read and compared
        wrong_total, reads_total = 0, 0
        if "mount" in cases:
            for run in range(1, a.runs + 1):
                secs, tx, reads, cpu, cpu_s = mount_run(a, net, work, mlist, files, run)
                wrong = sum(max(r["wrong_blocks"], 0) for r in reads)
                failed = [r for r in reads if r["wrong_blocks"] != 0]
                complete = len([r for r in reads if r["wrong_blocks"] == 0]) == a.clients * len(files)
                wrong_total += wrong + len([r for r in failed if r["wrong_blocks"] < 0])
                reads_total += len(reads)
                for r in failed:
                    print("run %d: %s: %s wrong 16 KiB blocks, first %s" % (run, r["file"], r["wrong_blocks"],
                                                                            r["first_wrong"]), file=sys.stderr)
                rows.append(("mount + read every byte, run %d" % run, secs, tx, cpu,
                             "yes" if complete else "NO (%d wrong blocks)" % wrong, cpu_s))

        # pull: the agent's way without FUSE (containers); every byte then read from each agent's cache
        if "pull" in cases:
            for run in range(1, a.runs + 1):
                secs, tx, reads, cpu, cpu_s = mount_run(a, net, work, mlist, files, run, "pull")
                wrong = sum(max(r["wrong_blocks"], 0) for r in reads)
                complete = len([r for r in reads if r["wrong_blocks"] == 0]) == a.clients * len(files)
                rows.append(("pull (every byte compared after), run %d" % run, secs, tx, cpu,
                             "yes" if complete else "NO (%d wrong blocks)" % wrong, cpu_s))

        floor = total / (a.mbit * 1e6 / 8)
        print("%d clients, %d mirror%s, a %.0f MiB model, every uplink %d Mbit/s (one copy through one uplink: %.1f s)"
              % (a.clients, a.mirrors, "s" if a.mirrors > 1 else "", total / 1048576.0, a.mbit, floor))
        print()
        print("| case | all clients done | x floor | mirrors sent | copies of the model%s | CPU (2 cores) "
              "| CPU-s per GiB delivered | bytes right |" % (" (each mirror)" if a.mirrors > 1 else ""))
        print("|---|---|---|---|---|---|---|---|")
        gib = a.clients * total / 2**30
        for name, secs, tx, cpu, good, cpu_s in rows:
            each = " (%s)" % " + ".join("%.2f" % (x / total) for x in tx) if a.mirrors > 1 else ""
            print("| %s | %.1f s | %.2f | %.0f MiB | %.2f%s | %.0f%% | %.2f | %s |" % (
                name, secs, secs / floor, sum(tx) / 1048576.0, sum(tx) / total, each, cpu * 100, cpu_s / gib, good))
        print()
        by = {r[0].split(" ")[0]: r for r in rows}
        if "http" in by and "p2p" in by:
            print("ratio http/p2p time: %.2fx; mirror bytes p2p/http: %.2f" % (by["http"][1] / by["p2p"][1],
                                                                                sum(by["p2p"][2]) / sum(by["http"][2])))
        if "mount" in cases:
            print("mount: %d runs, %d files read whole, %d wrong 16 KiB blocks (or failed reads)"
                  % (a.runs, reads_total, wrong_total))
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
