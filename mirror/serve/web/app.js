/*
 * app.js - the mirror's web page: search the catalog, open a repository, browse its files.
 *
 * Talks only to this mirror's JSON API (api/catalog/..., relative, so the page also works behind a
 * reverse proxy under a prefix). Every piece of data reaches the DOM as text (textContent, text
 * nodes, setAttribute): never as HTML. Routes live in the hash:
 *   #/?q=&hub=&type=&gated=&status=&sort=&order=    the list
 *   #/repo/{hub}/{type}/{org}/{name}?dir=a/b         a repository, its file tree at dir
 * (the server sends a browser's /ORG/NAME, /datasets/ORG/NAME, /models/ORG/NAME there: routes-web.c)
 *   #/requests?spec=hf:org/name                      ask for a repository; what others asked for
 */
'use strict';
(function () {
	const API = 'api/catalog/';
	const PAGE = 50;
	const DEBOUNCE_MS = 150;
	const FILTERS = ['hub', 'type', 'gated', 'status', 'sort', 'order'];
	const DESC_SORTS = new Set(['size', 'last_synced', 'downloads', 'likes']);
	const HUBS = { hf: 'Hugging Face', ms: 'ModelScope' };
	const STATUS = {
		ok: ['Synced', 'ok'], never: ['Never synced', 'idle'], gated: ['No access', 'warn'],
		denied: ['Denied', 'bad'], missing: ['Missing', 'bad'], disabled: ['Disabled', 'bad'],
		damaged: ['Damaged', 'bad'], error: ['Error', 'bad'],
	};
	const OUTCOMES = { ok: 'ok', partial: 'warn', failed: 'bad', interrupted: 'bad' };
	const REQUEST_STATES = { pending: ['Pending', 'warn'], approved: ['Approved', 'ok'], declined: ['Declined', 'bad'] };
	const SPEC_RE = /^(hf|ms):(datasets\/)?[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

	const $ = (id) => document.getElementById(id);
	/* a table lookup that never reaches Object.prototype ("constructor", "__proto__"...) */
	const own = (o, k) => (Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined);

	/* app.js loads in <head> without defer, so this runs before the first paint: the page stays
	 * unpainted until its first data is on it (or a second has passed), and the first paint shows
	 * the repositories rather than placeholders. Without JavaScript nothing is hidden. */
	const BOOT_MAX_MS = 1000;
	document.documentElement.classList.add('boot');
	const bootTimer = setTimeout(reveal, BOOT_MAX_MS);
	function reveal() {
		clearTimeout(bootTimer);
		document.documentElement.classList.remove('boot');
	}

	/* ---- DOM helpers: text only ---- */

	function h(tag, props, ...kids) {
		const el = document.createElement(tag);
		if (props) {
			for (const [k, v] of Object.entries(props)) {
				if (v === null || v === undefined || v === false) continue;
				if (k === 'class') el.className = v;
				else if (k === 'text') el.textContent = String(v);
				else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
				else el.setAttribute(k, v === true ? '' : String(v));
			}
		}
		add(el, kids);
		return el;
	}

	function add(el, ...kids) {
		for (const k of kids.flat(Infinity)) {
			if (k === null || k === undefined || k === false) continue;
			el.append(k instanceof Node ? k : document.createTextNode(String(k)));
		}
		return el;
	}

	function clear(el) {
		while (el.firstChild) el.firstChild.remove();
		return el;
	}

	/* ---- formatting ---- */

	const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
	function bytes(n) {
		if (typeof n !== 'number' || !isFinite(n)) return '\u2013';
		let v = n, i = 0;
		while (Math.abs(v) >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
		if (i === 0) return n + ' B';
		return (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + '\u00a0' + UNITS[i];
	}

	const intFmt = new Intl.NumberFormat();
	const compactFmt = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });
	const num = (n) => (typeof n === 'number' ? intFmt.format(n) : '\u2013');
	const compact = (n) => (typeof n === 'number' ? compactFmt.format(n) : '\u2013');
	const plural = (n, one, many) => num(n) + '\u00a0' + (n === 1 ? one : many);

	function dateOf(sec) {
		return typeof sec === 'number' && sec > 0 ? new Date(sec * 1000) : null;
	}

	function ago(d) {
		const s = (Date.now() - d.getTime()) / 1000;
		if (s < -60) return d.toLocaleString();
		if (s < 45) return 'just now';
		if (s < 90) return '1 min ago';
		if (s < 3600) return Math.round(s / 60) + ' min ago';
		if (s < 5400) return '1 hour ago';
		if (s < 86400) return Math.round(s / 3600) + ' hours ago';
		if (s < 86400 * 1.5) return 'yesterday';
		if (s < 86400 * 30) return Math.round(s / 86400) + ' days ago';
		return d.toLocaleDateString();
	}

	/* <time> with a relative text and the exact local time on hover */
	function timeEl(sec, none) {
		const d = dateOf(sec);
		if (!d) return h('span', { class: 'muted', text: none || 'never' });
		return h('time', { datetime: d.toISOString(), title: d.toLocaleString(), text: ago(d) });
	}

	function duration(a, b) {
		if (!a || !b) return '\u2013';
		const s = Math.max(0, b - a);
		if (s < 60) return s + ' s';
		if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
		return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
	}

	const shortSha = (c) => (typeof c === 'string' ? c.slice(0, 12) : '\u2013');

	/* ---- API ---- */

	async function api(path, signal) {
		const res = await fetch(API + path, { signal, headers: { Accept: 'application/json' } });
		let body = null;
		try { body = await res.json(); } catch (e) { /* not JSON */ }
		if (!res.ok) {
			const err = new Error((body && body.error) || ('HTTP ' + res.status));
			err.status = res.status;
			throw err;
		}
		return body;
	}

	const enc = (s) => String(s).split('/').map(encodeURIComponent).join('/');
	const repoApi = (r) => 'repos/' + enc(r.hub) + '/' + enc(r.type) + '/' + enc(r.name);
	function repoHref(r, dir) {
		return '#/repo/' + enc(r.hub) + '/' + enc(r.type) + '/' + enc(r.name) +
			(dir ? '?dir=' + encodeURIComponent(dir) : '');
	}

	/* This mirror's address as a user types it (the page's folder: a mirror behind a prefix keeps it). */
	const mirrorBase = () => location.origin + location.pathname.replace(/[^/]*$/, '').replace(/\/$/, '');

	/* What git clones from this mirror: the Hub's own pattern (docs/git.md); HF repos only. */
	function cloneCommand(r) {
		if (r.hub !== 'hf') return null;
		return 'git clone ' + mirrorBase() + '/' + (r.type === 'dataset' ? 'datasets/' : '') + enc(r.name);
	}

	/* Where a client downloads a file of this repo from this mirror (relative to the page). */
	function fileHref(repo, path) {
		const rev = repo.commit || repo.revision;
		if (!rev) return null;
		if (repo.hub === 'hf')
			return (repo.type === 'dataset' ? 'datasets/' : '') + enc(repo.name) + '/resolve/' +
				encodeURIComponent(rev) + '/' + enc(path);
		if (repo.hub === 'ms')
			return 'api/v1/' + (repo.type === 'dataset' ? 'datasets/' : 'models/') + enc(repo.name) +
				'/repo?Revision=' + encodeURIComponent(rev) + '&FilePath=' + encodeURIComponent(path);
		return null;
	}

	/* ---- small pieces ---- */

	function statusPill(s) {
		const [label, tone] = own(STATUS, s) || [s || 'unknown', 'idle'];
		return h('span', { class: 'pill pill-' + tone, title: 'sync status: ' + (s || 'unknown'), text: label });
	}

	/* a repository of the mirror's own (a local namespace's): it has no sync status */
	const syncPill = (r) => (r.local ? h('span', { class: 'pill pill-ok local-pill',
		title: 'a repository of this mirror\'s own, pushed or uploaded here', text: 'Local' }) : statusPill(r.sync_status));

	function hubBadge(hub) {
		return h('span', { class: 'badge badge-' + (hub === 'ms' ? 'ms' : 'hf'), title: own(HUBS, hub) || hub,
			text: hub === 'ms' ? 'MS' : hub === 'hf' ? 'HF' : hub });
	}

	const typeBadge = (type) => h('span', { class: 'badge badge-type', text: type });
	const gatedBadge = (r) => (r.gated ? h('span', { class: 'badge badge-gated',
		title: 'gated' + (r.gated_mode ? ' (' + r.gated_mode + ')' : ''), text: 'gated' }) : null);

	function repoName(name) {
		const i = name.indexOf('/');
		return i < 0 ? [h('span', { class: 'name', text: name })]
			: [h('span', { class: 'org', text: name.slice(0, i + 1) }), h('span', { class: 'name', text: name.slice(i + 1) })];
	}

	function toast(msg) {
		const t = $('toast');
		t.textContent = msg;
		t.classList.add('show');
		clearTimeout(toast.timer);
		toast.timer = setTimeout(() => t.classList.remove('show'), 1800);
	}

	/* Copy text: the async clipboard where the page may use it (https, localhost), else a selected
	 * textarea and execCommand('copy'), else leave the text selected for Ctrl+C. */
	async function copyText(text, codeEl) {
		if (navigator.clipboard && window.isSecureContext) {
			try {
				await navigator.clipboard.writeText(text);
				return 'clipboard';
			} catch (e) { /* denied: try the fallback */ }
		}
		const active = document.activeElement;
		const ta = h('textarea', { class: 'offscreen', readonly: true, 'aria-hidden': 'true', tabindex: '-1' });
		ta.value = text;
		document.body.append(ta);
		ta.select();
		ta.setSelectionRange(0, text.length);
		let ok = false;
		try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
		ta.remove();
		if (active && active.focus) active.focus();
		if (ok) return 'fallback';
		if (codeEl) {
			const range = document.createRange();
			range.selectNodeContents(codeEl);
			const sel = window.getSelection();
			sel.removeAllRanges();
			sel.addRange(range);
		}
		return null;
	}

	function copyLine(label, value, id) {
		const code = h('code', { class: 'copy-text', id, text: value });
		const btn = h('button', { type: 'button', class: 'btn btn-copy', 'aria-label': 'Copy ' + label.toLowerCase(),
			'data-copy': id, text: 'Copy' });
		btn.addEventListener('click', async () => {
			const how = await copyText(value, code);
			btn.textContent = how ? 'Copied' : 'Press Ctrl+C';
			btn.classList.toggle('done', !!how);
			btn.dataset.copied = how || 'no';
			toast(how ? label + ' copied' : 'Selected: press Ctrl+C to copy');
			clearTimeout(btn.timer);
			btn.timer = setTimeout(() => { btn.textContent = 'Copy'; btn.classList.remove('done'); }, 2000);
		});
		return h('div', { class: 'copyline' }, h('span', { class: 'copy-label', text: label }),
			h('div', { class: 'copy-box' }, code, btn));
	}

	function table(cls, heads, rows, empty) {
		if (!rows.length) return h('p', { class: 'muted empty', text: empty });
		return h('div', { class: 'table-wrap' }, h('table', { class: 'tbl ' + cls },
			h('thead', null, h('tr', null, heads.map(([t, c]) => h('th', { class: c, scope: 'col', text: t })))),
			h('tbody', null, rows)));
	}

	/* ---- totals in the header ---- */

	async function loadTotals() {
		try {
			const [t, s, l] = await Promise.all([api('stats'), api('syncs?limit=1'), api('repos?limit=1')]);
			/* the repositories this viewer sees: the list's own count (a guarded one is hidden from both) */
			$('t-repos').textContent = num(l.total);
			$('t-repos').title = num(t.repos_synced) + ' synced, ' + num(t.snapshots) + ' snapshots';
			$('t-files').textContent = num(t.files);
			$('t-files').title = num(t.blobs) + ' unique blobs';
			$('t-unique').textContent = bytes(t.unique_bytes);
			$('t-unique').title = num(t.unique_bytes) + ' bytes on disk, ' + bytes(t.logical_bytes) + ' as served';
			$('t-saved').textContent = bytes(t.dedup_saved_bytes);
			$('t-saved').title = num(t.dedup_saved_bytes) + ' bytes not stored twice';
			const run = s.runs && s.runs[0];
			const last = $('t-lastsync');
			clear(last);
			if (run) add(last, timeEl(run.ended_at || run.started_at), ' ',
				h('span', { class: 'dot dot-' + (own(OUTCOMES, run.outcome) || 'idle'), title: run.outcome || 'running' }));
			else last.textContent = 'never';
		} catch (e) {
			$('t-repos').title = 'totals unavailable: ' + e.message;
		}
	}

	/* ---- the list ---- */

	const list = { q: '', hub: '', type: '', gated: '', status: '', sort: '', order: '' };
	let listSeq = 0, listAbort = null, nextCursor = null, shown = 0, debounce = 0, listKey = null;
	let listScroll = 0, firstList = true;

	function listQuery(forHash) {
		const p = new URLSearchParams();
		if (list.q.trim()) p.set('q', forHash ? list.q : list.q.trim());
		for (const k of FILTERS) if (list[k]) p.set(k, list[k]);
		return p;
	}

	function effectiveOrder() {
		return list.order || (DESC_SORTS.has(list.sort) ? 'desc' : 'asc');
	}

	function syncControls() {
		if ($('q').value !== list.q) $('q').value = list.q;
		for (const k of ['hub', 'type', 'gated', 'status', 'sort']) $('f-' + k).value = list[k];
		const desc = effectiveOrder() === 'desc';
		const o = $('f-order');
		o.textContent = desc ? '\u2193 Desc' : '\u2191 Asc';
		o.title = desc ? 'Descending (click for ascending)' : 'Ascending (click for descending)';
		o.setAttribute('aria-label', o.title);
	}

	function writeHash() {
		const qs = listQuery(true).toString();
		history.replaceState(null, '', '#/' + (qs ? '?' + qs : ''));
	}

	function onControl(immediate) {
		writeHash();
		syncControls();
		clearTimeout(debounce);
		if (immediate) search(false);
		else debounce = setTimeout(() => search(false), DEBOUNCE_MS);
	}

	async function search(more) {
		const seq = ++listSeq;
		if (listAbort) listAbort.abort();
		listAbort = new AbortController();
		const p = listQuery(false);
		p.set('limit', String(PAGE));
		if (more && nextCursor) p.set('cursor', nextCursor);
		listKey = listQuery(false).toString();
		$('results').setAttribute('aria-busy', 'true');
		$('list-view').classList.add('loading');
		try {
			const d = await api('repos?' + p.toString(), listAbort.signal);
			if (seq !== listSeq) return;
			renderResults(d, more);
		} catch (e) {
			if (e.name === 'AbortError' || seq !== listSeq) return;
			$('summary').textContent = 'Could not load the catalog: ' + e.message;
			$('summary').classList.add('error');
			reveal();
		} finally {
			if (seq === listSeq) {
				$('results').setAttribute('aria-busy', 'false');
				$('list-view').classList.remove('loading');
			}
		}
	}

	function renderResults(d, more) {
		const ol = $('results');
		if (!more) { clear(ol); shown = 0; }
		for (const r of d.repos) ol.append(repoRow(r));
		shown += d.repos.length;
		nextCursor = d.next_cursor;
		$('more').hidden = !nextCursor;
		const s = $('summary');
		s.classList.remove('error');
		const filtered = listQuery(false).has('q') || ['hub', 'type', 'gated', 'status'].some((k) => list[k]);
		if (!d.total) {
			s.textContent = filtered ? 'No repository matches.' : 'Nothing is mirrored yet.';
			const asked = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/.test(list.q.trim())
				? (list.hub || 'hf') + ':' + (list.type === 'dataset' ? 'datasets/' : '') + list.q.trim() : '';
			ol.append(h('li', { class: 'empty-state' }, filtered
				? ['Try other words or ', h('button', { type: 'button', class: 'linkish', onclick: resetFilters, text: 'clear the filters' }), '. ',
					'Not mirrored? ', h('a', { id: 'ask-link', href: '#/requests' + (asked ? '?spec=' + encodeURIComponent(asked) : ''), text: 'Request it' }), '.']
				: ['Track one with ', h('code', { text: 'hubmirror add hf:org/name' }), ', then run ',
					h('code', { text: 'hubmirror sync' }), ', or ', h('a', { href: '#/requests', text: 'request one' }), '.']));
		} else {
			s.textContent = (shown < d.total ? 'Showing ' + num(shown) + ' of ' : '') +
				plural(d.total, 'repository', 'repositories') + (filtered ? ' match' + (d.total === 1 ? 'es' : '') : '');
		}
		ol.dataset.total = String(d.total);
		if (firstList) {
			firstList = false;
			performance.mark('hm:repos-rendered');
		}
		reveal();
	}

	function resetFilters() {
		Object.assign(list, { q: '', hub: '', type: '', gated: '', status: '', sort: '', order: '' });
		onControl(true);
		$('q').focus();
	}

	function repoRow(r) {
		const facts = [];
		if (r.pipeline_tag) facts.push(h('span', { class: 'chip chip-task', text: r.pipeline_tag }));
		if (r.library_name) facts.push(h('span', { class: 'chip', text: r.library_name }));
		if (r.license) facts.push(h('span', { class: 'chip', title: 'license', text: r.license }));
		if (typeof r.downloads === 'number') facts.push(h('span', { class: 'stat', title: num(r.downloads) + ' downloads upstream' }, '\u2193\u00a0', compact(r.downloads)));
		if (typeof r.likes === 'number') facts.push(h('span', { class: 'stat', title: num(r.likes) + ' likes upstream' }, '\u2665\u00a0', compact(r.likes)));
		return h('li', { class: 'repo', 'data-spec': r.spec },
			h('a', { class: 'repo-link', href: repoHref(r) },
				h('div', { class: 'repo-main' },
					h('div', { class: 'repo-title' }, hubBadge(r.hub), typeBadge(r.type),
						h('span', { class: 'repo-name' }, repoName(r.name)), gatedBadge(r)),
					h('div', { class: 'repo-sub' }, h('span', { class: 'mono spec', text: r.spec }), facts)),
				h('div', { class: 'num cell-size', title: r.commit ? num(r.size) + ' bytes' : 'not synced yet', text: r.commit ? bytes(r.size) : '\u2013' }),
				h('div', { class: 'num cell-files', text: r.commit ? num(r.files) : '\u2013' }),
				h('div', { class: 'cell-status' }, syncPill(r)),
				h('div', { class: 'cell-sync muted' }, timeEl(r.last_sync_at))));
	}

	function showList(params) {
		document.title = 'hubmirror';
		const next = { q: params.get('q') || '' };
		for (const k of FILTERS) next[k] = params.get(k) || '';
		Object.assign(list, next);
		syncControls();
		const wasHidden = $('list-view').hidden;
		$('repo-view').hidden = true;
		$('requests-view').hidden = true;
		$('list-view').hidden = false;
		if (listKey !== listQuery(false).toString()) search(false);
		else if (wasHidden) window.scrollTo(0, listScroll);
	}

	/* ---- a repository ---- */

	const page = { key: null, repo: null, dir: null, seq: 0, filesCursor: null };

	function parseRepoPath(path) {
		let seg;
		try { seg = path.split('/').map(decodeURIComponent); } catch (e) { return null; }
		if (seg.length < 3 || !own(HUBS, seg[0]) || (seg[1] !== 'model' && seg[1] !== 'dataset')) return null;
		const name = seg.slice(2).join('/');
		if (!/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/.test(name)) return null;
		return { hub: seg[0], type: seg[1], name };
	}

	function showRepo(path, params) {
		const id = parseRepoPath(path);
		const view = $('repo-view');
		if (!$('list-view').hidden) listScroll = window.scrollY;
		$('list-view').hidden = true;
		$('requests-view').hidden = true;
		view.hidden = false;
		if (!id) {
			page.key = null;
			renderMissing(view, 'This address does not name a repository.');
			return;
		}
		const key = id.hub + '/' + id.type + '/' + id.name;
		const dir = cleanDir(params.get('dir') || '');
		if (page.key === key && page.repo) {
			if (dir !== page.dir) loadFiles(dir, false);
			return;
		}
		page.key = key;
		page.repo = null;
		page.dir = null;
		loadRepo(id, dir);
	}

	function cleanDir(d) {
		return d.split('/').filter((s) => s && s !== '.' && s !== '..').join('/');
	}

	function renderMissing(view, msg) {
		document.title = 'Not found \u00b7 hubmirror';
		clear(view);
		add(view, h('nav', { class: 'crumbs' }, h('a', { href: '#/', text: '\u2190 All repositories' })),
			h('div', { class: 'card notfound' }, h('h1', { text: 'Not found' }), h('p', { text: msg })));
		reveal();
	}

	async function loadRepo(id, dir) {
		const seq = ++page.seq;
		const view = $('repo-view');
		clear(view);
		add(view, h('nav', { class: 'crumbs' }, h('a', { href: '#/', text: '\u2190 All repositories' })),
			h('p', { class: 'muted loading-line', text: 'Loading ' + id.name + '\u2026' }));
		window.scrollTo(0, 0);
		let repo;
		try {
			repo = await api(repoApi(id));
		} catch (e) {
			if (seq !== page.seq) return;
			renderMissing(view, e.status === 404 ? 'No repository ' + id.hub + ':' + (id.type === 'dataset' ? 'datasets/' : '') +
				id.name + ' on this mirror.' : 'Could not load it: ' + e.message);
			return;
		}
		if (seq !== page.seq) return;
		page.repo = repo;
		renderRepo(view, repo);
		reveal();
		loadFiles(dir, false);
		loadCard(seq);
		if (repo.local) loadCommits(seq);
	}

	/* A local repository's history, from the Hub API (api/models/ORG/NAME/commits/REV): the mirror
	 * keeps every commit pushed here. */
	async function loadCommits(seq) {
		const r = page.repo;
		if (!r || r.hub !== 'hf' || !r.commit) {
			if ($('commits')) clear($('commits')).append(h('p', { class: 'muted empty', text: 'No commit yet.' }));
			return;
		}
		let list;
		try {
			const res = await fetch((r.type === 'dataset' ? 'api/datasets/' : 'api/models/') + enc(r.name) + '/commits/' +
				encodeURIComponent(r.revision), { headers: { Accept: 'application/json' } });
			if (!res.ok) throw new Error('HTTP ' + res.status);
			list = await res.json();
		} catch (e) {
			if (seq === page.seq && $('commits'))
				clear($('commits')).append(h('p', { class: 'error', text: 'Could not list commits: ' + e.message }));
			return;
		}
		if (seq !== page.seq || !$('commits') || !Array.isArray(list)) return;
		const rows = list.slice(0, 20).map((c) => {
			const d = new Date(c.date);
			const who = Array.isArray(c.authors) && c.authors[0] && c.authors[0].user;
			return h('tr', { class: 'commit' },
				h('td', { class: 'nowrap' }, h('code', { title: String(c.id), text: shortSha(c.id) })),
				h('td', { class: 'commit-title', text: String(c.title || '') }),
				h('td', { text: who ? String(who) : '' }),
				h('td', { class: 'nowrap' }, isNaN(d) ? String(c.date || '') : h('time', { datetime: c.date, title: d.toLocaleString(), text: ago(d) })));
		});
		clear($('commits')).append(table('commits', [['Commit'], ['Title'], ['Author'], ['Date']], rows, 'No commit yet.'));
	}

	function renderRepo(view, r) {
		document.title = (r.upstream_name || r.name) + ' \u00b7 hubmirror';
		clear(view);
		const card = r.card_data && typeof r.card_data === 'object' ? r.card_data : null;
		const tags = Array.isArray(r.tags) ? r.tags : [];

		const meta = [
			['Spec', h('code', { text: r.spec })],
			['Hub', own(HUBS, r.hub) || r.hub],
			['Follows', h('code', { text: r.revision })],
			['Commit', r.commit ? h('code', { title: r.commit, text: shortSha(r.commit) }) : h('span', { class: 'muted', text: 'not synced yet' })],
			['Size', r.commit ? h('span', { title: num(r.size) + ' bytes', text: bytes(r.size) }) : h('span', { class: 'muted', text: '\u2013' })],
			['Files', num(r.files)],
			r.local ? ['Origin', h('span', { id: 'origin', text: 'Local: pushed to this mirror, never synced' })]
				: ['Last sync', timeEl(r.last_sync_at)],
			[r.local ? 'Created' : 'Tracked since', timeEl(r.added_at)],
		];
		if (r.last_modified) {
			const d = new Date(r.last_modified);
			meta.push(['Last modified', isNaN(d) ? r.last_modified : h('time', { datetime: r.last_modified, title: d.toLocaleString(), text: d.toLocaleDateString() })]);
		}
		if (r.pipeline_tag) meta.push(['Task', r.pipeline_tag]);
		if (r.library_name) meta.push(['Library', r.library_name]);
		if (r.license) meta.push(['License', r.license]);
		if (typeof r.downloads === 'number') meta.push(['Downloads', num(r.downloads)]);
		if (typeof r.likes === 'number') meta.push(['Likes', num(r.likes)]);
		if (r.gated) meta.push(['Gated', r.gated_mode || 'yes']);
		if (Array.isArray(r.include) && r.include.length) meta.push(['Include', h('code', { text: r.include.join(' ') })]);
		if (Array.isArray(r.exclude) && r.exclude.length) meta.push(['Exclude', h('code', { text: r.exclude.join(' ') })]);
		if (r.swarm) {
			meta.push(['Swarm', h('span', { id: 'swarm', text: num(r.swarm.seeders) + ' seeding, ' + num(r.swarm.leechers) + ' downloading' })]);
			meta.push(['Torrent', h('a', { href: r.swarm.torrent, title: 'v1 ' + r.swarm.btih + '\nv2 ' + r.swarm.btmh, text: shortSha(r.swarm.btih) })]);
		}

		const refs = (r.refs || []).map((f) => h('tr', null,
			h('td', null, h('code', { text: f.name })), h('td', { text: f.kind }),
			h('td', null, h('code', { title: f.commit, text: shortSha(f.commit) }))));
		const snaps = (r.snapshots || []).map((s) => h('tr', { class: s.commit === r.commit ? 'current' : null },
			h('td', { class: 'nowrap' }, h('code', { title: s.commit, text: shortSha(s.commit) }),
				s.commit === r.commit ? h('span', { class: 'dot dot-ok', title: 'the current snapshot', 'aria-label': 'current' }) : null),
			h('td', { class: 'nowrap' }, timeEl(s.synced_at)), h('td', { class: 'num', text: num(s.files) }),
			h('td', { class: 'num', title: num(s.size) + ' bytes', text: bytes(s.size) })));

		add(view,
			h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/', text: '\u2190 All repositories' })),
			h('header', { class: 'repo-head' },
				h('div', { class: 'repo-badges' }, hubBadge(r.hub), typeBadge(r.type), gatedBadge(r), syncPill(r)),
				h('h1', { class: 'repo-h1' }, repoName(r.upstream_name || r.name)),
				r.upstream_name ? h('p', { class: 'alias muted', id: 'alias',
					text: 'Renamed upstream; added here as ' + r.name + ', which works too.' }) : null,
				tags.length ? h('div', { class: 'tags' }, tags.map((t) => h('span', { class: 'chip', text: t }))) : null),
			r.sync_error ? h('div', { class: 'alert', role: 'alert' }, h('strong', { text: r.sync_status === 'ok' ? 'Last sync: ' : 'Last sync failed: ' }), r.sync_error) : null,
			/* only what this mirror can serve: a repository it never synced has nothing to mount yet */
			r.commit ? h('section', { class: 'card use', 'aria-labelledby': 'use-h' },
				h('h2', { id: 'use-h', text: 'Use it from this mirror' }),
				r.mount_command ? copyLine('Mount', r.mount_command, 'mount-cmd') : null,
				r.endpoint_env ? copyLine('Endpoint', r.endpoint_env, 'endpoint-env') : null,
				cloneCommand(r) ? copyLine('Clone', cloneCommand(r), 'clone-cmd') : null)
				: h('p', { class: 'card muted', id: 'not-synced', text: 'Not synced yet: nothing to use from this mirror until a sync brings it in.' }),
			h('div', { class: 'cols' }, h('div', { class: 'stack' },
				h('section', { class: 'card', 'aria-labelledby': 'files-h' },
					h('div', { class: 'card-head' }, h('h2', { id: 'files-h', text: 'Files' }),
						h('span', { class: 'muted', id: 'files-count' })),
					h('nav', { class: 'path', id: 'files-path', 'aria-label': 'Folder' }),
					h('div', { id: 'files' }, h('p', { class: 'muted', text: 'Loading files\u2026' })),
					h('div', { class: 'more' }, h('button', { type: 'button', class: 'btn', id: 'files-more', hidden: true,
						text: 'More files', onclick: () => loadFiles(page.dir, true) }))),
				h('section', { class: 'card readme-card', id: 'readme-card', hidden: true, 'aria-labelledby': 'readme-h' },
					h('h2', { id: 'readme-h', text: r.type === 'dataset' ? 'Dataset card' : 'Model card' }),
					h('div', { class: 'markdown', id: 'readme' })),
				r.local ? h('section', { class: 'card runs-card', 'aria-labelledby': 'commits-h' },
					h('h2', { id: 'commits-h', text: 'Commits' }),
					h('p', { class: 'muted small', text: 'The newest commits of ' + r.revision + ', as pushed here.' }),
					h('div', { id: 'commits' }, h('p', { class: 'muted', text: 'Loading commits\u2026' })))
					: h('section', { class: 'card runs-card', 'aria-labelledby': 'runs-h' },
						h('h2', { id: 'runs-h', text: 'Sync history' }),
						h('p', { class: 'muted small', text: 'What each recent sync run did with this repository.' }),
						h('div', { id: 'runs' }, historyTable(r.history || [])))),
				h('aside', { class: 'side' },
					h('section', { class: 'card', 'aria-labelledby': 'meta-h' },
						h('h2', { id: 'meta-h', text: 'Details' }),
						h('dl', { class: 'meta' }, meta.map(([k, v]) => h('div', null, h('dt', { text: k }), h('dd', null, v))))),
					h('section', { class: 'card', 'aria-labelledby': 'refs-h' },
						h('h2', { id: 'refs-h', text: 'Refs' }),
						table('refs', [['Name'], ['Kind'], ['Commit']], refs, 'No refs yet.')),
					h('section', { class: 'card', 'aria-labelledby': 'snaps-h' },
						h('h2', { id: 'snaps-h', text: 'Snapshots' }),
						table('snaps', [['Commit'], [r.local ? 'Made' : 'Synced'], ['Files', 'num'], ['Size', 'num']], snaps, 'No snapshot yet.')))),
			card ? h('details', { class: 'card carddata' },
				h('summary', null, h('h2', { text: 'Card metadata' })),
				h('pre', { class: 'json', text: JSON.stringify(card, null, 2) })) : null);
	}

	// The card (README.md) as the mirror rendered it: cmark-gfm in its safe mode (raw HTML dropped,
	// script links emptied), images that are not the repo's own turned into links; nothing here
	// loads from outside the mirror. A repo without one keeps the section hidden.
	async function loadCard(seq) {
		const r = page.repo;
		if (!r || r.card_shown === false) return; /* never synced, or gated: nothing to ask for */
		let d;
		try {
			d = await api(repoApi(r) + '/card');
		} catch (e) {
			return;
		}
		if (seq !== page.seq || !$('readme') || typeof d.html !== 'string') return;
		$('readme').innerHTML = d.html;
		$('readme-card').hidden = false;
	}

	async function loadFiles(dir, more) {
		const r = page.repo;
		if (!r) return;
		const seq = page.seq;
		const p = new URLSearchParams();
		if (dir) p.set('dir', dir);
		if (more && page.filesCursor) p.set('cursor', page.filesCursor);
		const box = $('files');
		box.setAttribute('aria-busy', 'true');
		let d;
		try {
			d = await api(repoApi(r) + '/files' + (p.toString() ? '?' + p.toString() : ''));
		} catch (e) {
			if (seq !== page.seq) return;
			clear(box).append(h('p', { class: 'error', text: 'Could not list files: ' + e.message }));
			return;
		} finally {
			box.setAttribute('aria-busy', 'false');
		}
		if (seq !== page.seq || !$('files')) return;
		page.dir = dir;
		page.filesCursor = d.next_cursor;
		$('files-more').hidden = !d.next_cursor;
		renderPath(r, dir);
		renderFiles(r, dir, d.entries || [], more);
	}

	function renderPath(r, dir) {
		const nav = clear($('files-path'));
		const parts = dir ? dir.split('/') : [];
		const root = r.name.slice(r.name.indexOf('/') + 1);
		const crumb = (label, target, current) => (current
			? h('span', { class: 'path-cur', 'aria-current': 'page', text: label })
			: h('a', { href: repoHref(r, target), text: label }));
		add(nav, crumb(root, '', !parts.length));
		parts.forEach((p, i) => add(nav, h('span', { class: 'sep', 'aria-hidden': 'true', text: '/' }),
			crumb(p, parts.slice(0, i + 1).join('/'), i === parts.length - 1)));
	}

	function renderFiles(r, dir, entries, more) {
		const box = $('files');
		let tbody = box.querySelector('tbody');
		if (!more || !tbody) {
			clear(box);
			const rows = [];
			if (dir) {
				const up = dir.includes('/') ? dir.slice(0, dir.lastIndexOf('/')) : '';
				rows.push(h('tr', { class: 'up' }, h('td', { colspan: '3' },
					h('a', { href: repoHref(r, up), class: 'entry', 'aria-label': 'Parent folder' },
						h('span', { class: 'ico ico-up', 'aria-hidden': 'true' }), '..'))));
			}
			if (!entries.length && !dir) {
				box.append(h('p', { class: 'muted empty', text: r.commit ? 'This snapshot has no files.' : 'Nothing synced yet.' }));
				$('files-count').textContent = '';
				return;
			}
			box.append(h('div', { class: 'table-wrap' }, h('table', { class: 'tbl tree' },
				h('thead', null, h('tr', null, h('th', { scope: 'col', text: 'Name' }), h('th', { scope: 'col', class: 'num', text: 'Size' }),
					h('th', { scope: 'col', class: 'num' }, h('span', { class: 'offscreen', text: 'Contents or checksum' })))),
				tbody = h('tbody', null, rows))));
		}
		const cut = dir ? dir.length + 1 : 0;
		for (const e of entries) {
			const name = e.path.slice(cut);
			if (e.type === 'directory') {
				tbody.append(h('tr', { class: 'dir', 'data-path': e.path },
					h('td', null, h('a', { class: 'entry', href: repoHref(r, e.path) },
						h('span', { class: 'ico ico-dir', 'aria-hidden': 'true' }), name + '/')),
					h('td', { class: 'num', title: num(e.size) + ' bytes', text: bytes(e.size) }),
					h('td', { class: 'num muted', text: plural(e.files, 'file', 'files') })));
			} else {
				const href = fileHref(r, e.path);
				tbody.append(h('tr', { class: 'file', 'data-path': e.path },
					h('td', null, h('span', { class: 'entry' }, h('span', { class: 'ico ico-file', 'aria-hidden': 'true' }),
						href ? h('a', { href, download: name, title: 'Download ' + e.path, text: name }) : name,
						e.lfs ? h('span', { class: 'chip chip-lfs', title: 'stored with Git LFS upstream', text: 'LFS' }) : null)),
					h('td', { class: 'num', title: num(e.size) + ' bytes', text: bytes(e.size) }),
					h('td', { class: 'num muted mono', title: e.sha256 ? 'sha256 ' + e.sha256 : null, text: e.sha256 ? e.sha256.slice(0, 8) : '' })));
			}
		}
		const n = tbody.querySelectorAll('tr.dir, tr.file').length;
		$('files-count').textContent = plural(n, 'entry', 'entries') + (page.filesCursor ? '+' : '');
	}

	function historyTable(hist) {
		const rows = hist.map((x) => h('tr', null,
			h('td', { class: 'nowrap' }, timeEl(x.started_at)),
			h('td', null, h('span', { class: 'pill pill-' + (own(OUTCOMES, x.outcome) || 'idle'), text: x.outcome }),
				x.error ? h('div', { class: 'muted small', text: x.error }) : null),
			h('td', { class: 'num', text: duration(x.started_at, x.ended_at) }),
			h('td', null, x.commit ? h('code', { title: x.commit, text: shortSha(x.commit) }) : null),
			h('td', { class: 'num', text: num(x.files_fetched) }),
			h('td', { class: 'num', text: bytes(x.bytes_fetched) })));
		return table('runs', [['Started'], ['Outcome'], ['Took', 'num'], ['Commit'], ['Files fetched', 'num'],
			['Fetched', 'num']], rows, 'No sync has run for it yet.');
	}

	/* ---- requests: ask for a repository the mirror lacks ---- */

	async function loadRequests() {
		const box = $('req-list');
		let d;
		try {
			d = await api('requests');
		} catch (e) {
			clear(box).append(h('p', { class: 'error', text: 'Could not load the requests: ' + e.message }));
			return;
		}
		const rows = (d.requests || []).map((q) => {
			const st = own(REQUEST_STATES, q.state) || [q.state, 'idle'];
			return h('tr', { 'data-spec': q.spec, 'data-state': q.state },
				h('td', { class: 'mono', text: q.spec }),
				h('td', null, h('span', { class: 'pill pill-' + st[1], text: st[0] })),
				h('td', { class: 'num', text: num(q.votes) }),
				h('td', { class: 'nowrap' }, timeEl(q.requested_at)),
				h('td', { text: q.reason || '' }),
				h('td', { text: q.note || '' }));
		});
		clear(box).append(table('requests', [['Repository'], ['State'], ['Asks', 'num'], ['Asked'], ['Reason'],
			['Operator\u2019s note']], rows, 'Nobody has asked for a repository yet.'));
		reveal();
	}

	async function submitRequest(e) {
		e.preventDefault();
		const spec = $('req-spec').value.trim(), reason = $('req-reason').value.trim();
		const out = $('req-result');
		out.classList.remove('error');
		if (!SPEC_RE.test(spec)) {
			out.classList.add('error');
			out.textContent = 'Name it like hf:org/name, hf:datasets/org/name or ms:org/name.';
			return;
		}
		$('req-send').disabled = true;
		try {
			const res = await fetch(API + 'requests', {
				method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
				body: JSON.stringify(reason ? { spec, reason } : { spec }),
			});
			let body = null;
			try { body = await res.json(); } catch (x) { /* not JSON */ }
			if (res.status === 409) {
				out.textContent = spec + ' is mirrored already.';
			} else if (res.status === 401 || res.status === 403) {
				out.classList.add('error');
				out.textContent = 'This mirror takes requests only with a token' + (res.status === 403 ? ' that may ask' : '') +
					': ask its operator for one, then run HUBMIRROR_TOKEN=<token> hubmirror request --mirror ' +
					location.origin + ' ' + spec + '.';
			} else if (!res.ok) {
				out.classList.add('error');
				out.textContent = 'Not sent: ' + ((body && body.error) || ('HTTP ' + res.status));
			} else {
				out.textContent = res.status === 201 ? 'Asked. The operator will see it.'
					: 'Already asked for: your ask is counted (' + num(body.votes) + ' in all).';
				$('req-reason').value = '';
				loadRequests();
			}
		} catch (x) {
			out.classList.add('error');
			out.textContent = 'Not sent: ' + x.message;
		} finally {
			$('req-send').disabled = false;
		}
	}

	function showRequests(params) {
		document.title = 'Requests \u00b7 hubmirror';
		if (!$('list-view').hidden) listScroll = window.scrollY;
		$('list-view').hidden = true;
		$('repo-view').hidden = true;
		$('requests-view').hidden = false;
		if (params.get('spec')) $('req-spec').value = params.get('spec');
		$('req-result').textContent = '';
		loadRequests();
	}

	/* ---- routing ---- */

	function route() {
		const hash = location.hash.replace(/^#/, '') || '/';
		const qi = hash.indexOf('?');
		const path = qi < 0 ? hash : hash.slice(0, qi);
		const params = new URLSearchParams(qi < 0 ? '' : hash.slice(qi + 1));
		if (path.startsWith('/repo/')) showRepo(path.slice(6), params);
		else if (path === '/requests') showRequests(params);
		else showList(params);
	}

	function init() {
		$('q').addEventListener('input', () => { list.q = $('q').value; onControl(false); });
		$('q').addEventListener('keydown', (e) => {
			if (e.key === 'Escape' && $('q').value) { e.preventDefault(); list.q = ''; onControl(true); }
			if (e.key === 'Enter') { list.q = $('q').value; onControl(true); }
		});
		for (const k of ['hub', 'type', 'gated', 'status', 'sort']) {
			$('f-' + k).addEventListener('change', () => {
				list[k] = $('f-' + k).value;
				if (k === 'sort') list.order = '';
				onControl(true);
			});
		}
		$('f-order').addEventListener('click', () => {
			const flipped = effectiveOrder() === 'desc' ? 'asc' : 'desc';
			list.order = flipped === (DESC_SORTS.has(list.sort) ? 'desc' : 'asc') ? '' : flipped;
			onControl(true);
		});
		$('more').addEventListener('click', () => search(true));
		$('req-form').addEventListener('submit', submitRequest);
		document.addEventListener('keydown', (e) => {
			const t = e.target;
			if (e.key === '/' && !e.ctrlKey && !e.metaKey && !e.altKey &&
			    !(t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)))) {
				e.preventDefault();
				if (location.hash.startsWith('#/repo/')) location.hash = '#/';
				$('q').focus();
				$('q').select();
			}
		});
		window.addEventListener('hashchange', route);
		route();
		loadTotals();
		setInterval(() => { if (!document.hidden) loadTotals(); }, 60000);
	}

	if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
	else init();
})();
