/*
 * preheat.c - agent --preheat: fetch in the background the snapshots the mirror marks to pre-distribute
 * (`hubmirror add --preheat` on the mirror; GET /api/p2p/preheat), so that when a job first needs a
 * model on a cluster, the instances already have it and seed it to each other.
 *
 * Every --preheat-every seconds (and at start) a worker asks the mirror for the list and, for each
 * snapshot the agent does not hold, for its description and torrent; the loop then takes them into
 * the session like a pull (no hub cache links: the instance's own pull or mount makes those).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent-int.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "hub/http/http.h"
#include "hub/hub.h"

struct agent_preheat {
	bool running;                   /* a preheat job runs */
	int64_t at;                     /* when the last one ended */
};

struct agent_preheat *agent_preheat_new(void)
{
	return xcalloc(1, sizeof(struct agent_preheat));
}

void agent_preheat_free(struct agent_preheat **p)
{
	if (!p)
		return;
	free(*p);
	*p = NULL;
}

struct found {
	json_t *meta;
	char *tor;
	size_t tlen;
};

struct preheat {
	uv_work_t w;
	struct agent *a;
	json_t *held;                   /* commits the agent holds, copied on the loop */
	struct found *found;
	size_t nfound;
	char *why;
};

static bool holds(const struct preheat *p, const char *commit)
{
	json_t *c;
	size_t i;

	json_array_foreach(p->held, i, c)
		if (!strcmp(json_string_value(c), commit))
			return true;
	return false;
}

static void preheat_work(uv_work_t *w)
{
	struct preheat *p = w->data;
	char *url = NULL, *body = NULL, *err = NULL, *m;
	json_t *root, *list, *it;
	size_t len = 0, i;
	long status = 0;
	int r = -EINVAL;

	/* the mirrors in turn: the first that answers */
	for (i = 0; (r || status != 200) && (m = agent_mirror_at(p->a->cfg->mirror, i)) != NULL; i++) {
		free(url);
		free(err);
		free(body);
		err = body = NULL;
		status = 0;
		url = xasprintf("%s/api/p2p/preheat", m);
		free(m);
		{
			struct hub_http_call c = { .url = url, .max = 16 << 20, .connect_timeout_ms = 5000,
						   .stall_s = agent_mirror_stall_s(p->a), .cancel = &p->a->quit };
			r = hub_http_call_blocking(&c, &body, &len, &status, &err);
		}
	}
	if (r || status != 200) {
		p->why = xasprintf("cannot get the preheat list: %s", err ? err : "unexpected answer");
		free(err);
		free(body);
		free(url);
		return;
	}
	root = json_loadb(body, len, 0, NULL);
	list = json_object_get(root, "snapshots");
	json_array_foreach(list, i, it) {
		const char *spec = json_string_value(json_object_get(it, "spec"));
		const char *commit = json_string_value(json_object_get(it, "commit"));
		struct hub_spec sp;
		struct found f = { 0 };
		char *why = NULL;
		if (!spec || !commit || holds(p, commit) || hub_spec_parse(spec, &sp))
			continue;
		free(sp.revision);
		sp.revision = xstrdup(commit);
		if (!agent_fetch_snapshot(p->a, p->a->cfg->mirror, NULL, &sp, &f.meta, &f.tor, &f.tlen, &why)) {
			json_object_set_new(f.meta, "spec", json_string(spec));
			p->found = xreallocarray(p->found, p->nfound + 1, sizeof(*p->found));
			p->found[p->nfound++] = f;
		} else {
			json_decref(f.meta);
			free(f.tor);
		}
		free(why);
		hub_spec_release(&sp);
	}
	json_decref(root);
	free(body);
	free(url);
}

static void preheat_done(uv_work_t *w, int status)
{
	struct preheat *p = w->data;
	struct agent *a = p->a;

	(void)status;
	a->preheat->running = false;
	a->preheat->at = time(NULL);
	if (p->why && !a->stopping)
		log_info("agent", "preheat: %s", p->why);
	for (size_t i = 0; i < p->nfound; i++) {
		char *why = NULL;
		if (!a->stopping) {
			log_info("agent", "preheating %s @ %.12s",
				json_string_value(json_object_get(p->found[i].meta, "spec")),
				json_string_value(json_object_get(p->found[i].meta, "commit")));
			if (!agent_snap_add(a, json_incref(p->found[i].meta), (const unsigned char *)p->found[i].tor,
					    p->found[i].tlen, NULL, NULL, NULL, &why))
				log_warn("agent", "preheat: %s", why ? why : "cannot take the snapshot");
		}
		free(why);
		json_decref(p->found[i].meta);
		free(p->found[i].tor);
	}
	free(p->found);
	free(p->why);
	json_decref(p->held);
	free(p);
}

void agent_preheat_tick(struct agent *a)
{
	struct preheat *p;

	if (!a->cfg->preheat_every_s || !a->cfg->mirror || a->preheat->running || a->stopping ||
	    (a->preheat->at && time(NULL) - a->preheat->at < a->cfg->preheat_every_s))
		return;
	p = xcalloc(1, sizeof(*p));
	p->a = a;
	p->held = json_array();
	for (size_t i = 0; i < a->nsnaps; i++) {
		json_t *nm;
		size_t k;
		json_array_foreach(a->snaps[i]->names, k, nm)
			if (json_string_value(json_object_get(nm, "commit")))
				json_array_append(p->held, json_object_get(nm, "commit"));
	}
	p->w.data = p;
	a->preheat->running = true;
	uv_queue_work(&a->loop, &p->w, preheat_work, preheat_done);
}
