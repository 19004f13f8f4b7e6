#!/usr/bin/env bash
# t0110-xet-identity: a file's Xet identity (hub/xet) as Hugging Face's JavaScript computes it. Random
# files of several sizes (empty, 1 byte, under the minimum chunk, one chunk and a bit, several MiB,
# and repeated content) go through tests/unit/xet-ident (ours, fed in uneven slices, printed from its
# identity file read back) and tests/js/xetident.mjs (@huggingface/xetchunk-wasm's hashes, tree and
# text form); every chunk's offset, size and hash, the file, xorb and range hashes must agree.
# Boundaries are compared with the spec's rule on gearhash-jit's rolling hash, and with
# xetchunk-wasm's own chunker wherever that one cuts no chunk under the minimum size (its 0.2.0
# still does, rarely, where the reference no longer does: tests/js/xetident.mjs says more).
# Skipped (77) when node or tests/js/node_modules is missing.
. "$HM_SRC/tests/integration/lib.sh"
need_node_module @huggingface/xetchunk-wasm
IDENT=$HM_BUILD/tests/unit/xet-ident
[ -x "$IDENT" ] || { fail "no $IDENT (ninja builds it)"; finish; }

# mkfile NAME SIZE SEED: SIZE random bytes, the same for the same SEED
mkfile() { "$PY" -c 'import random,sys; r=random.Random(int(sys.argv[3])); open(sys.argv[1],"wb").write(r.randbytes(int(sys.argv[2])))' "$T/$1" "$2" "$3"; }
mkfile empty 0 1
mkfile one 1 2
mkfile small 8000 3
mkfile min 8192 4
mkfile chunkplus 140000 5
mkfile big 6291456 6
mkfile big2 3000001 7
# the same 1 MiB three times over, then zeros: identical chunks, and chunks cut at the maximum
"$PY" -c 'import random,sys; b=random.Random(8).randbytes(1<<20); open(sys.argv[1],"wb").write(b*3+bytes(300000))' "$T/repeat"

js() { (cd "$HM_SRC/tests/js" && node xetident.mjs "$@"); }
wasm_agreed=0
for f in empty one small min chunkplus big big2 repeat; do
	"$IDENT" "$T/$f" >"$T/$f.c" 2>"$T/$f.err" || { fail "$f: xet-ident failed"; sed 's/^/#   /' "$T/$f.err"; continue; }
	js spec "$T/$f" >"$T/$f.spec"
	if cmp -s "$T/$f.c" "$T/$f.spec"; then
		ok "$f: $(grep -c '^chunk' "$T/$f.c") chunks, their hashes and the file hash agree with the spec's rule in JS"
	else
		fail "$f: ours and the JS differ"; diff "$T/$f.c" "$T/$f.spec" | head -8 | sed 's/^/#   /'
	fi
	js wasm "$T/$f" >"$T/$f.wasm"
	# xetchunk-wasm's own chunker: a chunk under the minimum before the last is its known deviation
	if awk '$1=="chunk"{n++; if (prev != "" && prev < 8192) bad=1; prev=$3} END{exit !bad}' "$T/$f.wasm"; then
		echo "# $f: xetchunk-wasm cut a chunk under the minimum size; its chunker not compared"
	elif cmp -s "$T/$f.c" "$T/$f.wasm"; then
		wasm_agreed=$((wasm_agreed + 1))
	else
		fail "$f: ours and xetchunk-wasm's own chunker differ"; diff "$T/$f.c" "$T/$f.wasm" | head -8 | sed 's/^/#   /'
	fi
done
check "xetchunk-wasm's own chunker agrees on at least 5 of the 8 files ($wasm_agreed)" test "$wasm_agreed" -ge 5
# the repeated content: its three MiB chunk alike after the first boundary, and the zeros at 131072
check "the zeros are cut at the maximum chunk size" grep -q ' 131072 ' "$T/repeat.c"
check "the empty file has no chunk and the zero hash" grep -qx "file $(printf '0%.0s' $(seq 64))" "$T/empty.c"
finish
