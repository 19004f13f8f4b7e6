#!/usr/bin/python3
"""checkstore.py DATA_DIR [--expect-fake URL]

The integrity invariants of a data directory, checked from outside the binary:
  - every blob file under store/blobs/<h0h1>/<name> hashes (sha256) to its name, in the right fan-out dir;
  - every catalog blob row is present in the store with its size;
  - every file row of every snapshot points at a catalog blob of the file's size;
  - every ref points at a snapshot whose files are all in the store;
  - snapshots' file_count / total_size match their file rows;
  - no partial file is visible anywhere but store/tmp.
With --expect-fake URL, each snapshot file's sha256 (and git id for regular files) must also match what
the fake upstream says that path holds at that commit (HF), or at the repo's listing (ModelScope).
Prints one line per problem and exits 1 if there is any.
"""
import hashlib
import json
import os
import sqlite3
import sys
import urllib.request


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    data = sys.argv[1]
    fake = sys.argv[sys.argv.index("--expect-fake") + 1] if "--expect-fake" in sys.argv else None
    problems = []
    blobs_dir = os.path.join(data, "store", "blobs")
    on_disk = {}
    for root, _dirs, files in os.walk(blobs_dir):
        for name in files:
            p = os.path.join(root, name)
            if os.path.basename(root) != name[:2] or len(name) != 64:
                problems.append("stray file in blobs: %s" % p)
                continue
            got = sha256_file(p)
            if got != name:
                problems.append("blob %s hashes to %s" % (name, got))
            on_disk[name] = os.path.getsize(p)
    for root, _dirs, files in os.walk(data):
        if os.path.relpath(root, data).startswith(os.path.join("store", "tmp")):
            continue
        for name in files:
            if name.endswith(".part"):
                problems.append("partial file outside store/tmp: %s" % os.path.join(root, name))

    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data, "catalog.db"), uri=True)
    for sha, size in db.execute("SELECT sha256, size FROM blobs"):
        if sha not in on_disk:
            problems.append("catalog blob %s missing from the store" % sha)
        elif on_disk[sha] != size:
            problems.append("blob %s has size %d, catalog says %d" % (sha, on_disk[sha], size))
    for snap, path, size, bsize in db.execute(
            "SELECT f.snapshot_id, f.path, f.size, b.size FROM files f LEFT JOIN blobs b ON b.sha256 = f.sha256"):
        if bsize is None:
            problems.append("snapshot %d file %s has no blob" % (snap, path))
        elif bsize != size:
            problems.append("snapshot %d file %s size %d != blob %d" % (snap, path, size, bsize))
    for sid, count, total, n, s in db.execute(
            "SELECT s.id, s.file_count, s.total_size, count(f.path), coalesce(sum(f.size), 0) "
            "FROM snapshots s LEFT JOIN files f ON f.snapshot_id = s.id GROUP BY s.id"):
        if count != n or total != s:
            problems.append("snapshot %d says %d files/%d bytes, has %d/%d" % (sid, count, total, n, s))
    if fake:
        spec = json.load(urllib.request.urlopen(fake + "/_fake/repos"))
        problems += compare_with_fake(db, spec)
    for p in problems:
        print("checkstore: " + p)
    if problems:
        sys.exit(1)
    print("checkstore: ok (%d blobs)" % len(on_disk))


def compare_with_fake(db, spec):
    problems = []
    repos = {}
    for r in spec["repos"]:
        repos[(r["hub"], r["type"], r["id"])] = r
    rows = db.execute(
        "SELECT r.hub, r.type, r.name, x.name, s.commit_id, f.path, f.size, f.sha256, f.git_oid "
        "FROM refs x JOIN repos r ON r.id = x.repo_id JOIN snapshots s ON s.id = x.snapshot_id "
        "JOIN files f ON f.snapshot_id = s.id")
    for hub, typ, name, ref, commit, path, size, sha, git in rows:
        r = repos.get((hub, typ, name))
        if r is None:
            continue  # deleted upstream since: nothing to compare with
        by_id = {c["id"]: c for c in r.get("commits", [])}
        # HF snapshots are named by the commit; ModelScope ones by our tree id, so use the ref's head.
        c = by_id.get(commit) or by_id.get(r.get("branches", {}).get(ref, ""))
        if c is None:
            continue  # the ref moved upstream after our sync
        want = {f["path"]: f for f in c["files"]}.get(path)
        if want is None:
            problems.append("%s:%s %s: no such file upstream" % (hub, name, path))
            continue
        if want["sha256"] != sha or want["size"] != size:
            problems.append("%s:%s %s: sha256/size differ from upstream" % (hub, name, path))
        if git and want.get("oid") != git:
            problems.append("%s:%s %s: git id %s != upstream %s" % (hub, name, path, git, want.get("oid")))
    return problems


if __name__ == "__main__":
    main()
