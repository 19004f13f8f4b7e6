/*
 * floor-write.c - the write floor of mirror/serve/ (docs/ARCHITECTURE.md): what the
 * write fronts share. Who may write (the write gate: a local namespace, a token with a write grant),
 * the namespaces' quotas, abandoning a body streamed in (an LFS object's or a spooled one: each sink
 * says how it is freed), and the torrents of new commits, made in the background. The spool of
 * commit and push bodies is spool.c's, the other file of this floor.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <uv.h>

#include "base/err.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "mirror/torrents.h"
#include "mirror/upload.h"
#include "access.h"
#include "floor-write-int.h"
#include "routes-int.h"
#include "seeder.h"

struct mirror__write {
	char **local;                 /* serve --local: the namespaces whose repos are the mirror's own */
	int64_t *local_quota;         /* ... and the bytes each may hold (-1: no bound) */
	size_t nlocal;
	pthread_mutex_t commit_mu;    /* commits to local repos, one at a time (routes-commit.c) */
	bool torrents_running, torrents_again; /* new commits' torrents, below */
	uv_timer_t torrents_timer;
};

struct mirror__write *mirror__write_new(void)
{
	struct mirror__write *w = xcalloc(1, sizeof(*w));

	pthread_mutex_init(&w->commit_mu, NULL);
	return w;
}

void mirror__write_free(struct mirror__write **w)
{
	if (!w || !*w)
		return;
	pthread_mutex_destroy(&(*w)->commit_mu);
	for (size_t i = 0; i < (*w)->nlocal; i++)
		free((*w)->local[i]);
	free((*w)->local);
	free((*w)->local_quota);
	free(*w);
	*w = NULL;
}

void mirror__write_set_local(struct mirror__write *w, const char *namespaces, const char *quota)
{
	char **list = str_split(namespaces, ", ", NULL);

	for (char **p = list; *p; p++)
		if (**p) {
			w->local = xreallocarray(w->local, w->nlocal + 1, sizeof(*w->local));
			w->local_quota = xreallocarray(w->local_quota, w->nlocal + 1, sizeof(*w->local_quota));
			w->local_quota[w->nlocal] = -1;
			w->local[w->nlocal++] = xstrdup(*p);
		}
	str_split_free(list);
	list = quota ? str_split(quota, ", ", NULL) : NULL;
	for (char **p = list; p && *p; p++) {
		char *eq = strchr(*p, '=');
		if (!eq)
			continue;
		*eq = '\0';
		for (size_t i = 0; i < w->nlocal; i++)
			if (!strcasecmp(w->local[i], *p))
				w->local_quota[i] = strtoll(eq + 1, NULL, 10);
	}
	if (list)
		str_split_free(list);
}

void mirror__write_set_loop(struct mirror_routes *rt)
{
	uv_timer_init(rt->loop, &rt->write->torrents_timer);
	rt->write->torrents_timer.data = rt;
}

bool mirror__has_local(const struct mirror_routes *rt)
{
	return rt->write->nlocal > 0;
}

void mirror__commit_lock(struct mirror_routes *rt)
{
	pthread_mutex_lock(&rt->write->commit_mu);
}

void mirror__commit_unlock(struct mirror_routes *rt)
{
	pthread_mutex_unlock(&rt->write->commit_mu);
}

/* ---- who may write ---------------------------------------------------------------------------- */

bool mirror__local_namespace(const struct mirror_routes *rt, const char *name)
{
	size_t n = strcspn(name, "/");

	for (size_t i = 0; i < rt->write->nlocal; i++)
		if (strlen(rt->write->local[i]) == n && !strncasecmp(rt->write->local[i], name, n))
			return true;
	return false;
}

bool mirror__write_gate(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
			char **who)
{
	char buf[512];
	const char *tok = mirror__request_token(req, buf, sizeof(buf));

	if (!mirror__local_namespace(rt, name)) {
		mirror__hf_error(req, 403, NULL, "This mirror is read-only outside its local namespaces", NULL);
		return false;
	}
	if (!tok) {
		httpd_add_header(req, "WWW-Authenticate", "Bearer realm=\"hubmirror\"");
		mirror__hf_error(req, 401, NULL, "Invalid username or password.", NULL);
		return false;
	}
	if (!rt->access || !mirror_access_token_valid(rt->access, tok)) {
		/* a token the mirror does not know: the Hub's 401, as for a read (clients ask for a new one) */
		httpd_add_header(req, "WWW-Authenticate", "Bearer realm=\"hubmirror\"");
		mirror__hf_error(req, 401, NULL, "Invalid credentials in Authorization header", NULL);
		return false;
	}
	if (!mirror_access_may_write(rt->access, tok, "hf", type, name)) {
		mirror__hf_error(req, 403, NULL,
				 "You don't have the rights to write to this repository on this mirror.", NULL);
		return false;
	}
	*who = mirror_access_who(rt->access, tok);
	return true;
}

bool mirror__local_repo(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
			struct catalog_repo *repo)
{
	if (catalog_repo_get(rt->data->catalog, "hf", type, name, repo)) {
		mirror__hf_error(req, 404, "RepoNotFound", "Repository not found", NULL);
		return false;
	}
	if (!repo->local) {
		catalog_repo_release(repo);
		mirror__hf_error(req, 403, NULL, "A mirrored repository is read-only", NULL);
		return false;
	}
	return true;
}

bool mirror__quota_room(struct mirror_routes *rt, struct catalog *cat, const char *name, const char *const *sha,
			const int64_t *size, size_t n, char **msg)
{
	char *ns = xstrndup(name, strcspn(name, "/"));
	bool ok = mirror_upload_quota_room(cat, ns, mirror__local_quota(rt, ns), sha, size, n, msg);

	free(ns);
	return ok;
}

int64_t mirror__local_quota(const struct mirror_routes *rt, const char *ns)
{
	for (size_t i = 0; i < rt->write->nlocal; i++)
		if (!strcasecmp(rt->write->local[i], ns))
			return rt->write->local_quota[i];
	return -1;
}

/* ---- bodies ------------------------------------------------------------------------------------ */

void mirror__body_abandon(void *sink)
{
	struct mirror__sink *head = sink;

	if (head)
		head->abandon(sink);
}

/* ---- the swarm's torrent of a new commit ------------------------------------------------------ */

/* A commit's torrent is made in the background, as a sync makes its snapshots' (mirror/torrents.h):
 * on a worker with its own handle on the data directory and the sync lock held, then the seeder
 * looks again. A sync that holds the lock makes it at its end; if it had passed that point, the
 * next try (a minute later) does. One run at a time; commits meanwhile ask for one more. */
struct torrents_run {
	uv_work_t w;
	struct mirror_routes *rt;
	char *dir;
	size_t made;
	int err;
	char *why;
};

static void torrents_work(uv_work_t *w)
{
	struct torrents_run *t = w->data;
	struct mirror_data *d = NULL;

	t->err = mirror_data_open(t->dir, &d, &t->why);
	if (!t->err && !(t->err = mirror_data_lock(d, false, NULL))) {
		t->err = mirror_torrents_make(d, (int64_t)time(NULL), &t->made, &t->why);
		mirror_data_unlock(d);
	}
	mirror_data_free(&d);
}

static void torrents_start(struct mirror_routes *rt);

static void torrents_retry(uv_timer_t *timer)
{
	torrents_start(timer->data);
}

static void torrents_done(uv_work_t *w, int status)
{
	struct torrents_run *t = w->data;
	struct mirror_routes *rt = t->rt;

	(void)status;
	rt->write->torrents_running = false;
	if (rt->closing) /* the seeder and the timer are gone */
		goto out;
	if (t->made && rt->seeder)
		mirror_seeder_rescan(rt->seeder);
	if (t->err == HM_ERR_LOCKED) {
		uv_timer_start(&rt->write->torrents_timer, torrents_retry, 60000, 0);
	} else if (t->err) {
		log_warn("upload", "the torrents of new commits: %s", t->why ? t->why : err_str(t->err));
	} else if (rt->write->torrents_again) {
		torrents_start(rt);
	}
out:
	free(t->why);
	free(t->dir);
	free(t);
}

static void torrents_start(struct mirror_routes *rt)
{
	struct torrents_run *t;

	if (rt->write->torrents_running || rt->closing) {
		rt->write->torrents_again = !rt->closing;
		return;
	}
	t = xcalloc(1, sizeof(*t));
	t->w.data = t;
	t->rt = rt;
	t->dir = xstrdup(rt->data->dir);
	rt->write->torrents_running = true;
	rt->write->torrents_again = false;
	if (uv_queue_work(rt->loop, &t->w, torrents_work, torrents_done)) {
		rt->write->torrents_running = false;
		free(t->dir);
		free(t);
	}
}

void mirror__local_torrents(struct mirror_routes *rt)
{
	if (rt->loop)
		torrents_start(rt);
}
