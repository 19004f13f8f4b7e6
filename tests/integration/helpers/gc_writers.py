#!/usr/bin/python3
"""gc_writers.py MIRROR DATA SCENARIO ... - writers whose contents gc must not take (t0845-gc-writers.sh),
each result an "ok - X" or "not ok - X" line. Token hf_writer_acme_0001 writes hf:acme/*. DATA is the
mirror's data directory, whose store is checked by sha256 for every file a commit was answered for.

Scenarios:
  commit-many REPO N         one commit of N small files (huggingface_hub's NDJSON, contents inline)
  commit-again REPO ROUNDS N the same N contents committed (inline) into REPO-0, REPO-1, ...,
                             each read back and then deleted (but the last); every other round then
                             waits for gc (the test's loop) to take them, the others go on at once
                             (t0870, the store in a bucket)
  upload-then-commit REPO GO [MIB...]
                             upload_folder's flow for large files (two basic PUTs and a multipart one,
                             or objects of the sizes MIB say),
                             then wait for the file GO to exist (the test runs gc meanwhile), then
                             the commit that names them
"""
import base64
import hashlib
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfupload  # noqa: E402
from hfupload import Api, check  # noqa: E402

M, DATA, SCENARIO, ARGS = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
TOKEN = "hf_writer_acme_0001"



def in_store(sha):
    p = os.path.join(DATA, "store", "blobs", sha[:2], sha)
    try:
        with open(p, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == sha
    except OSError:
        return False


def commit_many(repo, n):
    n = int(n)
    api = Api(M, TOKEN)
    api.create_repo(repo, exist_ok=True)
    files = [(f"data/{i // 1000:02d}/f{i:05d}.txt", f"file {i} of {repo} {time.time_ns()}\n".encode()) for i in range(n)]
    ops = [{"key": "file", "value": {"path": p, "content": base64.b64encode(c).decode(), "encoding": "base64"}}
           for p, c in files]
    t0 = time.monotonic()
    ans = api.commit(repo, ops, f"{n} small files")
    print(f"# the commit took {time.monotonic() - t0:.1f} s")
    check(f"a commit of {n} small files is answered with its id", len(ans.get("commitOid", "")) == 40, ans)
    missing = [p for p, c in files if not in_store(hashlib.sha256(c).hexdigest())]
    check(f"every one of the {n} files is in the store, by sha256", not missing,
          f"{len(missing)} missing, e.g. {missing[:3]}")
    for p, c in files[:: max(1, n // 50)]:  # a sample read back through the API
        req = urllib.request.Request(f"{M}/{repo}/resolve/main/{p}", headers={"authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            if r.read() != c:
                check(f"{p} reads back", False)
                break
    else:
        check("a sample of them reads back through the API", True)


def upload_then_commit(repo, go, *mib):
    api = Api(M, TOKEN)
    api.create_repo(repo, exist_ok=True)
    sizes = [int(m) << 20 for m in mib] or [11 << 20, 12 << 20, 130 << 20]
    blobs = [hashlib.shake_256(f"{repo} {i} {time.time_ns()}".encode()).digest(n) for i, n in enumerate(sizes)]
    sent = api.lfs_upload(repo, blobs)
    check("three large objects uploaded (basic, basic, multipart)" if not mib else f"{len(sizes)} objects uploaded",
          sent == len(sizes), sent)
    print("uploaded", flush=True)
    for _ in range(600):
        if os.path.exists(go):
            break
        time.sleep(0.1)
    ops = [{"key": "lfsFile", "value": {"path": f"shard-{i}.safetensors", "algo": "sha256",
                                        "oid": hashlib.sha256(b).hexdigest(), "size": len(b)}}
           for i, b in enumerate(blobs)]
    ans = api.commit(repo, ops, "the shards, after a gc")
    check("the commit that names them, after gc ran, goes through", len(ans.get("commitOid", "")) == 40, ans)
    for i, b in enumerate(blobs):
        req = urllib.request.Request(f"{M}/{repo}/resolve/main/shard-{i}.safetensors",
                                     headers={"authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=120) as r:
            check(f"shard {i} reads back byte for byte", r.read() == b)


def commit_again(repo, rounds, n):
    """The same N contents committed (inline, as huggingface_hub sends small files) into a new repo
    ROUNDS times, each repo deleted after it is read back: gc (the test's loop) takes the contents while
    the next round's commit finds them in the store, or puts them again."""
    api = Api(M, TOKEN)
    files = [(f"w{i}.txt", hashlib.shake_256(f"again {i}".encode()).digest(3000 + i)) for i in range(int(n))]
    ops = [{"key": "file", "value": {"path": p, "content": base64.b64encode(c).decode(), "encoding": "base64"}}
           for p, c in files]
    bad = []
    for r in range(int(rounds)):
        name = f"{repo}-{r}"
        api.create_repo(name, exist_ok=True)
        ans = api.commit(name, ops, f"round {r}")
        if len(ans.get("commitOid", "")) != 40:
            bad.append(f"round {r}: the commit: {ans}")
            continue
        for p, c in files:
            req = urllib.request.Request(f"{M}/{name}/resolve/main/{p}", headers={"authorization": f"Bearer {TOKEN}"})
            try:
                with urllib.request.urlopen(req, timeout=120) as f:
                    if f.read() != c:
                        bad.append(f"round {r}: {p} differs")
            except OSError as e:
                bad.append(f"round {r}: {p}: {e}")
        if r + 1 < int(rounds):
            api.delete_repo(name)
        if r % 2 == 1 and r + 1 < int(rounds):  # every other round waits for gc to take them
            # (the next commit puts them again)
            first = hashlib.sha256(files[0][1]).hexdigest()
            for _ in range(2400):
                if not in_store(first):
                    break
                time.sleep(0.1)
            else:
                bad.append(f"round {r}: gc did not take the contents of the deleted repo")
    check(f"{rounds} rounds of the same {n} contents committed and read back byte for byte", not bad, bad[:5])


{"commit-many": commit_many, "upload-then-commit": upload_then_commit, "commit-again": commit_again}[SCENARIO](*ARGS)
sys.exit(1 if hfupload.FAILED else 0)
