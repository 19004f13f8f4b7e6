#!/usr/bin/env node
// xetdownload.mjs - @huggingface/hub's downloadFile of one file from `hubmirror serve`, with only the
// endpoint changed (hubUrl) and Xet left on (the client's default), for t0450-xet-serve.sh. Every
// request the client makes goes through a fetch that records its method and URL (no header, no
// token), so the test sees which path the bytes took.
//
//   node xetdownload.mjs --hub-url URL --repo ORG/NAME --path P --sha256 HEX [--token T] [--xet-hash H]
//
// Prints "ok - ..." / "not ok - ..." lines, the requests as "# GET URL" lines, then "1..N"; exits 1
// when a check failed.
import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import * as hub from "@huggingface/hub";

console.debug = () => {};
const { values: a } = parseArgs({ options: {
	"hub-url": { type: "string" }, repo: { type: "string" }, path: { type: "string" },
	sha256: { type: "string" }, token: { type: "string" }, "xet-hash": { type: "string" } } });
let n = 0, failed = 0;
const check = (ok, name) => { n++; if (!ok) failed++; console.log(`${ok ? "ok" : "not ok"} ${n} - ${name}`); };
const seen = [];
const recording = (url, init) => {
	const u = typeof url === "string" ? url : url.url ?? String(url);
	seen.push(`${init?.method ?? "GET"} ${u.replace(/cap=[^&]*/, "cap=...")}`);
	return fetch(url, init);
};
try {
	const info = await hub.fileDownloadInfo({ repo: a.repo, path: a.path, hubUrl: a["hub-url"], fetch: recording,
		accessToken: a.token });
	check(info?.xet?.hash === (a["xet-hash"] ?? info?.xet?.hash) && !!info?.xet,
	      `the file is offered by Xet (${info?.xet?.hash})`);
	const blob = await hub.downloadFile({ repo: a.repo, path: a.path, hubUrl: a["hub-url"], fetch: recording,
		accessToken: a.token });
	const bytes = Buffer.from(await blob.arrayBuffer());
	const got = createHash("sha256").update(bytes).digest("hex");
	check(got === a.sha256, `downloadFile's bytes are the file's (${bytes.length} bytes, sha256 ${got.slice(0, 12)})`);
} catch (e) {
	check(false, `downloadFile: ${String(e.message).replace(/cap=[^&\s]*/g, "cap=...")}`); // a capability is a credential
}
for (const s of seen)
	console.log(`# ${s}`);
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
