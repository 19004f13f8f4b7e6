/*
 * ondemand.c - repositories fetched when a client asks for them (see ondemand.h).
 *
 * Three parts:
 *   tracking    ondemand-track.c: the listing gate on the loop, the listing on a worker.
 *   fetching    on the serve's loop: one struct fetch per content, writing through the store's
 *               writer and answering every client asking for it from the partial file
 *               (httpd_respond_file_gated). When another process writes the same partial file
 *               (a sync: the store allows one writer), the clients follow that file instead.
 *               The bytes come over plain HTTP (here) or through Xet (ondemand-xet.c).
 *   completing  ondemand-complete.c: a snapshot an instance wants whole, by a child sync.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/http/http.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "hub/upstream.h"
#include "mirror/data.h"
#include "store/store-xet.h"
#include "mirror/xet-record.h"
#include "store/store.h"
#include "mirror/sync.h"
#include "mirror/xet-fetch.h"
#include "ondemand.h"
#include "routes-int.h"

#include "ondemand-int.h"

/* ---- patterns ----------------------------------------------------------------------------------- */

char *mirror__od_spec_text(const char *hub, const char *type, const char *name)
{
	return xasprintf("%s:%s%s", hub, strcmp(type, "dataset") ? "" : "datasets/", name);
}

bool mirror_ondemand_covers(const struct mirror_ondemand *od, const char *hub, const char *type, const char *name)
{
	char *spec = mirror__od_spec_text(hub, type, name);
	bool yes = false;

	for (size_t i = 0; i < od->npatterns && !yes; i++)
		yes = !strcmp(od->patterns[i], "*") || fnmatch(od->patterns[i], spec, 0) == 0;
	free(spec);
	return yes;
}

/* A pattern: "*", or hf:/ms: then [datasets/]ORG/NAME with globs. */
static bool pattern_ok(const char *p)
{
	if (!strcmp(p, "*"))
		return true;
	if (!skip_prefix(p, "hf:") && !skip_prefix(p, "ms:"))
		return false;
	if (!p[3] || strstr(p, "..") || strchr(p, ' '))
		return false;
	return true;
}

int mirror_ondemand_new(uv_loop_t *loop, const struct mirror_ondemand_config *cfg, struct mirror_ondemand **out,
			char **errmsg)
{
	struct mirror_ondemand *od = xcalloc(1, sizeof(*od));
	struct hub_http_config hc = { 0 };
	struct hub_client_config cc;
	char **list = str_split(cfg->patterns, ",", NULL);
	int r = 0;

	for (char **p = list; *p; p++) {
		const char *t = *p;
		while (*t == ' ')
			t++;
		if (!*t)
			continue;
		if (!pattern_ok(t)) {
			*errmsg = xasprintf(
				"--on-demand: '%s' is not a pattern (hf:ORG/*, hf:datasets/*, ms:ORG/NAME, *)", t);
			r = -EINVAL;
			break;
		}
		od->patterns = xreallocarray(od->patterns, od->npatterns + 1, sizeof(*od->patterns));
		od->patterns[od->npatterns++] = xstrdup(t);
	}
	str_split_free(list);
	if (!r && !od->npatterns) {
		*errmsg = xstrdup("--on-demand: no pattern given");
		r = -EINVAL;
	}
	pthread_mutex_init(&od->mu, NULL);
	pthread_mutex_init(&od->list_mu, NULL);
	od->data_dir = xstrdup(cfg->data_dir);
	od->ttl_s = cfg->ttl_s > 0 ? cfg->ttl_s : 30 * 86400.0;
	od->quota_bytes = cfg->quota_bytes;
	od->max_repos = cfg->max_repos > 0 ? cfg->max_repos : 1000;
	od->self_exe = cfg->self_exe ? xstrdup(cfg->self_exe) : NULL;
	od->config_path = cfg->config_path ? xstrdup(cfg->config_path) : NULL;
	od->hf_token_file = cfg->hf_token_file ? xstrdup(cfg->hf_token_file) : NULL;
	od->ms_token_file = cfg->ms_token_file ? xstrdup(cfg->ms_token_file) : NULL;
	od->loop = loop;
	od->hf_base = cfg->hf_base ? xstrdup(cfg->hf_base) : NULL;
	od->ms_base = cfg->ms_base ? xstrdup(cfg->ms_base) : NULL;
	od->hf_token = cfg->hf_token ? xstrdup(cfg->hf_token) : NULL;
	od->ms_token = cfg->ms_token ? xstrdup(cfg->ms_token) : NULL;
	if (!r && hub_http_new(loop, &hc, &od->http)) {
		*errmsg = xstrdup("--on-demand: cannot start the HTTP client");
		r = -EINVAL;
	}
	cc = (struct hub_client_config){ od->hf_base, od->ms_base, od->hf_token, od->ms_token };
	if (!r && hub_client_new(od->http, &cc, &od->client)) {
		*errmsg = xstrdup("--on-demand: upstream URLs must start with http:// or https://");
		r = -EINVAL;
	}
	if (r) {
		mirror_ondemand_free(&od);
		return r;
	}
	uv_timer_init(loop, &od->sweep);
	od->sweep.data = od;
	od->sweep_on = true;
	uv_idle_init(loop, &od->xet_idle);
	od->xet_idle.data = od;
	od->xet_idle_on = true;
	*out = od;
	return 0;
}

/* ---- fetching: on the loop ---------------------------------------------------------------------- */

void mirror__od_fetch_unref(struct fetch *f)
{
	struct fetch **pp;

	if (--f->refs > 0)
		return;
	for (pp = &f->od->fetches; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	store_writer_abort(&f->w, true);
	mirror_xet_fetch_free(&f->xet);
	free(f->url);
	free(f->part_path);
	free(f->spec);
	free(f);
}

void mirror__od_fetch_end(struct fetch *f, enum fetch_state st, const char *why)
{
	struct mirror_ondemand *od = f->od;

	f->state = st;
	if (st == FETCH_OK) {
		od->held_at = 0; /* the store grew: its size is read again before the next quota check */
		/* present, and (bytes from the repo's own upstream, verified) the repo's own: the sync
		 * that completes the snapshot names it without a fetch (catalog_blob_public_or_own) */
		if (catalog_blob_set_present(f->rt->data->catalog, f->sha256) ||
		    (f->own_bytes && f->repo_id && catalog_blob_fetched(f->rt->data->catalog, f->sha256, f->repo_id)))
			log_warn("ondemand", "catalog: %s", catalog_errmsg(f->rt->data->catalog));
		mirror_xet_record(f->rt->data->store, f->rt->data->catalog, f->sha256);
		log_info("ondemand", "%s: content %.12s in (%lld bytes, verified%s)", f->spec, f->sha256,
			 (long long)f->size, f->xet_stated ? ", upstream's Xet hash too" : "");
	} else {
		od->fetches_failed++;
		log_warn("ondemand", "%s: content %.12s not kept: %s", f->spec, f->sha256, why);
	}
}

static int fetch_on_response(void *ud, const struct hub_http_resp *resp)
{
	struct fetch *f = ud;

	if ((resp->status == 200 || resp->status == 206) && resp->xet_hash) {
		/* upstream's X-Xet-Hash (along the redirects, as huggingface_hub reads it): the identity
		 * the writer computes must name it, or the bytes are refused as a sha256 mismatch is */
		store_writer_expect_xet(f->w, resp->xet_hash);
		f->xet_stated = hex_is_lower(resp->xet_hash, 64);
	}
	if (resp->status == 206 && f->from > 0) {
		char want[40];
		int n = snprintf(want, sizeof(want), "bytes %lld-", (long long)f->from);
		return !resp->content_range || strncmp(resp->content_range, want, (size_t)n) ? HM_ERR_UPSTREAM : 0;
	}
	if (resp->status == 200) {
		if (f->from > 0) {
			int r = store_writer_truncate(f->w); /* upstream ignored the Range */
			if (r)
				return r;
			f->have = f->from = 0;
		}
		return 0;
	}
	return hub_classify_error(skip_prefix(f->spec, "ms:") ? HUB_MS : HUB_HF, resp->status, resp->error_code);
}

static int fetch_on_body(void *ud, const char *data, size_t n)
{
	struct fetch *f = ud;
	int r = store_writer_write(f->w, data, n);

	if (r)
		return r;
	f->have = store_writer_flushed(f->w);
	f->od->bytes_fetched += n;
	return 0;
}

/* A test hook (tests/README.md, "Fault hooks"): with $HUBMIRROR_TEST_PAUSE=ondemand-commit (read here
 * only), the worker waits 3 s once its commit is done, before the loop hears of it: the window in
 * which the content's next client must join the verified fetch (fetch_find), not be refused. */
static void test_pause_commit(const struct fetch *f)
{
	const char *v = getenv("HUBMIRROR_TEST_PAUSE");

	if (v && !strcmp(v, "ondemand-commit") && !f->commit_result)
		sleep(3);
}

static void commit_work(uv_work_t *wk)
{
	struct fetch *f = wk->data;

	f->commit_result = store_writer_commit(&f->w, NULL); /* fsync, rename */
	test_pause_commit(f);
}

static void commit_after(uv_work_t *wk, int status)
{
	struct fetch *f = wk->data;

	(void)status;
	f->own_bytes = !f->commit_result;
	if (f->xet && !f->commit_result && mirror_xet_fetch_record(f->xet, f->sha256))
		log_warn("ondemand", "catalog: %s", catalog_errmsg(f->rt->data->catalog));
	mirror_xet_fetch_free(&f->xet);
	mirror__od_fetch_end(f, f->commit_result ? FETCH_FAILED : FETCH_OK,
			     f->commit_result ? err_str(f->commit_result) : NULL);
	mirror__od_fetch_unref(f);
}

/* Every byte is in: checked (sha256, and the Xet hash the writer was told), then committed on a
 * worker; the transfer's reference goes with it. */
void mirror__od_fetch_verify(struct fetch *f)
{
	int r = store_writer_check(f->w); /* the hash, finished: quick */

	if (!r) {
		/* verified: the clients take their last bytes now; the disk work goes to a worker */
		f->state = FETCH_VERIFIED;
		f->work.data = f;
		if (!uv_queue_work(f->od->loop, &f->work, commit_work, commit_after))
			return; /* commit_after drops the transfer's reference */
		commit_work(&f->work);
		commit_after(&f->work, 0);
		return;
	}
	if (f->xet) {
		mirror__od_xet_remember_bad(f->od, f->sha256);   /* the next client's fetch is plain */
		mirror_xet_fetch_free(&f->xet);
	}
	r = store_writer_commit(&f->w, NULL); /* drops the wrong bytes */
	mirror__od_fetch_end(f, FETCH_FAILED, err_str(r));
	mirror__od_fetch_unref(f);
}

static void fetch_on_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct fetch *f = ud;

	(void)body;
	(void)len;
	f->req = NULL;
	if (!result && (resp->status == 200 || resp->status == 206)) {
		mirror__od_fetch_verify(f);
		return;
	} else {
		/* kept for a resume (the next client, or the sync) */
		mirror__od_fetch_end(f, FETCH_FAILED, result ? err_str(result) : "upstream refused");
	}
	mirror__od_fetch_unref(f);
}

/* One client's answer from a content being fetched: its fetch (a reference) and the last byte of its
 * range, which goes only once the content is verified. */
struct gated {
	struct fetch *f;
	int64_t last;
};

/* How many bytes from off a client may take now: all of them once verified; while the content
 * arrives, what is written, but never the last byte of the client's range (nor the content's), which
 * goes only after the check: a range that is not verified never ends as a complete answer (a client
 * splitting a file into ranges would assemble bytes that failed the hash); -1 on failure. */
static int64_t fetch_gate(void *ud, int64_t off, int64_t len)
{
	struct gated *g = ud;
	struct fetch *f = g->f;
	int64_t end;

	if (f->state == FETCH_RUNNING && !f->w) {
		/* following another writer: its partial file grows, then becomes the blob, or vanishes */
		struct stat st;
		int64_t now = (int64_t)time(NULL);
		if (store_has(f->rt->data->store, f->sha256, f->size)) {
			mirror__od_fetch_end(f, FETCH_OK, NULL);
		} else if (stat(f->part_path, &st) < 0) {
			mirror__od_fetch_end(f, FETCH_FAILED, "the other writer dropped it");
		} else {
			if ((int64_t)st.st_size > f->have) {
				f->have = (int64_t)st.st_size;
				f->last_growth = now;
			}
			if (now - f->last_growth > STALL_S)
				mirror__od_fetch_end(f, FETCH_FAILED, "the other writer stalled");
		}
	}
	if (f->state == FETCH_OK || f->state == FETCH_VERIFIED)
		return len;
	if (f->state == FETCH_FAILED)
		return -1;
	end = f->have - 1 < g->last ? f->have - 1 : g->last; /* the last byte waits for the verdict */
	if (off >= end)
		return 0;
	return end - off < len ? end - off : len;
}

static void fetch_release(void *ud)
{
	struct gated *g = ud;

	mirror__od_fetch_unref(g->f);
	free(g);
}

/* The fetch of in's content that in may join, running or verified: one writing it, or for a trusted
 * in, one following another process's writer too. NULL when there is none. */
static struct fetch *fetch_find(struct mirror_ondemand *od, const struct mirror_ondemand_file *in)
{
	struct fetch *f;

	for (f = od->fetches; f; f = f->next)
		if (!strcmp(f->sha256, in->sha256) && (f->state == FETCH_RUNNING || f->state == FETCH_VERIFIED) &&
		    (f->writes || !in->untrusted))
			return f;
	return NULL;
}

/* Whether what the store holds (its size read again at most every 10 s), what is being fetched, and
 * in's content stay within the quota. When not, says so and counts the refusal. */
static bool within_quota(struct mirror_routes *rt, const struct mirror_ondemand_file *in)
{
	struct mirror_ondemand *od = rt->ondemand;
	int64_t held = 0, coming = in->size, now = (int64_t)time(NULL);
	struct fetch *f;

	for (f = od->fetches; f; f = f->next)
		if (f->state == FETCH_RUNNING || f->state == FETCH_VERIFIED)
			coming += f->size;
	if (now - od->held_at >= 10 || now < od->held_at) {
		if (catalog_store_bytes(rt->data->catalog, &od->held_bytes))
			od->held_bytes = INT64_MAX / 2; /* unknown: refused, and asked again next time */
		else
			od->held_at = now;
	}
	held = od->held_bytes;
	if (held + coming > od->quota_bytes) {
		log_warn("ondemand", "%s/%s: not fetched: %lld bytes would take the store past its quota "
			 "(%lld of %lld bytes held); the next sync makes room", in->name, in->path,
			 (long long)in->size, (long long)held, (long long)od->quota_bytes);
		od->refused_quota++;
		return false;
	}
	return true;
}

/* A new fetch of in's content, first in the serve's list: it writes through a store writer of its own,
 * or follows another process's writer (f->w NULL). NULL, having said why, when the store refuses, or
 * when another process writes it and in is untrusted (the client asks again). */
static struct fetch *fetch_new(struct mirror_routes *rt, const struct mirror_ondemand_file *in)
{
	struct mirror_ondemand *od = rt->ondemand;
	struct store_expect ex = { in->sha256, NULL, in->size };
	struct fetch *f = xcalloc(1, sizeof(*f));
	int r;

	f->od = od;
	f->rt = rt;
	memcpy(f->sha256, in->sha256, 65);
	f->size = in->size;
	f->spec = mirror__od_spec_text(in->hub, in->type, in->name);
	f->part_path = store_part_path(rt->data->store, in->sha256);
	f->last_growth = (int64_t)time(NULL);
	f->repo_id = in->repo_id;
	r = store_writer_new(rt->data->store, &ex, true, &f->w);
	if (r == -EBUSY && in->untrusted) {
		/* another process writes it; following it would end at the store's copy, which this
		 * repo may not take until its own upstream's bytes are verified: the client asks again */
		log_info("ondemand", "%s: content %.12s is being fetched by another process; the client asks again",
			 f->spec, f->sha256);
		goto fail;
	}
	if (r && r != -EBUSY) {
		log_warn("ondemand", "%s: content %.12s: store: %s", f->spec, f->sha256, err_str(r));
		goto fail;
	}
	f->writes = !r;
	f->next = od->fetches;
	od->fetches = f;
	/* references: each client, and the transfer while it runs (taken when it starts); a fetch
	 * nothing holds any more goes (the caller takes its client's reference at once) */
	if (r == -EBUSY) {
		log_info("ondemand", "%s: content %.12s is being fetched by another process: following it", f->spec,
			 f->sha256);
		f->w = NULL;
	}
	return f;
fail:
	free(f->part_path);
	free(f->spec);
	free(f);
	return NULL;
}

/* Asks upstream for the content over plain HTTP from byte `from` (f->url). false when the URL makes no
 * request. */
bool mirror__od_fetch_plain(struct fetch *f, int64_t from)
{
	struct mirror_ondemand *od = f->od;
	struct hub_http_req_opts o = {
		.url = f->url,
		.token = hub_client_token(od->client, f->kind),
		.token_cookie = f->kind == HUB_MS ? "m_session_id" : NULL,
		.range_start = from,
		.on_response = fetch_on_response,
		.on_body = fetch_on_body,
		.on_done = fetch_on_done,
		.ud = f,
	};

	f->from = from;
	f->req = f->url ? hub_http_request(od->http, &o) : NULL;
	return f->req != NULL;
}

/* Asks in's upstream for the content from the bytes f has: through Xet where the listing said
 * upstream's Xet hash (ondemand-xet.c), else over plain HTTP; the transfer holds a reference
 * while it runs. A URL that makes no request fails the fetch. */
static void fetch_request(struct fetch *f, const struct mirror_ondemand_file *in)
{
	struct mirror_ondemand *od = f->od;
	struct hub_spec spec = { .hub = strcmp(in->hub, "ms") ? HUB_HF : HUB_MS,
				 .type = strcmp(in->type, "dataset") ? HUB_MODEL : HUB_DATASET,
				 .name = (char *)in->name, .revision = (char *)in->revision };

	f->kind = spec.hub;
	f->url = hub_file_url(od->client, &spec, in->commit, in->path);
	log_info("ondemand", "%s: fetching %s (%lld bytes) for a client", f->spec, in->path, (long long)in->size);
	if (mirror__od_fetch_xet(f, in))
		return;   /* (it holds the transfer's reference) */
	if (mirror__od_fetch_plain(f, f->have))
		f->refs = 1;
	else
		mirror__od_fetch_end(f, FETCH_FAILED, "bad upstream URL");
}

/* The fetch a client asking for in's content joins: one running, or a new one (following another
 * process's writer, resuming from a partial file, or starting upstream). NULL when the quota or the
 * store refuses. */
static struct fetch *fetch_start(struct mirror_routes *rt, const struct mirror_ondemand_file *in)
{
	struct mirror_ondemand *od = rt->ondemand;
	struct fetch *f = fetch_find(od, in);
	int r;

	if (f)
		return f;
	if (od->quota_bytes > 0 && !in->untrusted && !within_quota(rt, in))
		return NULL;
	f = fetch_new(rt, in);
	if (!f || !f->w)
		return f;
	f->have = store_writer_offset(f->w);
	if (in->untrusted && f->have > 0) {
		/* a partial file of this content is some earlier transfer's, maybe for another repo: this
		 * repo's bytes come from its own upstream, every one */
		if ((r = store_writer_truncate(f->w)) != 0) {
			mirror__od_fetch_end(f, FETCH_FAILED, err_str(r));
			return f;
		}
		f->have = 0;
	}
	/* bigger than the bucket's local cache: straight into the bucket as it comes, never whole on local
	 * disk (no partial file for a client to follow: mirror_ondemand_send) */
	if (f->have == 0)
		store_writer_stream(f->w);
	f->streams = store_writer_streams(f->w);
	od->fetches_total++;
	if (f->have == f->size) {
		r = store_writer_commit(&f->w, NULL); /* an earlier transfer got every byte */
		f->own_bytes = !r;
		mirror__od_fetch_end(f, r ? FETCH_FAILED : FETCH_OK, r ? err_str(r) : NULL);
		if (r)
			log_warn("ondemand", "%s: content %.12s: %s", f->spec, f->sha256, err_str(r));
		return f;
	}
	fetch_request(f, in);
	return f;
}

int mirror_ondemand_send(struct mirror_routes *rt, struct httpd_req *req, const struct mirror_ondemand_file *in)
{
	struct fetch *f;
	struct gated *g;
	int64_t a = 0, b = in->size - 1;
	int fd, rr;

	if (!rt->ondemand || !hex_is_lower(in->sha256, 64) || in->size <= 0)
		return -1;
	f = fetch_start(rt, in);
	if (!f)
		return -1;
	f->refs++; /* this client's, handed to the answer below or dropped on the way out */
	if (f->state == FETCH_OK && in->untrusted && !f->own_bytes) {
		mirror__od_fetch_unref(f);
		return -1;
	}
	if (f->state == FETCH_OK) {
		/* in the store now */
		mirror__od_fetch_unref(f);
		return mirror__send_blob(rt, req, in->sha256, in->size) ? -1 : 0;
	}
	if (f->state == FETCH_FAILED) {
		mirror__od_fetch_unref(f);
		return -1;
	}
	if (f->writes ? f->streams : store_streams_size(rt->data->store, in->size)) {
		/* fetched straight into the bucket (by this process, or another's sync): nothing on local
		 * disk to follow; the client asks again and is served from the bucket once it is in */
		log_info("ondemand", "%s: content %.12s is being fetched into the bucket; the client asks again",
			 f->spec, f->sha256);
		mirror__od_fetch_unref(f);
		httpd_add_header(req, "Retry-After", OD_STREAM_RETRY_S);
		return -1;
	}
	fd = open(f->part_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* followed, and it became the blob just now */
		mirror__od_fetch_unref(f);
		return mirror__send_blob(rt, req, in->sha256, in->size) ? -1 : 0;
	}
	httpd_add_header(req, "Accept-Ranges", "bytes");
	rr = httpd_parse_range(httpd_header(req, "Range"), in->size, &a, &b);
	if (rr < 0) {
		close(fd);
		mirror__od_fetch_unref(f);
		httpd_add_headerf(req, "Content-Range", "bytes */%" PRId64, in->size);
		httpd_respond_str(req, 416, "text/plain", "range not satisfiable\n");
		return 0;
	}
	if (rr > 0)
		httpd_add_headerf(req, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, a, b, in->size);
	else
		a = 0, b = in->size - 1;
	g = xcalloc(1, sizeof(*g));
	g->f = f;
	g->last = b;
	httpd_respond_file_gated(req, rr > 0 ? 206 : 200, "application/octet-stream", fd, a, b - a + 1, fetch_gate,
				 fetch_release, g);
	return 0;
}

/* ---- staying tracked while used --------------------------------------------------------------- */

static int expired_cb(void *ud, const char *spec)
{
	(void)ud;
	log_info("ondemand", "%s: nobody asked for it lately: no longer tracked (gc drops its contents)", spec);
	return 0;
}

/* Write the touches down, then stop tracking what nobody asked for within the TTL. */
static void sweep(struct mirror_ondemand *od)
{
	struct catalog *c = od->rt ? od->rt->data->catalog : NULL;

	if (!c)
		return;
	for (size_t i = 0; i < od->ntouches; i++)
		if (catalog_ondemand_touch(c, od->touches[i].repo_id, od->touches[i].at))
			log_warn("ondemand", "catalog: %s", catalog_errmsg(c));
	od->ntouches = 0;
	if (catalog_ondemand_expire(c, (int64_t)time(NULL) - (int64_t)od->ttl_s, expired_cb, od))
		log_warn("ondemand", "catalog: %s", catalog_errmsg(c));
}

static void on_sweep(uv_timer_t *t)
{
	sweep(t->data);
}

void mirror_ondemand_touch(struct mirror_routes *rt, int64_t repo_id)
{
	struct mirror_ondemand *od = rt->ondemand;
	int64_t now = (int64_t)time(NULL);

	if (!od->rt) {
		/* the first use: sweep from now on (often enough for a short TTL, else each minute) */
		uint64_t every = od->ttl_s < 120 ? 1000 : 60000;
		od->rt = rt;
		uv_timer_start(&od->sweep, on_sweep, every, every);
	}
	for (size_t i = 0; i < od->ntouches; i++)
		if (od->touches[i].repo_id == repo_id) {
			od->touches[i].at = now;
			return;
		}
	if (od->ntouches >= 65536)
		sweep(od);
	od->touches = xreallocarray(od->touches, od->ntouches + 1, sizeof(*od->touches));
	od->touches[od->ntouches++] = (struct touch){ repo_id, now };
}

/* ---- the rest ----------------------------------------------------------------------------------- */

void mirror_ondemand_metrics(const struct mirror_ondemand *od, struct buf *b)
{
	size_t running = 0;

	for (const struct fetch *f = od->fetches; f; f = f->next)
		running += f->state == FETCH_RUNNING;
	buf_adds(b, "# HELP hubmirror_ondemand_repos_total Repositories tracked because a client asked for them.\n"
		    "# TYPE hubmirror_ondemand_repos_total counter\n");
	buf_addf(b, "hubmirror_ondemand_repos_total %" PRIu64 "\n", od->repos_tracked);
	buf_adds(b, "# HELP hubmirror_ondemand_fetches_total Contents fetched from upstream for a client, by outcome.\n"
		    "# TYPE hubmirror_ondemand_fetches_total counter\n");
	buf_addf(b, "hubmirror_ondemand_fetches_total{outcome=\"started\"} %" PRIu64 "\n", od->fetches_total);
	buf_addf(b, "hubmirror_ondemand_fetches_total{outcome=\"failed\"} %" PRIu64 "\n", od->fetches_failed);
	buf_adds(b, "# HELP hubmirror_ondemand_fetched_bytes_total Bytes fetched from upstream for clients.\n"
		    "# TYPE hubmirror_ondemand_fetched_bytes_total counter\n");
	buf_addf(b, "hubmirror_ondemand_fetched_bytes_total %" PRIu64 "\n", od->bytes_fetched);
	buf_adds(b, "# HELP hubmirror_ondemand_fetches_running Contents being fetched (or followed) for clients now.\n"
		    "# TYPE hubmirror_ondemand_fetches_running gauge\n");
	buf_addf(b, "hubmirror_ondemand_fetches_running %zu\n", running);
	buf_adds(b, "# HELP hubmirror_ondemand_listings_refused_total Listings not started: one ran (busy) or the "
		    "minute's budget was spent (rate).\n# TYPE hubmirror_ondemand_listings_refused_total counter\n");
	buf_addf(b, "hubmirror_ondemand_listings_refused_total{why=\"busy\"} %" PRIu64 "\n", od->refused_busy);
	buf_addf(b, "hubmirror_ondemand_listings_refused_total{why=\"rate\"} %" PRIu64 "\n", od->refused_rate);
	buf_adds(b, "# HELP hubmirror_ondemand_fetches_refused_total Contents not fetched for a client: the store "
		    "quota would be passed.\n# TYPE hubmirror_ondemand_fetches_refused_total counter\n");
	buf_addf(b, "hubmirror_ondemand_fetches_refused_total{why=\"quota\"} %" PRIu64 "\n", od->refused_quota);
}

void mirror_ondemand_stop(struct mirror_ondemand *od, uv_loop_t *loop)
{
	bool busy = true;

	if (!od)
		return;
	mirror__od_completions_stop(od);
	if (od->sweep_on) {
		sweep(od); /* the last touches */
		uv_close((uv_handle_t *)&od->sweep, NULL);
		od->sweep_on = false;
	}
	od->stopping = true;
	if (od->xet_idle_on) {
		/* the Xet transfers waiting for their next turn end here (partial files kept) */
		while (od->xet_wait) {
			struct fetch *f = od->xet_wait;
			od->xet_wait = f->next_wait;
			f->next_wait = NULL;
			mirror_xet_fetch_free(&f->xet);
			mirror__od_fetch_end(f, FETCH_FAILED, "serve is stopping");
			mirror__od_fetch_unref(f);
		}
		uv_close((uv_handle_t *)&od->xet_idle, NULL);
		od->xet_idle_on = false;
	}
	if (!od->http)
		return;
	for (struct fetch *f = od->fetches; f; f = f->next) {
		if (f->req)
			hub_http_cancel(f->req);
		if (f->xet)
			mirror_xet_fetch_cancel(f->xet);
	}
	/* a cancelled transfer ends through its on_done, from a timer due at once: run the loop until
	 * every one has (partial files kept for a resume) */
	for (int i = 0; busy && i < 1000; i++) {
		busy = false;
		for (struct fetch *f = od->fetches; f; f = f->next)
			busy |= f->req != NULL || mirror_xet_fetch_busy(f->xet);
		if (busy)
			uv_run(loop, UV_RUN_NOWAIT);
	}
	hub_client_free(&od->client);
	hub_http_free(&od->http); /* its handle closes in the caller's next uv_run */
}

void mirror_ondemand_free(struct mirror_ondemand **odp)
{
	struct mirror_ondemand *od = odp ? *odp : NULL;

	if (!od)
		return;
	hub_client_free(&od->client);
	hub_http_free(&od->http);
	while (od->fetches) { /* followers the closed connections let go of already; what is left */
		struct fetch *f = od->fetches;
		od->fetches = f->next;
		store_writer_abort(&f->w, true);
		mirror_xet_fetch_free(&f->xet);
		free(f->url);
		free(f->part_path);
		free(f->spec);
		free(f);
	}
	for (size_t i = 0; i < od->npatterns; i++)
		free(od->patterns[i]);
	free(od->patterns);
	free(od->data_dir);
	free(od->hf_base);
	free(od->ms_base);
	free(od->hf_token);
	free(od->ms_token);
	pthread_mutex_destroy(&od->mu);
	pthread_mutex_destroy(&od->list_mu);
	free(od->touches);
	free(od->self_exe);
	free(od->config_path);
	free(od->hf_token_file);
	free(od->ms_token_file);
	free(od);
	*odp = NULL;
}
