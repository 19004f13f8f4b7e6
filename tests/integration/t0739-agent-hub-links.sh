#!/usr/bin/env bash
# t0739-agent-hub-links: a mount's links in the hub caches never dangle once it is gone. At umount
# (and at agent --stop) they point at the agent's cache where it holds the files verified (as a pull
# links them), and are taken away where it does not, the command saying which; drop takes the links
# it made away with the files. The lookups are huggingface_hub's snapshot_download and hf_hub_download
# with local_files_only=True, replayed as they read the cache (refs/REV, snapshots/COMMIT/FILE), and
# ModelScope's two layouts; "dangling" is `find -xtype l`. Needs root and FUSE.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/links",
   "files": [{"path": "config.json", "content": "{\"links\": 1}\n"},
             {"path": "sub/w.bin", "size": 1200000, "seed": 391}]},
  {"hub": "ms", "type": "model", "id": "acme/links.ms",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "w.bin", "size": 700000, "seed": 392}]}
 ]}
JSON
sync_from_fake hf:acme/links ms:acme/links.ms
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
export HUBMIRROR_URL=$M MODELSCOPE_CACHE=$T/msc
trap 'for d in a b c d; do "$HUBMIRROR" umount "$T/$d" 2>/dev/null || umount -l "$T/$d" 2>/dev/null; done; _cleanup' EXIT
check "the agent starts" "$HUBMIRROR" agent --cache "$T/cache" --listen 127.0.0.1:0
# hf_lookup CACHE: what snapshot_download(local_files_only=True) returns (refs/main -> snapshots/COMMIT;
# LocalEntryNotFoundError when that folder is missing: "missing"), each of its files read back
# (hf_hub_download's path must be a file); exit 1 on a path without its file
hf_lookup() { "$PY" - "$1" <<'PY'
import os, sys
repo = os.path.join(sys.argv[1], "models--acme--links")
try:
    commit = open(os.path.join(repo, "refs", "main")).read().strip()
except FileNotFoundError:
    print("missing"); sys.exit(0)
snap = os.path.join(repo, "snapshots", commit)
if not os.path.isdir(snap):
    print("missing"); sys.exit(0)
n = 0
for d, _, files in os.walk(snap):
    for f in files:
        p = os.path.join(d, f)
        open(p, "rb").read()  # FileNotFoundError on a dangling link
        n += 1
print("%d files" % n)
PY
}
dangling() { find "$T/hfc" "$T/msc" -xtype l 2>/dev/null; }

# ---- a mount whose files the cache holds verified: relinked to the cache ----
check "mount a, every file fetched (--prefetch all)" "$HUBMIRROR" mount --hf-cache "$T/hfc" --prefetch all hf:acme/links "$T/a"
verified() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; sys.exit(not all(s["verified"] for s in json.load(sys.stdin)["snapshots"]))'; }
wait_verified() { local i; for i in $(seq 150); do verified && return 0; sleep 0.2; done; return 1; }
check "it is verified in the cache" wait_verified
n=$(hf_lookup "$T/hfc" | cut -d' ' -f1)
check "the HF cache finds it through the mount ($n files)" test "$n" -ge 2
"$HUBMIRROR" umount "$T/a" >"$T/u1.out" 2>&1
sed 's/^/# /' "$T/u1.out"
check "umount says the links now point at the cache" grep -q "unmounted $T/a: its $n files in the hub cache now point at the agent's cache (verified)" "$T/u1.out"
check "after umount the HF cache still finds every file" test "$(hf_lookup "$T/hfc")" = "$n files"
check "byte for byte, from the agent's cache" bash -c "
	'$PY' '$HM_SRC/tests/integration/helpers/checkfiles.py' '$T/up.json' hf acme/links '$T/hfc/models--acme--links/snapshots/'* &&
	readlink '$T/hfc/models--acme--links/snapshots/'*/sub/w.bin | grep -q '^$T/cache/'"
check "nothing dangles" test -z "$(dangling)"
drop=$("$HUBMIRROR" drop hf:acme/links --hf-cache "$T/hfc" 2>&1)
echo "# $drop"
check "drop takes the links it made away with the files" bash -c "grep -Eq 'and its $n links from the Hugging Face cache' <<<'$drop' &&
	test ! -e '$T/hfc/models--acme--links/snapshots'"
check "and nothing dangles" test -z "$(dangling)"

# ---- a mount whose files the cache does not hold: the links go ----
check "mount b, fetching nothing up front" "$HUBMIRROR" mount --hf-cache "$T/hfc" --prefetch none hf:acme/links "$T/b"
check "one file read through it" cmp -s "$T/b/config.json" "$T/b/config.json"
"$HUBMIRROR" umount "$T/b" >"$T/u2.out" 2>&1
sed 's/^/# /' "$T/u2.out"
check "umount says the links into it were taken away" grep -q "unmounted $T/b: $n links into it taken out of the hub cache" "$T/u2.out"
check "snapshot_download finds nothing (rather than a folder without files)" test "$(hf_lookup "$T/hfc")" = missing
check "nothing dangles" test -z "$(dangling)"

# ---- ModelScope, and the agent's stop ----
check "mount c (ModelScope, both layouts)" "$HUBMIRROR" mount --prefetch none ms:acme/links.ms "$T/c"
check "mount d (HF, every file)" "$HUBMIRROR" mount --hf-cache "$T/hfc" --prefetch all hf:acme/links "$T/d"
check "d is verified" wait_verified
check "the ModelScope caches point into the mount" bash -c "readlink '$T/msc/models/acme/links___ms/w.bin' | grep -q '^$T/c/'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "after the agent's stop nothing dangles" test -z "$(dangling)"
check "the HF cache finds d's files in the cache" test "$(hf_lookup "$T/hfc")" = "$n files"
check "the classic ModelScope SDK's index went with its links" test ! -e "$T/msc/models/acme/links___ms/.msc"
check "the agent's log says so" grep -Eq "unmounted from $T/c: 0 files in the hub cache now point at the cache's verified files, [0-9]+ links into the mount taken away" "$T/cache/agent.log"
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
