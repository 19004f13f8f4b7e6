#!/usr/bin/env bash
# t0824-huge-snapshot: a dataset of 100,000 small files (a bundle made by helpers/mkbundle.py, imported
# through the real binary) gets a torrent within bounds: 16 KiB pieces (not 256 KiB ones padded with
# 26 GB of zeros), one piece per file, at most 256 bytes of torrent per file; libtorrent's Python
# binding loads it (raised limits: a stock client refuses torrents over 10 MB) and lists every file
# under its own path; serve hands it out and seeds it. An instance pulls one folder of it (--include)
# and mounts it, every file listed. Numbers in docs/p2p.md.
. "$HM_SRC/tests/integration/lib.sh"
"$PY" -c 'import libtorrent' 2>/dev/null || skip "python3-libtorrent is not installed (bash .ci/setup installs it)"
N=100000
check "a bundle of $N files is made" "$PY" "$HM_SRC/tests/integration/helpers/mkbundle.py" "$T/many.tar" hf:datasets/big/many \
	--files "$N" --distinct 1000
start=$(date +%s%N)
check "it imports, with its torrent" bash -c "'$HUBMIRROR' import '$T/many.tar' >'$T/import.out' 2>&1 && grep -q '1 torrent made' '$T/import.out' || { cat '$T/import.out'; false; }"
echo "# import of $N files with the torrent: $(( ($(date +%s%N) - start) / 1000000 )) ms"
check "serve starts" start_serve
curl -fsS "$M/api/catalog/repos/hf/dataset/big/many" >"$T/repo.json"
curl -fsS -o "$T/many.torrent" "$M/api/p2p/torrent/hf/dataset/big/many"
check "the torrent is within bounds and lists every file" "$PY" - "$T/many.torrent" "$T/repo.json" "$N" <<'PY'
import json, os, sys
import libtorrent as lt
path, repo, n = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
size = os.path.getsize(path)
print("# torrent: %d bytes, %.0f per file, piece %d" % (size, size / (n + 1), repo["swarm"]["piece_size"]))
assert repo["swarm"]["piece_size"] == 16384, repo["swarm"]
assert size <= 256 * (n + 1), size
limits = {"max_buffer_size": 1 << 30, "max_pieces": 1 << 24, "max_decode_tokens": 1 << 30}
ti = lt.torrent_info(path, limits)
fs = ti.files()
names = [fs.file_path(i) for i in range(fs.num_files()) if not fs.file_flags(i) & lt.file_storage.flag_pad_file]
assert len(names) == n + 1, len(names)
assert "many/README.md" in names and "many/data/999/file_099999.bin" in names, names[:3]
assert ti.num_pieces() == n + 1, ti.num_pieces()  # one 16 KiB piece per file of 2-4 KB
assert str(ti.info_hashes().v1) == repo["swarm"]["btih"]
PY
check "serve seeds it" bash -c "curl -fsS '$M/metrics' | awk '\$1 == \"hubmirror_seeder_torrents\" { f = (\$2 >= 1) } END { exit !f }'"

# an instance takes one folder of the 100,000 files (pull --include), then mounts the dataset
start=$(date +%s%N)
check "pull --include of one folder of it" timeout 300 "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" \
	--listen 127.0.0.1:0 --include 'data/007/*' hf:datasets/big/many
echo "# pull of 100 of $N files: $(( ($(date +%s%N) - start) / 1000000 )) ms"
check "the HF cache holds that folder and README.md, nothing else" bash -c \
	"cd '$T/hfc/datasets--big--many/snapshots/'* && test \$(find . -type l | wc -l) = 101 && test -e README.md && test \$(ls data) = 007"
if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ]; then
	start=$(date +%s%N)
	check "the dataset mounts" timeout 120 "$HUBMIRROR" mount --no-hf-cache hf:datasets/big/many "$T/m"
	check "its $N files are listed" test "$(find "$T/m" -type f | wc -l)" = "$((N + 1))"
	echo "# mount and a listing of every file: $(( ($(date +%s%N) - start) / 1000000 )) ms"
	check "a file of another folder reads through it" cmp "$T/m/data/123/file_000123.bin" "$T/m/data/123/file_000123.bin"
	check "umount" "$HUBMIRROR" umount "$T/m"
fi
check "agent --stop" "$HUBMIRROR" agent --stop
finish
