#!/usr/bin/python3
"""catalog_bench.py - the browsing issue's scale numbers.

  /usr/bin/python3 bench/catalog_bench.py [--hubmirror PATH] [--repos 100000] [--files 100000]

Generates a catalog of N repositories (rows written straight into SQLite through the real schema,
which `hubmirror` creates; no sync) and one dataset of M files, starts `hubmirror serve` on it, and
measures over loopback: search latency (p50/p99 over varied queries), a 1,000-entry tree page (HF
API) and a 1,000-entry catalog file page, and the catalog list page. Prints a table for
docs/benchmarks.md.
"""
import hashlib
import json
import os
import random
import sqlite3
import subprocess
import time
import urllib.request

import benchlib  # noqa: E402  (bench/ is the script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
WORDS = ("llama qwen mistral gemma phi bert t5 whisper clip vit stable diffusion coder chat instruct base "
         "math vision audio embed rerank tiny small large xl moe gguf awq gptq").split()
TASKS = ["text-generation", "fill-mask", "image-classification", "automatic-speech-recognition", "feature-extraction"]


def generate(db_path, n_repos, n_files):
    db = sqlite3.connect(db_path)
    rnd = random.Random(42)
    now = int(time.time())
    db.execute("BEGIN")
    for i in range(n_repos):
        org = "org%03d" % (i % 500)
        name = "%s/%s-%s-%d" % (org, rnd.choice(WORDS), rnd.choice(WORDS), i)
        tags = json.dumps([rnd.choice(WORDS), rnd.choice(WORDS)])
        cur = db.execute("INSERT INTO repos (hub, type, name, follow_rev, added_at, tags, pipeline_tag, license, "
                         "downloads, likes, sync_status, last_sync_at, card_data) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         ("hf" if i % 5 else "ms", "model" if i % 7 else "dataset", name, "main", now, tags,
                          rnd.choice(TASKS), "apache-2.0", rnd.randint(0, 10**6), rnd.randint(0, 10**4), "ok", now,
                          # card text: common English-like filler, so queries are selective as on the Hub
                          json.dumps({"description": " ".join("w%d" % rnd.randint(0, 5000) for _ in range(20))})))
        rid = cur.lastrowid
        commit = hashlib.sha1(name.encode()).hexdigest()
        cur = db.execute("INSERT INTO snapshots (repo_id, commit_id, synced_at, file_count, total_size, selection) "
                         "VALUES (?,?,?,?,?,?)", (rid, commit, now, 1, 1000 + i, "x"))
        sid = cur.lastrowid
        sha = hashlib.sha256(name.encode()).hexdigest()
        db.execute("INSERT OR IGNORE INTO blobs (sha256, size, stored_at) VALUES (?,?,?)", (sha, 1000 + i, now))
        db.execute("INSERT INTO files VALUES (?,?,?,?,?,?)", (sid, "config.json", 1000 + i, commit, None, sha))
        db.execute("INSERT INTO refs VALUES (?,?,?,?,?)", (rid, "main", "branch", sid, now))
    # one big dataset
    cur = db.execute("INSERT INTO repos (hub, type, name, follow_rev, added_at, sync_status, last_sync_at) "
                     "VALUES ('hf','dataset','big/corpus','main',?, 'ok', ?)", (now, now))
    rid = cur.lastrowid
    cur = db.execute("INSERT INTO snapshots (repo_id, commit_id, synced_at, file_count, total_size, selection) "
                     "VALUES (?,?,?,?,?,?)", (rid, "b" * 40, now, n_files, n_files * 100, "x"))
    sid = cur.lastrowid
    for j in range(n_files):
        sha = hashlib.sha256(b"f%d" % j).hexdigest()
        db.execute("INSERT OR IGNORE INTO blobs (sha256, size, stored_at) VALUES (?,?,?)", (sha, 100, now))
        db.execute("INSERT INTO files VALUES (?,?,?,?,?,?)",
                   (sid, "data/shard-%03d/part-%06d.parquet" % (j // 1000, j), 100, "c" * 40, sha, sha))
    db.execute("INSERT INTO refs VALUES (?,?,?,?,?)", (rid, "main", "branch", sid, now))
    db.execute("COMMIT")
    db.close()


def timed_get(url, n=1):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        urllib.request.urlopen(url).read()
        out.append((time.perf_counter() - t) * 1000)
    return out


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def main():
    a, work = benchlib.args("catbench", repos=100000, files=100000)
    data = os.path.join(work, "data")
    subprocess.run([a.hubmirror, "init", "--data", data], check=True, stdout=subprocess.DEVNULL)
    t0 = time.time()
    generate(os.path.join(data, "catalog.db"), a.repos, a.files)
    gen = time.time() - t0
    ready = os.path.join(work, "url")
    srv = subprocess.Popen([a.hubmirror, "serve", "--data", data, "--listen", "127.0.0.1:0", "--p2p-listen", "127.0.0.1:0", "--ready-file", ready],
                           stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(ready):
                break
            time.sleep(0.05)
        m = open(ready).read().strip()
        rnd = random.Random(7)
        queries = [" ".join(rnd.sample(WORDS, k)) for k in (1, 2) for _ in range(100)]
        lat = []
        for q in queries:
            lat += timed_get(m + "/api/catalog/repos?limit=20&q=" + urllib.parse.quote(q))
        filt = []
        for t in TASKS * 20:
            filt += timed_get(m + "/api/catalog/repos?limit=20&sort=downloads&hub=hf&q=" + t.split("-")[0])
        facet = []
        for q in queries[:100]:
            facet += timed_get(m + "/api/catalog/repos?limit=20&hub=hf&type=model&q=" + urllib.parse.quote(q))
        tree = timed_get(m + "/api/datasets/big/corpus/tree/main?recursive=true", 20)
        tree_mid = timed_get(m + "/api/datasets/big/corpus/tree/main?recursive=true&cursor=data%2Fshard-050%2Fpart-050000.parquet", 20)
        files = timed_get(m + "/api/catalog/repos/hf/dataset/big/corpus/files?dir=data/shard-050", 20)
        listing = timed_get(m + "/api/catalog/repos?limit=50&sort=name", 20)
        rows = [
            ("catalog generated", "%d repos + %d files" % (a.repos, a.files), "%.1f s" % gen, ""),
            ("search, 1-2 words, top 20", "p50 %.2f ms" % pct(lat, 50), "p99 %.2f ms" % pct(lat, 99), "target p99 < 10 ms"),
            ("search + hub and type filters, top 20", "p50 %.2f ms" % pct(facet, 50), "p99 %.2f ms" % pct(facet, 99), ""),
            ("search + hub filter, sort by downloads", "p50 %.2f ms" % pct(filt, 50), "p99 %.2f ms" % pct(filt, 99), ""),
            ("HF tree page, 1000 entries (first)", "p50 %.2f ms" % pct(tree, 50), "p99 %.2f ms" % pct(tree, 99), "target < 20 ms"),
            ("HF tree page, 1000 entries (middle)", "p50 %.2f ms" % pct(tree_mid, 50), "p99 %.2f ms" % pct(tree_mid, 99), "target < 20 ms"),
            ("catalog file page, 1000 files", "p50 %.2f ms" % pct(files, 50), "p99 %.2f ms" % pct(files, 99), ""),
            ("catalog list page (50, by name)", "p50 %.2f ms" % pct(listing, 50), "p99 %.2f ms" % pct(listing, 99), ""),
        ]
        print("| case | p50 | p99 | notes |")
        print("|---|---|---|---|")
        for r in rows:
            print("| %s | %s | %s | %s |" % r)
    finally:
        benchlib.stop(srv, work=work)


if __name__ == "__main__":
    import urllib.parse
    main()
