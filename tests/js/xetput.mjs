#!/usr/bin/env node
// xetput.mjs - the official @huggingface/hub client uploads one file from disk into a repo of
// `hubmirror serve` with its default settings (through Xet, its global dedup query included), then
// reads it back with downloadFile and compares byte for byte (tests/integration/t0859-upload-xet-dedup.sh).
//
//   node xetput.mjs --hub-url URL --token TOKEN --repo ORG/NAME --file PATH --path PATH_IN_REPO [--private]
//
// Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import * as hub from "@huggingface/hub";
import { attempt, check, finish } from "./tap.mjs";

console.debug = () => {};
const { values: o } = parseArgs({
	options: { "hub-url": { type: "string" }, token: { type: "string" }, repo: { type: "string" },
		file: { type: "string" }, path: { type: "string" }, private: { type: "boolean" } },
});
const hubUrl = o["hub-url"].replace(/\/+$/, "");
const credentials = { accessToken: o.token };
const repo = { type: "model", name: o.repo };

const exists = await hub.repoExists({ repo, ...credentials, hubUrl }).catch(() => false);
if (!exists)
	await attempt("createRepo", () => hub.createRepo({ repo, ...credentials, hubUrl, private: !!o.private }));
const want = readFileSync(o.file);
const res = await attempt("uploadFiles", () => hub.uploadFiles({
	repo, ...credentials, hubUrl,
	files: [{ path: o.path, content: new Blob([want]) }],
	commitTitle: `Upload ${o.path}`,
}));
if (res) check("uploadFiles answers a commit id", /^[0-9a-f]{40}$/.test(res.commit?.oid ?? ""), JSON.stringify(res));
const blob = await attempt(`downloadFile ${o.path}`, () => hub.downloadFile({ repo, path: o.path, ...credentials, hubUrl }));
if (blob) {
	const got = Buffer.from(await blob.arrayBuffer());
	check(`${o.path} reads back byte for byte`, got.length === want.length &&
		createHash("sha256").update(got).digest("hex") === createHash("sha256").update(want).digest("hex"), got.length);
}
finish();
