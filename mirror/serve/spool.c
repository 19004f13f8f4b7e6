/*
 * spool.c - the bodies of commits and git pushes, kept in an unnamed file as they arrive until a
 * worker reads them (docs/uploads.md, "Bodies and their bounds"; docs/security.md).
 *
 * Who may send one is decided from the request's head, before a byte of the body is kept: a token
 * with a write grant for a repository of a local namespace that exists here (the handlers' own gates,
 * asked without answering). Anyone else's body is not claimed: it is refused unread, or read into
 * memory within serve's 1 MiB like any body nobody claims, and the handler answers 401, 403 or 404 as
 * it always has. A writer's body is bounded by the least of: the most one request may send
 * (--write-body-max), what its namespace's quota still has room for, the room its file system has
 * beyond the store's reserve (mirror_data_room; a push's pack counts twice: git keeps its own copy
 * while it takes it), and what all the bodies being received may hold together (--write-spool-max). A
 * body that declares more is refused before it is sent (413, 403 for the quota, 507 for the disk, 503
 * with Retry-After for the spools), a chunked one cut off where it passes. The spools' bytes are
 * counted here, apart from the store (whose size is its blobs' in the catalog), and shown in
 * /metrics. All of it runs on the loop: the claim's catalog lookups are the handlers' own (the repo by
 * its name; with a quota, the namespace's size, as the LFS batch asks it), once per request.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/bug.h"
#include "base/size.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hf.h"
#include "hub/hub.h"
#include "mirror/data.h"
#include "access.h"
#include "routes-int.h"

#define QUOTA_SLACK (1LL << 20)   /* a body that adds nothing (deletions, a ref moved) has room past a full quota */
#define RECHECK ((int64_t)4 << 20) /* a chunked body's room asked again each time it grows by this much */

/* The spool's part of the routes (rt->spool). */
struct mirror__spool {
	int64_t body_max;             /* serve --write-body-max: one commit's or push's body */
	int64_t spool_max;            /* serve --write-spool-max: all of them being received at once */
	int64_t bytes;                /* what the bodies being received or read hold now (on the loop) */
	int64_t promised;             /* ... and what their Content-Lengths say is still to come */
	uint64_t refused;             /* bodies refused for a bound (/metrics) */
};

struct mirror__spool *mirror__spool_new(void)
{
	struct mirror__spool *sp = xcalloc(1, sizeof(*sp));

	mirror__spool_set_bounds(sp, 0, 0);
	return sp;
}

void mirror__spool_free(struct mirror__spool **sp)
{
	if (!sp || !*sp)
		return;
	BUG_ON((*sp)->bytes || (*sp)->promised); /* every body is released before (httpd_free, the jobs) */
	free(*sp);
	*sp = NULL;
}

void mirror__spool_set_bounds(struct mirror__spool *sp, int64_t body_max, int64_t spool_max)
{
	sp->body_max = body_max > 0 ? body_max : (int64_t)1 << 30;
	sp->spool_max = spool_max > 0 ? spool_max : (int64_t)4 << 30;
}

void mirror__spool_stats(const struct mirror_routes *rt, int64_t *bytes, uint64_t *refused)
{
	*bytes = rt->spool->bytes;
	*refused = rt->spool->refused;
}

/* Is path a commit's (api/{models|datasets}/ORG/NAME/commit/REV)? Then *type and *name (malloc'd). */
static bool commit_target(const char *path, char **type, char **name)
{
	struct hf_path p;
	bool yes;

	hf_path_split(&p, path);
	yes = p.n >= 6 && !strcmp(p.v[0], "api") && (!strcmp(p.v[1], "models") || !strcmp(p.v[1], "datasets")) &&
	      !strcmp(p.v[4], "commit");
	if (yes) {
		*name = xasprintf("%s/%s", p.v[2], p.v[3]);
		*type = xstrdup(!strcmp(p.v[1], "models") ? "model" : "dataset");
		if (hub_check_name(HUB_HF, *name)) {
			FREE_AND_NULL(name);
			FREE_AND_NULL(type);
			yes = false;
		}
	}
	hf_path_release(&p);
	return yes;
}

/* May this request write repo type/name: what the handlers' gates let through (mirror__write_gate, the
 * push's gate, a local repo that exists; for a push, one its token may read), asked without answering. */
static bool may_write(const struct mirror_routes *rt, const struct httpd_req *r, const char *type, const char *name,
		      bool push)
{
	char buf[512];
	const char *tok = mirror__request_token(r, buf, sizeof(buf));
	struct catalog_repo repo;
	bool ok;

	if (!mirror__local_namespace(rt, name) || !tok || !mirror_access_may_write(rt->access, tok, "hf", type, name) ||
	    catalog_repo_get(rt->data->catalog, "hf", type, name, &repo))
		return false;
	ok = repo.local &&
	     (!push || (mirror_access_allows(rt->access, tok, repo.hub, repo.type, repo.name) &&
			(!mirror__private_local(&repo) || mirror_access_private_allows(rt->access, tok, &repo))));
	catalog_repo_release(&repo);
	return ok;
}

/* The most body s may hold now, and, when that is less than what it asks for, how it is refused. */
static int64_t room_for(struct mirror__commit_body *s)
{
	struct mirror_routes *rt = s->rt;
	/* what the other bodies hold or were promised */
	int64_t others = rt->spool->bytes - s->got + rt->spool->promised - s->promised;
	int64_t limit = rt->spool->body_max, disk = mirror_data_room(rt->data, MIRROR_DATA_SPILL, NULL), b;
	char a[32], c[32];

	size_human(rt->spool->body_max, a, sizeof(a));
	s->fail = 413;
	snprintf(s->why, sizeof(s->why), "A %s's body is at most %s on this mirror: %s", s->push ? "push" : "commit", a,
		 s->push ? "push fewer commits at once, large files through Git LFS" : "commit in parts");
	if (s->xet_max >= 0 && s->xet_max < limit) {
		limit = s->xet_max;
		size_human(s->xet_max, a, sizeof(a));
		snprintf(s->why, sizeof(s->why), "A Xet xorb or shard is at most %s", a);
	}
	if (s->quota_room >= 0 && s->quota_room < limit) {
		limit = s->quota_room;
		s->fail = 403;
		snprintf(s->why, sizeof(s->why), "%s", s->quota_why);
	}
	if (disk >= 0) {
		/* what was written is off the disk's free space already; what was promised is not */
		b = s->got +
		    (disk > rt->spool->promised - s->promised ? disk - (rt->spool->promised - s->promised) : 0) /
			    (s->push ? 2 : 1);
		if (b < limit) {
			limit = b;
			s->fail = 507;
			snprintf(s->why, sizeof(s->why),
				 "No space left on the mirror's disk: no room for this body now");
		}
	}
	b = rt->spool->spool_max - others;
	if (b < limit) {
		limit = b;
		s->fail = 503;
		size_human(rt->spool->spool_max, c, sizeof(c));
		snprintf(s->why, sizeof(s->why), "The mirror is receiving %s of commits and pushes already: try again "
			 "in a minute", c);
	}
	return limit > 0 ? limit : 0;
}

/* The namespace's quota room, as a body's bytes (a commit's files travel in base64: 4 bytes a 3). */
static void quota_room(struct mirror__commit_body *s, const char *name)
{
	char *ns = xstrndup(name, strcspn(name, "/")), h[32], q[32];
	int64_t quota = mirror__local_quota(s->rt, ns), used = 0;

	s->quota_room = -1;
	if (quota >= 0 && !catalog_namespace_bytes(s->rt->data->catalog, "hf", ns, &used)) {
		s->quota_room = (quota > used ? (quota - used) / 3 * 4 : 0) + QUOTA_SLACK;
		size_human(used, h, sizeof(h));
		size_human(quota, q, sizeof(q));
		snprintf(s->quota_why, sizeof(s->quota_why),
			 "The storage quota of namespace %s is exceeded: it holds %s "
			 "and its quota is %s: this body cannot fit",
			 ns, h, q);
	}
	free(ns);
}

static void count(struct mirror__commit_body *s, int64_t n)
{
	int64_t d = n < s->promised ? n : s->promised;

	s->got += n;
	s->rt->spool->bytes += n;
	s->promised -= d;
	s->rt->spool->promised -= d;
}

static int spool_data(void *ud, const char *p, size_t n)
{
	struct mirror__commit_body *s = ud;
	int64_t after = s->got + (int64_t)n;

	if (s->status)
		return HTTPD_SINK_STOP;
	if (s->declared < 0 && after >= s->checked + RECHECK) {
		s->limit = room_for(s); /* a chunked body: the disk and the other bodies asked again */
		s->checked = after;
	}
	if (after > s->limit) {
		/* past its bound: nothing more is kept, and the request is answered now */
		s->status = s->fail;
		s->rt->spool->refused++;
		return HTTPD_SINK_STOP;
	}
	while (n > 0) {
		ssize_t w = write(s->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->status = errno == ENOSPC || errno == EDQUOT ? 507 : 500;
			snprintf(s->why, sizeof(s->why), "%s",
				 s->status == 507 ? "No space left on the mirror's disk: no room for this body now"
						  : "The mirror could not keep this body");
			return HTTPD_SINK_STOP;
		}
		count(s, w);
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void spool_abandon(void *ud)
{
	mirror__spool_release(ud);
}

void mirror__spool_release(struct mirror__commit_body *s)
{
	if (!s)
		return;
	s->rt->spool->bytes -= s->got;
	s->rt->spool->promised -= s->promised;
	BUG_ON(s->rt->spool->bytes < 0 || s->rt->spool->promised < 0); /* each body counted once, and uncounted once */
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

bool mirror__spool_claim(struct mirror_routes *rt, struct httpd_req *r, struct httpd_body_sink *sink)
{
	const char *cl = httpd_header(r, "Content-Length");
	char *type = NULL, *name = NULL, *dir, *end = NULL;
	struct mirror__commit_body *s;
	bool push = false, claimed = false;
	int xet = 0;               /* a Xet xorb's or shard's (routes-xet-write.c): 1 may send it, -1 may not */
	int64_t xet_max = -1;

	if (!commit_target(httpd_path(r), &type, &name) &&
	    !(push = rt->fronts->git_receive_repo(httpd_path(r), &type, &name)) &&
	    !(xet = rt->fronts->xet_body(rt, r, &type, &name, &xet_max)))
		return false;
	if (xet ? xet < 0 : !may_write(rt, r, type, name, push)) {
		/* not kept: the handler's gates answer it as ever (401, 403, 404) */
		httpd_body_refuse(r, 403, "This request may not write here");
		goto out;
	}
	s = xcalloc(1, sizeof(*s));
	s->head.kind = MIRROR__SINK_COMMIT;
	s->head.abandon = spool_abandon;
	s->fd = -1;
	s->rt = rt;
	s->push = push;
	s->xet_max = xet > 0 ? xet_max : -1;
	s->declared = -1;
	if (cl) {
		errno = 0;
		s->declared = strtoll(cl, &end, 10);
		if (errno || *end || s->declared < 0)
			s->declared = -1; /* (http-parser refused a bad one already) */
	}
	quota_room(s, name);
	s->limit = room_for(s);
	if (s->declared > s->limit) {
		/* refused before it is sent: a client that waits for 100-continue is told so at once */
		rt->spool->refused++;
		httpd_body_refuse(r, s->fail, s->why);
		free(s);
		goto out;
	}
	dir = mirror_data_path(rt->data, MIRROR_DATA_SPILL);
	s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	free(dir);
	if (s->fd < 0) {
		s->status = 500;
		snprintf(s->why, sizeof(s->why), "The mirror could not keep this body");
	}
	if (s->declared > 0) {
		s->promised = s->declared;
		rt->spool->promised += s->declared;
	}
	*sink = (struct httpd_body_sink){ spool_data, spool_abandon, s };
	claimed = true;
out:
	free(type);
	free(name);
	return claimed;
}

bool mirror__spool_ok(struct httpd_req *req, const struct mirror__commit_body *s, int *status, const char **why)
{
	int refused = httpd_body_refused(req, why);

	if (s && !s->status)
		return true;
	*status = s ? s->status : refused;
	if (s)
		*why = s->why[0] ? s->why : NULL;
	if (*status == 503)
		httpd_add_header(req, "Retry-After", "60");
	return false;
}
