/*
 * routes-ms.c - the ModelScope API (docs/protocols/modelscope.md) for the repositories synced from ModelScope,
 * answered from the catalog and the store. Every JSON answer has the envelope
 * {Code, Success, Data, Message, RequestId}; the old SDK accepts only Code == 200 with Success.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "hub/hub.h"
#include "hub/ms.h"
#include "access.h"
#include "ondemand.h"
#include "routes-int.h"
#include "store/store.h"

#define MS_DEFAULT_PAGE 100
#define MS_MAX_PAGE 1000

static void ms_envelope(struct httpd_req *req, int status, json_t *data, const char *message)
{
	mirror__respond_json(req, status, mirror__ms_envelope_json(status, data, message));
}

struct msreq {
	struct mirror_routes *rt;
	struct httpd_req *req;
	const char *type;
	char *name;
	struct catalog_repo repo;
	bool repo_loaded;
	struct catalog_snapshot snap;
};

static void msreq_release(struct msreq *m)
{
	free(m->name);
	if (m->repo_loaded)
		catalog_repo_release(&m->repo);
}

/* A repo tracked but never got, because upstream refused the mirror: answer as ModelScope answers a
 * client without access (403), or one asking for what is gone (404). true when it answered. */
static bool ms_refused(struct msreq *m)
{
	const char *st = m->repo.sync_status;
	char *msg;

	if (m->repo.head_commit || !st)
		return false;
	if (!strcmp(st, "gated") || !strcmp(st, "denied"))
		msg = xasprintf("This mirror has no access to %s %s upstream (%s): its operator must obtain access and "
				"give the mirror a token that has it.", m->type, m->name,
				!strcmp(st, "gated") ? "access must be requested and approved" : "private");
	else if (!strcmp(st, "disabled"))
		msg = xstrdup("Access to this resource is disabled.");
	else if (!strcmp(st, "missing"))
		msg = xasprintf("%s %s not found upstream", m->type, m->name);
	else
		return false;
	ms_envelope(m->req, !strcmp(st, "missing") ? 404 : 403, NULL, msg);
	free(msg);
	return true;
}

/* A repo of a local namespace, pushed through the Hugging Face API (docs/uploads.md), read through
 * ModelScope's too: the SDK's default revision, master, is the repo's own default branch when it has
 * no branch of that name. */
static int ms_resolve_local(struct msreq *m, const char *rev, bool *found)
{
	int r = catalog_resolve(m->rt->data->catalog, "hf", m->type, m->name, rev, &m->repo, &m->snap, found);

	if (r == HM_ERR_NOT_FOUND && *found && rev && !strcmp(rev, "master") && m->repo.local) {
		catalog_repo_release(&m->repo);
		r = catalog_resolve(m->rt->data->catalog, "hf", m->type, m->name, NULL, &m->repo, &m->snap, found);
	}
	if (*found && !m->repo.local) {
		catalog_repo_release(&m->repo);
		memset(&m->repo, 0, sizeof(m->repo));
		*found = false;
		r = HM_ERR_NOT_FOUND;
	}
	return r;
}

static int ms_resolve(struct msreq *m)
{
	char *rev = httpd_query_param(m->req, MS_QUERY_REVISION);
	bool found = false;
	int r;

	if (rev && !*rev)
		FREE_AND_NULL(&rev);
	r = catalog_resolve(m->rt->data->catalog, "ms", m->type, m->name, rev, &m->repo, &m->snap, &found);
	if (!found && mirror__local_namespace(m->rt, m->name))
		r = ms_resolve_local(m, rev, &found);
	m->repo_loaded = found;
	if (found && !mirror__repo_visible(m->rt, m->req, &m->repo)) {
		/* a private repo nobody may read here: as one the mirror does not have */
		char *msg = xasprintf("%s %s not found", m->type, m->name);
		ms_envelope(m->req, 404, NULL, msg);
		free(msg);
		free(rev);
		return -1;
	}
	if (found && !mirror__access_check(m->rt, m->req, m->repo.hub, m->type, m->name, &m->repo, "ms")) {
		free(rev);
		return -1;
	}
	if (found && m->rt->ondemand && m->repo.options && strstr(m->repo.options, "\"on_demand\""))
		mirror_ondemand_touch(m->rt, m->repo.id);
	if (found)
		mirror__tier_headers(m->req, &m->repo);
	if (r == HM_ERR_NOT_FOUND && !found &&
	    mirror_ondemand_track(m->rt, m->req, "ms", m->type, m->name, mirror__ms_refuse)) {
		/* fetched on demand: answered once it is listed */
	} else if (r && !(r == HM_ERR_NOT_FOUND && found && ms_refused(m))) {
		char *msg = !found ? xasprintf("%s %s not found", m->type, m->name)
				   : xasprintf("Revision %s not found", rev ? rev : "(default)");
		ms_envelope(m->req, r == HM_ERR_NOT_FOUND ? 404 : 500, NULL, msg);
		free(msg);
	}
	free(rev);
	return r;
}

static json_t *ms_file_entry(const struct catalog_snapshot *snap, const char *path, bool dir,
			     const struct catalog_entry *e)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	if (dir)
		return json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:b, s:s, s:s, s:I, s:s, s:s}", "Name", base,
				 "Path", path, "Type", "tree", "Size", 0, "Sha256", "", "Revision", snap->commit,
				 "IsLFS", 0, "Mode", "040000", "CommitMessage", "", "CommittedDate",
				 (json_int_t)snap->synced_at, "CommitterName", "", "InCheck", "");
	return json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:b, s:s, s:s, s:I, s:s, s:s}", "Name", base, "Path", path,
			 "Type", "blob", "Size", (json_int_t)e->size, "Sha256", e->sha256, "Revision", snap->commit,
			 "IsLFS", e->lfs_oid[0] != '\0', "Mode", "100644", "CommitMessage", "",
			 "CommittedDate", (json_int_t)snap->synced_at, "CommitterName", "", "InCheck", "");
}

struct list_ctx {
	const struct catalog_snapshot *snap;
	json_t *files;
	const char *root;       /* "" or "dir" */
	size_t rootlen;
	bool recursive;
	char *last_dir;
	char *prev;
	size_t skip, take, seen;  /* paging over entries */
};

static void list_add(struct list_ctx *l, json_t *entry)
{
	if (l->seen++ < l->skip || json_array_size(l->files) >= l->take) {
		json_decref(entry);
		return;
	}
	json_array_append_new(l->files, entry);
}

static int list_cb(void *ud, const struct catalog_entry *e)
{
	struct list_ctx *l = ud;
	const char *rel = e->path + (l->rootlen ? l->rootlen + 1 : 0);
	const char *slash = strchr(rel, '/');

	if (l->recursive) {
		/* folders first, as the listing nests (each once) */
		for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
			size_t n = (size_t)(s - e->path);
			char *d;
			if (l->prev && strlen(l->prev) > n && !strncmp(l->prev, e->path, n) && l->prev[n] == '/')
				continue;
			d = xstrndup(e->path, n);
			list_add(l, ms_file_entry(l->snap, d, true, NULL));
			free(d);
		}
		list_add(l, ms_file_entry(l->snap, e->path, false, e));
		free(l->prev);
		l->prev = xstrdup(e->path);
	} else if (slash) {
		size_t n = (size_t)(slash - e->path);
		if (!l->last_dir || strlen(l->last_dir) != n || strncmp(l->last_dir, e->path, n)) {
			free(l->last_dir);
			l->last_dir = xstrndup(e->path, n);
			list_add(l, ms_file_entry(l->snap, l->last_dir, true, NULL));
		}
	} else {
		list_add(l, ms_file_entry(l->snap, e->path, false, e));
	}
	return 0;
}

static bool qbool(const struct httpd_req *req, const char *name, bool dflt)
{
	char *v = httpd_query_param(req, name);
	bool b = v ? (!strcasecmp(v, "true") || !strcmp(v, "1")) : dflt;

	free(v);
	return b;
}

static long qlong(const struct httpd_req *req, const char *name, long dflt)
{
	char *v = httpd_query_param(req, name), *end;
	long n = v ? strtol(v, &end, 10) : dflt;

	if (v && (*end || end == v))
		n = dflt;
	free(v);
	return n;
}

/* A files listing: a model's is whole (300,000 files take as long on the loop as a Hugging Face repo
 * info), so built on a worker. */
struct list_job {
	struct mirror__job j;
	struct catalog_snapshot snap;
	char *root;             /* "" or "dir" */
	bool recursive;
	size_t skip, take;
};

static void list_build(struct mirror__job *job, struct catalog *cat)
{
	struct list_job *lj = (struct list_job *)job;
	struct list_ctx l;
	char *prefix = *lj->root ? xasprintf("%s/", lj->root) : NULL;
	int r;

	memset(&l, 0, sizeof(l));
	l.snap = &lj->snap;
	l.files = json_array();
	l.root = lj->root;
	l.rootlen = strlen(l.root);
	l.recursive = lj->recursive;
	l.skip = lj->skip;
	l.take = lj->take;
	r = catalog_snapshot_walk(cat, lj->snap.id, prefix, NULL, 0, list_cb, &l);
	if (r) {
		json_decref(l.files);
		job->status = 500;
		job->body = mirror__ms_envelope_json(500, NULL, "catalog error");
	} else {
		job->status = 200;
		job->body = mirror__ms_envelope_json(200, json_pack("{s:o}", "Files", l.files), "success");
	}
	free(l.last_dir);
	free(l.prev);
	free(prefix);
}

static void list_release(struct mirror__job *job)
{
	free(((struct list_job *)job)->root);
	free(job);
}

/* Files listing; paged when page_size > 0 (datasets), whole otherwise (models). */
static void ms_list(struct msreq *m, bool paged)
{
	struct list_job *lj;
	char *root = httpd_query_param(m->req, "Root");
	long page = qlong(m->req, "PageNumber", 1), size = qlong(m->req, "PageSize", MS_DEFAULT_PAGE);

	if (ms_resolve(m))
		goto out;
	if (root) { /* "/" and "" mean the top; otherwise a folder, with or without slashes around it */
		size_t n = strlen(root);
		char *p = root;
		while (*p == '/')
			p++, n--;
		while (n && p[n - 1] == '/')
			p[--n] = '\0';
		memmove(root, p, n + 1);
		if (*root && path_check_str(root)) {
			ms_envelope(m->req, 400, NULL, "bad Root");
			goto out;
		}
	}
	lj = xcalloc(1, sizeof(*lj));
	lj->j.build = list_build;
	lj->j.release = list_release;
	lj->snap = m->snap;
	lj->root = root ? root : xstrdup("");
	root = NULL;
	lj->recursive = qbool(m->req, "Recursive", false);
	if (paged) {
		if (page < 1)
			page = 1;
		if (size < 1 || size > MS_MAX_PAGE)
			size = MS_DEFAULT_PAGE;
		lj->skip = (size_t)(page - 1) * (size_t)size;
		lj->take = (size_t)size;
	} else {
		lj->take = (size_t)-1;
	}
	mirror__defer(m->rt, m->req, &lj->j);
out:
	free(root);
}

static void ms_info(struct msreq *m)
{
	json_t *d, *tags;
	const char *slash;

	if (ms_resolve(m))
		return;
	slash = strchr(m->name, '/');
	tags = m->repo.tags ? json_loads(m->repo.tags, 0, NULL) : NULL;
	d = json_pack("{s:I, s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:i, s:b, s:s}",
		      "Id", (json_int_t)m->repo.id, "Name", slash ? slash + 1 : m->name, "ChineseName", "",
		      "Description", "", "License", m->repo.license ? m->repo.license : "",
		      "Tags", json_is_array(tags) ? tags : json_array(), "CreatedTime",
		      (json_int_t)(m->repo.created_at > 0 ? m->repo.created_at : m->repo.added_at),
		      "LastUpdatedTime", (json_int_t)m->snap.synced_at,
		      "Downloads", (json_int_t)(m->repo.downloads > 0 ? m->repo.downloads : 0),
		      "Stars", (json_int_t)(m->repo.likes > 0 ? m->repo.likes : 0), "Visibility", 5,
		      "IsAccessible", 1, "Revision", m->repo.follow_rev);
	if (!json_is_array(tags))
		json_decref(tags);
	if (!strcmp(m->type, "model")) {
		json_object_set_new(d, "Path", json_stringn(m->name, slash ? (size_t)(slash - m->name) : 0));
		if (m->repo.pipeline_tag)
			json_object_set_new(d, "Tasks", json_pack("[{s:s}]", "Name", m->repo.pipeline_tag));
		else
			json_object_set_new(d, "Tasks", json_array());
		if (m->repo.library_name)
			json_object_set_new(d, "LibraryName", json_string(m->repo.library_name));
	} else {
		json_object_set_new(d, "Namespace", json_stringn(m->name, slash ? (size_t)(slash - m->name) : 0));
		json_object_set_new(d, "Owner", json_stringn(m->name, slash ? (size_t)(slash - m->name) : 0));
		json_object_set_new(d, "Type", json_integer(2));
	}
	ms_envelope(m->req, 200, d, "success");
}

struct rev_ctx {
	json_t *branches, *tags;
	int64_t when;
};

static int rev_cb(void *ud, const char *name, const char *kind, const char *commit)
{
	struct rev_ctx *r = ud;
	json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:s}", "Revision", name, "CreatedAt", (json_int_t)r->when,
			      "CreatedBy", "", "Message", "", "Url", "");

	(void)commit;
	if (!strcmp(kind, "tag") || !strcmp(kind, "branch"))
		json_array_append_new(!strcmp(kind, "tag") ? r->tags : r->branches, o);
	else
		json_decref(o);
	return 0;
}

static void ms_revisions(struct msreq *m)
{
	struct rev_ctx r = { json_array(), json_array(), 0 };

	if (ms_resolve(m)) {
		json_decref(r.branches);
		json_decref(r.tags);
		return;
	}
	r.when = m->snap.synced_at;
	catalog_refs_each(m->rt->data->catalog, m->repo.id, rev_cb, &r);
	ms_envelope(m->req, 200, json_pack("{s:{s:o, s:o}}", "RevisionMap", "Branches", r.branches, "Tags", r.tags),
		    "success");
}

/* Bytes of one file, with Range (the old SDK always sends one). */
static void ms_download(struct msreq *m)
{
	char *path = httpd_query_param(m->req, MS_QUERY_FILE);
	struct catalog_entry e = { 0 };

	if (ms_resolve(m))
		goto out;
	if (!path || path_check_str(path) || catalog_snapshot_file(m->rt->data->catalog, m->snap.id, path, &e)) {
		ms_envelope(m->req, 404, NULL, "file not found");
		goto out;
	}
	if (!mirror_access_content_open(m->rt->access, &m->repo)) {
		/* a gated or private upstream repo the operator did not open (docs/security.md) */
		ms_envelope(m->req, 403, NULL, "this repository is closed on this mirror");
		goto out;
	}
	httpd_add_headerf(m->req, "ETag", "\"%s\"", e.sha256);
	{
		struct mirror_ondemand_file of = { "ms", m->type, m->name, m->snap.commit, m->repo.follow_rev, e.path,
						   e.sha256, e.size, m->snap.repo_id, false };
		if (mirror__send_file(m->rt, m->req, m->snap.id, &of))
			ms_envelope(m->req, 503, NULL, "file temporarily unavailable on this mirror");
	}
out:
	catalog_entry_release(&e);
	free(path);
}

int mirror__route_ms(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *type)
{
	struct msreq m = { .rt = rt, .req = req, .type = type };
	struct ms_path mp;

	(void)rest;
	/* the grammar (hub/ms.h), as the agent's endpoint reads it */
	if (ms_parse_path(httpd_path(req), httpd_method(req), &mp)) {
		ms_envelope(req, 404, NULL, "not found");
		return 0;
	}
	m.type = mp.type;
	/* datasets/{Id}/repo/tree: the old SDK's numeric id */
	if (mp.id && catalog_repo_name_by_id(rt->data->catalog, mp.id, "ms", "dataset", &m.name)) {
		/* or a local dataset's (docs/uploads.md), whose info gave its catalog id the same way */
		if (!catalog_repo_name_by_id(rt->data->catalog, mp.id, "hf", "dataset", &m.name) &&
		    !mirror__local_namespace(rt, m.name))
			FREE_AND_NULL(&m.name);
	} else if (!mp.id)
		m.name = xstrdup(mp.name);
	if (!m.name || hub_check_name(HUB_MS, m.name)) {
		ms_envelope(req, 404, NULL, "not found");
		goto out;
	}
	switch (mp.route) {
	case MS_ROUTE_INFO: ms_info(&m); break;
	case MS_ROUTE_REVISIONS: ms_revisions(&m); break;
	case MS_ROUTE_FILES: ms_list(&m, false); break;
	case MS_ROUTE_TREE: ms_list(&m, true); break;
	case MS_ROUTE_FILE:
		httpd_set_route(req, "ms_file");
		ms_download(&m);
		break;
	case MS_ROUTE_DOWNLOADED:
		ms_envelope(req, 200, json_true(), "success"); /* download counters: fire and forget */
		break;
	}
out:
	ms_path_release(&mp);
	msreq_release(&m);
	return 0;
}
