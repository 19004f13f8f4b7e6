#!/usr/bin/env node
// hfupload.mjs - the official @huggingface/hub client's write side against `hubmirror serve` with a
// local namespace (tests/integration/t0840-upload.sh, t0849-upload-xet.sh): createRepo, then uploadFiles
// of a small file and a large one (through Xet by default: the client offers it and the mirror takes it;
// with --no-xet the client does not offer it and goes through Git LFS, multipart for a large one), then
// the files read back with downloadFile and compared byte for byte.
//
//   node hfupload.mjs --hub-url URL --token TOKEN --repo ORG/NAME [--size BYTES] [--no-xet]
//
// Prints "ok - ..." / "not ok - ..." lines and exits 1 if any check failed.
import { createHash, randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import * as hub from "@huggingface/hub";
import { attempt, check, finish } from "./tap.mjs";

console.debug = () => {};
const { values: o } = parseArgs({
	options: { "hub-url": { type: "string" }, token: { type: "string" }, repo: { type: "string" }, size: { type: "string" },
		"no-xet": { type: "boolean" } },
});
const hubUrl = o["hub-url"].replace(/\/+$/, "");
const credentials = { accessToken: o.token };
const repo = { type: "model", name: o.repo };

const created = await attempt("createRepo", () => hub.createRepo({ repo, ...credentials, hubUrl }));
if (created) check("createRepo answers the repo's URL", created.repoUrl === `${hubUrl}/${o.repo}`, created.repoUrl);
const big = randomBytes(Number(o.size ?? 5 << 20));
const small = Buffer.from('{"architectures": ["Demo"]}\n');
const res = await attempt("uploadFiles", () =>
	hub.uploadFiles({
		repo, ...credentials, hubUrl,
		files: [
			{ path: "config.json", content: new Blob([small]) },
			{ path: "weights/model.safetensors", content: new Blob([big]) },
		],
		commitTitle: "Upload from the JS client",
		...(o["no-xet"] ? { useXet: false } : {}),
	}));
if (res) check("uploadFiles answers a commit id", /^[0-9a-f]{40}$/.test(res.commit?.oid ?? ""), JSON.stringify(res));
for (const [path, want] of [["config.json", small], ["weights/model.safetensors", big]]) {
	const blob = await attempt(`downloadFile ${path}`, () => hub.downloadFile({ repo, path, ...credentials, hubUrl }));
	if (!blob) continue;
	const got = Buffer.from(await blob.arrayBuffer());
	check(`${path} reads back byte for byte`, got.length === want.length &&
		createHash("sha256").update(got).digest("hex") === createHash("sha256").update(want).digest("hex"), got.length);
}
const info = await attempt("modelInfo", () => hub.modelInfo({ name: o.repo, ...credentials, hubUrl, additionalFields: ["sha"] }));
if (info && res) check("modelInfo's sha is the commit", info.sha === res.commit.oid, info.sha);
finish();
