#!/usr/bin/python3
"""cpu_bench.py - what one instance spends to take a model: CPU-seconds per GiB, side by side.

  /usr/bin/python3 bench/cpu_bench.py [--hubmirror PATH] [--mib 1024] [--runs 4]

As root (FUSE). One model of --mib MiB is synced from the fake upstream; `hubmirror serve` runs on
loopback. Each case starts with the page cache dropped, and counts the CPU (user + system) of every
process it runs, the mirror's included:

  curl + sha256:  curl fetches the file from the mirror to disk, then `openssl dgst -sha256` reads it
                  once (what taking it by hand and checking it costs);
  pull:           `hubmirror pull` on an agent with an empty cache (started untimed, as systemd
                  would), counted until the agent has settled (the file verified, linked, and kept by
                  sha256: every pass it makes over the bytes);
  mount + read:   `hubmirror mount`, then `cat` of the file through the mount, counted the same way.

Prints CPU-seconds per GiB (medians) and the ratios pull / (curl + sha256) and mount + read / pull,
and each run's page faults per GiB (its processes): on a VM whose host backs freed memory lazily, a
new page costs a host fault, and the faults follow the CPU from run to run.
"""
import json
import os
import resource
import socket
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


def usage(pid=None):
    """(CPU-seconds, user + system, and page faults, minor + major) of a running process so far (its
    threads), or with no pid of every child this script has waited for."""
    if pid is None:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime, r.ru_minflt + r.ru_majflt
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"), int(f[7]) + int(f[9])


def machine_busy():
    """CPU-seconds the whole machine was busy (every process, the kernel's threads and interrupts)."""
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def agent_status(sock):
    """The agent's status, asked over its control socket. Not `hubmirror status`: each run of the CLI
    costs 10-30 ms of CPU and about 820 page faults (a process that loads libtorrent), and polling
    with it every 50 ms until the agent settled was counted as the agent's cost (0.5-1.5 CPU-s per
    case before 2026-12-04)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock)
        s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n")
        data = b"".join(iter(lambda: s.recv(65536), b""))  # to the end: the agent closes
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit("the agent's status: %r" % head[:100])
    return json.loads(body)


def main():
    ap = benchlib.parser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=4, help="an even number: each agent case goes first in half of them")
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        sys.exit("cpu_bench.py mounts with FUSE: run it as root, with /dev/fuse")
    work = tempfile.mkdtemp(prefix="hm-cpubench-")
    procs, mnt = [], os.path.join(work, "mnt")
    gib = a.mib / 1024.0
    t = {}
    try:
        env, procs, m = mirror_up(a.hubmirror, work, [{"hub": "hf", "type": "model", "id": "bench/cpu", "files": [
            {"path": "config.json", "content": "{}\n"},
            {"path": "model.safetensors", "size": a.mib << 20, "seed": 7}]}])
        serve = procs[-1]

        def count(key, fn, agent=None):
            def total():
                """CPU and faults of the case's processes: its children, the mirror, the agent."""
                v = [usage(), usage(serve.pid)] + ([usage(agent)] if agent else [])
                return sum(x[0] for x in v), sum(x[1] for x in v)
            (c0, f0), b0, w0 = total(), machine_busy(), time.monotonic()
            fn()
            (c1, f1), b1, w1 = total(), machine_busy(), time.monotonic()
            t.setdefault(key, []).append(((c1 - c0) / gib, w1 - w0, (b1 - b0) / gib, (f1 - f0) / gib))

        def settled():
            for _ in range(1200):
                st = agent_status(env["HUBMIRROR_AGENT_SOCKET"])["snapshots"]
                if st and st[0]["verified"] and st[0]["kept"] and st[0]["bytes_have"] == st[0]["bytes_total"]:
                    return
                time.sleep(0.05)
            sys.exit("the agent did not settle")

        for run in range(a.runs):
            dl = os.path.join(work, "dl")
            settle(dl)
            os.makedirs(dl)
            drop_caches()
            count("curl + sha256", lambda: (
                subprocess.run(["curl", "-fsS", "-o", os.path.join(dl, "model.safetensors"),
                                "%s/bench/cpu/resolve/main/model.safetensors" % m], check=True),
                subprocess.run(["openssl", "dgst", "-sha256", os.path.join(dl, "model.safetensors")], check=True,
                               stdout=subprocess.DEVNULL)))
            # The two agent cases take turns at going first: on one VM whichever ran second in a run paid
            # 1.2-1.6 CPU-seconds per GiB more than when it ran first (the same code; the page cache's
            # writes were slower), so a fixed order made either case look 1.4x the other; on another
            # the order made no difference. docs/benchmarks.md has both.
            settle(dl)
            for case in (("pull", "mount + read") if run % 2 == 0 else ("mount + read", "pull")):
                cache = os.path.join(work, "cache-%d" % run)
                env["HUBMIRROR_AGENT_SOCKET"] = os.path.join(work, "agent-%d.sock" % run)
                subprocess.run([a.hubmirror, "agent", "--mirror", m, "--cache", cache, "--listen", "127.0.0.1:0"],
                               env=env, check=True, stdout=subprocess.DEVNULL)
                agent = agent_status(env["HUBMIRROR_AGENT_SOCKET"])["pid"]
                drop_caches()
                if case == "pull":
                    count(case, lambda: (subprocess.run([a.hubmirror, "pull", "--no-hf-cache", "hf:bench/cpu"], env=env,
                                                        check=True, stdout=subprocess.DEVNULL), settled()), agent)
                else:
                    os.makedirs(mnt, exist_ok=True)
                    count(case, lambda: (subprocess.run([a.hubmirror, "mount", "--no-hf-cache", "--prefetch", "all",
                                                         "hf:bench/cpu", mnt], env=env, check=True,
                                                        stdout=subprocess.DEVNULL),
                                         subprocess.run(["cat", os.path.join(mnt, "model.safetensors")], check=True,
                                                        stdout=subprocess.DEVNULL), settled()), agent)
                    subprocess.run([a.hubmirror, "umount", mnt], env=env, stderr=subprocess.DEVNULL)
                subprocess.run([a.hubmirror, "agent", "--stop"], env=env, stdout=subprocess.DEVNULL)
                settle(cache)
        print("a %d MiB file on loopback (2 cores), page cache dropped before each case, medians of %d runs; "
              "CPU of every process counted (the mirror's too)" % (a.mib, a.runs))
        print()
        print("| case | CPU-seconds per GiB, its processes | the machine busy, per GiB | wall seconds |")
        print("|---|---|---|---|")
        for k in ("curl + sha256", "pull", "mount + read"):
            print("| %s | %.2f | %.2f | %.2f |" % (k, median([x[0] for x in t[k]]), median([x[2] for x in t[k]]),
                                                   median([x[1] for x in t[k]])))
        print()
        for k in ("curl + sha256", "pull", "mount + read"):
            print("%s, run by run: processes %s; machine %s; page faults per GiB %s" % (
                k, " ".join("%.2f" % x[0] for x in t[k]), " ".join("%.2f" % x[2] for x in t[k]),
                " ".join("%d" % x[3] for x in t[k])))
        for i, what in ((0, "its processes"), (2, "the machine busy")):
            c, p, mr = (median([x[i] for x in t[k]]) for k in ("curl + sha256", "pull", "mount + read"))
            print("%s: ratio pull / (curl + sha256) %.2f, mount + read / pull %.2f" % (what, p / c, mr / p))
    finally:
        stop(a.hubmirror, procs, work, mnt)


if __name__ == "__main__":
    main()
