#!/usr/bin/env python3
"""gitcommit-fast-import.py DUMP: by hand, after a long fuzz-gitcommit run with FUZZ_GITCOMMIT_DUMP=DUMP
(see tests/fuzz/fuzz-gitcommit.c): every commit the parser accepted, handed to the real git fast-import
as mirror/gitrepo.c hands it (author, committer, data), must come back as the very bytes the harness
checked it writes back to (here with the empty tree and no parent). Prints how many held and any that
did not; exits 1 if one did not."""
import os, subprocess, sys, tempfile

EMPTY = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
rows = []
seen = set()
for line in open(sys.argv[1]):
    parts = line.split(" ")
    if len(parts) != 3:
        continue
    a, c, m = (bytes.fromhex(p.strip()) for p in parts)
    if (a, c, m) not in seen:
        seen.add((a, c, m))
        rows.append((a, c, m))
with tempfile.TemporaryDirectory() as d:
    subprocess.run(["git", "init", "-q", "--bare", d], check=True)
    stream = bytearray()
    for i, (a, c, m) in enumerate(rows):
        stream += b"commit refs/heads/c%d\nauthor %s\ncommitter %s\ndata %d\n%s\ndeleteall\n\n" % (i, a, c, len(m), m)
    stream += b"done\n"
    r = subprocess.run(["git", "--git-dir", d, "fast-import", "--quiet", "--done"], input=bytes(stream),
                       capture_output=True)
    if r.returncode:
        print("git fast-import refused the stream:", r.stderr.decode(errors="replace")[:2000])
        sys.exit(1)
    bad = 0
    for i, (a, c, m) in enumerate(rows):
        got = subprocess.run(["git", "--git-dir", d, "cat-file", "commit", "refs/heads/c%d" % i],
                             capture_output=True, check=True).stdout
        want = b"tree %s\nauthor %s\ncommitter %s\n\n%s" % (EMPTY.encode(), a, c, m)
        if got != want:
            bad += 1
            print("differs:", repr(want[:200]), "->", repr(got[:200]))
    print("%d accepted commits, %d written back by git fast-import byte for byte" % (len(rows), len(rows) - bad))
    sys.exit(1 if bad else 0)
