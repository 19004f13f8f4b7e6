/*
 * ondemand-track.c - tracking a repository a client asked for (ondemand.h, mirror_ondemand_track).
 * On the loop, the listing gate: one listing at a time, so many a minute (all clients, and one
 * address), and a repo listed in the last minute is not listed again. On a worker (httpd_defer):
 * the repo is added to the catalog and listed by the sync engine's provisional mode on the worker's
 * own loop and catalog connection; a listing that fails leaves no row.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "mirror/data.h"
#include "mirror/sync.h"
#include "ondemand-int.h"
#include "ondemand.h"
#include "routes-int.h"

/* ---- tracking: on a worker ---------------------------------------------------------------------- */

/* Was key listed in the last RETRY_AFTER_S seconds? Only listings that ran are noted (note_tried),
 * and no more than LISTINGS_PER_MIN run a minute, so TRIED_SLOTS hold several minutes of them: a
 * flood of names cannot push a miss out before its minute is over. */
static bool tried_recently(struct mirror_ondemand *od, const char *key)
{
	int64_t now = (int64_t)time(NULL);
	bool yes = false;

	pthread_mutex_lock(&od->mu);
	for (size_t i = 0; i < TRIED_SLOTS && !yes; i++)
		yes = od->tried[i].at && now - od->tried[i].at < RETRY_AFTER_S && !strcmp(od->tried[i].key, key);
	pthread_mutex_unlock(&od->mu);
	return yes;
}

static void unnote_tried(struct mirror_ondemand *od, const char *key)
{
	pthread_mutex_lock(&od->mu);
	for (size_t i = 0; i < TRIED_SLOTS; i++)
		if (od->tried[i].at && !strcmp(od->tried[i].key, key))
			od->tried[i].at = 0;
	pthread_mutex_unlock(&od->mu);
}

static void note_tried(struct mirror_ondemand *od, const char *key)
{
	pthread_mutex_lock(&od->mu);
	snprintf(od->tried[od->tried_next].key, sizeof(od->tried[0].key), "%s", key);
	od->tried[od->tried_next].at = (int64_t)time(NULL);
	od->tried_next = (od->tried_next + 1) % TRIED_SLOTS;
	pthread_mutex_unlock(&od->mu);
}

/* May addr start a listing now (the minute's budgets, all clients' and its own)? Counts it if so. */
static bool rate_ok(struct mirror_ondemand *od, const char *addr)
{
	int64_t minute = (int64_t)time(NULL) / 60;
	size_t i;

	if (minute != od->window_at) {
		od->window_at = minute;
		od->window_listings = 0;
		od->nclients = 0;
	}
	if (od->window_listings >= LISTINGS_PER_MIN)
		return false;
	for (i = 0; i < od->nclients && strcmp(od->clients[i].addr, addr); i++)
		;
	if (i == od->nclients) {
		if (i == CLIENT_SLOTS)
			return false; /* that many addresses this minute already: the global budget's */
		snprintf(od->clients[i].addr, sizeof(od->clients[i].addr), "%s", addr);
		od->clients[i].n = 0;
		od->nclients++;
	}
	if (od->clients[i].n >= CLIENT_LISTINGS_PER_MIN)
		return false;
	od->clients[i].n++;
	od->window_listings++;
	return true;
}

struct track_job {
	struct mirror_routes *rt;
	struct mirror_ondemand *od;
	char *hub, *type, *name, *by;
	int result;             /* 0: tracked and listed */
	char *message;          /* why not */
	mirror_ondemand_refuse_fn refuse; /* the front's refusal, in its hub's style */
};

static void track_work(void *ud)
{
	struct track_job *j = ud;
	struct mirror_ondemand *od = j->od;
	struct mirror_data *d = NULL;
	struct catalog_repo repo = { 0 };
	struct mirror_sync_config cfg = { 0 };
	struct mirror_sync_report rep = { 0 };
	enum hub_kind k = strcmp(j->hub, "ms") ? HUB_HF : HUB_MS;
	char *err = NULL, *opts = NULL, *spec = mirror__od_spec_text(j->hub, j->type, j->name);
	json_t *o;
	int e;

	pthread_mutex_lock(&od->list_mu);
	e = mirror_data_open(od->data_dir, &d, &err);
	if (e) {
		j->result = e;
		j->message = err ? err : xstrdup(err_str(e));
		goto out;
	}
	if (!catalog_repo_get(d->catalog, j->hub, j->type, j->name, &repo)) {
		j->result = 0; /* tracked meanwhile (a request before us, an operator) */
		goto out;
	}
	{
		int64_t n = 0;
		if (catalog_repo_count_ondemand(d->catalog, &n) || n >= od->max_repos) {
			j->result = HM_ERR_QUOTA;
			j->message =
				xasprintf("the mirror tracks as many repositories on demand as it may (%lld: serve "
					  "--on-demand-max-repos); one nobody asks for expires first",
					  (long long)n);
			log_warn("ondemand", "%s (asked by %s): not tracked: %s", spec, j->by, j->message);
			goto out;
		}
	}
	o = json_pack("{s:{s:s, s:I}}", "on_demand", "by", j->by, "at", (json_int_t)time(NULL));
	opts = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (catalog_repo_add(d->catalog, j->hub, j->type, j->name, hub_default_revision(k), NULL, NULL, opts, NULL) ||
	    catalog_repo_set_refs(d->catalog, j->hub, j->type, j->name, "default") ||
	    catalog_repo_get(d->catalog, j->hub, j->type, j->name, &repo)) {
		j->result = HM_ERR_SQLITE;
		j->message = xasprintf("catalog: %s", catalog_errmsg(d->catalog));
		goto out;
	}
	cfg.hf_base = od->hf_base;
	cfg.ms_base = od->ms_base;
	cfg.hf_token = od->hf_token;
	cfg.ms_token = od->ms_token;
	cfg.provisional = true;
	cfg.http.max_tries = 3;
	e = mirror_sync_run(d, &repo, 1, &cfg, &rep, &err);
	if (e || !rep.nrepos || strcmp(rep.repos[0].outcome, "ok")) {
		j->result = e ? e : HM_ERR_NOT_FOUND;
		j->message = xstrdup(e ? (err ? err : err_str(e))
				       : (rep.repos[0].error ? rep.repos[0].error : rep.repos[0].outcome));
		/* not kept, and no row left behind (unless it has a history here): upstream lacks it or
		 * refuses the mirror; asked again in a minute at the earliest */
		if (catalog_repo_forget(d->catalog, j->hub, j->type, j->name))
			catalog_repo_remove(d->catalog, j->hub, j->type, j->name);
		log_info("ondemand", "%s (asked by %s): not tracked: %s", spec, j->by, j->message);
		pthread_mutex_lock(&od->mu);
		od->listings_failed++;
		pthread_mutex_unlock(&od->mu);
	} else {
		log_info("ondemand",
			 "%s: tracked on demand (asked by %s) at %.12s, %lld files; large ones fetched when "
			 "first asked",
			 spec, j->by, rep.repos[0].commit, (long long)rep.repos[0].files);
		pthread_mutex_lock(&od->mu);
		od->repos_tracked++;
		pthread_mutex_unlock(&od->mu);
	}
out:
	mirror_sync_report_release(&rep);
	catalog_repo_release(&repo);
	mirror_data_free(&d);
	pthread_mutex_unlock(&od->list_mu);
	free(opts);
	free(spec);
	if (err && j->message != err)
		free(err);
}

static void track_done(void *ud, struct httpd_req *req)
{
	struct track_job *j = ud;

	j->od->listing = false;
	if (j->result == HM_ERR_QUOTA) {
		/* refused for room, not because upstream lacks it: asked again, it is tried again */
		char *key = mirror__od_spec_text(j->hub, j->type, j->name);
		unnote_tried(j->od, key);
		free(key);
	}
	if (req) {
		if (!j->result) {
			j->rt->fronts->dispatch(j->rt, req); /* now tracked: answered as any repo */
		} else if (j->result == HM_ERR_QUOTA) {
			httpd_add_header(req, "Retry-After", "600");
			j->refuse(req, 503, j->type, j->name, j->message);
		} else {
			j->refuse(req, 404, j->type, j->name, NULL);
		}
	}
	free(j->hub);
	free(j->type);
	free(j->name);
	free(j->by);
	free(j->message);
	free(j);
}

int mirror_ondemand_track(struct mirror_routes *rt, struct httpd_req *req, const char *hub, const char *type,
			  const char *name, mirror_ondemand_refuse_fn refuse)
{
	struct mirror_ondemand *od = rt->ondemand;
	struct track_job *j;
	char *key;

	/* a local namespace's repos are the mirror's own: one it does not have is not upstream's either */
	if (!od || hub_check_name(strcmp(hub, "ms") ? HUB_HF : HUB_MS, name) || mirror__local_namespace(rt, name) ||
	    !mirror_ondemand_covers(od, hub, type, name))
		return 0;
	key = mirror__od_spec_text(hub, type, name);
	if (tried_recently(od, key)) {
		free(key);
		return 0;
	}
	/* no worker waits for another's listing, and a flood of names costs the upstream no more than
	 * the minute's budget: the client asks again */
	if (od->listing || !rate_ok(od, httpd_peer(req))) {
		bool busy = od->listing;
		free(key);
		if (busy)
			od->refused_busy++;
		else
			od->refused_rate++;
		httpd_add_header(req, "Retry-After", busy ? "2" : "60");
		refuse(req, busy ? 503 : 429, type, name,
		       busy ? "the mirror is listing another repository on demand; ask again shortly"
			    : "too many repositories asked for on demand this minute; ask again later");
		return 1;
	}
	note_tried(od, key);
	free(key);
	od->listing = true;
	j = xcalloc(1, sizeof(*j));
	j->rt = rt;
	j->od = od;
	j->hub = xstrdup(hub);
	j->type = xstrdup(type);
	j->name = xstrdup(name);
	j->by = xstrdup(httpd_peer(req));
	j->refuse = refuse;
	httpd_defer(req, track_work, track_done, j);
	return 1;
}

