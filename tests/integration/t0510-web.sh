#!/usr/bin/env bash
# t0510-web: the web page at "/" in a real browser. First with curl: index.html and the assets come
# out of the binary with their Content-Type, a strong ETag (sha256 of the body) that answers 304,
# no-cache on the page, versioned asset links, and no URL to anywhere else. Then Debian's Chromium,
# driven by playwright-core (pinned in tests/js), over a store synced from the fake upstream (an HF
# model, an HF dataset with nested folders, a gated HF model, a ModelScope model): the first paint
# shows the repositories and the totals; search narrows the list (debounced); filters and sort work
# and live in the URL; a repository opens with its metadata, refs, snapshots and sync history; its
# file tree is navigable into folders and back, with sizes and working download links; Copy puts the
# mount command on the clipboard (async clipboard, then the execCommand fallback); data that looks
# like HTML stays text. It prints the time to first paint and saves screenshots under
# $HM_BUILD/meson-logs/t0510-web/. Skipped (77) without /usr/bin/chromium, node or tests/js/node_modules.
. "$HM_SRC/tests/integration/lib.sh"

CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed (bash .ci/setup installs it)"
need_node_module playwright-core
ART=${HM_BUILD:-$T}/meson-logs/t0510-web
mkdir -p "$ART"
started=$SECONDS

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/llm-v2", "renamed_from": ["acme/llm"],
   "card": {"license": "mit", "tags": ["llm", "<img src=x onerror=\"window.__xss=1\">"],
            "pipeline_tag": "text-generation", "library_name": "transformers"},
   "files": [{"path": "config.json", "content": "{\"hidden_size\": 64}\n"},
             {"path": "README.md", "content": "---\nlicense: mit\n---\n# LLM card\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>window.__cardxss=1</script>\n\n![remote](https://evil.example/x.png) ![local](tokenizer/tokenizer.json) [bad](javascript:alert(1)) [cfg](./config.json) [up](../../etc/passwd)\n"},
             {"path": "tokenizer/tokenizer.json", "content": "{}\n"},
             {"path": "model.safetensors", "size": 1500000, "seed": 5}]},
  {"hub": "hf", "type": "dataset", "id": "acme/corpus",
   "card": {"license": "cc-by-4.0", "tags": ["text"]},
   "files": [{"path": "README.md", "content": "# corpus\n"},
             {"path": "data/train/part-0000.parquet", "size": 300000, "seed": 1},
             {"path": "data/train/part-0001.parquet", "size": 310000, "seed": 2},
             {"path": "data/test/part-0000.parquet", "size": 50000, "seed": 3},
             {"path": "data/validation/shard/deep.jsonl", "content": "{\"x\": 1}\n"}]},
  {"hub": "hf", "type": "model", "id": "other/gated-thing", "gated": "manual",
   "files": [{"path": "config.json", "content": "{\"gated\": \"thing\"}\n"}]},
  {"hub": "ms", "type": "model", "id": "qwen/ms-tiny",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "sub/tokenizer.json", "content": "{}\n"},
             {"path": "model.safetensors", "size": 1200000, "seed": 9}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/llm hf:datasets/acme/corpus hf:other/gated-thing ms:qwen/ms-tiny >/dev/null
s0=$SECONDS
"$HUBMIRROR" sync --no-progress >"$T/sync.out" 2>&1 # the gated model fails: no token
statuses=$("$HUBMIRROR" ls --json | "$PY" -c 'import json, sys; print(sorted(r["sync_status"] for r in json.load(sys.stdin)))')
check "synced: 3 ok, the gated one gated" test "$statuses" = "['gated', 'ok', 'ok', 'ok']"
[ "$statuses" = "['gated', 'ok', 'ok', 'ok']" ] || { echo "# statuses: $statuses, sync took $((SECONDS - s0)) s"; sed 's/^/# sync: /' "$T/sync.out"; }

check "hubmirror serve starts" start_serve || finish

# ---- the assets over HTTP ----
hdr() { grep -i "^$2:" "$1" | head -1 | cut -d' ' -f2- | tr -d '\r'; }
curl -sS -D "$T/h.index" -o "$T/index.html" "$M/"
etag=$(hdr "$T/h.index" ETag)
check "GET /: 200 text/html" bash -c "head -1 '$T/h.index' | grep -q ' 200' && grep -qi '^Content-Type: text/html; charset=utf-8' '$T/h.index'"
check "GET /: strong ETag = sha256 of the body" test "$etag" = "\"$(sha256sum <"$T/index.html" | cut -d' ' -f1)\""
check "GET /: Cache-Control no-cache, a CSP, nosniff" bash -c "grep -qi '^Cache-Control: no-cache' '$T/h.index' &&
	grep -qi \"^Content-Security-Policy: default-src 'none'\" '$T/h.index' && grep -qi '^X-Content-Type-Options: nosniff' '$T/h.index'"
check "If-None-Match: 304, no body" test "$(curl -sS -o "$T/b304" -w '%{http_code} %{size_download}' -H "If-None-Match: $etag" "$M/")" = "304 0"
check "If-None-Match weak form and in a list: 304" test "$(curl -sS -o /dev/null -w '%{http_code}' -H "If-None-Match: \"x\", W/$etag" "$M/")" = 304
check "If-None-Match another tag: 200" test "$(curl -sS -o /dev/null -w '%{http_code}' -H 'If-None-Match: "abc"' "$M/")" = 200
curl -sS -I "$M/" >"$T/h.head"
check "HEAD /: headers, length, no body" bash -c "head -1 '$T/h.head' | grep -q ' 200' &&
	[ \"\$(grep -i '^Content-Length:' '$T/h.head' | tr -dc 0-9)\" = $(stat -c %s "$T/index.html") ] &&
	[ \"\$(curl -sS -I '$M/' -o /dev/null -w '%{size_download}')\" = 0 ]"
asset_ok() { # asset_ok NAME TYPE: served with its type and sha256 ETag, linked from index.html by version
	local name=$1 type=$2 v
	v=$(grep -o "assets/$name?v=[0-9a-f]*" "$T/index.html" | head -1 | cut -d= -f2)
	[ -n "$v" ] || { echo "# index.html does not link assets/$name?v="; return 1; }
	curl -sS -D "$T/h.$name" -o "$T/$name" "$M/assets/$name?v=$v" || return 1
	grep -qi "^Content-Type: $type" "$T/h.$name" || { echo "# $name: $(hdr "$T/h.$name" Content-Type)"; return 1; }
	[ "$(hdr "$T/h.$name" ETag)" = "\"$(sha256sum <"$T/$name" | cut -d' ' -f1)\"" ] || return 1
	case "$(sha256sum <"$T/$name")" in "$v"*) ;; *) echo "# $name: ?v= is not its hash"; return 1 ;; esac
	grep -qi '^Cache-Control: .*immutable' "$T/h.$name" || return 1
	[ "$(curl -sS -o /dev/null -w '%{http_code}' -H "If-None-Match: $(hdr "$T/h.$name" ETag)" "$M/assets/$name")" = 304 ]
}
check "assets/app.js: text/javascript, ETag, versioned, 304" asset_ok app.js text/javascript
check "assets/style.css: text/css, ETag, versioned, 304" asset_ok style.css text/css
check "assets/favicon.svg: image/svg+xml" asset_ok favicon.svg image/svg+xml
check "an unversioned asset is revalidated" bash -c "curl -sS -D - -o /dev/null '$M/assets/app.js' | grep -qi '^Cache-Control: no-cache'"
check "unknown asset: 404 (passed down the chain)" test "$(curl -sS -o /dev/null -w '%{http_code}' "$M/assets/nope.js")" = 404
check "POST /: 405" test "$(curl -sS -o /dev/null -w '%{http_code}' -X POST -d x "$M/")" = 405
check "no URL to anywhere else in the page (no CDN, no fonts)" bash -c "! grep -hoE '(https?:)?//[A-Za-z0-9.-]+' '$T/index.html' '$T/app.js' '$T/style.css' | grep -v '//www.w3.org$'"
check "the chain is intact (healthz, catalog API)" bash -c "curl -fsS '$M/healthz' | grep -q ok && curl -fsS '$M/api/catalog/stats' | grep -q '\"repos\":4'"
card_code() { curl -sS -o /dev/null -w '%{http_code}' "$M/api/catalog/repos/$1/card"; }
check "a card: 404 without a README, 403 for a gated repo, 200 otherwise" \
	test "$(card_code ms/model/qwen/ms-tiny) $(card_code hf/model/other/gated-thing) $(card_code hf/dataset/acme/corpus)" = "404 403 200"

# ---- the page in Chromium ----
cat >"$T/web.mjs" <<'JS'
import { createRequire } from 'node:module';
import { mkdtempSync } from 'node:fs';
const [M, jsDir, art, tmp] = process.argv.slice(2);
const { chromium } = createRequire(jsDir + '/package.json')('playwright-core');
let failed = 0;
const ok = (cond, name, extra) => {
	console.log((cond ? 'ok - ' : 'not ok - ') + name + (!cond && extra !== undefined ? ' # got ' + JSON.stringify(extra) : ''));
	if (!cond) failed++;
	return cond;
};
const api = async (p) => (await fetch(M + '/api/catalog/' + p)).json();
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
const human = (n) => { let v = n, i = 0; while (v >= 1024 && i < 4) { v /= 1024; i++; }
	return i ? (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + '\u00a0' + UNITS[i] : n + ' B'; };

const ctx = await chromium.launchPersistentContext(mkdtempSync(tmp + '/chromium-'), {
	executablePath: '/usr/bin/chromium',
	headless: true,
	args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
		'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	viewport: { width: 1280, height: 900 },
	permissions: ['clipboard-read', 'clipboard-write'],
	colorScheme: 'light',
	locale: 'en-US',
});
ctx.setDefaultTimeout(10000);
const foreign = [], errors = [];
ctx.on('request', (r) => { const u = r.url(); if (!u.startsWith(M + '/') && !u.startsWith('data:')) foreign.push(u); });
const page = ctx.pages()[0] || await ctx.newPage();
page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
page.on('console', (m) => { if (m.type() === 'error' && !/status of 404/.test(m.text())) errors.push('console: ' + m.text()); });
let searches = 0;
page.on('request', (r) => { if (r.url().includes('/api/catalog/repos?')) searches++; });
await page.addInitScript(() => {
	window.__csp = [];
	document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
});
const rows = () => page.$$eval('#results li.repo', (l) => l.map((e) => e.dataset.spec));
const waitRows = async (n) => { await page.waitForFunction((k) => document.querySelector('#results').getAttribute('aria-busy') === 'false' &&
	document.querySelectorAll('#results li.repo').length === k, n).catch(() => {}); return rows(); };

try {
	// 1. first paint: the list and the totals, with no typing
	const t0 = Date.now();
	await page.goto(M + '/');
	await page.waitForSelector('#results li.repo');
	const loadMs = Date.now() - t0;
	// Paint entries are queued once the frame is presented, which on a loaded machine can come after
	// the rows are in the DOM: wait for first-contentful-paint (up to the 10 s default) before reading.
	await page.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0).catch(() => {});
	const perf = await page.evaluate(() => {
		const p = Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, e.startTime]));
		const m = performance.getEntriesByName('hm:repos-rendered')[0];
		return { fp: p['first-paint'], fcp: p['first-contentful-paint'], repos: m && m.startTime,
			dcl: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd };
	});
	console.log(`# first paint ${perf.fp?.toFixed(0)} ms, first contentful paint ${perf.fcp?.toFixed(0)} ms, ` +
		`repos on screen ${perf.repos?.toFixed(0)} ms, DOMContentLoaded ${perf.dcl?.toFixed(0)} ms (goto to rows: ${loadMs} ms)`);
	ok(typeof perf.fcp === 'number' && perf.fcp < 5000, 'first contentful paint measured, under 5 s', perf);
	ok(typeof perf.repos === 'number' && perf.repos <= perf.fcp, 'the first paint already shows the repositories', perf);
	const all = await waitRows(4);
	ok(all.length === 4 && all.includes('ms:qwen/ms-tiny') && all.includes('hf:datasets/acme/corpus'), 'first load lists the 4 repositories', all);
	const stats = await api('stats');
	await page.waitForFunction(() => document.querySelector('#t-repos').textContent === '4');
	const tot = await page.$eval('#totals', (e) => e.innerText);
	ok(tot.includes(human(stats.unique_bytes)) && tot.includes(human(stats.dedup_saved_bytes)), 'totals: repos, unique bytes, dedup saved', tot);
	const llm = (await api('repos?q=llm')).repos[0];
	const cells = await page.$eval('li.repo[data-spec="hf:acme/llm"]', (e) => [e.querySelector('.cell-size').textContent,
		e.querySelector('.cell-status').textContent, e.querySelector('.cell-sync').textContent, e.querySelector('.spec').textContent]);
	ok(cells[0] === human(llm.size) && cells[0].endsWith('MiB') && cells[1] === 'Synced' && /ago|just now/.test(cells[2]) && cells[3] === 'hf:acme/llm',
		'a row shows spec, size in binary units, status, last sync', cells);
	ok(await page.$eval('li.repo[data-spec="hf:other/gated-thing"]', (e) => e.querySelector('.badge-gated') !== null &&
		e.querySelector('.cell-status').textContent === 'No access'), 'the gated repository says so');
	await page.screenshot({ path: art + '/web-list.png' });

	// 2. search narrows, debounced
	searches = 0;
	await page.click('#q');
	await page.keyboard.type('gated', { delay: 25 });
	let r = await waitRows(1);
	ok(r.length === 1 && r[0] === 'hf:other/gated-thing', 'typing narrows the list', r);
	ok(searches > 0 && searches < 5, 'search is debounced (fewer requests than keystrokes)', searches);
	ok(page.url().endsWith('#/?q=gated'), 'the query is in the URL', page.url());
	await page.fill('#q', 'zzznothing');
	await page.waitForSelector('#results .empty-state');
	ok(/No repository matches/.test(await page.textContent('#summary')), 'no match: says so');
	await page.fill('#q', '');
	ok((await waitRows(4)).length === 4, 'clearing the search shows everything again');

	// 3. filters and sort
	await page.selectOption('#f-hub', 'ms');
	r = await waitRows(1);
	ok(r[0] === 'ms:qwen/ms-tiny', 'filter hub=ms', r);
	await page.selectOption('#f-hub', '');
	await page.selectOption('#f-type', 'dataset');
	r = await waitRows(1);
	ok(r[0] === 'hf:datasets/acme/corpus', 'filter type=dataset', r);
	await page.selectOption('#f-type', '');
	await page.selectOption('#f-status', 'gated');
	r = await waitRows(1);
	ok(r[0] === 'hf:other/gated-thing', 'filter status=gated', r);
	await page.selectOption('#f-status', '');
	await page.selectOption('#f-gated', 'false');
	r = await waitRows(3);
	ok(r.length === 3 && !r.includes('hf:other/gated-thing'), 'filter open (not gated)', r);
	await page.selectOption('#f-gated', '');
	await page.selectOption('#f-sort', 'size');
	await waitRows(4);
	await page.waitForFunction(() => location.hash === '#/?sort=size');
	r = await rows();
	ok(r[0] === 'hf:acme/llm' && r[3] === 'hf:other/gated-thing', 'sort by size, largest first', r);
	await page.click('#f-order');
	await page.waitForFunction(() => location.hash === '#/?sort=size&order=asc');
	r = await waitRows(4);
	ok(r[0] === 'hf:other/gated-thing' && r[3] === 'hf:acme/llm', 'order toggle: smallest first', r);
	await page.goto(M + '/#/?hub=ms');
	await page.reload();
	r = await waitRows(1);
	ok(r[0] === 'ms:qwen/ms-tiny' && await page.inputValue('#f-hub') === 'ms', 'filters are restored from the URL', r);
	await page.goto(M + '/#/');
	await waitRows(4);

	// 4. open a repository from the list
	await page.fill('#q', 'corpus');
	await waitRows(1);
	await page.click('li.repo[data-spec="hf:datasets/acme/corpus"] a');
	await page.waitForSelector('#repo-view h1');
	ok(page.url().endsWith('#/repo/hf/dataset/acme/corpus'), 'the repo page has its own address', page.url());
	const corpus = await api('repos/hf/dataset/acme/corpus');
	ok((await page.textContent('#repo-view h1')) === 'acme/corpus', 'title is the repo name');
	await page.waitForSelector('#files tbody tr');
	await page.waitForSelector('#runs table');
	const view = await page.innerText('#repo-view');
	ok(view.includes(corpus.commit.slice(0, 12)) && view.includes('cc-by-4.0') && view.includes('hf:datasets/acme/corpus'),
		'metadata: spec, commit, license');
	ok(await page.$$eval('.refs tbody tr', (t) => t.length === 1 && t[0].innerText.includes('main') && t[0].innerText.includes('branch')), 'refs: main');
	ok(await page.$$eval('.snaps tbody tr', (t) => t.length) === corpus.snapshots.length, 'snapshots listed');
	ok(corpus.history.length === 1 && corpus.history[0].outcome === 'ok' && corpus.history[0].commit === corpus.commit,
		'the repo has its own history (its outcome in the run, not the run\'s)', corpus.history);
	ok(await page.$$eval('.runs tbody tr', (t) => t.length === 1 && /\bok\b/.test(t[0].innerText) && !/partial/.test(t[0].innerText)),
		'sync history: this repo\'s own, ok (the run itself was partial: the gated one failed)');
	ok((await page.textContent('#mount-cmd')) === corpus.mount_command && corpus.mount_command === 'hubmirror mount --mirror ' + M + ' hf:datasets/acme/corpus',
		'mount command shown', await page.textContent('#mount-cmd'));
	ok((await page.textContent('#endpoint-env')) === 'HF_ENDPOINT=' + M, 'endpoint line shown');
	ok(corpus.swarm && corpus.swarm.btih.length === 40 && /0 seeding, 0 downloading/.test(await page.textContent('#swarm')),
		'swarm and torrent shown', corpus.swarm);

	// 5. the file tree
	const names = () => page.$$eval('#files tbody tr:not(.up) .entry', (l) => l.map((e) => e.textContent));
	const sizes = () => page.$$eval('#files tbody tr:not(.up)', (l) => l.map((e) => e.children[1].textContent));
	let n = await names();
	ok(JSON.stringify(n) === JSON.stringify(['.gitattributes', 'README.md', 'data/']), 'root: files and a folder', n);
	const s = await sizes();
	ok(s[2] === human(660008) && s[1] === '9 B', 'sizes in human units (a folder sums its files)', s);
	const readme = await page.$eval('#files tr.file[data-path="README.md"] a', (a) => a.href);
	ok(await page.evaluate(async (u) => (await fetch(u)).text(), readme) === '# corpus\n', 'a file links to its download on this mirror', readme);
	await page.click('#files tr.dir[data-path="data"] a');
	await page.waitForFunction(() => location.hash.endsWith('?dir=data') && document.querySelector('#files tr.dir[data-path="data/train"]'));
	n = await names();
	ok(JSON.stringify(n) === JSON.stringify(['test/', 'train/', 'validation/']), 'into data/: three folders', n);
	await page.click('#files tr.dir[data-path="data/train"] a');
	await page.waitForSelector('#files tr.file[data-path="data/train/part-0001.parquet"]');
	n = await names();
	ok(n.length === 2 && n[0].startsWith('part-0000.parquet') && (await sizes())[1] === human(310000), 'into data/train/: two files with sizes', [n, await sizes()]);
	ok((await page.innerText('#files-path')).replace(/\s+/g, '') === 'corpus/data/train', 'the path bar shows where we are', await page.innerText('#files-path'));
	await page.mouse.move(0, 0);
	await page.screenshot({ path: art + '/web-repo.png', fullPage: true });
	await page.goBack();
	await page.waitForSelector('#files tr.dir[data-path="data/validation"]');
	ok(page.url().endsWith('?dir=data'), 'Back goes up to data/', page.url());
	await page.click('#files tr.dir[data-path="data/validation"] a');
	await page.click('#files tr.dir[data-path="data/validation/shard"] a');
	await page.waitForSelector('#files tr.file[data-path="data/validation/shard/deep.jsonl"]');
	ok((await sizes())[0] === '9 B', 'three levels down: deep.jsonl, 9 B');
	await page.click('#files tr.up a');
	await page.waitForSelector('#files tr.dir[data-path="data/validation/shard"]');
	await page.click('#files-path a >> nth=0');
	await page.waitForSelector('#files tr.dir[data-path="data"]');
	ok(page.url().endsWith('#/repo/hf/dataset/acme/corpus'), '".." and the path bar go back up', page.url());

	// 6. Copy: the async clipboard, then the fallback without it
	await page.click('button[data-copy="mount-cmd"]');
	await page.waitForFunction(() => document.querySelector('button[data-copy="mount-cmd"]').dataset.copied);
	let how = await page.$eval('button[data-copy="mount-cmd"]', (b) => [b.dataset.copied, b.textContent]);
	const clip = await page.evaluate(() => navigator.clipboard.readText());
	ok(how[0] === 'clipboard' && how[1] === 'Copied' && clip === corpus.mount_command, 'Copy puts the mount command on the clipboard', [how, clip]);
	await page.evaluate(() => Object.defineProperty(navigator, 'clipboard', { value: undefined, configurable: true }));
	await page.click('button[data-copy="endpoint-env"]');
	await page.waitForFunction(() => document.querySelector('button[data-copy="endpoint-env"]').dataset.copied);
	how = await page.$eval('button[data-copy="endpoint-env"]', (b) => b.dataset.copied);
	const other = await ctx.newPage();
	await other.goto(M + '/#/');
	const clip2 = await other.evaluate(() => navigator.clipboard.readText());
	await other.close();
	ok(how === 'fallback' && clip2 === 'HF_ENDPOINT=' + M, 'without navigator.clipboard the fallback copies the endpoint line', [how, clip2]);

	// 7. another hub, HTML-looking data, a wrong address
	await page.goto(M + '/#/repo/ms/model/qwen/ms-tiny');
	await page.waitForSelector('#files tr.dir[data-path="sub"]');
	ok((await page.textContent('#endpoint-env')) === 'MODELSCOPE_ENDPOINT=' + M, 'a ModelScope repo: its endpoint line');
	const cfg = await page.$eval('#files tr.file[data-path="configuration.json"] a', (a) => a.href);
	ok(/pytorch/.test(await page.evaluate(async (u) => (await fetch(u)).text(), cfg)), 'a ModelScope file downloads from the mirror', cfg);
	await page.goto(M + '/#/repo/hf/model/acme/llm');
	await page.waitForSelector('#repo-view .tags');
	const xss = await page.evaluate(() => ({ flag: window.__xss, imgs: document.querySelectorAll('#repo-view img:not(#readme img)').length,
		chip: [...document.querySelectorAll('#repo-view .tags .chip')].some((c) => c.textContent === '<img src=x onerror="window.__xss=1">') }));
	ok(xss.flag === undefined && xss.imgs === 0 && xss.chip, 'a tag that looks like HTML is shown as text', xss);
	const shown = await page.evaluate(() => ({ h1: document.querySelector('#repo-view .repo-h1').textContent,
		alias: (document.querySelector('#alias') || {}).textContent }));
	ok(shown.h1 === 'acme/llm-v2' && /added here as acme\/llm,/.test(shown.alias || ''),
		'a repo renamed upstream shows its new name and the one it was added under', shown);
	await page.waitForSelector('#readme-card:not([hidden]) #readme h1');
	const cardv = await page.evaluate(() => {
		const box = document.querySelector('#readme');
		const a = (t) => [...box.querySelectorAll('a')].find((e) => e.textContent === t);
		return { h1: box.querySelector('h1').textContent, td: [...box.querySelectorAll('td')].map((e) => e.textContent).join(','),
			scripts: box.querySelectorAll('script').length, flag: window.__cardxss, front: /license: mit/.test(box.textContent),
			imgs: [...box.querySelectorAll('img')].map((e) => e.getAttribute('src')), remote: a('remote') && a('remote').getAttribute('href'),
			bad: a('bad') && a('bad').getAttribute('href'), cfg: a('cfg') && a('cfg').getAttribute('href'), up: a('up') && a('up').getAttribute('href') };
	});
	ok(cardv.h1 === 'LLM card' && cardv.td === '1,2' && !cardv.front, 'the model card renders (heading, table), its front matter left out', cardv);
	ok(cardv.scripts === 0 && cardv.flag === undefined && !cardv.bad, 'the card runs nothing: raw HTML dropped, a javascript: link emptied', cardv);
	ok(cardv.imgs.length === 1 && /^\/acme\/llm\/resolve\/[0-9a-f]{40}\/tokenizer\/tokenizer\.json$/.test(cardv.imgs[0]) &&
		cardv.remote === 'https://evil.example/x.png', "the card's own image comes from the mirror, a remote one is only a link", cardv);
	ok(/^\/acme\/llm\/resolve\/[0-9a-f]{40}\/config\.json$/.test(cardv.cfg || '') && cardv.up === '../../etc/passwd',
		"a link to a file of the repo points at the mirror; one leaving it is left alone", cardv);
	// a repository the mirror never synced (gated upstream, no token): nothing to use yet, and its
	// history says why
	await page.goto(M + '/#/repo/hf/model/other/gated-thing');
	await page.waitForSelector('#repo-view h1');
	const never = await page.evaluate(() => ({ use: !!document.querySelector('#use-h'), mount: !!document.querySelector('#mount-cmd'),
		note: (document.querySelector('#not-synced') || {}).textContent, runs: [...document.querySelectorAll('.runs tbody tr')].map((t) => t.innerText) }));
	ok(!never.use && !never.mount && /Not synced yet/.test(never.note || ''), 'a never-synced repo offers no mount or endpoint line', never);
	ok(never.runs.length === 1 && /gated/.test(never.runs[0]), 'its history: gated, its own outcome', never.runs);
	await page.goto(M + '/#/repo/hf/model/acme/nope');
	await page.waitForSelector('#repo-view .notfound');
	ok(/No repository hf:acme\/nope/.test(await page.innerText('#repo-view')), 'an unknown repo: not found');
	await page.click('text=All repositories');
	ok((await waitRows(4)).length === 4, 'back to the list');

	const csp = await page.evaluate(() => window.__csp);
	ok(csp.length === 0, 'no Content-Security-Policy violation', csp);
	ok(errors.length === 0, 'no script error', errors);
	ok(foreign.length === 0, 'the page fetched nothing but the mirror', foreign);
} catch (e) {
	ok(false, 'browser scenario ran to the end', String(e && e.stack || e).split('\n').slice(0, 4).join(' | '));
	await page.screenshot({ path: art + '/web-failure.png', fullPage: true }).catch(() => {});
	console.log('# failure screenshot: ' + art + '/web-failure.png');
} finally {
	await ctx.close();
}
process.exit(failed ? 1 : 0);
JS

nchecks=0
st=none
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "web: ${line#ok - }"; nchecks=$((nchecks + 1)) ;;
	"not ok - "*) fail "web: ${line#not ok - }"; nchecks=$((nchecks + 1)) ;;
	"exit "*) st=${line#exit } ;;
	"#"*) echo "$line" ;;
	*) echo "# $line" ;;
	esac
done < <(timeout 50 node "$T/web.mjs" "$M" "$JS" "$ART" "$T" 2>&1; echo "exit $?")
check "browser script ran to the end ($nchecks checks, status $st)" test "$nchecks" -ge 40 -a \( "$st" = 0 -o "$st" = 1 \)
for f in web-list.png web-repo.png; do
	check "screenshot $f saved" test -s "$ART/$f"
	echo "# screenshot: $ART/$f"
done
check "server log stayed quiet" bash -c "! grep -qiE 'error|sanitizer' '$T/serve.err'"
if [ "$_failed" -gt 0 ]; then
	echo "# mirror access log (last 20 lines):"
	tail -n 20 "$T/access.log" | sed 's/^/#   /'
	[ -s "$T/serve.err" ] && sed 's/^/# serve: /' "$T/serve.err"
fi

# ---- a mirror with a tokens file: the request form says a token is needed, and how to ask with it ----
printf 'tok-web-000000001 hf:acme/llm\n' >"$T/tokens"; chmod 600 "$T/tokens"
check "a second serve of the same store, with a tokens file" start_serve --p2p-listen off --tokens "$T/tokens"
cat >"$T/req.mjs" <<'JS'
import { createRequire } from 'node:module';
import { mkdtempSync } from 'node:fs';
const [M, jsDir, tmp] = process.argv.slice(2);
const { chromium } = createRequire(jsDir + '/package.json')('playwright-core');
const ctx = await chromium.launchPersistentContext(mkdtempSync(tmp + '/chromium-req-'), {
	executablePath: '/usr/bin/chromium', headless: true,
	args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
ctx.setDefaultTimeout(10000);
let code = 1;
try {
	const page = ctx.pages()[0] || await ctx.newPage();
	await page.goto(M + '/#/requests');
	await page.fill('#req-spec', 'hf:acme/wanted');
	await page.click('#req-send');
	await page.waitForFunction(() => document.querySelector('#req-result').textContent.length > 0);
	const said = await page.textContent('#req-result');
	const want = 'This mirror takes requests only with a token: ask its operator for one, then run ' +
		'HUBMIRROR_TOKEN=<token> hubmirror request --mirror ' + M + ' hf:acme/wanted.';
	console.log((said === want ? 'ok - ' : 'not ok - ') + 'the request form says a token is needed, and how to ask with one' +
		(said === want ? '' : ' # got ' + JSON.stringify(said)));
	code = said === want ? 0 : 1;
} finally {
	await ctx.close();
}
process.exit(code);
JS
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "web: ${line#ok - }" ;;
	"not ok - "*) fail "web: ${line#not ok - }" ;;
	*) echo "# $line" ;;
	esac
done < <(timeout 30 node "$T/req.mjs" "$M" "$JS" "$T" 2>&1)
echo "# took $((SECONDS - started)) s"
finish
