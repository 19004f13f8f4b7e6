#!/usr/bin/env bash
# t0738-agent-pull-bound: a pull and the cache's bound (`agent --cache-size`), and status at a glance.
# - A pull bigger than the bound is refused up front (exit 1, nothing "pulled", nothing held), saying
#   what would fit and the ways out; --include of what fits, and --pin, work; status says which
#   snapshots are bigger than the cache.
# - A pull's files are not evicted in the minute after it said "pulled" (--keep-pulled), though more
#   pulls take the cache past its bound: its hub cache lookup (huggingface_hub's, replayed) finds them.
# - Sizes: 4M is 4 MiB, and status shows it so; the table's columns line up, each row names its
#   mirror, the HELD denominator is the snapshot's size whatever a reader reads, and a mount that has
#   what it wants is "ready", not "fetching 100%".
# - A pull whose hub cache could not be written (a bad HF_HOME) fails saying why, and the next pull
#   with a good one works.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "config.json", "content": "{\"big\": 1}\n"},
             {"path": "w1.bin", "size": 2000000, "seed": 381},
             {"path": "w2.bin", "size": 2000000, "seed": 382},
             {"path": "w3.bin", "size": 2000000, "seed": 383}]},
  {"hub": "hf", "type": "model", "id": "acme/s1", "files": [{"path": "w.bin", "size": 1500000, "seed": 384}]},
  {"hub": "hf", "type": "model", "id": "acme/s2", "files": [{"path": "w.bin", "size": 1500000, "seed": 385}]},
  {"hub": "hf", "type": "model", "id": "acme/s3", "files": [{"path": "w.bin", "size": 1500000, "seed": 386}]}
 ]}
JSON
sync_from_fake hf:acme/big hf:acme/s1 hf:acme/s2 hf:acme/s3
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
export HUBMIRROR_URL=$M
check "an agent bounded to 4M starts" "$HUBMIRROR" agent --cache "$T/cache" --cache-size 4M --listen 127.0.0.1:0

# ---- a pull bigger than the bound ----
"$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/big >"$T/p1.out" 2>"$T/p1.err"
st=$?
sed 's/^/# /' "$T/p1.out" "$T/p1.err"
check "a pull of 5.7 MiB through a 4 MiB bound fails" test "$st" = 1
check "and never says pulled" bash -c "! grep -q pulled '$T/p1.out'"
check "it says why and the ways out" bash -c "grep -q 'hf:acme/big (5.7 MiB) is bigger than the agent.s cache bound (--cache-size 4.0 MiB)' '$T/p1.err' &&
	grep -q 'pull --pin' '$T/p1.err' && grep -q 'bigger --cache-size' '$T/p1.err' && grep -q 'pull --include PATTERN, at most 4.0 MiB' '$T/p1.err'"
check "nothing of it is held nor linked" bash -c "! '$HUBMIRROR' status --json | grep -q acme/big && test ! -e '$T/hfc/models--acme--big'"
check "what fits of it pulls (--include)" "$HUBMIRROR" pull --hf-cache "$T/hfc" --include 'w1.bin' hf:acme/big
check "pinned, all of it pulls" "$HUBMIRROR" pull --hf-cache "$T/hfc" --pin hf:acme/big
"$HUBMIRROR" status --json >"$T/st1.json"
check "status --json: 4M is 4 MiB, and the snapshot is bigger than the cache" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1])); s=[s for s in d["snapshots"] if s["spec"]=="hf:acme/big"][0]
assert d["cache_size"] == 4 << 20 and s["over_bound"] is True and s["pinned"], (d["cache_size"], s)' "$T/st1.json"
"$HUBMIRROR" status >"$T/st1.txt"
sed 's/^/# /' "$T/st1.txt"
check "status says it too, and the bound as given" bash -c "grep -q 'used of 4.0 MiB' '$T/st1.txt' &&
	grep -Eq '^hf:acme/big .*complete, seeding; pinned; bigger than the cache' '$T/st1.txt'"
check "drop it" "$HUBMIRROR" drop --hf-cache "$T/hfc" hf:acme/big

# ---- a pull's files stay the minute after its "pulled" ----
# hfpath CACHE REPO: the snapshot folder huggingface_hub's snapshot_download(local_files_only=True)
# returns (refs/main, then snapshots/COMMIT), after checking each of its files exists; else exit 1
hfpath() { "$PY" - "$@" <<'PY'
import os, sys
repo = os.path.join(sys.argv[1], "models--" + sys.argv[2].replace("/", "--"))
commit = open(os.path.join(repo, "refs", "main")).read().strip()
snap = os.path.join(repo, "snapshots", commit)
assert os.path.isdir(snap), "LocalEntryNotFoundError: " + snap
for d, _, files in os.walk(snap):
    for f in files:
        assert os.path.isfile(os.path.join(d, f)), "a dangling link: " + os.path.join(d, f)
print(snap)
PY
}
check "pull s1" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/s1
check "pull s2" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/s2
check "pull s3" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/s3
# the agent measures the cache when the table changes: once it knows it is over, it has chosen
over() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not d["cache_used"] > d["cache_size"])'; }
wait_over() { local i; for i in $(seq 100); do over && return 0; sleep 0.2; done; return 1; }
check "three pulls of 1.4 MiB take the cache past 4 MiB" wait_over
sleep 1
check "s1, pulled seconds ago, is still held" bash -c "'$HUBMIRROR' status --json | grep -q '\"hf:acme/s1\"'"
check "and its hub cache lookup finds every file" hfpath "$T/hfc" acme/s1
check "no link in the hub cache dangles" test -z "$(find "$T/hfc" -xtype l)"

# ---- status at a glance ----
need_fuse
check "big mounts, fetching nothing up front" "$HUBMIRROR" mount --no-hf-cache --prefetch none hf:acme/big "$T/m"
held_of() { "$HUBMIRROR" status | awk -v s=hf:acme/big '$1 == s { for (i = 1; i <= NF; i++) if ($i == "of") { print $(i + 1) " " $(i + 2); break } }'; }
before=$(held_of)
"$HUBMIRROR" status >"$T/st2.txt"
check "idle with what it wants (nothing), it is ready, not fetching 100%" bash -c "grep -Eq '^hf:acme/big .* ready; 0 of [0-9]+ files' '$T/st2.txt' &&
	! grep -q 'fetching 100%' '$T/st2.txt'"
check "a read through the mount" "$PY" -c 'import sys; open(sys.argv[1], "rb").read()' "$T/m/w2.bin"
after=$(held_of)
"$HUBMIRROR" status >"$T/st3.txt"
sed 's/^/# /' "$T/st3.txt"
check "HELD's denominator is the snapshot's size before and after a read ($before, $after)" bash -c "test '$before' = '5.7 MiB' && test '$after' = '5.7 MiB'"
check "each row names its mirror" bash -c "grep -Eq '^hf:acme/big .* $M +$T/m$' '$T/st3.txt' && ! grep -E '^hf:acme/' '$T/st3.txt' | grep -vq ' $M '"
# every column of every row starts where its header does (two blanks before it)
check "the columns line up" "$PY" - "$T/st3.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
h = [i for i, l in enumerate(lines) if l.startswith("SPEC ")][0]
starts = [m.start() for m in re.finditer(r"(?<=  )\S", lines[h])] + [0]
rows = [l for l in lines[h + 1:] if l and not l.startswith("  ")]
assert len(starts) == 8 and rows, (lines[h], rows)
peers = lines[h].index("PEERS")
for r in rows:
    for p in starts:
        if p == peers:  # numbers end where their header does
            p += len("PEERS") - 1
            assert r[p] != " " and r[p + 1:p + 3] == "  ", (p, r)
        else:
            assert len(r) > p and r[p] != " " and (p == 0 or r[p - 2:p] == "  "), (p, r)
PY
check "umount" "$HUBMIRROR" umount "$T/m"

# ---- a pull after one whose hub cache could not be written ----
touch "$T/notadir"
HF_HOME=$T/notadir/hf "$HUBMIRROR" pull hf:acme/s2 >"$T/p5.out" 2>"$T/p5.err"
st=$?
sed 's/^/# /' "$T/p5.out" "$T/p5.err"
check "a pull into a bad HF_HOME fails, saying why" bash -c "test $st = 1 && grep -q 'notadir' '$T/p5.err'"
HF_HOME=$T/good "$HUBMIRROR" pull hf:acme/s2 >"$T/p6.out" 2>"$T/p6.err"
st=$?
sed 's/^/# /' "$T/p6.out" "$T/p6.err"
check "the next pull, with a good HF_HOME, works" test "$st" = 0
check "and links it" hfpath "$T/good/hub" acme/s2
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
