#!/usr/bin/env node
// hfclient.mjs - drive the official @huggingface/hub client against `hubmirror serve`, with only the
// endpoint changed (hubUrl), and check what it gets. Run by tests/integration/t0410-hfjs.sh.
//
//   node hfclient.mjs --hub-url URL --expect FILE [--model ORG/NAME] [--dataset ORG/NAME] [--tmp DIR]
//
// --hub-url defaults to $HUBMIRROR_URL, then $HF_ENDPOINT. --expect names a JSON file written by the
// shell test from the fake upstream's /_fake/repos:
//   {"model":   {"id": "org/name", "sha": "<40 hex>", "files": {"<path>": {size, sha256, oid, etag, lfs}}},
//    "dataset": {... the same ...}}
// The model must have a regular file, an LFS file, an empty file and a file at least two folders deep;
// the dataset at least 2001 files (so the tree takes three pages or more).
//
// Prints one line per check, "ok - ..." or "not ok - ..." (details as "# " lines), then "1..N", and
// exits 1 if any check failed (2 on bad usage).
import { createHash } from "node:crypto";
import { lstat, mkdtemp, readFile, readdir, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { parseArgs } from "node:util";
import * as hub from "@huggingface/hub";

// a bound on one check, not a timing: an on-demand mirror's first listing of a 3,000-file dataset,
// fetched from upstream page by page, took over 20 s in a loaded sanitizer run
const CHECK_TIMEOUT_MS = 60000;

// The client logs its downloads with console.debug (stdout): keep stdout to the check lines.
console.debug = () => {};
console.info = (...a) => console.log(`# ${a.join(" ")}`);

let opts;
try {
	({ values: opts } = parseArgs({
		options: {
			"hub-url": { type: "string" },
			expect: { type: "string" },
			model: { type: "string" },
			dataset: { type: "string" },
			tmp: { type: "string" },
		},
	}));
} catch (e) {
	console.error(`hfclient: ${e.message}`);
	process.exit(2);
}
const hubUrl = (opts["hub-url"] ?? process.env.HUBMIRROR_URL ?? process.env.HF_ENDPOINT ?? "").replace(/\/+$/, "");
if (!hubUrl || !opts.expect) {
	console.error("usage: node hfclient.mjs --hub-url URL --expect FILE [--model ID] [--dataset ID] [--tmp DIR]");
	process.exit(2);
}
const expect = JSON.parse(await readFile(opts.expect, "utf8"));
const M = expect.model;
const D = expect.dataset;
const modelId = opts.model ?? M.id;
const datasetId = opts.dataset ?? D.id;
const origin = new URL(hubUrl).origin;
const work = await mkdtemp(join(opts.tmp ?? tmpdir(), "hfjs-"));

{
	// the package's exports hide package.json; it sits next to this script's node_modules
	const pkg = JSON.parse(await readFile(new URL("./node_modules/@huggingface/hub/package.json", import.meta.url), "utf8"));
	console.log(`# @huggingface/hub ${pkg.version} on Node ${process.version}, hubUrl ${hubUrl}`);
}

// ---- reporting ------------------------------------------------------------------------------------

let count = 0;
let failed = 0;
let reqlog = []; // the requests of the running check, printed when it fails

// fetch that records every request the client makes (method, URL, status, Link).
async function recFetch(input, init) {
	const url = (typeof input === "string" ? input : input instanceof URL ? input.href : input.url)
		.replace(/cap=[^&]*/, "cap=...");   // a capability is a credential: never printed
	const rec = { method: init?.method ?? "GET", url, range: headerOf(init, "range") };
	reqlog.push(rec);
	const res = await fetch(input, init);
	rec.status = res.status;
	rec.link = res.headers.get("link");
	rec.contentRange = res.headers.get("content-range");
	return res;
}
function headerOf(init, name) {
	const h = init?.headers;
	if (!h) return null;
	if (h instanceof Headers) return h.get(name);
	for (const [k, v] of Object.entries(h)) if (k.toLowerCase() === name) return v;
	return null;
}

function report(okay, name, details = []) {
	count++;
	if (okay) {
		console.log(`ok - ${name}`);
		return;
	}
	failed++;
	console.log(`not ok - ${name}`);
	for (const d of details) for (const line of String(d).split("\n")) console.log(`#   ${line}`);
	for (const r of reqlog.slice(-6))
		console.log(`#   request: ${r.method} ${r.url}${r.range ? ` (Range: ${r.range})` : ""} -> ${r.status ?? "no answer"}` +
			(r.contentRange ? ` Content-Range: ${r.contentRange}` : ""));
}

class CheckFailed extends Error {}
function assert(cond, msg) {
	if (!cond) throw new CheckFailed(msg);
}

// check(name, fn): run fn (async) with a timeout; ok if it returns without throwing.
async function check(name, fn) {
	reqlog = [];
	let timer;
	try {
		await Promise.race([
			fn(),
			new Promise((_, rej) => {
				timer = setTimeout(() => rej(new CheckFailed(`timed out after ${CHECK_TIMEOUT_MS / 1000} s`)), CHECK_TIMEOUT_MS);
			}),
		]);
		report(true, name);
	} catch (e) {
		const what = e instanceof CheckFailed ? e.message : `${e?.constructor?.name ?? "error"}: ${e?.message ?? e}`;
		report(false, name, [what]);
	} finally {
		clearTimeout(timer);
	}
}

// ---- helpers --------------------------------------------------------------------------------------

const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");
const model = { type: "model", name: modelId };
const dataset = { type: "dataset", name: datasetId };
const common = { hubUrl, fetch: recFetch };

function pick(files, pred, what) {
	const p = Object.keys(files).sort().find((k) => pred(k, files[k]));
	if (!p) throw new Error(`the expect file's model has no ${what}`);
	return p;
}
const regularPath = pick(M.files, (p, f) => !f.lfs && f.size > 0 && !p.includes("/") && !p.startsWith("."), "regular file");
const lfsPath = pick(M.files, (p, f) => f.lfs && f.size > 1_000_000, "LFS file over 1 MB");
const emptyPath = pick(M.files, (p, f) => f.size === 0, "empty file");
const nestedPath = pick(M.files, (p) => p.split("/").length >= 3, "file two folders deep");
const dataPaths = Object.keys(D.files).filter((p) => p.includes("/")).sort();
const datasetFile = dataPaths[Math.floor(dataPaths.length / 2)];
const missing = "no/such/file.bin";

// The ETag the Hub gives a file, which names its blob in the cache: sha256 for LFS, git sha1 otherwise.
function hubEtag(f) {
	return f.lfs ? f.sha256 : f.git_sha1 ?? f.oid;
}

async function expectHubError(promise, status, what) {
	try {
		await promise;
	} catch (e) {
		assert(e instanceof hub.HubApiError, `${what}: rejected with ${e?.constructor?.name}: ${e?.message}, not a HubApiError`);
		assert(e.statusCode === status, `${what}: HubApiError status ${e.statusCode}, expected ${status}`);
		return e;
	}
	assert(false, `${what}: resolved, expected a HubApiError ${status}`);
}

// ---- listFiles ------------------------------------------------------------------------------------

await check(`listFiles recursive on ${datasetId}: all ${dataPaths.length} files (+ ${Object.keys(D.files).length - dataPaths.length} at the top) via the paginated tree, each once, sizes and oids as upstream`, async () => {
	const seen = new Map();
	const dirs = [];
	for await (const e of hub.listFiles({ ...common, repo: dataset, recursive: true })) {
		if (e.type === "directory") {
			dirs.push(e.path);
			assert(typeof e.oid === "string" && e.oid.length === 40, `folder ${e.path} has oid ${e.oid}`);
			continue;
		}
		assert(e.type === "file", `entry ${e.path} has type ${e.type}`);
		assert(!seen.has(e.path), `file ${e.path} listed twice`);
		seen.set(e.path, e);
	}
	const want = Object.keys(D.files);
	const lost = want.filter((p) => !seen.has(p));
	const extra = [...seen.keys()].filter((p) => !(p in D.files));
	assert(lost.length === 0, `${lost.length} files missing from the listing, e.g. ${lost.slice(0, 3).join(", ")} (got ${seen.size})`);
	assert(extra.length === 0, `unexpected files: ${extra.slice(0, 3).join(", ")}`);
	for (const [p, e] of seen) {
		const f = D.files[p];
		assert(e.size === f.size, `${p}: size ${e.size}, expected ${f.size}`);
		assert(e.oid === f.oid, `${p}: oid ${e.oid}, expected ${f.oid}`);
		// the Xet hash of an LFS file the mirror holds (docs/protocols/xet.md; one fetched on demand has
		// none until it came); none for the rest
		assert(f.lfs ? e.xetHash === undefined || /^[0-9a-f]{64}$/.test(e.xetHash) : !("xetHash" in e),
		       `${p}: xetHash ${e.xetHash}`);
	}
	const wantDirs = [...new Set(want.filter((p) => p.includes("/")).map((p) => p.slice(0, p.lastIndexOf("/"))))];
	for (const d of wantDirs) assert(dirs.includes(d), `folder ${d} not listed`);
	assert(new Set(dirs).size === dirs.length, `a folder is listed twice: ${dirs.join(", ")}`);
});

await check(`listFiles pages: more than two pages, every Link absolute on the mirror's own host (${origin})`, async () => {
	let n = 0;
	for await (const _ of hub.listFiles({ ...common, repo: dataset, recursive: true })) n++;
	const tree = reqlog.filter((r) => r.url.includes("/tree/"));
	assert(tree.length >= 3, `${tree.length} tree pages for ${n} entries`);
	for (const [i, r] of tree.entries()) {
		assert(r.status === 200, `page ${i + 1}: status ${r.status}`);
		assert(new URL(r.url).origin === origin, `page ${i + 1} was fetched from ${new URL(r.url).origin}`);
		if (i < tree.length - 1) {
			const m = /^<(https?:\/\/[^>]+)>;\s+rel="next"$/.exec(r.link ?? "");
			assert(m, `page ${i + 1}: Link ${JSON.stringify(r.link)} is not an absolute <URL>; rel="next"`);
			assert(new URL(m[1]).origin === origin, `page ${i + 1}: Link points at ${new URL(m[1]).origin}`);
		} else {
			assert(!r.link, `last page still has Link ${r.link}`);
		}
	}
});

await check(`listFiles recursive with expand on ${modelId}: lfs.oid is the sha256, lastCommit.id the commit`, async () => {
	const got = new Map();
	for await (const e of hub.listFiles({ ...common, repo: model, recursive: true, expand: true }))
		if (e.type === "file") got.set(e.path, e);
	assert(got.size === Object.keys(M.files).length, `${got.size} files, expected ${Object.keys(M.files).length}`);
	for (const [p, f] of Object.entries(M.files)) {
		const e = got.get(p);
		assert(e, `${p} not listed`);
		assert(e.size === f.size && e.oid === f.oid, `${p}: size/oid ${e.size}/${e.oid}, expected ${f.size}/${f.oid}`);
		if (f.lfs) assert(e.lfs?.oid === f.sha256 && e.lfs?.size === f.size, `${p}: lfs ${JSON.stringify(e.lfs)}`);
		else assert(!e.lfs, `${p} is not LFS but has lfs ${JSON.stringify(e.lfs)}`);
		assert(e.lastCommit?.id === M.sha, `${p}: lastCommit ${JSON.stringify(e.lastCommit)}`);
		// the Xet hash of an LFS file the mirror holds (docs/protocols/xet.md; one fetched on demand has
		// none until it came); none for the rest
		assert(f.lfs ? e.xetHash === undefined || /^[0-9a-f]{64}$/.test(e.xetHash) : !("xetHash" in e),
		       `${p}: xetHash ${e.xetHash}`);
	}
});

await check(`listFiles of a missing folder rejects with HubApiError 404`, async () => {
	await expectHubError((async () => {
		for await (const _ of hub.listFiles({ ...common, repo: model, path: "no-such-folder" }));
	})(), 404, "listFiles");
});

// ---- modelInfo / datasetInfo ----------------------------------------------------------------------

await check(`modelInfo ${modelId}: name, _id and sha`, async () => {
	const i = await hub.modelInfo({ ...common, name: modelId, additionalFields: ["sha"] });
	assert(i.name === modelId, `name ${i.name}`);
	assert(/^[0-9a-f]{24}$/.test(i.id), `id (the Hub's _id) ${i.id}`);
	assert(i.sha === M.sha, `sha ${i.sha}, expected ${M.sha}`);
	assert(i.private === false && i.gated === false, `private ${i.private}, gated ${i.gated}`);
	if (M.card?.pipeline_tag) assert(i.task === M.card.pipeline_tag, `task ${i.task}, expected ${M.card.pipeline_tag}`);
	assert(reqlog.some((r) => r.url.includes("/revision/HEAD")), "the client did not ask for revision HEAD");
});

await check(`modelInfo ${modelId} at revision <commit>: the same sha`, async () => {
	const i = await hub.modelInfo({ ...common, name: modelId, revision: M.sha, additionalFields: ["sha"] });
	assert(i.name === modelId && i.sha === M.sha, `name ${i.name}, sha ${i.sha}`);
});

await check(`datasetInfo ${datasetId}: name, _id and sha`, async () => {
	const i = await hub.datasetInfo({ ...common, name: datasetId, additionalFields: ["sha"] });
	assert(i.name === datasetId, `name ${i.name}`);
	assert(/^[0-9a-f]{24}$/.test(i.id), `id (the Hub's _id) ${i.id}`);
	assert(i.sha === D.sha, `sha ${i.sha}, expected ${D.sha}`);
});

await check(`modelInfo of a missing repo rejects with HubApiError 404`, async () => {
	await expectHubError(hub.modelInfo({ ...common, name: "acme/no-such-model" }), 404, "modelInfo");
});

await check(`modelInfo at a missing revision rejects with HubApiError 404`, async () => {
	await expectHubError(hub.modelInfo({ ...common, name: modelId, revision: "no-such-branch" }), 404, "modelInfo");
});

// ---- downloadFile ---------------------------------------------------------------------------------

async function downloadChecked(repo, path, f, extra = {}) {
	const blob = await hub.downloadFile({ ...common, repo, path, ...extra });
	assert(blob, `downloadFile returned ${blob}`);
	assert(blob.size === f.size, `blob size ${blob.size}, expected ${f.size}`);
	const bytes = Buffer.from(await blob.arrayBuffer());
	assert(bytes.length === f.size, `${bytes.length} bytes, expected ${f.size}`);
	const h = sha256(bytes);
	assert(h === f.sha256, `sha256 ${h}, expected ${f.sha256}`);
	return { blob, bytes };
}

let lfsBlob = null;
let lfsBytes = null;
for (const [what, repo, path, f] of [
	["regular", model, regularPath, M.files[regularPath]],
	["LFS", model, lfsPath, M.files[lfsPath]],
	["empty", model, emptyPath, M.files[emptyPath]],
	["nested", model, nestedPath, M.files[nestedPath]],
	["dataset", dataset, datasetFile, D.files[datasetFile]],
]) {
	await check(`downloadFile ${what} ${repo.type === "dataset" ? "datasets/" : ""}${repo.name}/${path} (${f.size} bytes): every byte's sha256 as upstream`, async () => {
		const r = await downloadChecked(repo, path, f);
		if (path === lfsPath) ({ blob: lfsBlob, bytes: lfsBytes } = r);
	});
}

await check(`downloadFile ${regularPath} at revision <commit>`, async () => {
	await downloadChecked(model, regularPath, M.files[regularPath], { revision: M.sha });
});

await check(`downloadFile ${lfsPath}: a slice of the blob is a Range request with the same bytes`, async () => {
	assert(lfsBlob, "no blob from the LFS download above");
	const a = 1_000_000, b = 1_000_777;
	const part = Buffer.from(await lfsBlob.slice(a, b).arrayBuffer());
	assert(part.equals(lfsBytes.subarray(a, b)), `slice ${a}-${b} differs from the whole file's bytes`);
	// the mirror offers its LFS files by Xet (docs/protocols/xet.md): the slice is a reconstruction of
	// that Range; over plain HTTP, a 206 to it
	assert(reqlog.some((r) => r.range === `bytes=${a}-${b - 1}` && (r.status === 206 ||
		(r.status === 200 && r.url.includes("/xet-cas/v2/reconstructions/")))), "no answer to the slice's Range");
});

await check(`downloadFile raw ${lfsPath}: the LFS pointer`, async () => {
	const f = M.files[lfsPath];
	const blob = await hub.downloadFile({ ...common, repo: model, path: lfsPath, raw: true });
	assert(blob, `downloadFile returned ${blob}`);
	const text = await blob.text();
	const want = `version https://git-lfs.github.com/spec/v1\noid sha256:${f.sha256}\nsize ${f.size}\n`;
	assert(text === want, `pointer ${JSON.stringify(text)}`);
	const git = createHash("sha1").update(`blob ${Buffer.byteLength(want)}\0${want}`).digest("hex");
	assert(git === f.oid, `the pointer's git id ${git} is not the tree oid ${f.oid}`);
});

await check(`downloadFile of a missing file resolves to null (the client's not-found answer)`, async () => {
	const blob = await hub.downloadFile({ ...common, repo: model, path: missing });
	assert(blob === null, `got ${blob}`);
	const r = reqlog.find((x) => x.url.includes(missing));
	assert(r && r.status === 404, `status ${r?.status}`);
});

await check(`downloadFile from a missing repo rejects with HubApiError 404`, async () => {
	await expectHubError(hub.downloadFile({ ...common, repo: "acme/no-such-model", path: regularPath }), 404, "downloadFile");
});

// ---- fileExists -----------------------------------------------------------------------------------

await check(`fileExists: true for ${regularPath}, ${lfsPath}, ${nestedPath} and ${datasetFile}, false for ${missing}`, async () => {
	for (const [repo, p] of [[model, regularPath], [model, lfsPath], [model, nestedPath], [dataset, datasetFile]])
		assert((await hub.fileExists({ ...common, repo, path: p })) === true, `fileExists(${p}) is not true`);
	assert((await hub.fileExists({ ...common, repo: model, path: missing })) === false, `fileExists(${missing}) is not false`);
});

// ---- the cache layout -----------------------------------------------------------------------------

const repoFolder = (cache) => join(cache, `models--${modelId.split("/").join("--")}`);

// The snapshot entry for path is a relative symlink to blobs/<etag> whose bytes hash to the sha256.
async function checkCached(cache, commit, path, f) {
	const folder = repoFolder(cache);
	const link = join(folder, "snapshots", commit, path);
	let st;
	try {
		st = await lstat(link);
	} catch {
		assert(false, `${link} does not exist`);
	}
	assert(st.isSymbolicLink(), `${link} is not a symlink`);
	const target = await readlink(link);
	assert(!target.startsWith("/"), `${link} -> ${target} is not relative`);
	const blob = resolve(dirname(link), target);
	const etag = hubEtag(f);
	assert(blob === join(folder, "blobs", etag), `${path} -> ${target}, expected the blob ${f.lfs ? "(sha256)" : "(git sha1)"} blobs/${etag}`);
	const h = sha256(await readFile(blob));
	assert(h === f.sha256, `blobs/${etag}: sha256 ${h}, expected ${f.sha256}`);
}

const cacheB = join(work, "cache-files");
for (const [what, path] of [["regular", regularPath], ["LFS", lfsPath], ["empty", emptyPath], ["nested", nestedPath]]) {
	const f = M.files[path];
	await check(`downloadFileToCacheDir ${what} ${path}: snapshots/<commit>/${path} -> blobs/<${f.lfs ? "sha256" : "git sha1"}>`, async () => {
		const got = await hub.downloadFileToCacheDir({ ...common, repo: model, path, cacheDir: cacheB });
		const want = join(repoFolder(cacheB), "snapshots", M.sha, ...path.split("/"));
		assert(got === want, `returned ${got}, expected ${want}`);
		await checkCached(cacheB, M.sha, path, f);
	});
}

await check(`downloadFileToCacheDir at revision <commit> again: served from the cache, no request`, async () => {
	const got = await hub.downloadFileToCacheDir({ ...common, repo: model, path: regularPath, revision: M.sha, cacheDir: cacheB });
	assert(got === join(repoFolder(cacheB), "snapshots", M.sha, regularPath), `returned ${got}`);
	assert(reqlog.length === 0, `${reqlog.length} requests`);
});

await check(`downloadFileToCacheDir of a missing file rejects with an Error, no crash, nothing cached`, async () => {
	let err = null;
	try {
		await hub.downloadFileToCacheDir({ ...common, repo: model, path: missing, cacheDir: cacheB });
	} catch (e) {
		err = e;
	}
	assert(err instanceof Error, `resolved instead of rejecting`);
	const blobs = await readdir(join(repoFolder(cacheB), "blobs"));
	assert(!blobs.some((b) => b.endsWith(".incomplete")), `left ${blobs.filter((b) => b.endsWith(".incomplete"))}`);
});

const cacheA = join(work, "cache-snapshot");
await check(`snapshotDownload ${modelId}: refs/main, snapshots/<commit>/<every path> -> blobs/<etag>, nothing else`, async () => {
	const folder = repoFolder(cacheA);
	let got;
	try {
		got = await hub.snapshotDownload({ ...common, repo: model, cacheDir: cacheA });
	} finally {
		// whatever happened, the ref is written first: check it either way
		let ref = null;
		try {
			ref = await readFile(join(folder, "refs", "main"), "utf8");
		} catch {}
		if (ref !== M.sha) console.log(`#   refs/main holds ${JSON.stringify(ref)}, expected ${M.sha}`);
	}
	assert(got === join(folder, "snapshots", M.sha), `returned ${got}`);
	assert((await readFile(join(folder, "refs", "main"), "utf8")) === M.sha, "refs/main does not hold the commit");
	for (const [p, f] of Object.entries(M.files)) await checkCached(cacheA, M.sha, p, f);
	const blobs = (await readdir(join(folder, "blobs"))).sort();
	const want = [...new Set(Object.values(M.files).map(hubEtag))].sort();
	assert(JSON.stringify(blobs) === JSON.stringify(want), `blobs/ holds ${blobs.join(" ")}, expected ${want.join(" ")}`);
	const snaps = await readdir(join(folder, "snapshots"));
	assert(snaps.length === 1 && snaps[0] === M.sha, `snapshots/ holds ${snaps.join(" ")}`);
});

// ---- done -----------------------------------------------------------------------------------------

await rm(work, { recursive: true, force: true });
console.log(`1..${count}`);
process.exit(failed ? 1 : 0);
