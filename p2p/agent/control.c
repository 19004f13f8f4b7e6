/*
 * control.c - the agent's control API on its unix socket (the routes are listed in agent.h).
 *
 * A mount is answered on the loop, blocking it while the mirror is asked for the snapshot and the
 * FUSE mount is made (tens of milliseconds on a LAN): the socket's clients are the instance's own
 * commands, and reads of mounted files never touch this loop (they run on FUSE's threads).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/cache.h"
#include "hub/http.h"
#include "hub/httpd.h"
#include "hub/hub.h"
#include "p2p/mount.h"
#include "p2p/p2p.h"

static void answer(struct httpd_req *req, int status, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);

	httpd_respond_str(req, status, "application/json", s);
	free(s);
	json_decref(j);
}

__attribute__((format(printf, 3, 4)))
static int fail(struct httpd_req *req, int status, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	answer(req, status, json_pack("{s:s}", "error", msg ? msg : "out of memory"));
	free(msg);
	return 0;
}

/* ---- status -------------------------------------------------------------------------------------- */

/* What a snapshot's error means for its user: libtorrent says "Bad address" when a write to a full
 * disk faults; say the disk is full when the cache's file system lacks the bytes still to come. */
static char *error_words(struct agent *a, const struct p2p_torrent_status *st)
{
	struct statvfs fs;
	char free_s[32], need_s[32];
	int64_t avail, need = st->total_wanted - st->total_done;

	if (statvfs(a->cfg->cache_dir, &fs) == 0) {
		avail = (int64_t)fs.f_bavail * (int64_t)fs.f_frsize;
		if (avail < need + (1 << 20)) {
			snprintf(free_s, sizeof(free_s), "%" PRId64, avail);
			snprintf(need_s, sizeof(need_s), "%" PRId64, need);
			return xasprintf("the cache's disk is full (%s bytes free, %s more needed): free space in %s or "
					 "give the agent a --cache-size (%s)", free_s, need_s, a->cfg->cache_dir, st->message);
		}
	}
	return xstrdup(st->message);
}

/* What libtorrent counts, and what the fill wrote that it does not count yet. */
static int64_t have_bytes(const struct snap *s, const struct p2p_torrent_status *st)
{
	int64_t have = st->total_done + agent_fill_unseen(s);

	return have < st->total_wanted ? have : st->total_wanted;
}

/* One entry of status: snapshot s as name (one of s->names). */
static json_t *snap_json(struct agent *a, const struct snap *s, json_t *name)
{
	struct p2p_torrent_status st = { 0 };
	json_t *mounts = json_array(), *j;
	char *path = xasprintf("%s/%s", s->save, s->name ? s->name : "");
	bool ok = !p2p_session_torrent_status(a->ses, s->btih, &st);

	for (size_t k = 0; k < s->nmounts; k++)
		if (s->mounts[k].name == name)
			json_array_append_new(mounts, json_string(s->mounts[k].dir));
	j = json_pack("{s:O?, s:O?, s:O?, s:O?, s:s, s:I, s:I, s:b, s:b, s:b, s:I, s:o, s:i, s:I, s:I}",
		      "spec", json_object_get(name, "spec"), "revision", json_object_get(name, "revision"),
		      "commit", json_object_get(name, "commit"), "synced_at", json_object_get(name, "synced_at"),
		      "btih", s->btih, "bytes_have", (json_int_t)(ok ? have_bytes(s, &st) : 0),
		      "bytes_total", (json_int_t)(ok ? st.total_wanted : 0), "complete", ok && (st.seeding || st.seed_mode),
		      "verified", s->verified && !json_array_size(s->pending_links), "pinned", s->pinned,
		      "last_used", (json_int_t)s->last_used, "mounts", mounts, "peers", ok ? st.peers : 0,
		      "uploaded", (json_int_t)(ok ? st.uploaded : 0), "downloaded", (json_int_t)(ok ? st.downloaded : 0));
	if (ok && st.error) {
		char *w = error_words(a, &st);
		json_object_set_new(j, "error", json_string(w));
		free(w);
	}
	/* each pull's hub cache links, by the id its answer gave: null (made) or why they failed */
	json_object_set_new(j, "links", json_deep_copy(s->links_done));
	json_object_set_new(j, "path", json_string(path));
	/* pieces the HTTP fill fetched from the mirror while alone (fill.c), in downloaded too */
	json_object_set_new(j, "fetched_over_http", json_integer(s->fill_bytes));
	/* mounts umount detached that still serve open files or another namespace's copy */
	json_object_set_new(j, "detached_in_use", json_integer((json_int_t)s->nlingering));
	/* taken back whole after a restart: its pieces are verified as they are read, not all up front */
	json_object_set_new(j, "checked_lazily", json_boolean(ok && st.seed_mode));
	free(path);
	return j;
}

static int do_status(struct agent *a, struct httpd_req *req)
{
	json_t *snaps = json_array();
	struct p2p_session_status ss = { 0 };
	int64_t up = 0, down = 0;

	for (size_t i = 0; i < a->nsnaps; i++) {
		json_t *nm;
		size_t k;
		json_array_foreach(a->snaps[i]->names, k, nm)
			json_array_append_new(snaps, snap_json(a, a->snaps[i], nm));
	}
	p2p_session_status(a->ses, &ss);
	p2p_session_totals(a->ses, &up, &down);
	answer(req, 200, json_pack("{s:i, s:i, s:s, s:s?, s:s, s:I, s:I, s:i, s:I, s:I, s:I, s:o}", "pid", (int)getpid(),
				   "http_port", a->http ? httpd_port(a->http) : 0,
				   "socket", a->cfg->socket_path, "mirror", a->cfg->mirror, "cache", a->cfg->cache_dir,
				   "cache_used", (json_int_t)a->cache_used, "cache_size", (json_int_t)a->cfg->cache_size,
				   "p2p_port", ss.listen_port, "started_at", (json_int_t)a->started_at,
				   "uploaded", (json_int_t)up, "downloaded", (json_int_t)down, "snapshots", snaps));
	return 0;
}

/* ---- mount --------------------------------------------------------------------------------------- */

/* GET mirror + path; 0 with the body, or an HTTP status for the client with *why (malloc'd). */
static int mirror_get(const char *mirror, const char *path, const char *token, char **body, size_t *len,
		      char **why)
{
	char *url = xasprintf("%s%s", mirror, path), *err = NULL;
	long status = 0;
	int r;

	r = hub_http_get_blocking(url, token, 128 << 20, body, len, &status, &err);
	free(url);
	if (r) {
		*why = xasprintf("cannot reach the mirror at %s: %s", mirror, err ? err : err_str(r));
		free(err);
		return 502;
	}
	if (status != 200) {
		json_t *j = json_loadb(*body, *len, 0, NULL);
		const char *e = json_string_value(json_object_get(j, "error"));
		*why = xstrdup(e ? e : "unexpected answer");
		json_decref(j);
		free(*body);
		*body = NULL;
		/* 503: a snapshot the mirror fetched on demand is being completed; the client asks again */
		return status == 404 || status == 401 || status == 403 || status == 503 ? (int)status : 502;
	}
	return 0;
}

char *agent_mirror_at(const char *list, size_t i)
{
	const char *p = list;
	size_t k = 0;

	/* empty entries ("A,,B", a trailing comma) are skipped, not the end of the list */
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		while (n && *p == ' ') {
			p++;
			n--;
		}
		while (n && (p[n - 1] == ' ' || p[n - 1] == '/'))
			n--;
		if (n && k++ == i)
			return xstrndup(p, n);
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

static int fetch_snapshot_one(const char *mirror, const char *token, const struct hub_spec *spec, json_t **meta,
			      char **tor, size_t *tlen, char **why);

int agent_fetch_snapshot(const char *mirrors, const char *token, const struct hub_spec *spec, json_t **meta,
			 char **tor, size_t *tlen, char **why)
{
	char *m;
	int st = 502;

	/* several mirrors of one deployment (a comma list): the first that answers; one that cannot be
	 * reached, or answers nonsense, passes the question to the next */
	for (size_t i = 0; (m = agent_mirror_at(mirrors, i)) != NULL; i++) {
		if (i) {
			free(*why);
			*why = NULL;
		}
		st = fetch_snapshot_one(m, token, spec, meta, tor, tlen, why);
		free(m);
		if (st != 502)
			break;
		json_decref(*meta);
		*meta = NULL;
	}
	if (st == 502 && !*why)
		*why = xstrdup("no mirror given");
	return st;
}

static int fetch_snapshot_one(const char *mirror, const char *token, const struct hub_spec *spec, json_t **meta,
			      char **tor, size_t *tlen, char **why)
{
	char *q = spec->revision ? hub_url_escape(spec->revision, false) : NULL, *body = NULL, *path;
	const char *rev, *commit;
	size_t len = 0;
	int st;

	path = xasprintf("/api/p2p/torrent/%s/%s/%s?meta=1%s%s", hub_kind_name(spec->hub), hub_type_name(spec->type),
			 spec->name, q ? "&rev=" : "", q ? q : "");
	st = mirror_get(mirror, path, token, &body, &len, why);
	free(path);
	free(q);
	if (st)
		return st;
	*meta = json_loadb(body, len, 0, NULL);
	free(body);
	rev = json_string_value(json_object_get(*meta, "revision"));
	commit = json_string_value(json_object_get(*meta, "commit"));
	/* the commit names a folder of the HF cache: 40 hex digits, nothing else */
	if (!rev || !commit || hub_check_revision(rev) || !hex_is_lower(commit, 40)) {
		*why = xasprintf("%s answered a snapshot without a usable commit or ref", mirror);
		return 502;
	}
	/* the torrent of that very commit, even if a sync moves the ref meanwhile */
	path = xasprintf("/api/p2p/torrent/%s/%s/%s?rev=%s", hub_kind_name(spec->hub), hub_type_name(spec->type),
			 spec->name, commit);
	st = mirror_get(mirror, path, token, tor, tlen, why);
	free(path);
	return st;
}

static struct agent_mount *mount_at(struct agent *a, const char *dir, struct snap **owner)
{
	for (size_t i = 0; i < a->nsnaps; i++)
		for (size_t k = 0; k < a->snaps[i]->nmounts; k++)
			if (!strcmp(a->snaps[i]->mounts[k].dir, dir)) {
				if (owner)
					*owner = a->snaps[i];
				return &a->snaps[i]->mounts[k];
			}
	return NULL;
}

/* What the answer of a mount or pull says of the snapshot held that the mirror could not be asked
 * for: "offline" (why), and "offline_using" (the name used: revision, commit, when synced). */
static void offline_answer(json_t *ans, json_t *body)
{
	if (json_object_get(body, "offline")) {
		json_object_set(ans, "offline", json_object_get(body, "offline"));
		json_object_set(ans, "offline_using", json_object_get(body, "offline_using"));
	}
}

/* Mount snapshot s (as name) on dir and link it; answers the request. */
static int mount_snap(struct agent *a, struct httpd_req *req, struct snap *s, json_t *name,
		      const struct hub_spec *spec, json_t *body, const char *dir)
{
	struct p2p_mount_config mc = { .ses = a->ses, .btih = s->btih, .dir = dir,
				       .read_timeout_s = a->cfg->read_timeout_s };
	struct p2p_mount *m = NULL;
	char *err = NULL;
	json_t *ans;
	int r;

	if ((r = path_mkdirs(dir, 0755)) != 0)
		return fail(req, 500, "cannot create %s: %s", dir, err_str(r));
	if (p2p_mount_start(&mc, &m, &err)) {
		fail(req, 500, "%s", err ? err : "cannot mount");
		free(err);
		return 0;
	}
	s->mounts = xreallocarray(s->mounts, s->nmounts + 1, sizeof(*s->mounts));
	s->mounts[s->nmounts].dir = xstrdup(dir);
	s->mounts[s->nmounts].m = m;
	s->mounts[s->nmounts].name = name;
	s->nmounts++;
	if (agent_snap_link(a, s, name, body, dir, &err)) {
		bool in_use;
		fail(req, 500, "%s", err ? err : "cannot link the files into the hub cache");
		free(err);
		err = NULL;
		if (agent_mount_detach(a, s, s->nmounts - 1, &in_use, &err)) {
			fprintf(stderr, "hubmirror agent: %s\n", err ? err : "cannot unmount");
			free(err);
		}
		return 0;
	}
	ans = json_pack("{s:O, s:O, s:O, s:s, s:s, s:i, s:s?, s:s?}", "spec", json_object_get(name, "spec"), "revision",
			json_object_get(name, "revision"), "commit", json_object_get(name, "commit"), "btih", s->btih,
			"dir", dir, "pid", (int)getpid(),
			"hf_cache", spec->hub == HUB_HF ? json_string_value(json_object_get(body, "hf_cache")) : NULL,
			"ms_cache", spec->hub == HUB_MS ? json_string_value(json_object_get(body, "ms_cache")) : NULL);
	offline_answer(ans, body);
	answer(req, 200, ans);
	return 0;
}

/* The snapshot a mount or pull of spec gets: the mirror's current one (taken into the session), or
 * when the mirror cannot be reached the newest one held of the same revision (body's "offline" then
 * says why, "offline_using" which). NULL after answering the request with the error; else s with
 * *name (borrowed from s->names). */
static struct snap *resolve(struct agent *a, struct httpd_req *req, const struct hub_spec *spec, json_t *body,
			    json_t **name)
{
	const char *sp = json_string_value(json_object_get(body, "spec"));
	const char *mirror = json_string_value(json_object_get(body, "mirror"));
	const char *token = json_string_value(json_object_get(body, "token"));
	char *canon = hub_spec_format(spec, 0);
	struct snap *s = NULL;
	json_t *meta = NULL;
	char *tor = NULL, *why = NULL;
	size_t tlen = 0;
	int st;

	*name = NULL;
	if (!mirror)
		mirror = a->cfg->mirror;
	if (!mirror) {
		fail(req, 400, "which mirror? this agent has none: give one");
		free(canon);
		return NULL;
	}
	st = agent_fetch_snapshot(mirror, token, spec, &meta, &tor, &tlen, &why);
	if (st == 502 && (*name = agent_held(a, canon, spec->revision, &s))) {
		/* the mirror is down or broken: what this instance has of that revision still serves */
		fprintf(stderr, "hubmirror agent: %s: %s; using the snapshot held (%s @ %.12s)\n", sp, why,
			json_string_value(json_object_get(*name, "revision")),
			json_string_value(json_object_get(*name, "commit")));
		json_object_set_new(body, "offline", json_string(why));
		json_object_set_new(body, "offline_using",
				    json_pack("{s:O?, s:O?, s:O?, s:O?}", "revision", json_object_get(*name, "revision"),
					      "commit", json_object_get(*name, "commit"), "synced_at",
					      json_object_get(*name, "synced_at"), "taken_at", json_object_get(*name, "taken_at")));
	} else if (st) {
		fail(req, st, "%s on %s: %s", sp, mirror, why);
	} else {
		json_object_set_new(meta, "spec", json_string(canon));
		s = agent_snap_add(a, json_incref(meta), (const unsigned char *)tor, tlen, spec->revision, name, &why);
		if (!s)
			fail(req, 502, "cannot take the snapshot's torrent: %s", why ? why : "?");
	}
	json_decref(meta);
	free(tor);
	free(why);
	free(canon);
	if (s)
		agent_snap_used(a, s);
	return s;
}

/* Parse the body's spec (an org/name repo); 0, or answers 400 and returns -1. */
static int body_spec(struct httpd_req *req, json_t *body, struct hub_spec *spec)
{
	const char *sp = json_string_value(json_object_get(body, "spec"));

	if (!sp || hub_spec_parse(sp, spec)) {
		fail(req, 400, "'%s' is not a SPEC like hf:org/name[@rev]", sp ? sp : "");
		return -1;
	}
	if (!strchr(spec->name, '/')) {
		hub_spec_release(spec);
		fail(req, 400, "%s needs an org/name repo", sp);
		return -1;
	}
	return 0;
}

static int do_mount(struct agent *a, struct httpd_req *req, json_t *body)
{
	const char *dir = json_string_value(json_object_get(body, "dir"));
	struct hub_spec spec;
	struct snap *s;
	json_t *name;

	if (body_spec(req, body, &spec))
		return 0;
	if (!dir || dir[0] != '/' || path_check_str(dir + 1))
		fail(req, 400, "the folder must be an absolute path");
	else if (mount_at(a, dir, NULL))
		fail(req, 409, "%s is mounted already (hubmirror umount %s)", dir, dir);
	else if ((s = resolve(a, req, &spec, body, &name)))
		mount_snap(a, req, s, name, &spec, body, dir);
	hub_spec_release(&spec);
	return 0;
}

/* Fetch the snapshot whole into the cache (no FUSE), linked into the hub caches once verified: the
 * answer's "link" is the id under which status's "links" gives this pull's outcome. */
static int do_pull(struct agent *a, struct httpd_req *req, json_t *body)
{
	struct hub_spec spec;
	struct snap *s;
	json_t *where, *name, *ans;
	uint64_t id;

	if (body_spec(req, body, &spec))
		return 0;
	if ((s = resolve(a, req, &spec, body, &name))) {
		s->pinned |= json_is_true(json_object_get(body, "pin"));
		id = ++a->link_counter;
		where = json_pack("{s:O?, s:O?, s:O?, s:O, s:I}", "hf_cache", json_object_get(body, "hf_cache"), "ms_cache",
				  json_object_get(body, "ms_cache"), "ms_hub_cache", json_object_get(body, "ms_hub_cache"),
				  "name", name, "id", (json_int_t)id);
		json_array_append_new(s->pending_links, where);
		ans = json_pack("{s:O, s:O, s:O, s:s, s:I, s:i}", "spec", json_object_get(name, "spec"), "revision",
				json_object_get(name, "revision"), "commit", json_object_get(name, "commit"), "btih", s->btih,
				"link", (json_int_t)id, "pid", (int)getpid());
		offline_answer(ans, body);
		if (s->verified)
			agent_link_pending(a, s); /* held whole already */
		answer(req, 200, ans);
	}
	hub_spec_release(&spec);
	return 0;
}

static int do_umount(struct agent *a, struct httpd_req *req, json_t *body)
{
	const char *dir = json_string_value(json_object_get(body, "dir"));
	struct snap *s = NULL;
	struct agent_mount *am = dir ? mount_at(a, dir, &s) : NULL;
	char *err = NULL, *d;
	bool in_use = false;

	if (!am)
		return fail(req, 404, "%s is not mounted by this agent", dir ? dir : "that");
	d = xstrdup(dir); /* dir may be the mount's own string, freed by the detach */
	if (agent_mount_detach(a, s, (size_t)(am - s->mounts), &in_use, &err)) {
		fail(req, 409, "%s", err ? err : "cannot unmount");
		free(err);
		free(d);
		return 0;
	}
	agent_snap_used(a, s);
	/* in_use: files are open there, or another mount namespace (a container started while it was
	 * mounted) holds a copy: those go on reading until they let go (docs/agent.md) */
	answer(req, 200, json_pack("{s:s, s:s, s:b}", "dir", d, "btih", s->btih, "in_use", in_use));
	free(d);
	return 0;
}

int agent_control(void *ud, struct httpd_req *req)
{
	struct agent *a = ud;
	const char *path = httpd_path(req), *b;
	bool post = !strcmp(httpd_method(req), "POST");
	json_t *body = NULL;
	size_t blen = 0;

	if (!strcmp(path, "/v1/status"))
		return do_status(a, req);
	if (!post)
		return fail(req, !strcmp(path, "/v1/mount") || !strcmp(path, "/v1/umount") || !strcmp(path, "/v1/pull") ? 405 : 404,
			    "no such call: %s", path);
	if (!strcmp(path, "/v1/stop")) {
		agent_stop_soon(a);
		/* the caller waits for this process to end */
		answer(req, 200, json_pack("{s:s, s:i}", "status", "stopping", "pid", (int)getpid()));
		return 0;
	}
	b = httpd_body(req, &blen);
	body = json_loadb(b ? b : "", blen, 0, NULL);
	if (!json_is_object(body)) {
		json_decref(body);
		return fail(req, 400, "the body must be a JSON object");
	}
	if (!strcmp(path, "/v1/mount"))
		do_mount(a, req, body);
	else if (!strcmp(path, "/v1/pull"))
		do_pull(a, req, body);
	else if (!strcmp(path, "/v1/umount"))
		do_umount(a, req, body);
	else
		fail(req, 404, "no such call: %s", path);
	json_decref(body);
	return 0;
}
