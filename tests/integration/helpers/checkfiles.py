#!/usr/bin/python3
"""checkfiles.py UPSTREAM_JSON HUB REPO DIR: every file of REPO's head commit, as the fake upstream's
/_fake/repos describes it, is in DIR with upstream's sha256; DIR holds nothing else (a BitTorrent
client's pad-file folder .pad/ and a git clone's .git/ aside). Exit 0 or 1 with the first difference."""
import hashlib
import json
import os
import sys


def main():
    spec, hub, repo, d = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
    r = next(x for x in spec["repos"] if x["hub"] == hub and x["id"] == repo)
    head = next(c for c in r["commits"] if c["id"] == r["sha"])
    want = {f["path"]: f["sha256"] for f in head["files"]}
    have = set()
    for root, dirs, files in os.walk(d):
        dirs[:] = [x for x in dirs if not (root == d and x in (".pad", ".git"))]
        for name in files:
            have.add(os.path.relpath(os.path.join(root, name), d))
    if have != set(want):
        print("files differ: missing %s, extra %s" % (sorted(set(want) - have), sorted(have - set(want))))
        return 1
    for path, sha in sorted(want.items()):
        h = hashlib.sha256()
        with open(os.path.join(d, path), "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        if h.hexdigest() != sha:
            print("%s: sha256 %s, upstream %s" % (path, h.hexdigest(), sha))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
