#!/usr/bin/env bash
# t0803-bundle: export repositories into a bundle, import it into an empty mirror that never saw the
# upstream: it answers byte-identical (Hugging Face and ModelScope APIs, tags too) and hands out the
# same torrents (info-hashes); importing again stores nothing new. Hostile archives (a symlink, a
# device, "..", an absolute path, an entry the manifest does not name, a wrong size, no manifest
# first) are refused with the store untouched; a damaged content is refused and nothing of its repos
# enters the catalog.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/bundled",
   "commits": [{"key": "c1", "files": [{"path": "config.json", "content": "{\"v\": 1}\n"},
                                       {"path": "model.safetensors", "size": 3000000, "seed": 4}]},
               {"key": "c2", "parent": "c1", "files": [{"path": "config.json", "content": "{\"v\": 2}\n"}]}],
   "branches": {"main": "c2"}, "tags": {"v1.0": "c1"}},
  {"hub": "ms", "type": "model", "id": "acme/ms-bundled",
   "files": [{"path": "configuration.json", "content": "{}\n"},
             {"path": "sub/tokenizer.json", "content": "{\"t\": 1}\n"}]},
  {"hub": "hf", "type": "dataset", "id": "acme/rows",
   "files": [{"path": "data/train.csv", "content": "a,b\n1,2\n"}]}
 ]}
JSON
check "synced from the fake upstream" sync_from_fake hf:acme/bundled ms:acme/ms-bundled hf:datasets/acme/rows
check "export" "$HUBMIRROR" export --output "$T/b.tar" hf:acme/bundled ms:acme/ms-bundled hf:datasets/acme/rows
check "export (zstd)" "$HUBMIRROR" export --output "$T/b.tar.zst" hf:acme/bundled ms:acme/ms-bundled hf:datasets/acme/rows
check "the bundle starts with its manifest, then the contents" bash -c "tar -tf '$T/b.tar' | head -1 | grep -qx manifest.json &&
	[ \"\$(tar -tf '$T/b.tar' | grep -c '^blobs/[0-9a-f]\{64\}\$')\" = \"\$(tar -tf '$T/b.tar' | tail -n +2 | wc -l)\" ]"
# on a terminal (script(1) gives one): a progress line for what hours on terabytes would take
script -qec "'$HUBMIRROR' export --output '$T/tty.tar' hf:acme/bundled" /dev/null >"$T/tty-export.out" 2>&1
check "export on a terminal draws its progress" grep -aEq 'export: ([0-9]+) of \1 contents, [0-9.]+ [KM]iB of [0-9.]+ [KM]iB \(100%\)' "$T/tty-export.out"
script -qec "'$HUBMIRROR' import --data '$T/tty-data' '$T/tty.tar'" /dev/null >"$T/tty-import.out" 2>&1
check "and import" grep -aEq 'import: ([0-9]+) of \1 contents, [0-9.]+ [KM]iB of [0-9.]+ [KM]iB \(100%\)' "$T/tty-import.out"
check "exporting an untracked repo fails" bash -c "! '$HUBMIRROR' export --output '$T/x.tar' hf:acme/nope 2>/dev/null && [ ! -e '$T/x.tar' ]"

# ---- import into an empty mirror (no upstream at all) ----
B=$T/offline
check "import into an empty data directory" env -u HUBMIRROR_HF_UPSTREAM -u HUBMIRROR_MS_UPSTREAM "$HUBMIRROR" import --data "$B" --json "$T/b.tar.zst"
"$HUBMIRROR" import --data "$B" --json "$T/b.tar" >"$T/again.json"
check "importing again stores nothing new" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1])); assert d["blobs"] == 0 and d["blobs_skipped"] >= 6 and d["repos"] == 3, d' "$T/again.json"
check "serve on the source starts" start_serve --p2p-listen off
A=$M
check "serve on the imported mirror starts" start_serve --data "$B" --p2p-listen off
same() { cmp <(curl -fsS "$A$1") <(curl -fsS "$M$1"); }
check "HF info is the same" same /api/models/acme/bundled
check "HF tree is the same" same "/api/models/acme/bundled/tree/main?recursive=true"
check "a file by branch" same /acme/bundled/resolve/main/model.safetensors
check "a file by tag" same /acme/bundled/resolve/v1.0/config.json
check "the refs" same /api/models/acme/bundled/refs
check "a dataset file" same /datasets/acme/rows/resolve/main/data/train.csv
msdata() { curl -fsS "$1/api/v1/models/acme/ms-bundled/repo/files?Revision=master&Recursive=True" |
	"$PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["Data"], sort_keys=True))'; }
check "ModelScope listing (its Data; the RequestId is per request)" test "$(msdata "$A")" = "$(msdata "$M")"
check "ModelScope download" same "/api/v1/models/acme/ms-bundled/repo?Revision=master&FilePath=sub/tokenizer.json"
swarm() { curl -fsS "$1/api/catalog/repos/hf/model/acme/bundled" | "$PY" -c 'import json,sys; s=json.load(sys.stdin)["swarm"]; print(s["btih"], s["btmh"])'; }
check "the same torrent (info-hashes)" test "$(swarm "$A")" = "$(swarm "$M")"

# ---- hostile and damaged archives: refused, the store untouched ----
"$PY" - "$T/b.tar" "$T" <<'PY'
import io, json, os, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
with tarfile.open(src) as t:
    members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
manifest, blobs = members[0], members[1:]
def write(name, entries):
    with tarfile.open(os.path.join(out, name), "w", format=tarfile.PAX_FORMAT) as t:
        for m, data in entries:
            m = tarfile.TarInfo(m.name) if isinstance(m, tarfile.TarInfo) else m
            if data is None:
                continue
            m.size = len(data)
            t.addfile(m, io.BytesIO(data))
def extra(name, info):
    with tarfile.open(os.path.join(out, name), "w", format=tarfile.PAX_FORMAT) as t:
        for m, data in [manifest] + blobs[:1]:
            ti = tarfile.TarInfo(m.name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
        t.addfile(info)
sl = tarfile.TarInfo("blobs/" + "0" * 64); sl.type = tarfile.SYMTYPE; sl.linkname = "/etc/passwd"
extra("h-symlink.tar", sl)
dev = tarfile.TarInfo("blobs/" + "1" * 64); dev.type = tarfile.CHRTYPE; dev.devmajor, dev.devminor = 1, 3
extra("h-device.tar", dev)
def with_entry(name, entry_name, data, first=None):
    with tarfile.open(os.path.join(out, name), "w", format=tarfile.PAX_FORMAT) as t:
        for m, d in ([first] if first else [manifest]) + blobs[:1] + [(tarfile.TarInfo(entry_name), data)]:
            ti = tarfile.TarInfo(m.name); ti.size = len(d); t.addfile(ti, io.BytesIO(d))
with_entry("h-dotdot.tar", "blobs/../../evil", b"x")
with_entry("h-absolute.tar", "/tmp/evil-" + "2" * 8, b"x")
with_entry("h-unnamed.tar", "blobs/" + "3" * 64, b"x")
# a listed content with the wrong size
name, data = blobs[0][0].name, blobs[0][1]
with tarfile.open(os.path.join(out, "h-size.tar"), "w", format=tarfile.PAX_FORMAT) as t:
    for m, d in [manifest, (blobs[0][0], data + b"!")]:
        ti = tarfile.TarInfo(m.name); ti.size = len(d); t.addfile(ti, io.BytesIO(d))
# no manifest first
with tarfile.open(os.path.join(out, "h-nomanifest.tar"), "w", format=tarfile.PAX_FORMAT) as t:
    for m, d in blobs[:1] + [manifest]:
        ti = tarfile.TarInfo(m.name); ti.size = len(d); t.addfile(ti, io.BytesIO(d))
# a damaged content: right name and size, other bytes (the biggest, so the others may go in first)
big = max(range(len(blobs)), key=lambda i: len(blobs[i][1]))
with tarfile.open(os.path.join(out, "d-corrupt.tar"), "w", format=tarfile.PAX_FORMAT) as t:
    for i, (m, d) in enumerate([manifest] + blobs):
        if i - 1 == big:
            d = bytes([d[0] ^ 0xff]) + d[1:]
        ti = tarfile.TarInfo(m.name); ti.size = len(d); t.addfile(ti, io.BytesIO(d))
PY
blobs_of() { (cd "$1/store/blobs" 2>/dev/null && find . -type f | sort); }
for h in symlink device dotdot absolute unnamed size nomanifest; do
	C=$T/h-$h
	"$HUBMIRROR" import --data "$C" "$T/h-$h.tar" 2>"$T/h-$h.err"; st=$?
	check "hostile archive ($h) refused, and the mirror it was to make is not left behind" bash -c "[ $st = 1 ] &&
		[ ! -e '$C' ] && [ ! -e /tmp/evil-22222222 ]"
done
check "the refusal says what is wrong" grep -q 'not a regular file' "$T/h-symlink.err"
C=$T/damaged
"$HUBMIRROR" import --data "$C" "$T/d-corrupt.tar" 2>"$T/d.err"; st=$?
check "a damaged content is refused and nothing is left" bash -c "[ $st = 1 ] && grep -q 'does not hash to its name' '$T/d.err' &&
	[ ! -e '$C' ]"
# into a mirror that was there: a failed import takes nothing of it
"$HUBMIRROR" init --data "$C" >/dev/null
mkdir -p "$C/store/blobs/00" && echo keep >"$C/store/blobs/00/mine"
"$HUBMIRROR" import --data "$C" "$T/d-corrupt.tar" 2>/dev/null
check "into an existing mirror: refused, and what was there stays" bash -c "[ -e '$C/catalog.db' ] && [ -e '$C/store/blobs/00/mine' ] &&
	[ \"\$(HUBMIRROR_DATA='$C' '$HUBMIRROR' ls --json)\" = '[]' ]"
rm "$C/store/blobs/00/mine"
"$HUBMIRROR" import --data "$T/fresh" "$T/b.tar" >/dev/null 2>"$T/fresh.err"
check "an import that makes a mirror says so" grep -q "made a new mirror in '$T/fresh'" "$T/fresh.err"
check "the good bundle then completes that mirror" "$HUBMIRROR" import --data "$C" "$T/b.tar"
check "which says no mirror was made (there was one)" bash -c "! '$HUBMIRROR' import --data '$C' '$T/b.tar' 2>&1 | grep -q 'made a new mirror'"
# export --all: every repo that has a snapshot, the never-synced counted
HUBMIRROR_DATA=$C "$HUBMIRROR" add hf:acme/never-synced >/dev/null 2>&1
HUBMIRROR_DATA=$C "$HUBMIRROR" export --all --output "$T/all.tar" >"$T/all.out" 2>&1
check "export --all takes every synced repo, and says what it left out" grep -q \
	"export: 3 repos, .*; 1 repo never synced left out" "$T/all.out"
"$HUBMIRROR" import --data "$T/from-all" --json "$T/all.tar" >"$T/from-all.json" 2>/dev/null
check "and its bundle imports them" "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["repos"] == 3, d' "$T/from-all.json"
expect_status 2 "export --all with specs is a usage error" env HUBMIRROR_DATA="$C" "$HUBMIRROR" export --all --output "$T/x2.tar" hf:acme/bundled
# a decompression bomb: a few hundred KB of gzip whose manifest.json inflates to 128 MiB of (valid) JSON
"$PY" - "$T/h-bomb.tar.gz" <<'PY'
import io, sys, tarfile
size = 128 << 20
class Spaces(io.RawIOBase):
    def __init__(self):
        self.left = size - 2
        self.head = b"{"
    def readable(self):
        return True
    def readinto(self, b):
        if self.head:
            n = len(self.head); b[:n] = self.head; self.head = b""; return n
        if self.left <= 0:
            if self.left == 0:
                b[:1] = b"}"; self.left = -1; return 1
            return 0
        n = min(len(b), self.left); b[:n] = b" " * n; self.left -= n; return n
with tarfile.open(sys.argv[1], "w:gz", compresslevel=9) as t:
    ti = tarfile.TarInfo("manifest.json"); ti.size = size
    t.addfile(ti, io.BufferedReader(Spaces(), 1 << 20))
PY
echo "# the bomb: $(stat -c %s "$T/h-bomb.tar.gz") bytes of gzip"
C=$T/bomb
"$HUBMIRROR" import --data "$C" "$T/h-bomb.tar.gz" 2>"$T/bomb.err"; st=$?
sed 's/^/# /' "$T/bomb.err"
check "a manifest that inflates hundreds of times over is refused (status $st)" test "$st" = 1
check "saying it is a decompression bomb" grep -q "decompression bomb" "$T/bomb.err"
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f %M -o "$T/bomb.rss" "$HUBMIRROR" import --data "$C" "$T/h-bomb.tar.gz" 2>/dev/null
	rss=$(tail -1 "$T/bomb.rss")
	# What the binary takes doing nothing (a sanitizer build's shadow memory alone is ~55 MB) is not
	# the import's: the bomb asks for 128 MiB more than that, and the import must stay far below.
	/usr/bin/time -f %M -o "$T/base.rss" "$HUBMIRROR" --version >/dev/null 2>&1
	base=$(tail -1 "$T/base.rss")
	check "without taking the memory it asks for ($rss KiB at most, $base KiB of them the binary's own)" \
		test $((rss - base)) -lt 65536
fi
finish
