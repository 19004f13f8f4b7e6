#!/usr/bin/python3
"""mount_bench.py - what an ML engineer waits for: `hubmirror mount` against curl from the mirror.

  /usr/bin/python3 bench/mount_bench.py [--hubmirror PATH] [--baseline PATH] [--mib 512] [--runs 3]

As root (FUSE). One model (config.json, a tokenizer and one big weights file) is synced from the fake
upstream; `hubmirror serve` runs on loopback. Side by side, in one run, the page cache dropped before
each case (`sync; echo 3 > /proc/sys/vm/drop_caches`):

  curl:  GET every file from the mirror's resolve URLs (what HF_ENDPOINT clients do) to local disk,
         then read every byte of them once (what loading the model does next);
  mount: `hubmirror mount` (returns once the files are visible), then read config.json, then the
         last MiB of the weights (what a loader's header/index read looks like), then every byte.
         The instance agent (`hubmirror agent`, with an empty cache) is started before, untimed, as
         systemd would; it is stopped after each case.
  With --baseline, the same mount steps with another hubmirror binary (an older build), so a change
  to the read path is measured against what it replaces in the same run.

Each case runs --runs times, interleaved; the table shows medians. Prints a table for
docs/benchmarks.md.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from statistics import median  # of an even count, the mean of the middle two

import benchlib  # noqa: E402  (bench/ is the script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bundle_bench import settle  # noqa: E402  (deletes outside the timed windows, lets discards finish)


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


def drop_caches():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def mirror_up(hubmirror, work, repos):
    """The fake upstream with repos (a spec's "repos" list), synced into a data directory under work
    and served by `hubmirror serve` on loopback: (env, procs, mirror URL). env points the hubmirror
    commands at that data directory; stop procs with stop()."""
    env = dict(os.environ, HUBMIRROR_DATA=os.path.join(work, "data"))
    spec = os.path.join(work, "spec.json")
    json.dump({"repos": repos}, open(spec, "w"))
    procs = [start([sys.executable, os.path.join(TOP, "tests", "fakehub", "fakehub.py"), "--quiet",
                    "--ready-file", os.path.join(work, "fake"), "--repos", spec], os.path.join(work, "fake"), env)]
    env["HUBMIRROR_HF_UPSTREAM"] = json.load(open(os.path.join(work, "fake")))["api"]
    names = ["hf:%s" % r["id"] for r in repos]
    subprocess.run([hubmirror, "add"] + names, env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([hubmirror, "sync"], env=env, check=True, stdout=subprocess.DEVNULL)
    procs.append(start([hubmirror, "serve", "--listen", "127.0.0.1:0", "--p2p-listen", "127.0.0.1:0",
                        "--ready-file", os.path.join(work, "url")], os.path.join(work, "url"), env))
    return env, procs, open(os.path.join(work, "url")).read().strip()


def stop(hubmirror, procs, work, mnt=None):
    """Unmount mnt (if any), stop procs, delete work."""
    if mnt:
        subprocess.run([hubmirror, "umount", mnt], stderr=subprocess.DEVNULL)
    for p in procs:
        p.terminate()
        p.wait()
    shutil.rmtree(work, ignore_errors=True)


def has_agent(exe):
    """Does this hubmirror run its mounts in an instance agent (`hubmirror agent`)?"""
    return subprocess.run([exe, "help", "agent"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def main():
    ap = benchlib.parser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--baseline", help="another hubmirror binary to mount with, side by side")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--show-status", action="store_true", help="print the agent's status after each mount case")
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        sys.exit("mount_bench.py mounts with FUSE: run it as root, with /dev/fuse")
    work = tempfile.mkdtemp(prefix="hm-mountbench-")
    procs, mnt = [], os.path.join(work, "mnt")
    try:
        env, procs, m = mirror_up(a.hubmirror, work, [{"hub": "hf", "type": "model", "id": "bench/model", "files": [
            {"path": "config.json", "content": "{\"bench\": true}\n"},
            {"path": "tokenizer.json", "size": 2 << 20, "seed": 2},
            {"path": "model.safetensors", "size": a.mib << 20, "seed": 1}]}])
        names = ("config.json", "tokenizer.json", "model.safetensors")
        bins = [("mount", a.hubmirror)] + ([("baseline", a.baseline)] if a.baseline else [])
        t = {}

        def add(key, secs):
            t.setdefault(key, []).append(secs)

        same = True
        for run in range(a.runs):
            dl = os.path.join(work, "curl")
            settle(dl)  # the last run's files deleted, and their discards done, outside the time
            os.makedirs(dl)
            drop_caches()
            add("curl", timed(lambda: [subprocess.run(["curl", "-fsS", "-o", os.path.join(dl, f),
                                                       "%s/bench/model/resolve/main/%s" % (m, f)], check=True)
                                       for f in names] + [read_all(os.path.join(dl, f)) for f in names]))
            for label, exe in bins:
                cache = os.path.join(work, "cache-%s-%d" % (label, run))
                os.makedirs(mnt, exist_ok=True)
                # an instance's agent runs before the job (systemd): started untimed, with an empty cache
                env["HUBMIRROR_AGENT_SOCKET"] = os.path.join(work, "agent-%s-%d.sock" % (label, run))
                if has_agent(exe):
                    subprocess.run([exe, "agent", "--mirror", m, "--cache", cache, "--listen", "127.0.0.1:0"],
                                   env=env, check=True, stdout=subprocess.DEVNULL)
                drop_caches()
                add(label + " mount", timed(lambda: subprocess.run(
                    [exe, "mount", "--mirror", m, "--cache", cache, "--no-hf-cache", "--listen", "127.0.0.1:0",
                     "hf:bench/model", mnt], env=env, check=True, stdout=subprocess.DEVNULL)))
                add(label + " config", timed(lambda: read_all(os.path.join(mnt, "config.json"))))

                def tail():
                    with open(os.path.join(mnt, "model.safetensors"), "rb") as f:
                        f.seek(-(1 << 20), os.SEEK_END)
                        f.read()
                add(label + " tail", timed(tail))
                add(label + " all", timed(lambda: read_all(os.path.join(mnt, "model.safetensors"))))
                same = same and subprocess.run(["cmp", os.path.join(mnt, "model.safetensors"),
                                                os.path.join(dl, "model.safetensors")]).returncode == 0
                if a.show_status and has_agent(exe):
                    subprocess.run([exe, "status"], env=env)
                subprocess.run([exe, "umount", mnt], env=env, stderr=subprocess.DEVNULL)
                if has_agent(exe):
                    subprocess.run([exe, "agent", "--stop"], env=env, stdout=subprocess.DEVNULL)
                settle(cache)
        print("a %d MiB model on loopback (2 cores), page cache dropped before each case, medians of %d runs; "
              "bytes identical: %s" % (a.mib + 2, a.runs, "yes" if same else "NO"))
        print()
        print("| step | " + " | ".join(label for label, _ in bins) + " |")
        print("|---|" + "---|" * len(bins))
        for key, name in (("mount", "the command returns, files listed"), ("config", "then read config.json"),
                          ("tail", "then read the last MiB of the weights"),
                          ("all", "then read every byte of the weights")):
            print("| %s | %s |" % (name, " | ".join("%.3f" % median(t[label + " " + key]) for label, _ in bins)))
        totals = {label: median([sum(t[label + " " + k][r] for k in ("mount", "config", "tail", "all"))
                                 for r in range(a.runs)]) for label, _ in bins}
        print("| all of the above | %s |" % " | ".join("%.3f" % totals[label] for label, _ in bins))
        print()
        print("curl from the mirror, every file to disk and read once: %.3f s" % median(t["curl"]))
        print("curl, run by run: %s s" % " ".join("%.2f" % x for x in t["curl"]))
        for label, _ in bins:
            print("%s (everything) / curl, run by run: %s" % (label, " ".join(
                "%.2f" % (sum(t[label + " " + k][r] for k in ("mount", "config", "tail", "all")) / t["curl"][r])
                for r in range(a.runs))))
        for label, _ in bins:
            print("ratio %s (everything) / curl: %.2f" % (label, totals[label] / median(t["curl"])))
        if a.baseline:
            print("ratio mount / baseline: %.3f" % (totals["mount"] / totals["baseline"]))
    finally:
        stop(a.hubmirror, procs, work, mnt)


if __name__ == "__main__":
    main()
