#!/usr/bin/env bash
# t0820-requests: users ask for repositories the mirror lacks, and the operator decides. The API
# (POST/GET /api/catalog/requests: bad bodies, a tracked repo 409, a second ask a vote, a reason as
# text only), the CLI (request, requests, approve and decline locally and through the operator API),
# approving tracks the repository and syncs it (then it is served), the metric of pending requests,
# a tokens file making asking take a token (recorded as a short hash, never the token), and the web
# page in Chromium: ask from the form, see the list with states and the operator's note, a reason
# that looks like HTML stays text. Chromium steps are skipped without it.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/have", "files": [{"path": "config.json", "content": "{}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/wanted", "files": [{"path": "config.json", "content": "{\"w\": 1}\n"}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-wanted", "files": [{"path": "configuration.json", "content": "{}\n"}]}
 ]}
JSON
check "synced from the fake upstream" sync_from_fake hf:acme/have
export HUBMIRROR_MS_UPSTREAM=$FAKE_API
printf 'adm-R3q9Zx71Lm\n' >"$T/admin.token"; chmod 600 "$T/admin.token"
check "serve starts" start_serve --p2p-listen off --admin-token-file "$T/admin.token"
post() { curl -s -o "$T/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' "$@" "$M/api/catalog/requests"; }
check "no body: 400" test "$(post)" = 400
check "a bad spec: 400" test "$(post -d '{"spec": "hf:../etc"}')" = 400
check "a revision: 400" test "$(post -d '{"spec": "hf:acme/wanted@main"}')" = 400
check "a reason with a control byte: 400" test "$(post -d '{"spec": "hf:acme/wanted", "reason": "a\nb"}')" = 400
check "a repository the mirror has: 409" test "$(post -d '{"spec": "hf:acme/have"}')" = 409
check "ask: 201" test "$(post -d '{"spec": "hf:acme/wanted", "reason": "<img src=x onerror=window.__xss=1> for evals"}')" = 201
check "asking again counts a vote: 200" bash -c "[ \"\$(curl -s -o '$T/again' -w '%{http_code}' -X POST -d '{\"spec\": \"hf:acme/wanted\"}' '$M/api/catalog/requests')\" = 200 ] &&
	'$PY' -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"votes\"] == 2 and d[\"state\"] == \"pending\", d' '$T/again'"
check "the list: pending, who asked not shown" bash -c "curl -fsS '$M/api/catalog/requests' | '$PY' -c '
import json,sys; d=json.load(sys.stdin); q=d[\"requests\"][0]
assert d[\"pending\"] == 1 and q[\"spec\"] == \"hf:acme/wanted\" and q[\"votes\"] == 2 and \"requested_by\" not in q, d'"
check "the metric of pending requests" bash -c "[ \"\$(curl -fsS '$M/metrics' | awk '\$1 == \"hubmirror_requests_pending\" {print \$2}')\" = 1 ]"

# ---- the CLI ----
check "hubmirror request" bash -c "'$HUBMIRROR' request --mirror '$M' --reason 'for the team' ms:acme/ms-wanted hf:acme/nowhere | grep -q 'asked for ms:acme/ms-wanted: request 2, pending (1 ask)'"
check "a request for what the mirror has says so" bash -c "'$HUBMIRROR' request --mirror '$M' hf:acme/have | grep -q 'mirrored already'"
check "hubmirror requests --mirror lists them" bash -c "'$HUBMIRROR' requests --mirror '$M' | grep -q 'ms:acme/ms-wanted'"
check "hubmirror requests on the data directory shows who asked" bash -c "'$HUBMIRROR' requests --json | '$PY' -c '
import json,sys; r=json.load(sys.stdin)[\"requests\"]; assert len(r) == 3 and all(q[\"requested_by\"] == \"127.0.0.1\" for q in r), r'"
expect_status 1 "deciding through the mirror takes the admin token" "$HUBMIRROR" requests decline --mirror "$M" 3
export HUBMIRROR_ADMIN_TOKEN=adm-R3q9Zx71Lm
check "decline with a note, through the operator API" bash -c "'$HUBMIRROR' requests decline --mirror '$M' --note 'not a public repo' 3 | grep -q 'request 3: declined hf:acme/nowhere'"
expect_status 1 "a decided request cannot be decided again" "$HUBMIRROR" requests approve --mirror "$M" 3
check "approve through the operator API: tracked and synced now" bash -c "'$HUBMIRROR' requests approve --mirror '$M' 1 | grep -q 'approved, tracking hf:acme/wanted (syncing it now)'"
for _ in $(seq 100); do
	[ "$(curl -s "$M/acme/wanted/resolve/main/config.json")" = '{"w": 1}' ] && break
	sleep 0.1
done
check "the approved repository is served" test "$(curl -fsS "$M/acme/wanted/resolve/main/config.json")" = '{"w": 1}'
check "approve on the data directory tracks it" bash -c "'$HUBMIRROR' requests approve 2 | grep -q 'approved, tracking ms:acme/ms-wanted' &&
	'$HUBMIRROR' ls --json | grep -q 'acme/ms-wanted'"
check "the log says who decided what" bash -c "grep -q 'admin.*request 1 for hf:acme/wanted approved' '$T/serve.err' && ! grep -q adm-R3q9Zx71Lm '$T/serve.err'"
check "no request pending now" bash -c "[ \"\$(curl -fsS '$M/metrics' | awk '\$1 == \"hubmirror_requests_pending\" {print \$2}')\" = 0 ]"

# ---- the page ----
if [ -x /usr/bin/chromium ] && command -v node >/dev/null && [ -f "$HM_SRC/tests/js/node_modules/playwright-core/package.json" ]; then
	cat >"$T/req.mjs" <<'JS'
import { createRequire } from 'node:module';
import { mkdtempSync } from 'node:fs';
const [M, jsDir, tmp] = process.argv.slice(2);
const { chromium } = createRequire(jsDir + '/package.json')('playwright-core');
let failed = 0;
const ok = (cond, name, extra) => {
	console.log((cond ? 'ok - ' : 'not ok - ') + name + (!cond && extra !== undefined ? ' # got ' + JSON.stringify(extra) : ''));
	if (!cond) failed++;
};
const ctx = await chromium.launchPersistentContext(mkdtempSync(tmp + '/chromium-'), {
	executablePath: '/usr/bin/chromium', headless: true,
	args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
		'--disable-component-update', '--disable-sync'],
});
ctx.setDefaultTimeout(10000);
const errors = [];
const page = ctx.pages()[0] || await ctx.newPage();
page.on('pageerror', (e) => errors.push(e.message));
try {
	await page.goto(M + '/#/?q=acme/newmodel');
	await page.waitForSelector('#ask-link');
	ok((await page.getAttribute('#ask-link', 'href')) === '#/requests?spec=' + encodeURIComponent('hf:acme/newmodel'),
		'an empty search offers to request the repository it names');
	await page.click('#ask-link');
	await page.waitForSelector('#requests-view:not([hidden])');
	ok((await page.inputValue('#req-spec')) === 'hf:acme/newmodel', 'the form comes filled with it');
	await page.waitForSelector('#req-list table');
	const states = await page.$$eval('#req-list tr[data-spec]', (r) => r.map((e) => e.dataset.spec + '=' + e.dataset.state));
	ok(states.includes('hf:acme/wanted=approved') && states.includes('hf:acme/nowhere=declined'), 'the list shows each request\'s state', states);
	const note = await page.$eval('#req-list tr[data-spec="hf:acme/nowhere"]', (e) => e.textContent);
	ok(note.includes('not a public repo'), 'and the operator\'s note', note);
	ok(await page.evaluate(() => !document.querySelector('#req-list img') && !window.__xss), 'a reason that looks like HTML stays text');
	await page.fill('#req-spec', 'not a spec');
	await page.click('#req-send');
	ok(/Name it like/.test(await page.textContent('#req-result')), 'a malformed name is refused on the page');
	await page.fill('#req-spec', 'hf:acme/newmodel');
	await page.fill('#req-reason', 'to try it');
	await page.click('#req-send');
	await page.waitForFunction(() => /Asked/.test(document.querySelector('#req-result').textContent));
	await page.waitForSelector('#req-list tr[data-spec="hf:acme/newmodel"]');
	ok(await page.$eval('#req-list tr[data-spec="hf:acme/newmodel"]', (e) => e.dataset.state) === 'pending', 'the request appears, pending');
	const api = await (await fetch(M + '/api/catalog/requests?state=pending')).json();
	ok(api.requests.some((q) => q.spec === 'hf:acme/newmodel' && q.reason === 'to try it'), 'the mirror recorded it with its reason', api);
	await page.fill('#req-spec', 'hf:acme/have');
	await page.click('#req-send');
	await page.waitForFunction(() => /mirrored already/.test(document.querySelector('#req-result').textContent));
	ok(true, 'asking for a mirrored repository says it is there');
	ok(errors.length === 0, 'no page errors', errors);
} catch (e) {
	ok(false, 'the page script ran: ' + e.message);
} finally {
	await ctx.close();
}
process.exit(failed ? 1 : 0);
JS
	nweb=0
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "web: ${line#ok - }"; nweb=$((nweb + 1)) ;;
		"not ok - "*) fail "web: ${line#not ok - }"; nweb=$((nweb + 1)) ;;
		*) echo "# $line" ;;
		esac
	done < <(timeout 60 node "$T/req.mjs" "$M" "$HM_SRC/tests/js" "$T" 2>&1)
	check "the page script ran its checks ($nweb)" test "$nweb" -ge 9
else
	ok "web # SKIP needs /usr/bin/chromium and tests/js/node_modules (bash .ci/setup)"
fi

# ---- under a tokens file, asking takes a token ----
printf 'team-5Jd8Qw2Rt0 *\n' >"$T/tokens"; chmod 600 "$T/tokens"
check "serve with a tokens file starts" start_serve --p2p-listen off --tokens "$T/tokens"
check "asking without a token: 401" test "$(post -d '{"spec": "hf:acme/tokened"}')" = 401
check "asking with one: 201" test "$(post -H 'Authorization: Bearer team-5Jd8Qw2Rt0' -d '{"spec": "hf:acme/tokened"}')" = 201
check "the request records a short hash of the token, never the token" bash -c "'$HUBMIRROR' requests --json | '$PY' -c '
import json,sys; r=[q for q in json.load(sys.stdin)[\"requests\"] if q[\"spec\"] == \"hf:acme/tokened\"][0]
assert r[\"requested_by\"].startswith(\"token:\") and len(r[\"requested_by\"]) == 14, r' && ! grep -rq team-5Jd8Qw2Rt0 '$HUBMIRROR_DATA/catalog.db' '$T/serve.err'"
finish
