/*
 * routes-p2p.c - what the swarm asks of the mirror: the torrent of a repo's snapshot, the tracker
 * and the web seed.
 *
 *   GET /api/p2p/torrent/{hub}/{type}/{org}/{name}[?rev=REV][&webseed=0]   the .torrent, with this
 *        mirror as tracker (announce) and web seed (url-list, left out with webseed=0);
 *        X-Hubmirror-{Commit,Btih,Btmh} headers; with meta=1 those as JSON instead, with the ref name
 *   GET /announce?info_hash=...                                BEP 3 tracker (compact, BEP 23/7),
 *        only for torrents of this mirror (by v1 hash or the truncated v2 hash)
 *   GET /p2p/seed/{btih}/{torrent name}/{path}                 BEP 19 web seed: the client appends
 *        "<name>/<path>" to the url-list entry "/p2p/seed/{btih}/"; served from the store, Range ok
 *
 * The web seed and the torrent follow the same access rules as the hub routes: a gated repo stays
 * closed unless opened. BitTorrent clients carry no token, so a repo that needs one gets, in the
 * torrent a token holder asks for, URLs with a capability (access.h): /announce?hmcap=CAP and
 *   GET /p2p/kseed/{CAP}/{btih}/{torrent name}/{path}
 * and its plain web seed and capability-less announces are refused.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "p2p/p2p.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "access.h"
#include "ondemand.h"
#include "routes-int.h"
#include "seeder.h"
#include "mirror/torrents.h"
#include "p2p/tracker.h"

static int64_t mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void plain(struct httpd_req *req, int status, const char *msg)
{
	httpd_respond(req, status, "text/plain; charset=utf-8", msg, strlen(msg));
}

/* ---- tracker -------------------------------------------------------------------------------------- */

/* The peer id the tracker knows the mirror's own seed by (libtorrent's own id differs: this names
 * its place in the swarms, which agents and held swarms tell apart by it). */
#define SELF_PEER_ID "-HM0001-hubmirrorsee"

/* The swarm front's own part of the routes (rt->swarm). */
#define FILL_SLOTS 4096
struct mirror__swarm {
	struct p2p_tracker *tracker;  /* the swarm's tracker */
	int64_t swept;                /* when its peers were last expired (monotonic seconds) */
	/* Agents' fill requests in a swarm ("X-Hubmirror-Fill: swarm"): the ranges served lately, by a
	 * hash of torrent, path and range, so the next agent asking is told to take those bytes from a
	 * peer (409) instead of having the mirror send them again */
	struct fill_slot {
		uint64_t key;
		int64_t at_ms;
	} fill_slots[FILL_SLOTS];
	uint64_t fill_deduped;        /* fill requests answered 409 */
	char **peer_mirrors;          /* serve --peer-mirror: base URLs of the deployment's other mirrors */
	size_t npeer_mirrors;
};

struct mirror__swarm *mirror__swarm_new(void)
{
	struct mirror__swarm *sw = xcalloc(1, sizeof(*sw));

	sw->tracker = p2p_tracker_new(NULL);
	return sw;
}

void mirror__swarm_free(struct mirror__swarm **sw)
{
	if (!sw || !*sw)
		return;
	p2p_tracker_free(&(*sw)->tracker);
	for (size_t i = 0; i < (*sw)->npeer_mirrors; i++)
		free((*sw)->peer_mirrors[i]);
	free((*sw)->peer_mirrors);
	free(*sw);
	*sw = NULL;
}

void mirror__swarm_set_peers(struct mirror__swarm *sw, const char *urls)
{
	char **list = str_split(urls, ", ", NULL);

	for (char **p = list; *p; p++) {
		char *t = *p;
		size_t n = strlen(t);
		while (n && t[n - 1] == '/')
			t[--n] = '\0';
		if (!n)
			continue;
		sw->peer_mirrors = xreallocarray(sw->peer_mirrors, sw->npeer_mirrors + 1, sizeof(*sw->peer_mirrors));
		sw->peer_mirrors[sw->npeer_mirrors++] = xstrdup(t);
	}
	str_split_free(list);
}

void mirror__swarm_stats(const struct mirror_routes *rt, struct p2p_tracker_stats *ts, uint64_t *fill_deduped)
{
	p2p_tracker_stats(rt->swarm->tracker, ts);
	*fill_deduped = rt->swarm->fill_deduped;
}

/* The mirror seeds this torrent: put its seed in the swarm the peer announced (v1 or truncated v2
 * hash), at the address the peer reached us on, so the answer can name it. Refreshed by every
 * announce, so it lives as long as the swarm does. */
static void announce_self(struct mirror_routes *rt, struct httpd_req *req, const struct p2p_tracker_announce *peer,
			  int64_t now)
{
	struct p2p_tracker_announce me = *peer;
	struct sockaddr_storage ss = { 0 };
	const char *local = httpd_local(req);
	struct buf ignored;

	if (inet_pton(AF_INET, local, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, local, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	else
		return;
	memcpy(me.peer_id, SELF_PEER_ID, 20);
	me.port = (uint16_t)mirror_seeder_port(rt->seeder);
	me.left = 0;
	me.uploaded = me.downloaded = 0; /* the seed's own bytes are counted by the seeder, not here */
	me.event = P2P_TRACKER_EVENT_NONE;
	me.numwant = 0;
	buf_init(&ignored);
	p2p_tracker_announce(rt->swarm->tracker, &me, (const struct sockaddr *)&ss, now, &ignored);
	buf_release(&ignored);
}

/* The announce's end: the peer recorded (and the mirror's seed beside it, when it seeds the torrent),
 * the swarm's answer sent. */
static void announce_end(struct mirror_routes *rt, struct httpd_req *req, const struct p2p_tracker_announce *a,
			 const struct sockaddr_storage *ss, const char *btih)
{
	int64_t now = mono_seconds();
	struct buf out;

	buf_init(&out);
	if (now - rt->swarm->swept >= 30) {
		p2p_tracker_expire(rt->swarm->tracker, now);
		rt->swarm->swept = now;
	}
	if (rt->seeder && mirror_seeder_has(rt->seeder, btih))
		announce_self(rt, req, a, now);
	/* on a refusal (a limit) the body says why: sent all the same */
	p2p_tracker_announce(rt->swarm->tracker, a, (const struct sockaddr *)ss, now, &out);
	httpd_add_header(req, "Cache-Control", "no-store");
	httpd_respond(req, 200, "text/plain", out.data, out.len);
	buf_release(&out);
}

/* An announce for a torrent the seed does not have (no head's: an older commit an agent holds): its
 * folder laid out on a worker, then the seed takes it, and once libtorrent takes peers for it (a
 * torrent just added refuses them for a moment: the peer would wait a minute to try again) the
 * announce is answered with the seed in the swarm. */
#define CLAIM_WAIT_MS 20
#define CLAIM_WAITS 100 /* then answered all the same */

struct claim {
	struct mirror_routes *rt;
	struct catalog_torrent t;
	char *root;
	struct p2p_tracker_announce a;
	struct sockaddr_storage ss;
	int laid_out;
	int waits;
};

static void claim_work(void *ud)
{
	struct claim *c = ud;
	struct catalog *cat;

	if (c->waits) { /* a step of the wait for libtorrent, off the loop */
		usleep(CLAIM_WAIT_MS * 1000);
		return;
	}
	cat = mirror__pool_take(c->rt);
	c->laid_out = cat ? mirror_seeder_lay_out(c->root, c->rt->data->store, cat, &c->t) : HM_ERR_SQLITE;
	mirror__pool_give(c->rt, cat);
}

static void claim_done(void *ud, struct httpd_req *req)
{
	struct claim *c = ud;
	struct mirror_routes *rt = c->rt;

	if (rt->closing || !rt->seeder) /* the seed is gone */
		goto out;
	if (!c->waits)
		mirror_seeder_claimed(rt->seeder, &c->t, c->laid_out);
	if (!req)
		goto out;
	if (!mirror_seeder_ready(rt->seeder, c->t.btih) && mirror_seeder_has(rt->seeder, c->t.btih) &&
	    c->waits++ < CLAIM_WAITS) {
		httpd_defer(req, claim_work, claim_done, c);
		return;
	}
	announce_end(rt, req, &c->a, &c->ss, c->t.btih);
out:
	free(c->root);
	free(c);
}

static void announce(struct mirror_routes *rt, struct httpd_req *req)
{
	const char *q = httpd_query(req), *why = NULL;
	struct p2p_tracker_announce a;
	struct catalog_torrent t;
	struct sockaddr_storage ss = { 0 };
	const char *peer = httpd_peer(req);
	char hex[41], *root;
	struct buf out;
	static const char unknown[] = "unknown torrent: this tracker serves the torrents of its mirror only";

	buf_init(&out);
	if (p2p_tracker_parse_announce(q ? q : "", q ? strlen(q) : 0, &a, &why)) {
		p2p_tracker_failure(&out, why ? why : "bad announce");
		goto send;
	}
	hex_encode(a.info_hash, 20, hex);
	if (catalog_torrent_find(rt->data->catalog, hex, &t)) {
		p2p_tracker_failure(&out, unknown);
		goto send;
	}
	{
		/* a closed repo (gated or private upstream, not opened) has no swarm here; a guarded repo's
		 * swarm is only for holders of the key its .torrent carries */
		struct catalog_repo repo = { 0 };
		bool ok = false, open = false, private = false;
		if (!catalog_snapshot_repo(rt->data->catalog, t.snapshot_id, &repo)) {
			char *cap;
			private = mirror__private_local(&repo);
			open = mirror_access_content_open(rt->access, &repo);
			cap = !open || mirror__anyone_reads(rt, &repo) ? NULL : httpd_query_param(req, "hmcap");
			ok = open && (mirror__anyone_reads(rt, &repo) ||
				      (rt->have_p2p_key &&
				       mirror_access_capability_allows(rt->access, rt->p2p_key, cap, t.btih, &repo)));
			free(cap);
			catalog_repo_release(&repo);
		}
		if (!ok) {
			/* a private repo of the mirror's own has no swarm for who may not see it: as an
			 * unknown torrent */
			p2p_tracker_failure(&out, private ? unknown
						  : open  ? "this torrent needs the key its .torrent carries"
							  : "this repository is closed on this mirror");
			goto send;
		}
	}
	if (inet_pton(AF_INET, peer, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
	} else if (inet_pton(AF_INET6, peer, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
	} else {
		p2p_tracker_failure(&out, "cannot tell your address");
		goto send;
	}
	/* a peer joins the swarm of a torrent the seed does not have (no head's): the seed takes it first,
	 * its folder laid out off the loop (a snapshot of 300,000 files), then the answer names the seed */
	if (a.event != P2P_TRACKER_EVENT_STOPPED && (root = mirror_seeder_claim(rt->seeder, &t))) {
		struct claim *c = xcalloc(1, sizeof(*c));
		c->rt = rt;
		c->t = t;
		c->root = root;
		c->a = a;
		c->ss = ss;
		c->laid_out = HM_ERR_SQLITE; /* until the worker says (the job never ran: not laid out) */
		buf_release(&out);
		httpd_defer(req, claim_work, claim_done, c);
		return;
	}
	buf_release(&out);
	announce_end(rt, req, &a, &ss, t.btih);
	return;
send:
	httpd_add_header(req, "Cache-Control", "no-store");
	httpd_respond(req, 200, "text/plain", out.data, out.len);
	buf_release(&out);
}

bool mirror__swarm_held(void *ud, const char *btih, const char *btmh)
{
	struct mirror_routes *rt = ud;
	struct p2p_tracker *tr = rt->swarm->tracker;
	unsigned char v1[20], v2[20];
	int64_t now = mono_seconds();

	/* a hybrid torrent's peers announce either hash (libtorrent: both) */
	return (!hex_decode(btih, v1, 20) &&
		p2p_tracker_swarm_others(tr, v1, (const unsigned char *)SELF_PEER_ID, now) > 0) ||
	       (strlen(btmh) >= 40 && !hex_decode(btmh, v2, 20) &&
		p2p_tracker_swarm_others(tr, v2, (const unsigned char *)SELF_PEER_ID, now) > 0);
}

/* ---- the torrent of a repo ------------------------------------------------------------------------ */

/* Split "a/b/c/d" (raw, percent-encoded) into exactly n decoded segments. Returns 0 or -1. */
static int split_segments(const char *raw, char **seg, size_t n)
{
	size_t i = 0;
	const char *p = raw;

	for (; i < n; i++) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if ((i + 1 < n) != (e != NULL) || !len)
			break;
		seg[i] = httpd_unescape(p, len, false);
		if (!seg[i] || !*seg[i] || strchr(seg[i], '/'))
			break;
		p = e ? e + 1 : p + len;
	}
	if (i == n)
		return 0;
	for (size_t k = 0; k <= i && k < n; k++)
		FREE_AND_NULL(&seg[k]);
	return -1;
}

static int meta_file(void *ud, const struct catalog_entry *e)
{
	json_array_append_new(ud, json_pack("{s:s, s:I, s:s}", "path", e->path, "size", (json_int_t)e->size,
					    "sha256", e->sha256));
	return 0;
}

/* A torrent's file list (meta=1: every file of the snapshot) and its .torrent (up to 64 MiB read
 * from disk), so both are made on a worker. */
struct torrent_job {
	struct mirror__job j;
	struct catalog_torrent t;
	char commit[41];
	char *revision;                 /* meta: the ref name */
	int64_t synced_at;              /* meta: when the snapshot was synced (unix time) */
	char **announce, **seeds;       /* the .torrent's trackers and web seeds: this mirror's first, then
					 * its peer mirrors' (serve --peer-mirror) */
	size_t nannounce, nseeds;
	bool meta;
};

static void torrent_build(struct mirror__job *job, struct catalog *cat)
{
	struct torrent_job *tj = (struct torrent_job *)job;
	int r;

	if (tj->meta) {
		/* what a mount needs besides the bytes: the commit and the ref name (for the HF cache), and
		 * each file's sha256 (an instance that has a content from another snapshot places it first) */
		json_t *files = json_array();
		if (catalog_snapshot_walk(cat, tj->t.snapshot_id, NULL, NULL, 0, meta_file, files)) {
			json_decref(files);
			job->status = 500;
			job->body = json_pack("{s:s}", "error", "catalog error");
			return;
		}
		job->status = 200;
		job->body = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:o}", "commit", tj->commit, "revision",
				      tj->revision, "btih", tj->t.btih, "btmh", tj->t.btmh, "name", tj->t.name,
				      "piece_size", (json_int_t)tj->t.piece_size, "synced_at",
				      (json_int_t)tj->synced_at, "files", files);
		return;
	}
	r = mirror_torrent_load(job->rt->data, tj->t.btih, (const char *const *)tj->announce, tj->nannounce,
				(const char *const *)tj->seeds, tj->nseeds, &job->text, &job->len);
	if (r) {
		job->status = 503;
		job->body = json_pack("{s:s, s:s}", "error", "torrent file unavailable", "detail", err_str(r));
		return;
	}
	mirror__job_header(job, "X-Hubmirror-Commit", "%s", tj->commit);
	mirror__job_header(job, "X-Hubmirror-Btih", "%s", tj->t.btih);
	mirror__job_header(job, "X-Hubmirror-Btmh", "%s", tj->t.btmh);
	mirror__job_header(job, "Content-Disposition", "attachment; filename=\"%s-%.12s.torrent\"", tj->t.name,
			   tj->commit);
	job->status = 200;
	job->ctype = "application/x-bittorrent";
}

static void torrent_release(struct mirror__job *job)
{
	struct torrent_job *tj = (struct torrent_job *)job;

	free(tj->revision);
	for (size_t i = 0; i < tj->nannounce; i++)
		free(tj->announce[i]);
	for (size_t i = 0; i < tj->nseeds; i++)
		free(tj->seeds[i]);
	free(tj->announce);
	free(tj->seeds);
	free(tj);
}

/* The .torrent's URLs: this mirror as tracker and (unless ?webseed=0) web seed, with a capability
 * when the repo is guarded. Returns 0, or -1 having answered 503. */
static int torrent_urls(struct mirror_routes *rt, struct httpd_req *req, const struct catalog_repo *repo,
			struct torrent_job *tj, const char *cap_in)
{
	char *base = mirror__self_base(req), *ws = httpd_query_param(req, "webseed"), *cap = NULL;
	/* ?webseed=0: peers only (the mirrors are then trackers, not sources) */
	bool seeds = !ws || strcmp(ws, "0");
	size_t n = 1 + rt->swarm->npeer_mirrors;
	int r = 0;

	if (!mirror__anyone_reads(rt, repo)) {
		/* guarded: BitTorrent clients send no token, so the URLs carry a capability for this one
		 * (the mirrors of one deployment share the key: docs/deployment.md) */
		char tb[512];
		cap = cap_in ? xstrdup(cap_in)
		      : rt->have_p2p_key
			      ? mirror_access_capability(rt->access, rt->p2p_key,
							 mirror__request_token(req, tb, sizeof(tb)), tj->t.btih)
			      : NULL;
		if (!cap) {
			mirror__respond_json(req, 503,
					     json_pack("{s:s}", "error", "no key to make this torrent's URLs with"));
			r = -1;
			goto out;
		}
	}
	tj->announce = xcalloc(n, sizeof(*tj->announce));
	tj->seeds = xcalloc(n, sizeof(*tj->seeds));
	for (size_t i = 0; i < n; i++) {
		const char *b = i ? rt->swarm->peer_mirrors[i - 1] : base;
		tj->announce[tj->nannounce++] =
			cap ? xasprintf("%s/announce?hmcap=%s", b, cap) : xasprintf("%s/announce", b);
		if (seeds)
			tj->seeds[tj->nseeds++] = cap ? xasprintf("%s/p2p/kseed/%s/%s/", b, cap, tj->t.btih)
						      : xasprintf("%s/p2p/seed/%s/", b, tj->t.btih);
	}
out:
	free(cap);
	free(base);
	free(ws);
	return r;
}

/* Why a repo the mirror tracks has no snapshot of rev (NULL: the one it follows) to give: not synced
 * yet, or its sync failed and how (the operator's `ls` says the same; no secret is in a sync's
 * error). */
static char *not_synced_why(const struct catalog_repo *repo, const char *rev)
{
	if (rev && repo->head_commit)
		return xasprintf("revision %s not synced on this mirror (it follows %s)", rev, repo->follow_rev);
	if (repo->sync_error && strcmp(repo->sync_status, "ok"))
		return xasprintf("tracked on this mirror, but its last sync failed (%s): %s", repo->sync_status,
				 repo->sync_error);
	return xstrdup("tracked on this mirror, not synced yet: its next sync brings it");
}

/* GET /api/p2p/torrent/{hub}/{type}/{org}/{name}: a snapshot's torrent for an agent. Over 100 lines
 * because it is one request's refusals in the order they must be asked (the name, the token or a
 * capability, visibility, on demand, a snapshot not synced and why, gating, completeness), each its own
 * answer; split, the order would hide across functions. */
static void torrent(struct mirror_routes *rt, struct httpd_req *req, const char *rest)
{
	char *seg[4] = {0}, *name = NULL, *rev = httpd_query_param(req, "rev"), *meta = httpd_query_param(req, "meta");
	/* a capability for this snapshot's torrent instead of a token: one an S3 answer gave an agent */
	char *cap = httpd_query_param(req, "cap");
	struct catalog_repo repo = { 0 };
	struct catalog_snapshot snap;
	struct torrent_job *tj = xcalloc(1, sizeof(*tj));
	static const char cap_refused[] = "the capability opens no snapshot here";
	bool found = false, have_repo = false, hidden;
	int r, c;

	if (split_segments(rest, seg, 4) || (strcmp(seg[0], "hf") && strcmp(seg[0], "ms")) ||
	    (strcmp(seg[1], "model") && strcmp(seg[1], "dataset"))) {
		mirror__respond_json(
			req, 404,
			json_pack("{s:s}", "error",
				  "no such repo: use /api/p2p/torrent/{hf|ms}/{model|dataset}/{org}/{name}"));
		goto out;
	}
	name = xasprintf("%s/%s", seg[2], seg[3]);
	if (hub_check_name(strcmp(seg[0], "ms") ? HUB_HF : HUB_MS, name)) {
		/* checked as the hubs' own routes check a name: nothing else reaches the catalog */
		mirror__respond_json(req, 404, json_pack("{s:s}", "error", "repo not on this mirror"));
		goto out;
	}
	if (!cap && !mirror__access_check(rt, req, seg[0], seg[1], name, NULL, NULL))
		goto out;
	r = catalog_resolve(rt->data->catalog, seg[0], seg[1], name, rev, &repo, &snap, &found);
	have_repo = !r || (r == HM_ERR_NOT_FOUND && found);
	/* a private repo this request may not see is one the mirror lacks; with a capability, one it
	 * does not open: the same answers */
	hidden = found && !mirror__repo_visible(rt, req, &repo);
	if (hidden && !cap) {
		mirror__respond_json(req, 404, json_pack("{s:s}", "error", "repo not on this mirror"));
		goto out;
	}
	if (cap && r) {
		/* (nothing is tracked on demand for a capability: it names a snapshot the mirror has) */
		mirror__respond_json(req, 403, json_pack("{s:s}", "error", cap_refused));
		goto out;
	}
	if (r == HM_ERR_NOT_FOUND && !found &&
	    mirror_ondemand_track(rt, req, seg[0], seg[1], name,
				  strcmp(seg[0], "ms") ? mirror__hf_refuse : mirror__ms_refuse))
		goto out; /* fetched on demand: answered once it is listed */
	if (r) {
		char *why = r != HM_ERR_NOT_FOUND ? xstrdup("catalog error")
			    : !found              ? xstrdup("repo not on this mirror")
						  : not_synced_why(&repo, rev);
		mirror__respond_json(req, r == HM_ERR_NOT_FOUND ? 404 : 500, json_pack("{s:s}", "error", why));
		free(why);
		goto out;
	}
	if (!mirror_access_content_open(rt->access, &repo)) {
		mirror__respond_json(req, 403, json_pack("{s:s}", "error", "gated repository: closed on this mirror"));
		goto out;
	}
	r = catalog_torrent_get(rt->data->catalog, snap.id, &tj->t);
	if (r == HM_ERR_NOT_FOUND && rt->ondemand && catalog_snapshot_complete(rt->data->catalog, snap.id) == 0 &&
	    (c = mirror_ondemand_complete(rt, seg[0], seg[1], name)) >= 0) {
		/* a snapshot tracked on demand, not whole yet: an instance wants it all (or, with others
		 * being completed, asks again) */
		httpd_add_header(req, "Retry-After", c ? "10" : "2");
		mirror__respond_json(req, 503,
				     json_pack("{s:s, s:b}", "error",
					       c ? "fetched on demand: the mirror is "
						   "completing other snapshots; ask again shortly"
						 : "fetched on demand: the mirror is "
						   "completing this snapshot now; ask again shortly",
					       "completing", true));
		goto out;
	}
	if (r && cap && hidden) {
		mirror__respond_json(req, 403, json_pack("{s:s}", "error", cap_refused));
		goto out;
	}
	if (r) {
		mirror__respond_json(req, r == HM_ERR_NOT_FOUND ? 404 : 500,
				     json_pack("{s:s}", "error",
					       r == HM_ERR_NOT_FOUND
						       ? "no torrent for this snapshot yet (the next sync makes it)"
						       : "catalog error"));
		goto out;
	}
	if (cap &&
	    !(rt->have_p2p_key && mirror_access_capability_allows(rt->access, rt->p2p_key, cap, tj->t.btih, &repo))) {
		mirror__respond_json(req, 403, json_pack("{s:s}", "error", cap_refused));
		goto out;
	}
	tj->meta = meta && !strcmp(meta, "1");
	if (tj->meta)
		tj->revision = xstrdup(rev && *rev ? rev : repo.follow_rev);
	else if (torrent_urls(rt, req, &repo, tj, cap))
		goto out;
	memcpy(tj->commit, snap.commit, sizeof(tj->commit));
	tj->synced_at = snap.synced_at;
	tj->j.build = torrent_build;
	tj->j.release = torrent_release;
	mirror__defer(rt, req, &tj->j);
	tj = NULL;
out:
	if (tj)
		torrent_release(&tj->j);
	if (have_repo)
		catalog_repo_release(&repo);
	for (size_t i = 0; i < 4; i++)
		free(seg[i]);
	free(name);
	free(rev);
	free(meta);
	free(cap);
}

/* ---- web seed --------------------------------------------------------------------------------------- */

/* A pad file (BEP 47) of a hybrid torrent: N zero bytes that align the next file to a piece. libtorrent
 * never asks for them; v1-only clients such as aria2c do, and fail the download on a 404. */
/* The zeros pad files are made of: one sparse in-memory file of the largest piece size, shared by
 * every answer (sent with sendfile like a blob), so a crowd of pad requests costs no memory per
 * request. Made on first use; -1 if the system cannot. */
static int zeros_fd(void)
{
	static int fd = -2;

	if (fd == -2) {
		fd = memfd_create("hubmirror-zeros", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, P2P_MAX_PIECE) < 0) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

static void pad_file(struct httpd_req *req, const char *digits, int64_t piece_size)
{
	char *end;
	long long n = strtoll(digits, &end, 10);
	int64_t a = 0, b = 0;
	int rr, fd;

	if (end == digits || *end || *digits == '0' || n <= 0 || n >= piece_size) {
		plain(req, 404, "not found\n");
		return;
	}
	rr = httpd_parse_range(httpd_header(req, "Range"), n, &a, &b);
	if (rr < 0) {
		httpd_add_headerf(req, "Content-Range", "bytes */%lld", n);
		plain(req, 416, "range not satisfiable\n");
		return;
	}
	if (!rr) {
		a = 0;
		b = n - 1;
	}
	fd = zeros_fd() >= 0 && n <= P2P_MAX_PIECE ? fcntl(zeros_fd(), F_DUPFD_CLOEXEC, 0) : -1;
	if (fd < 0) {
		plain(req, 503, "no zeros to send\n");
		return;
	}
	httpd_add_header(req, "Accept-Ranges", "bytes");
	if (rr)
		httpd_add_headerf(req, "Content-Range", "bytes %lld-%lld/%lld", (long long)a, (long long)b, n);
	httpd_respond_file(req, rr ? 206 : 200, "application/octet-stream", fd, a, b - a + 1);
}

/* walk callback: the path of a snapshot's only file; a second file clears it and stops */
static int lone_file(void *ud, const struct catalog_entry *e)
{
	char **path = ud;

	if (*path) {
		FREE_AND_NULL(path);
		return 1;
	}
	*path = xstrdup(e->path);
	return 0;
}

/* How long the mirror remembers a range it sent to an agent's fill in a swarm: longer than the agent
 * needs to receive it and tell its peers (docs/agent.md), short enough that a range whose first taker
 * went away is sent again soon. */
#define FILL_TAKEN_MS 5000

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* An agent's fill in a swarm asks for bytes (X-Hubmirror-Fill: swarm): did another agent get this
 * very range from the mirror moments ago? Then it will have them soon, and so will its peers. The
 * first asker is always served; a request without the header (any other client) is never refused. */
static bool fill_taken(struct mirror_routes *rt, const struct httpd_req *req, const char *btih, const char *path)
{
	const char *mode = httpd_header(req, "X-Hubmirror-Fill"), *range = httpd_header(req, "Range");
	uint64_t key = 14695981039346656037ull;
	struct fill_slot *slot;
	int64_t now = mono_ms();

	if (!mode || strcmp(mode, "swarm") || !range)
		return false;
	key = fnv1a(key, btih, strlen(btih) + 1);
	key = fnv1a(key, path, strlen(path) + 1);
	key = fnv1a(key, range, strlen(range));
	slot = &rt->swarm->fill_slots[key % FILL_SLOTS];
	if (slot->key == key && now - slot->at_ms < FILL_TAKEN_MS) {
		rt->swarm->fill_deduped++;
		return true;
	}
	slot->key = key;
	slot->at_ms = now;
	return false;
}

static void web_seed(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *cap)
{
	const char *slash = strchr(rest, '/'), *slash2;
	char btih[41], *tname = NULL, *path = NULL;
	struct catalog_torrent t;
	struct catalog_repo repo = { 0 };
	struct catalog_entry e = { 0 };
	bool have_repo = false;

	/* {btih}/{torrent name}/{path}; libtorrent 2.0.8 (before 2.0.14) asks for {btih}/{torrent name}
	 * alone when the torrent holds one file, which then is the answer */
	if (!slash || slash - rest != 40 || !slash[1]) {
		plain(req, 404, "not found\n");
		goto out;
	}
	slash2 = strchr(slash + 1, '/');
	memcpy(btih, rest, 40);
	btih[40] = '\0';
	for (int i = 0; i < 40; i++)
		if (!strchr("0123456789abcdef", btih[i])) {
			plain(req, 404, "not found\n");
			goto out;
		}
	tname = httpd_unescape(slash + 1, slash2 ? (size_t)(slash2 - slash - 1) : strlen(slash + 1), false);
	if (!tname || catalog_torrent_find(rt->data->catalog, btih, &t) || strcmp(t.btih, btih) ||
	    strcmp(t.name, tname)) {
		plain(req, 404, "not found\n");
		goto out;
	}
	if (slash2)
		path = httpd_unescape(slash2 + 1, strlen(slash2 + 1), false);
	else if (catalog_snapshot_walk(rt->data->catalog, t.snapshot_id, NULL, NULL, 2, lone_file, &path) || !path)
		FREE_AND_NULL(&path);
	if (!path || path_check_str(path)) {
		plain(req, 404, "not found\n");
		goto out;
	}
	if (catalog_snapshot_repo(rt->data->catalog, t.snapshot_id, &repo)) {
		plain(req, 404, "not found\n");
		goto out;
	}
	have_repo = true;
	if (cap) {
		if (!rt->have_p2p_key ||
		    !mirror_access_capability_allows(rt->access, rt->p2p_key, cap, t.btih, &repo)) {
			/* a private repo's torrent is there only for who may see it: else as an unknown one */
			if (mirror__private_local(&repo))
				plain(req, 404, "not found\n");
			else
				plain(req, 403, "this key does not open this torrent\n");
			goto out;
		}
	} else if (!mirror__repo_visible(rt, req, &repo)) {
		plain(req, 404, "not found\n");
		goto out;
	} else if (!mirror__access_check(rt, req, repo.hub, repo.type, repo.name, &repo, NULL)) {
		goto out;
	}
	if (!mirror_access_content_open(rt->access, &repo)) {
		plain(req, 403, "gated repository: closed on this mirror\n");
		goto out;
	}
	if (skip_prefix(path, ".pad/")) {
		pad_file(req, skip_prefix(path, ".pad/"), t.piece_size);
		goto out;
	}
	if (catalog_snapshot_file(rt->data->catalog, t.snapshot_id, path, &e)) {
		plain(req, 404, "not found\n");
		goto out;
	}
	if (fill_taken(rt, req, btih, path)) {
		httpd_add_header(req, "X-Hubmirror-Fill", "taken");
		plain(req, 409, "another agent has just fetched these bytes: take them from the swarm\n");
		goto out;
	}
	httpd_add_headerf(req, "ETag", "\"%s\"", e.sha256);
	if (mirror__send_blob(rt, req, e.sha256, e.size))
		plain(req, 503, "file temporarily unavailable on this mirror\n");
out:
	catalog_entry_release(&e);
	if (have_repo)
		catalog_repo_release(&repo);
	free(tname);
	free(path);
}

json_t *mirror__swarm_json(struct mirror_routes *rt, int64_t snapshot_id, const struct catalog_repo *repo,
			   const char *base)
{
	struct catalog_torrent t;
	unsigned char v1[20], v2[20];
	size_t s1 = 0, l1 = 0, s2 = 0, l2 = 0;

	/* a repo whose files are closed here has no swarm to show (its info-hash would be enough to ask
	 * peers for them) */
	if (!snapshot_id || !mirror_access_content_open(rt->access, repo) ||
	    catalog_torrent_get(rt->data->catalog, snapshot_id, &t) || hex_decode(t.btih, v1, 20) ||
	    hex_decode(t.btmh, v2, 20))
		return json_null();
	/* libtorrent announces the v1 hash and the truncated v2 hash as two swarms of the same peers;
	 * v1-only clients the first only: the larger count of each is the swarm's */
	p2p_tracker_swarm(rt->swarm->tracker, v1, &s1, &l1);
	p2p_tracker_swarm(rt->swarm->tracker, v2, &s2, &l2);
	return json_pack("{s:s, s:s, s:s++++++, s:I, s:I, s:I}", "btih", t.btih, "btmh", t.btmh,
			 "torrent", base, "/api/p2p/torrent/", repo->hub, "/", repo->type, "/", repo->name,
			 "piece_size", (json_int_t)t.piece_size, "seeders", (json_int_t)(s1 > s2 ? s1 : s2),
			 "leechers", (json_int_t)(l1 > l2 ? l1 : l2));
}

int mirror__route_announce(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	(void)rest;
	(void)arg;
	announce(rt, req);
	return 0;
}

int mirror__route_webseed(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	(void)arg;
	web_seed(rt, req, rest, NULL);
	return 0;
}

/* /p2p/kseed/{capability}/{btih}/{name}/{path}: a guarded repo's web seed */
int mirror__route_kseed(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	const char *slash = strchr(rest, '/');

	(void)arg;
	if (!rt->access || !slash || slash == rest || slash - rest > 80) {
		plain(req, 404, "not found\n");
	} else {
		char *cap = xstrndup(rest, (size_t)(slash - rest));
		web_seed(rt, req, slash + 1, cap);
		free(cap);
	}
	return 0;
}

/* GET /api/p2p/preheat: the snapshots the operator marked to pre-distribute (add --preheat), the
 * followed revision of each, as far as anyone may read them: agents started with --preheat fetch them
 * in the background, so the swarm is warm before the first real use. A guarded repo is left out
 * (its swarm needs a token's capability; an agent pulls it with one). */
int mirror__route_preheat(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	struct catalog_repo *list = NULL;
	json_t *out = json_array();
	size_t n = 0;

	(void)rest;
	(void)arg;
	if (catalog_repo_list(rt->data->catalog, &list, &n)) {
		json_decref(out);
		mirror__respond_json(req, 500, json_pack("{s:s}", "error", "catalog error"));
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct catalog_repo *r = &list[i];
		json_t *o = json_loads(r->options ? r->options : "{}", 0, NULL);
		if (json_is_true(json_object_get(o, "preheat")) && r->head_commit && mirror__anyone_reads(rt, r) &&
		    mirror_access_content_open(rt->access, r)) {
			char *spec =
				xasprintf("%s:%s%s", r->hub, strcmp(r->type, "dataset") ? "" : "datasets/", r->name);
			json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "spec", spec, "revision", r->follow_rev,
							     "commit", r->head_commit));
			free(spec);
		}
		json_decref(o);
	}
	catalog_repo_list_free(list, n);
	mirror__respond_json(req, 200, json_pack("{s:o}", "snapshots", out));
	return 0;
}

int mirror__route_torrent(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	(void)arg;
	torrent(rt, req, rest);
	return 0;
}
