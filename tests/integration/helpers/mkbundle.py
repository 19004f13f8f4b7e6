#!/usr/bin/python3
"""mkbundle.py - write a hubmirror bundle (the format `hubmirror export` writes: a pax tar whose first
entry is manifest.json, then blobs/<sha256>) holding one synthetic repository, for scale tests.

  mkbundle.py OUT SPEC --files N [--distinct K] [--min-size B] [--max-size B] [--big-mib M] [--repos R]

SPEC is hf:ORG/NAME or hf:datasets/ORG/NAME. The repo gets N files data/DDD/file_NNNNNN.bin (K distinct
contents of sizes between min and max, deterministic), a README.md, and with --big-mib one file
big.bin of M MiB of random bytes, at one commit on main. With --repos R, R such repos SPEC-000,
SPEC-001, ... (the same contents, so one torrent each under its own name).
"""
import argparse
import hashlib
import io
import json
import os
import random
import tarfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("spec")
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--distinct", type=int, default=1000)
    ap.add_argument("--min-size", type=int, default=2000)
    ap.add_argument("--max-size", type=int, default=4000)
    ap.add_argument("--big-mib", type=int, default=0)
    ap.add_argument("--repos", type=int, default=0)
    a = ap.parse_args()
    hub, rest = a.spec.split(":", 1)
    kind = "model"
    if rest.startswith("datasets/"):
        kind, rest = "dataset", rest[len("datasets/"):]
    rnd = random.Random(7)
    a.distinct = max(0, min(a.distinct, a.files))
    contents = [rnd.randbytes(rnd.randint(a.min_size, a.max_size)) for _ in range(a.distinct)]
    contents.append(b"# synthetic repository for scale tests\n")
    shas = [hashlib.sha256(c).hexdigest() for c in contents]
    gits = [hashlib.sha1(b"blob %d\0" % len(c) + c).hexdigest() for c in contents]
    files = [{"path": "README.md", "size": len(contents[-1]), "sha256": shas[-1], "git_oid": gits[-1], "lfs_oid": None}]
    for i in range(a.files):
        k = i % a.distinct
        files.append({"path": "data/%03d/file_%06d.bin" % (i % 1000, i), "size": len(contents[k]),
                      "sha256": shas[k], "git_oid": gits[k], "lfs_oid": None})
    big = None
    if a.big_mib:
        # written beside OUT first: its sha256 goes in the manifest, which comes first in the tar
        big = a.out + ".big"
        h = hashlib.sha256()
        with open(big, "wb") as f:
            for _ in range(a.big_mib):
                chunk = os.urandom(1 << 20)
                h.update(chunk)
                f.write(chunk)
        size = a.big_mib << 20
        files.append({"path": "big.bin", "size": size, "sha256": h.hexdigest(), "git_oid": None,
                      "lfs_oid": h.hexdigest()})
    now = int(time.time())
    names = [rest] if not a.repos else ["%s-%03d" % (rest, r) for r in range(a.repos)]
    repos = []
    for name in names:
        commit = hashlib.sha1(("%s %s %d %d" % (hub, name, a.files, a.big_mib)).encode()).hexdigest()
        repos.append({"hub": hub, "type": kind, "name": name, "follow_rev": "main", "include": [], "exclude": [],
                      "options": {}, "refs_policy": None,
                      "refs": [{"name": "main", "kind": "branch", "commit": commit}],
                      "snapshots": [{"commit": commit, "synced_at": now, "files": files}],
                      "meta": {"gated": "false", "private": 0}})
    manifest = {"format": "hubmirror-bundle", "version": 1, "created": now, "repos": repos,
                "blobs": [{"sha256": s, "size": len(c)} for s, c in zip(shas, contents)]}
    if big:
        manifest["blobs"].append({"sha256": files[-1]["sha256"], "size": files[-1]["size"]})
    with tarfile.open(a.out, "w", format=tarfile.PAX_FORMAT) as t:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = now
            t.addfile(ti, io.BytesIO(data))
        add("manifest.json", json.dumps(manifest, separators=(",", ":")).encode())
        for s, c in zip(shas, contents):
            add("blobs/" + s, c)
        if big:
            t.add(big, "blobs/" + files[-1]["sha256"])
    if big:
        os.unlink(big)


if __name__ == "__main__":
    main()
