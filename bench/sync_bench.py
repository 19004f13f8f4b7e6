#!/usr/bin/python3
"""sync_bench.py - the sync issue's numbers, measured side by side in one run.

  /usr/bin/python3 bench/sync_bench.py [--hubmirror PATH] [--big-mib 2048] [--repos 600] [--files 3000]

1. no-change sync of N tracked repos: upstream requests per repo and wall time (after a first full
   sync, whose peak RSS is reported too), and the night of the week that also lists their refs;
2. full sync of a model with one big file plus small ones, against `aria2c -x8 -j8` fetching the same
   files from the same fake upstream;
3. full sync of a dataset of many small files, against the same aria2c.
aria2c does not verify sha256; hubmirror does (and git SHA-1 for regular files). Each fetch runs into
a fresh directory; the fake upstream is warmed (hashes computed) before any timing.
Prints a table; paste it into docs/benchmarks.md.
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


def run(cmd, env=None, cwd=None):
    """Run cmd, return (seconds, peak RSS in MiB, exit status). RSS comes from GNU time: a child of
    this (large) Python process would inherit its high-water mark in wait4's ru_maxrss."""
    rss_file = tempfile.mktemp(prefix="hm-bench-rss-")
    t0 = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd, env=env, cwd=cwd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode(errors="replace")
    code = p.wait()
    dt = time.monotonic() - t0
    p.stderr.close()
    try:
        ru_kb = int(open(rss_file).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        ru_kb = 0
    os.unlink(rss_file)

    class RU:
        ru_maxrss = ru_kb
    ru = RU
    if code != 0:
        print("  %s exited %d: %s" % (os.path.basename(cmd[0]), code, err[-500:]), file=sys.stderr)
    return dt, ru.ru_maxrss / 1024.0, code


def fake_get(api, path):
    return json.load(urllib.request.urlopen(api + path))


def fake_post(api, path, body=b"{}"):
    return urllib.request.urlopen(urllib.request.Request(api + path, data=body, method="POST")).read()


def main():
    a, work = benchlib.args("bench", big_mib=2048, repos=600, files=3000)
    spec = {"repos": [
        {"hub": "hf", "type": "model", "id": "bench/big",
         "files": [{"path": "config.json", "content": "{\"bench\": true}\n"},
                   {"path": "tokenizer.json", "content": "{\"v\": %s}\n" % ("1" * 2000)},
                   {"path": "model.safetensors", "size": a.big_mib << 20, "seed": 4242}]},
        {"hub": "hf", "type": "dataset", "id": "bench/many",
         "generate": {"count": a.files, "size": 4096, "prefix": "data/part-", "suffix": ".jsonl", "lfs": False}},
    ]}
    for i in range(a.repos):
        spec["repos"].append({"hub": "hf" if i % 4 else "ms", "type": "model", "id": "fleet/m%04d" % i,
                              "files": [{"path": "config.json", "content": "{\"i\": %d}\n" % i}]})
    # one of each kind that costs more to look at: a gated model without an approved token, a
    # ModelScope dataset of many listing pages, a Hugging Face dataset with tags and a parquet branch
    extra = [("hf:fleet/gated", {"hub": "hf", "type": "model", "id": "fleet/gated", "gated": "manual",
                                 "files": [{"path": "w.bin", "size": 4096, "seed": 9}]}),
             ("ms:datasets/fleet/msds", {"hub": "ms", "type": "dataset", "id": "fleet/msds",
                                         "generate": {"count": 1000, "size": 64, "prefix": "d/p-"}}),
             ("hf:datasets/fleet/hfds", {"hub": "hf", "type": "dataset", "id": "fleet/hfds",
                                         "commits": [{"key": "c1", "files": [{"path": "a.csv", "content": "a\n"}]},
                                                     {"key": "c2", "files": [{"path": "p/0.parquet", "size": 64, "seed": 1}]}],
                                         "branches": {"main": "c1"}, "tags": {"v1": "c1"}, "converts": {"parquet": "c2"}})]
    spec["repos"] += [r for _, r in extra]
    with open(os.path.join(work, "spec.json"), "w") as f:
        json.dump(spec, f)
    ready = os.path.join(work, "ready")
    fake = subprocess.Popen(["/usr/bin/python3", os.path.join(TOP, "tests", "fakehub", "fakehub.py"),
                             "--repos", os.path.join(work, "spec.json"), "--ready-file", ready, "--quiet",
                             "--cache-dir", os.path.join(work, "fakecache")],
                            stdout=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(ready):
                break
            time.sleep(0.05)
        api = json.load(open(ready))["api"]
        env = dict(os.environ, HUBMIRROR_HF_UPSTREAM=api, HUBMIRROR_MS_UPSTREAM=api)
        hm = a.hubmirror
        rows = []

        # Warm the fake: its first resolve of the big file hashes it.
        repos = fake_get(api, "/_fake/repos")["repos"]
        big = [r for r in repos if r["id"] == "bench/big"][0]
        many = [r for r in repos if r["id"] == "bench/many"][0]
        urllib.request.urlopen(urllib.request.Request(
            "%s/bench/big/resolve/%s/model.safetensors" % (api, big["sha"]), method="HEAD")).read()

        # 1. fleet: full sync, then no-change sync.
        data = os.path.join(work, "fleet")
        env1 = dict(env, HUBMIRROR_DATA=data)
        lst = os.path.join(work, "fleet.txt")
        with open(lst, "w") as f:
            for i in range(a.repos):
                f.write("%s:fleet/m%04d\n" % ("hf" if i % 4 else "ms", i))
            for sp, _ in extra:
                f.write(sp + "\n")
        subprocess.run([hm, "add", "--from", lst], env=env1, check=True, stdout=subprocess.DEVNULL)
        t_full, rss_full, _ = run([hm, "sync", "--no-progress"], env1)
        nrepos = a.repos + len(extra)
        for sp, _ in extra:  # each kind on its own first (the refused one is not asked again anyway)
            fake_post(api, "/_fake/reset")
            run([hm, "sync", "--no-progress", sp], env1)
            rows.append(("no-change sync, %s" % sp, "", "%d req" % fake_get(api, "/_fake/stats")["total"], ""))
        fake_post(api, "/_fake/reset")
        t_noop, rss_noop, _ = run([hm, "sync", "--no-progress"], env1)
        reqs = fake_get(api, "/_fake/stats")["total"]
        rows.append(("no-change sync, %d repos" % nrepos, "%.2f s" % t_noop, "%.2f req/repo" % (reqs / nrepos),
                     "target <= 1.2 req/repo"))
        # Once a week an unchanged repo's refs are listed too (its tags: sync --check-refs forces it).
        fake_post(api, "/_fake/reset")
        t_refs, _, _ = run([hm, "sync", "--no-progress", "--check-refs"], env1)
        reqs_refs = fake_get(api, "/_fake/stats")["total"]
        rows.append(("no-change sync + refs check, %d repos" % nrepos, "%.2f s" % t_refs,
                     "%.2f req/repo" % (reqs_refs / nrepos),
                     "a week: %.2f req/repo/night" % ((6 * reqs + reqs_refs) / 7.0 / nrepos)))
        rows.append(("full sync, %d repos: peak RSS" % a.repos, "%.2f s" % t_full, "%.1f MB" % rss_full,
                     "target < 150 MB"))

        # 2 and 3: hubmirror vs aria2c on the same files.
        for label, rid, rtype, target in (("model, %d MiB + small files" % a.big_mib, "bench/big", "model", 1.25),
                                          ("dataset, %d small files" % a.files, "bench/many", "dataset", 1.5)):
            r = big if rid == "bench/big" else many
            prefix = "" if rtype == "model" else "datasets/"
            spec_s = "hf:%s%s" % (prefix, rid)
            d = os.path.join(work, "hm-" + rtype)
            envd = dict(env, HUBMIRROR_DATA=d)
            subprocess.run([hm, "add", spec_s], env=envd, check=True, stdout=subprocess.DEVNULL)
            t_hm, rss_hm, code = run([hm, "sync", "--no-progress", "--jobs", "8", spec_s], envd)
            files = [f for f in r["commits"][-1]["files"]]
            urls = os.path.join(work, "urls-" + rtype)
            with open(urls, "w") as f:
                for x in files:
                    f.write("%s/%s%s/resolve/%s/%s\n  out=%s\n" % (api, prefix, rid, r["sha"], x["path"], x["path"]))
            out = os.path.join(work, "aria-" + rtype)
            t_ar, rss_ar, _ = run(["aria2c", "-x8", "-j8", "-s8", "--quiet", "--allow-overwrite=true",
                                   "--auto-file-renaming=false", "--file-allocation=none", "-d", out, "-i", urls])
            size = sum(x["size"] for x in files) / 1048576.0
            rows.append(("%s: hubmirror" % label, "%.2f s" % t_hm, "%.0f MiB/s" % (size / t_hm),
                         "RSS %.0f MB%s" % (rss_hm, "" if code == 0 else ", FAILED")))
            rows.append(("%s: aria2c -x8 -j8" % label, "%.2f s" % t_ar, "%.0f MiB/s" % (size / t_ar),
                         "ratio %.2f (target <= %.2f)" % (t_hm / t_ar, target)))
            shutil.rmtree(d, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)

        w = max(len(r[0]) for r in rows)
        print("| %-*s | %9s | %14s | %s |" % (w, "case", "wall", "result", "notes"))
        print("|%s|%s|%s|%s|" % ("-" * (w + 2), "-" * 11, "-" * 16, "-" * 30))
        for r in rows:
            print("| %-*s | %9s | %14s | %s |" % (w, r[0], r[1], r[2], r[3]))
    finally:
        benchlib.stop(fake, work=work)


if __name__ == "__main__":
    main()
