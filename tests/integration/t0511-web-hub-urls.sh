#!/usr/bin/env bash
# t0511-web-hub-urls: the Hub's own addresses in a browser, and a local repository on the page
# (docs/commands/serve.md). With curl: a GET or HEAD asking for text/html of /ORG/NAME, /datasets/ORG/NAME,
# /models/ORG/NAME (ModelScope's), the Hub's ORG/NAME/tree/REV/DIR and blob/REV/PATH pages is a 302 to
# the page's #/repo/... view (relative to the page, ?dir= where it fits); without text/html (API
# clients, git), for the API, resolve and git's paths, for POST, and for hostile or malformed paths
# (//evil.example, encoded slashes and dots, '..', names the Hub refuses) nothing changes: no 302, no
# Location. Then Debian's Chromium (playwright-core, tests/js): opening $M/acme/llm-v2 lands on its
# page; the local repo says "Local" (not "Synced, last sync never"), lists its commits newest first,
# and shows a `git clone` line with a Copy button; the line clones. Skipped (77) without
# /usr/bin/chromium, node or tests/js/node_modules.
. "$HM_SRC/tests/integration/lib.sh"

CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed (bash .ci/setup installs it)"
need_node_module playwright-core

W=hf_writer_acme_0001
cat >"$T/tokens" <<TOK
$W hf:acme/*:write hf:datasets/acme/*:write
TOK
chmod 600 "$T/tokens"
check "serve starts with a local namespace" start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish

create() { # create TYPE NAME
	curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
		-d "{\"name\":\"$2\",\"organization\":\"acme\",\"type\":\"$1\"}" "$M/api/repos/create"
}
commit() { # commit TYPES NAME SUMMARY PATH CONTENT
	printf '{"key":"header","value":{"summary":"%s"}}\n{"key":"file","value":{"path":"%s","content":"%s","encoding":"base64"}}\n' \
		"$3" "$4" "$(printf %s "$5" | base64 -w0)" |
		curl -fsS -H "Authorization: Bearer $W" -H 'Content-Type: application/x-ndjson' -X POST --data-binary @- \
			"$M/api/$1/acme/$2/commit/main" | grep -q commitOid
}
check "a local model with two commits, a local dataset" bash -c "$(declare -f create commit); W=$W M=$M
	create model llm-v2 && commit models llm-v2 'first commit' config.json '{}' &&
	commit models llm-v2 'second commit' sub/a.txt 'hello' &&
	create dataset corpus && commit datasets corpus 'data' data/train.jsonl '{\"x\": 1}'"

# ---- the redirects, with curl ----
HTML='Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
# redirect [CURL ARGS...] PATH: "CODE LOCATION" of a browser's request of PATH (not followed)
redirect() { curl -sS --path-as-is -o /dev/null -D "$T/h" -H "$HTML" "${@:1:$#-1}" "$M${!#}" -w '%{http_code} ' &&
	{ grep -i '^Location:' "$T/h" | cut -d' ' -f2- | tr -d '\r'; echo; }; }
is() { local got; got=$(redirect "${@:2}"); [ "$got" = "$1" ] || { echo "# got '$got', want '$1'"; return 1; }; }
check "GET /ORG/NAME (HF model): 302 to the page's view" is "302 ../#/repo/hf/model/acme/llm-v2" /acme/llm-v2
check "HEAD /ORG/NAME: 302 too" is "302 ../#/repo/hf/model/acme/llm-v2" -I /acme/llm-v2
check "/ORG/NAME/ (a trailing slash)" is "302 ../../#/repo/hf/model/acme/llm-v2" /acme/llm-v2/
check "/datasets/ORG/NAME (HF dataset)" is "302 ../../#/repo/hf/dataset/acme/corpus" /datasets/acme/corpus
check "/models/ORG/NAME (ModelScope's model URL)" is "302 ../../#/repo/ms/model/qwen/ms-tiny" /models/qwen/ms-tiny
check "/ORG/NAME.git (a clone URL pasted into the browser): the repo it clones" is "302 ../#/repo/hf/model/acme/llm-v2" /acme/llm-v2.git
check "the Hub's tree page: ?dir=" is "302 ../../../../#/repo/hf/model/acme/llm-v2?dir=sub" /acme/llm-v2/tree/main/sub
check "the Hub's tree page at the root, and a nested folder" bash -c "$(declare -f redirect is); HTML='$HTML' M=$M T=$T
	is '302 ../../../#/repo/hf/model/acme/llm-v2' /acme/llm-v2/tree/main &&
	is '302 ../../../../../../../#/repo/hf/dataset/acme/corpus?dir=data%2Ftrain' /datasets/acme/corpus/tree/main/data/train/"
check "the Hub's blob page: the file's folder" is "302 ../../../../../#/repo/hf/model/acme/llm-v2?dir=sub" /acme/llm-v2/blob/main/sub/a.txt
check "a blob at the root, a refs/pr/N revision" bash -c "$(declare -f redirect is); HTML='$HTML' M=$M T=$T
	is '302 ../../../../#/repo/hf/model/acme/llm-v2' /acme/llm-v2/blob/main/config.json &&
	is '302 ../../../../../#/repo/hf/model/acme/llm-v2' /acme/llm-v2/tree/refs/pr/1"
check "the Location resolves to this mirror's page" \
	test "$(curl -sS -o /dev/null -H "$HTML" -w '%{redirect_url}' "$M/datasets/acme/corpus/tree/main/data")" = "$M/#/repo/hf/dataset/acme/corpus?dir=data"
check "followed, the browser gets the page" bash -c "curl -fsS -L -H '$HTML' -o '$T/followed' '$M/acme/llm-v2' && grep -q 'assets/app.js?v=' '$T/followed'"

# ---- what stays as it was ----
# not_redirected [CURL ARGS...] PATH: no 302 and no Location
not_redirected() { local got; got=$(redirect "$@"); case $got in 302*|*" "?*) echo "# ${!#}: '$got'"; return 1 ;; esac; }
check "no Accept text/html: no redirect (*/*, JSON, git's Accept)" bash -c "
	[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/acme/llm-v2')\" = 404 ] &&
	[ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'Accept: application/json' '$M/acme/llm-v2')\" = 404 ] &&
	[ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'Accept: */*' '$M/datasets/acme/corpus/tree/main')\" = 404 ]"
check "the Hub API with Accept text/html: its JSON" bash -c "curl -fsS -H '$HTML' '$M/api/models/acme/llm-v2' | grep -q '\"id\":\"acme/llm-v2\"'"
check "resolve with Accept text/html: the file" test "$(curl -fsS -H "$HTML" "$M/acme/llm-v2/resolve/main/sub/a.txt")" = hello
check "git's info/refs with Accept text/html: git's answer" bash -c "
	curl -fsS -H '$HTML' '$M/acme/llm-v2/info/refs?service=git-upload-pack' | grep -q 'service=git-upload-pack' &&
	curl -fsS -H '$HTML' '$M/acme/llm-v2.git/info/refs?service=git-upload-pack' | grep -q 'service=git-upload-pack'"
check "POST with Accept text/html: no redirect" not_redirected -X POST -d x /acme/llm-v2
check "the page's own paths stay (/, healthz)" bash -c "
	curl -fsS -H '$HTML' -o '$T/index' '$M/' && grep -q 'assets/app.js' '$T/index' && curl -fsS -H '$HTML' '$M/healthz' | grep -q ok"
hostile() {
	local p
	for p in //evil.example/x //evil.example/x/y '/\evil.example/x' /%2Fevil.example/x /%5Cevil.example/x \
		/acme%2Fllm-v2/x /acme/llm-v2%2F..%2F..%2Fx /acme/ll%6d-v2 /acme/.. /../acme/llm-v2 /acme/../llm-v2 \
		/./acme/llm-v2 /acme/llm-v2/.. /-bad/name /acme/.hidden /acme/llm-v2/tree/main/../../../x \
		/acme/llm-v2/tree/main/%2e%2e/%2e%2e/x /acme/llm-v2/tree/main/a%2F..%2F..%2Fb /acme/llm-v2/tree/..%2F..%2Fx/a \
		/acme/llm-v2/blob/main /acme/llm-v2/blob/main/ /acme/llm-v2/other /acme/llm-v2/tree/%00/x \
		'/acme/llm-v2/tree/main/x%00y' /datasets/evil.example /models/a /models/a/b/tree/main; do
		not_redirected "$p" || return 1
	done
}
check "hostile and malformed paths: no redirect, no Location" hostile

# ---- the page in Chromium ----
cat >"$T/hub.mjs" <<'JS'
import { createRequire } from 'node:module';
import { mkdtempSync, writeFileSync } from 'node:fs';
const [M, jsDir, tmp] = process.argv.slice(2);
const { chromium } = createRequire(jsDir + '/package.json')('playwright-core');
let failed = 0;
const ok = (cond, name, extra) => {
	console.log((cond ? 'ok - ' : 'not ok - ') + name + (!cond && extra !== undefined ? ' # got ' + JSON.stringify(extra) : ''));
	if (!cond) failed++;
	return cond;
};
const ctx = await chromium.launchPersistentContext(mkdtempSync(tmp + '/chromium-'), {
	executablePath: '/usr/bin/chromium', headless: true,
	args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
		'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	permissions: ['clipboard-read', 'clipboard-write'], locale: 'en-US',
});
ctx.setDefaultTimeout(10000);
/* a missing element is '' (after a short wait), so that each check says what it misses */
const text = async (page, sel) => ((await page.textContent(sel, { timeout: 3000 }).catch(() => '')) || '').trim();
try {
	const page = ctx.pages()[0] || await ctx.newPage();
	await page.goto(M + '/acme/llm-v2');
	await page.waitForSelector('.repo-h1');
	ok(new URL(page.url()).hash === '#/repo/hf/model/acme/llm-v2', 'opening /acme/llm-v2 lands on its page', page.url());
	ok(await text(page, '.repo-h1') === 'acme/llm-v2', 'the page shows its name', await text(page, '.repo-h1'));
	ok(await text(page, '.repo-badges .local-pill') === 'Local', 'the repo is said to be local', await text(page, '.repo-badges'));
	ok((await text(page, '#origin')).startsWith('Local'), 'its origin: local, not a sync', await text(page, '#origin'));
	const body = await text(page, '#repo-view');
	ok(!body.includes('Never synced') && !body.includes('Last sync') && !body.includes('Sync history'),
		'no "Synced, last sync never"', body.slice(0, 300));
	await page.waitForSelector('#commits tr.commit', { timeout: 5000 }).catch(() => null);
	const titles = await page.$$eval('#commits tr.commit .commit-title', (els) => els.map((e) => e.textContent));
	ok(JSON.stringify(titles) === JSON.stringify(['second commit', 'first commit', 'initial commit']), 'its commits, newest first', titles);
	const clone = await text(page, '#clone-cmd');
	ok(clone === 'git clone ' + M + '/acme/llm-v2', 'the git clone line', clone);
	writeFileSync(tmp + '/clone-line', clone + '\n');
	let copied = null;
	if (clone) {
		await page.click('button[data-copy="clone-cmd"]');
		await page.waitForFunction(() => document.querySelector('button[data-copy="clone-cmd"]').dataset.copied);
		copied = await page.evaluate(() => navigator.clipboard.readText().catch(() => null));
	}
	ok(clone && copied === clone, 'Copy puts the clone line on the clipboard', copied);

	await page.goto(M + '/datasets/acme/corpus/tree/main/data');
	await page.waitForSelector('#files tr.file');
	ok(new URL(page.url()).hash === '#/repo/hf/dataset/acme/corpus?dir=data', 'a dataset\'s tree page lands in its folder', page.url());
	const files = await page.$$eval('#files tr.file', (els) => els.map((e) => e.dataset.path));
	ok(JSON.stringify(files) === '["data/train.jsonl"]', 'the folder\'s files are listed', files);
	ok(await text(page, '#clone-cmd') === 'git clone ' + M + '/datasets/acme/corpus', 'a dataset\'s clone line',
		await text(page, '#clone-cmd'));

	await page.goto(M + '/acme/llm-v2/blob/main/sub/a.txt');
	await page.waitForSelector('#files tr.file');
	ok(new URL(page.url()).hash === '#/repo/hf/model/acme/llm-v2?dir=sub', 'a blob page lands in the file\'s folder', page.url());
} catch (e) {
	ok(false, 'the page script ran to the end', String(e));
} finally {
	await ctx.close();
}
process.exit(failed ? 1 : 0);
JS
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "web: ${line#ok - }" ;;
	"not ok - "*) fail "web: ${line#not ok - }" ;;
	*) echo "# $line" ;;
	esac
done < <(timeout 60 node "$T/hub.mjs" "$M" "$JS" "$T" 2>&1)

export HOME=$T/home
mkdir -p "$HOME"
git config --global credential.helper ""
cloned() {
	local line
	line=$(cat "$T/clone-line") && [ "${line#git clone }" != "$line" ] || return 1
	(cd "$T" && GIT_TERMINAL_PROMPT=0 $line -q cloned 2>"$T/clone.err") || { sed 's/^/# /' "$T/clone.err"; return 1; }
	[ "$(cat "$T/cloned/sub/a.txt")" = hello ] && [ "$(git -C "$T/cloned" log --format=%s | tr '\n' ,)" = "second commit,first commit,initial commit," ]
}
check "the page's git clone line clones the repo" cloned
check "serve stops clean (no sanitizer report)" serve_stops_clean
finish
