/*
 * sync-refs.c - the sync's second pass: the refs a repo mirrors besides the followed one (its tags by
 * default; sync.h says when upstream's refs are listed). The wanted refs become srepos of their own,
 * run through the first pass's machinery (listing, content jobs shared with it, recording).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <uv.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "hub/upstream.h"
#include "sync-int.h"

/* How long a repo's refs are trusted under the tags policy when its followed snapshot did not move:
 * a tag on an old commit shows up within a week (sync --check-refs: at once). */
#define REFS_RECHECK_S (7 * 24 * 3600)
/* At most this many refs per repo (the rest are reported as skipped: name them with add --refs). */
#define MAX_REFS 64

static bool policy_is(const char *p, const char *word)
{
	return p && !strcmp(p, word);
}

static bool refs_due(const struct mirror__sync *s, const struct srepo *r)
{
	const char *p = r->cr->refs_policy, *o = r->res->outcome;

	if (r->error || !o || (strcmp(o, "ok") && strcmp(o, "unchanged")) || !p || policy_is(p, "default"))
		return false;
	if (r->spec.hub == HUB_MS && r->spec.type == HUB_DATASET)
		return false; /* ModelScope lists no refs of a dataset */
	if (!policy_is(p, "tags") || s->cfg->check_refs || !strcmp(o, "ok") || !r->cr->refs_checked_at)
		return true;
	return time(NULL) - r->cr->refs_checked_at >= REFS_RECHECK_S;
}

/* Does r's policy want upstream's ref e? names: the policy's list, or NULL. */
static bool ref_wanted(const struct srepo *r, json_t *names, const struct hub_ref *e)
{
	const char *p = r->cr->refs_policy;
	json_t *v;
	size_t i;

	if (!strcmp(e->name, r->cr->follow_rev))
		return false;
	if (policy_is(p, "all"))
		return true;
	if (policy_is(p, "tags")) /* and the datasets library's parquet conversion */
		return !strcmp(e->kind, "tag") || (!strcmp(e->kind, "convert") && r->spec.type == HUB_DATASET);
	json_array_foreach(names, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), e->name))
			return true;
	return false;
}

static size_t ref_result_add(struct mirror_sync_repo_result *res, const char *name, const char *kind)
{
	res->refs = xreallocarray(res->refs, res->nrefs + 1, sizeof(*res->refs));
	memset(&res->refs[res->nrefs], 0, sizeof(*res->refs));
	res->refs[res->nrefs].name = xstrdup(name);
	res->refs[res->nrefs].kind = kind;
	return res->nrefs++;
}

/* A ref to list and fetch in the second pass, like r's followed revision. */
static void second_add(struct mirror__sync *s, struct srepo *r, const struct hub_ref *e, size_t idx, const char *known)
{
	struct srepo *q;

	if (s->nsecond == s->capsecond) {
		s->capsecond = s->capsecond ? s->capsecond * 2 : 16;
		s->second = xreallocarray(s->second, s->capsecond, sizeof(*s->second));
	}
	q = &s->second[s->nsecond++];
	memset(q, 0, sizeof(*q));
	q->s = s;
	q->cr = r->cr;
	q->res = r->res;
	q->parent = r;
	q->spec = r->spec;
	q->ref_rev = xstrdup(e->commit[0] ? e->commit : e->name);
	q->spec.revision = q->ref_rev;
	q->ref_name = xstrdup(e->name);
	q->ref_tag = !strcmp(e->kind, "tag");
	q->ref_idx = idx;
	if (known)
		memcpy(q->ref_known, known, 41);
}

static void refs_start(struct mirror__sync *s);

static void on_refs(void *ud, int result, struct hub_refs *refs)
{
	struct srepo *r = ud;
	struct mirror__sync *s = r->s;
	struct catalog *c = s->d->catalog;
	struct mirror_sync_repo_result *res = r->res;
	char *sel = catalog_repo_selection(r->cr);
	json_t *names = r->cr->refs_policy[0] == '[' ? json_loads(r->cr->refs_policy, 0, NULL) : NULL, *v;
	size_t taken = 0, i;

	s->refs_active--;
	res->refs_listed = true;
	if (result) {
		res->refs_error = xasprintf("listing refs: %s", refs->message ? refs->message : err_str(result));
		r->refs_bad = true;
		goto out;
	}
	r->keep = json_array();
	for (i = 0; i < refs->n; i++) {
		const struct hub_ref *e = &refs->v[i];
		char known[41];
		size_t k;
		int pe;

		if (!ref_wanted(r, names, e))
			continue;
		json_array_append_new(r->keep, json_string(e->name));
		k = ref_result_add(res, e->name, e->kind);
		if (taken++ >= MAX_REFS) {
			res->refs[k].outcome = "skipped";
			res->refs[k].error =
				xasprintf("more than %d refs: name the ones to mirror with add --refs", MAX_REFS);
			continue;
		}
		if (e->commit[0]) {
			/* Hugging Face names the commit: one the catalog holds costs nothing */
			pe = catalog_ref_point(c, r->cr->id, e->name, !strcmp(e->kind, "tag"), e->commit, sel);
			if (!pe) {
				res->refs[k].outcome = "unchanged";
				res->refs[k].commit = xstrdup(e->commit);
				continue;
			}
			if (pe != HM_ERR_NOT_FOUND) {
				res->refs[k].outcome = "error";
				res->refs[k].error = xasprintf("catalog: %s", catalog_errmsg(c));
				r->refs_bad = true;
				continue;
			}
			second_add(s, r, e, k, NULL);
		} else {
			second_add(s, r, e, k, catalog_ref_commit(c, r->cr->id, e->name, sel, known) ? NULL : known);
		}
	}
	/* named in the policy, not upstream (any more): reported, and its ref is dropped */
	json_array_foreach(names, i, v) {
		size_t k;
		bool found = !json_is_string(v) || !strcmp(json_string_value(v), r->cr->follow_rev);
		for (k = 0; k < refs->n && !found; k++)
			found = !strcmp(refs->v[k].name, json_string_value(v));
		if (!found) {
			k = ref_result_add(res, json_string_value(v), NULL);
			res->refs[k].outcome = "missing";
		}
	}
out:
	json_decref(names);
	free(sel);
	hub_refs_free(&refs);
	refs_start(s);
	if (!s->refs_active && s->refs_next == s->nfirst && s->running)
		uv_stop(&s->loop);
}

/* Ask upstream's refs of the first-pass repos where due, a few at a time. */
static void refs_start(struct mirror__sync *s)
{
	while (s->refs_next < s->nfirst && s->refs_active < (size_t)s->cfg->max_parallel_listings) {
		struct srepo *r = &s->first[s->refs_next++];
		int e;

		if (!refs_due(s, r))
			continue;
		s->refs_active++;
		e = hub_refs_fetch(s->client, &r->spec, on_refs, r);
		if (e) {
			s->refs_active--;
			r->res->refs_listed = true;
			r->res->refs_error = xasprintf("listing refs: %s", err_str(e));
			r->refs_bad = true;
		}
	}
}

/* The second pass: list the due repos' refs, then sync the wanted ones like the first pass did its
 * repos (the content jobs, and so what the first pass fetched, are shared), then drop what upstream
 * no longer has where every wanted ref came in. */
void mirror__sync_refs_pass(struct mirror__sync *s)
{
	s->first = s->repos;
	s->nfirst = s->nrepos;
	refs_start(s);
	if (s->refs_active) {
		s->running = true;
		uv_run(&s->loop, UV_RUN_DEFAULT);
		s->running = false;
	}
	if (s->nsecond) {
		s->repos = s->second;
		s->nrepos = s->nsecond;
		s->next_listing = 0;
		s->repos_done = 0;
		mirror__sync_start_listings(s);
		if (s->repos_done < s->nrepos) {
			s->running = true;
			uv_run(&s->loop, UV_RUN_DEFAULT);
			s->running = false;
		}
		s->repos = s->first;
		s->nrepos = s->nfirst;
	}
	for (size_t i = 0; i < s->nfirst; i++) {
		struct srepo *r = &s->first[i];
		char *keep;

		if (!r->keep || r->refs_bad)
			continue;
		keep = json_dumps(r->keep, JSON_COMPACT);
		if (catalog_refs_checked(s->d->catalog, r->cr->id, keep, (int64_t)time(NULL), &r->res->refs_dropped))
			log_warn("sync", "catalog: %s", catalog_errmsg(s->d->catalog));
		free(keep);
	}
}
