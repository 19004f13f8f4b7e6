// xetident.mjs MODE FILE: a file's Xet identity computed in JavaScript, in the words
// tests/unit/xet-ident.c prints, so that t0110-xet-identity.sh can compare the two line by line:
//   chunk OFFSET SIZE HASH   (one per chunk)
//   file HASH | xorb HASH | range HASH
// The hashes, the aggregation tree and the hashes' text form are always those of Hugging Face's
// @huggingface/xetchunk-wasm (with its @huggingface/blake3-jit). The chunk boundaries come from
//   wasm  xetchunk-wasm's own streaming chunker, fed uneven slices. Its 0.2.0 still cuts where the
//         rolling hash matches within the first 64 bytes it hashes, 64 bytes before the minimum
//         chunk size (8128..8191 bytes); the reference chunker ignores those matches since
//         xet-core#487 and so does the spec ("If size < MIN_CHUNK_SIZE: skip testing"), so a file
//         where that happens chunks differently there (about 1 chunk in 100).
//   spec  the spec's rule, on the gear hash of gearhash-jit (the package xetchunk-wasm rolls with):
//         no boundary below the minimum size, one at the maximum.
import { readFileSync } from "node:fs";
import { Hasher as Gear } from "gearhash-jit";
import { createKeyed } from "@huggingface/blake3-jit";
import { createChunker, nextBlock, finalize, hashToHex, fileHash, xorbHash, verificationHash }
	from "@huggingface/xetchunk-wasm";

const MIN = 8192, MAX = 131072;
const DATA_KEY = new Uint8Array([102, 151, 245, 119, 91, 149, 80, 222, 49, 53, 203, 172, 165, 151, 24, 28,
	157, 228, 33, 16, 155, 235, 43, 88, 180, 208, 176, 75, 147, 173, 242, 41]);

function wasmChunks(data) {
	const chunker = createChunker();
	const chunks = [];
	let pos = 0, step = 1;
	while (pos < data.length) {
		const end = Math.min(data.length, pos + step);
		chunks.push(...nextBlock(chunker, data.subarray(pos, end)));
		pos = end;
		step = step * 7 + 13;
		if (step > 3 * 1024 * 1024) step = 1 + (step % 100003);
	}
	const last = finalize(chunker);
	if (last) chunks.push(last);
	return chunks;
}

function specChunks(data) {
	const chunks = [];
	let start = 0;
	while (start < data.length) {
		const gear = new Gear(0xffff000000000000n);
		const limit = Math.min(data.length, start + MAX);
		let pos = Math.min(limit, start + MIN - 64 - 1), end = limit;
		while (pos < limit) {
			const m = gear.nextMatch(data.subarray(pos, limit));
			if (m === -1) break;
			pos += m;
			if (pos - start >= MIN) { end = pos; break; }
		}
		const bytes = data.subarray(start, end);
		chunks.push({ length: bytes.length, hash: createKeyed(DATA_KEY).update(bytes).finalize(32) });
		start = end;
	}
	return chunks;
}

const [mode, path] = process.argv.slice(2);
const data = readFileSync(path);
const chunks = mode === "wasm" ? wasmChunks(data) : specChunks(data);
let off = 0;
const out = [];
for (const c of chunks) {
	out.push(`chunk ${off} ${c.length} ${hashToHex(c.hash)}`);
	off += c.length;
}
const zero = "0".repeat(64);
out.push(`file ${chunks.length ? hashToHex(fileHash(chunks)) : zero}`);
out.push(`xorb ${chunks.length ? hashToHex(xorbHash(chunks)) : zero}`);
out.push(`range ${hashToHex(verificationHash(chunks.map((c) => c.hash)))}`);
process.stdout.write(out.join("\n") + "\n");
