/*
 * control.c - the agent's control API on its unix socket (the routes are listed in agent.h).
 *
 * Nothing here waits on the loop for anything another party controls: a mount or pull asks the mirror
 * on a worker (httpd_defer, mirror.c) and is answered when it has its answer; umount detaches lazily and
 * never joins a FUSE thread (docs/agent.md, "Containers beside the agent"). What runs on the loop is
 * the agent's own bookkeeping and the FUSE mount itself; reads of mounted files never touch this loop
 * (they run on FUSE's threads). What status answers is control-status.c's.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/size.h"
#include "base/xmalloc.h"
#include "hub/cache.h"
#include "hub/http/http.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "hub/select.h"
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

/* POST /v1/http {"listen": "HOST:PORT"}: the local hub endpoint, for an agent started without one
 * (mount and pull start agents without --http): no restart, its mounts stay. */
static void do_http(struct agent *a, struct httpd_req *req, json_t *body)
{
	const char *listen = json_string_value(json_object_get(body, "listen"));
	char *err = NULL;

	if (!listen || !*listen) {
		fail(req, 400, "give listen: HOST:PORT");
		return;
	}
	if (a->http) {
		fail(req, 409, "the local endpoint already listens on %s (port %d)",
		     a->http_listen ? a->http_listen : "?", httpd_port(a->http));
		return;
	}
	if (agent_http_start(a, listen, &err)) {
		fail(req, 400, "%s", err ? err : "cannot listen");
		free(err);
		return;
	}
	log_info("agent", "local endpoint on %s (port %d), started through the control socket", listen,
		 httpd_port(a->http));
	answer(req, 200, json_pack("{s:s, s:i}", "listen", listen, "port", httpd_port(a->http)));
}

static int do_status(struct agent *a, struct httpd_req *req)
{
	answer(req, 200, agent_status_json(a));
	return 0;
}

/* ---- mount --------------------------------------------------------------------------------------- */

static struct agent_mount *mount_at(struct agent *a, const char *dir, struct agent_snap **owner)
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
static int mount_snap(struct agent *a, struct httpd_req *req, struct agent_snap *s, json_t *name,
		      const struct hub_spec *spec, json_t *body, const char *dir)
{
	struct p2p_mount_config mc = { .ses = a->ses, .btih = s->btih, .dir = dir,
				       .read_timeout_s = a->cfg->read_timeout_s };
	struct p2p_mount *m = NULL;
	char *err = NULL;
	json_t *ans;
	int r;

	/* other users (a container's UID) read a mount as root's agent made it: the folders it makes on
	 * the way are theirs to pass through, whatever the umask (they hold no content) */
	if ((r = path_mkdirs_exact(dir, 0755)) != 0)
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
	s->mounts[s->nmounts].where = json_pack("{s:O?, s:O?, s:O?}", "hf_cache", json_object_get(body, "hf_cache"),
						"ms_cache", json_object_get(body, "ms_cache"), "ms_hub_cache",
						json_object_get(body, "ms_hub_cache"));
	s->nmounts++;
	if (agent_snap_link(a, s, name, body, dir, false, &err)) {
		bool in_use;
		fail(req, 500, "%s", err ? err : "cannot link the files into the hub cache");
		free(err);
		err = NULL;
		if (agent_mount_detach(a, s, s->nmounts - 1, &in_use, NULL, NULL, &err)) {
			log_warn("agent", "%s", err ? err : "cannot unmount");
			free(err);
		}
		return 0;
	}
	agent_shortcuts(a, s); /* held whole already: the big files straight from the cache */
	if (!json_string_value(json_object_get(body, "prefetch")) ||
	    strcmp(json_string_value(json_object_get(body, "prefetch")), "none"))
		agent_weights_prefetch(a, s); /* the shards a checkpoint's index names (weights.c) */
	ans = json_pack("{s:O, s:O, s:O, s:s, s:s, s:i, s:s?, s:s?}", "spec", json_object_get(name, "spec"), "revision",
			json_object_get(name, "revision"), "commit", json_object_get(name, "commit"), "btih", s->btih,
			"dir", dir, "pid", (int)getpid(),
			"hf_cache", spec->hub == HUB_HF ? json_string_value(json_object_get(body, "hf_cache")) : NULL,
			"ms_cache", spec->hub == HUB_MS ? json_string_value(json_object_get(body, "ms_cache")) : NULL);
	offline_answer(ans, body);
	if (json_object_get(body, "warning"))
		json_object_set(ans, "warning", json_object_get(body, "warning"));
	answer(req, 200, ans);
	return 0;
}

/* A mount or pull on its way: the mirror is asked on a worker (mirror.c), never on the loop, so a mirror
 * that is slow or silent holds this request and no other. */
struct resolve_job {
	struct agent *a;
	json_t *body;                   /* the request's body (touched on the loop only) */
	struct hub_spec spec;
	char *mirror, *token, *dir;     /* dir: a mount's folder; NULL for a pull */
	/* the worker's answer */
	json_t *meta;
	char *tor, *why;
	size_t tlen;
	int st;
};

static void resolve_free(struct resolve_job *j)
{
	json_decref(j->body);
	json_decref(j->meta);
	hub_spec_release(&j->spec);
	free(j->mirror);
	free(j->token);
	free(j->dir);
	free(j->tor);
	free(j->why);
	free(j);
}

static void resolve_work(void *job)
{
	struct resolve_job *j = job;

	j->st = agent_fetch_snapshot(j->a, j->mirror, j->token, &j->spec, &j->meta, &j->tor, &j->tlen, &j->why);
}

/* Is there room on the cache's disk for what the snapshot meta describes still lacks of the files
 * want names (NULL: all)? A pull is refused at once when there is not (answered 507, saying what is
 * missing, what is free and what to do: true); a mount goes on, since it fetches what is read first,
 * with the same words as a warning in the body for its answer (a mount is asked of the whole: its
 * reads may want any of it). */
static bool room_refused(struct agent *a, struct httpd_req *req, struct resolve_job *j, const char *canon, json_t *meta,
			 json_t *want)
{
	int64_t total = 0, need = agent_snap_need(a, meta, want, &total);
	char *why = agent_room_refusal(a, canon, need, total);

	/* a pull bigger than the cache's bound would be evicted right after its "pulled": only pinned */
	if (!why && !j->dir && a->cfg->cache_size > 0 && total > a->cfg->cache_size &&
	    !json_is_true(json_object_get(j->body, "pin"))) {
		char t[32], c[32];
		size_human(total, t, sizeof(t));
		size_human(a->cfg->cache_size, c, sizeof(c));
		why = xasprintf(
			"%s (%s%s) is bigger than the agent's cache bound (--cache-size %s): it would be "
			"evicted once pulled. Keep it whatever the bound with pull --pin (until hubmirror drop), "
			"start the agent with a bigger --cache-size, or take the files you need that fit (pull "
			"--include PATTERN, at most %s)",
			canon, t, want ? " of the files selected" : "", c, c);
	}
	if (!why)
		return false;
	if (j->dir) {
		json_object_set_new(j->body, "warning", json_string(why));
		free(why);
		return false;
	}
	fail(req, 507, "%s", why);
	free(why);
	return true;
}

/* The files the job wants of the snapshot meta describes (a new array, or NULL for every one): a
 * pull's --include and --exclude, a mount's --prefetch. A mount never fetches every file in the
 * background unasked, nor when asked for a snapshot bigger than the cache's bound or the room on its
 * disk: then it prefetches what it would by default, and says why in its answer's warning. */
static json_t *job_want(struct agent *a, struct resolve_job *j, const char *canon, json_t *meta)
{
	json_t *want;
	int64_t total = 0, need;
	char *room, t[32], c[32];

	if (!j->dir)
		return agent_select(meta, json_object_get(j->body, "include"), json_object_get(j->body, "exclude"));
	if ((want = agent_prefetch(meta, json_object_get(j->body, "prefetch"))))
		return want;
	need = agent_snap_need(a, meta, NULL, &total);
	room = agent_room_refusal(a, canon, need, total);
	if (!room && (a->cfg->cache_size <= 0 || total <= a->cfg->cache_size))
		return NULL;
	size_human(total, t, sizeof(t));
	size_human(a->cfg->cache_size, c, sizeof(c));
	if (!room)
		room = xasprintf("%s (%s) is bigger than the cache's bound (--cache-size %s)", canon, t, c);
	json_object_set_new(j->body, "warning", json_sprintf("--prefetch all left out: %s; the files are fetched as "
							     "they are read", room));
	free(room);
	return agent_prefetch(meta, NULL);
}

/* The snapshot the job's mount or pull gets: the mirror's current one (taken into the session), or
 * when the mirror cannot be reached the newest one held of the same revision (body's "offline" then
 * says why, "offline_using" which). NULL after answering the request with the error; else s with
 * *name (borrowed from s->names). */
static struct agent_snap *resolved(struct agent *a, struct httpd_req *req, struct resolve_job *j, json_t **name)
{
	const char *sp = json_string_value(json_object_get(j->body, "spec"));
	char *canon = hub_spec_format(&j->spec, 0), *why = NULL;
	struct agent_snap *s = NULL;
	json_t *want = NULL;

	*name = NULL;
	if (j->st == 502 && (*name = agent_held(a, canon, j->spec.revision, &s))) {
		/* the mirror is down or broken: what this instance has of that revision still serves */
		log_info("agent", "%s: %s; using the snapshot held (%s @ %.12s)", sp, j->why,
			json_string_value(json_object_get(*name, "revision")),
			json_string_value(json_object_get(*name, "commit")));
		json_object_set_new(j->body, "offline", json_string(j->why));
		json_object_set_new(
			j->body, "offline_using",
			json_pack("{s:O?, s:O?, s:O?, s:O?}", "revision", json_object_get(*name, "revision"), "commit",
				  json_object_get(*name, "commit"), "synced_at", json_object_get(*name, "synced_at"),
				  "taken_at", json_object_get(*name, "taken_at")));
	} else if (j->st) {
		fail(req, j->st, "%s on %s: %s", sp, j->mirror, j->why ? j->why : "?");
	} else if ((want = job_want(a, j, canon, j->meta)),
		   room_refused(a, req, j, canon, j->meta, j->dir ? NULL : want)) {
		json_decref(want);
		free(canon);
		return NULL;
	} else {
		json_object_set_new(j->meta, "spec", json_string(canon));
		s = agent_snap_add(a, json_incref(j->meta), (const unsigned char *)j->tor, j->tlen, j->spec.revision,
				   want, name, &why);
		if (!s)
			fail(req, 502, "cannot take the snapshot's torrent: %s", why ? why : "?");
	}
	free(why);
	if (s && j->st == 502) { /* offline: the copy held */
		want = job_want(a, j, canon, s->meta);
		if (room_refused(a, req, j, canon, s->meta, j->dir ? NULL : want))
			s = NULL;
		else
			agent_snap_want(a, s, want);
	}
	json_decref(want);
	free(canon);
	if (s && j->st != 502 && json_string_value(json_object_get(j->meta, "mirror")) &&
	    !json_equal(json_object_get(s->meta, "mirror"), json_object_get(j->meta, "mirror"))) {
		/* the mirror that answered last (status shows it) */
		json_object_set(s->meta, "mirror", json_object_get(j->meta, "mirror"));
		agent_snap_remember(a, s);
	}
	if (s) {
		struct p2p_torrent_status st;
		agent_snap_used(a, s);
		/* stopped by a full disk that has room now: a new request goes on at once */
		s->retried_ms = 0;
		if (!p2p_session_torrent_status(a->ses, s->btih, &st))
			agent_snap_retry(a, s, &st);
	}
	return s;
}

/* Answer a pull of snapshot s (as name): it downloads whole into the cache (no FUSE), and is linked
 * into the hub caches once verified; the answer's "link" is the id under which status's "links" gives
 * this pull's outcome. */
static void pull_snap(struct agent *a, struct httpd_req *req, struct agent_snap *s, json_t *name, json_t *body)
{
	json_t *where, *ans;
	uint64_t id = ++a->link_counter;

	s->pinned |= json_is_true(json_object_get(body, "pin"));
	where = json_pack("{s:O?, s:O?, s:O?, s:O, s:I}", "hf_cache", json_object_get(body, "hf_cache"), "ms_cache",
			  json_object_get(body, "ms_cache"), "ms_hub_cache", json_object_get(body, "ms_hub_cache"),
			  "name", name, "id", (json_int_t)id);
	json_array_append_new(s->pending_links, where);
	ans = json_pack("{s:O, s:O, s:O, s:s, s:I, s:i}", "spec", json_object_get(name, "spec"), "revision",
			json_object_get(name, "revision"), "commit", json_object_get(name, "commit"), "btih", s->btih,
			"link", (json_int_t)id, "pid", (int)getpid());
	offline_answer(ans, body);
	agent_snap_check(a, s);
	if (s->verified)
		agent_link_pending(a, s); /* held whole already */
	answer(req, 200, ans);
}

static void resolve_done(void *job, struct httpd_req *req)
{
	struct resolve_job *j = job;
	struct agent *a = j->a;
	struct agent_snap *s;
	json_t *name;

	if (!req) {
		resolve_free(j);
		return;
	}
	if (a->stopping)
		fail(req, 503, "the agent is stopping");
	else if (j->dir && mount_at(a, j->dir, NULL)) /* mounted meanwhile by another request */
		fail(req, 409, "%s is mounted already (hubmirror umount %s)", j->dir, j->dir);
	else if ((s = resolved(a, req, j, &name)) && j->dir)
		mount_snap(a, req, s, name, &j->spec, j->body, j->dir);
	else if (s)
		pull_snap(a, req, s, name, j->body);
	resolve_free(j);
}

/* Start a mount (dir) or pull (dir NULL) of spec (consumed) for req. */
static void resolve_start(struct agent *a, struct httpd_req *req, struct hub_spec *spec, json_t *body,
			  const char *dir)
{
	const char *mirror = json_string_value(json_object_get(body, "mirror"));
	const char *token = json_string_value(json_object_get(body, "token"));
	struct resolve_job *j;

	if (!mirror)
		mirror = a->cfg->mirror;
	if (!mirror) {
		fail(req, 400, "which mirror? this agent has none: give one");
		hub_spec_release(spec);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->a = a;
	j->body = json_incref(body);
	j->spec = *spec;
	j->mirror = xstrdup(mirror);
	j->token = token ? xstrdup(token) : NULL;
	j->dir = dir ? xstrdup(dir) : NULL;
	httpd_defer(req, resolve_work, resolve_done, j);
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

/* Is the body's key absent, or an array of patterns (hub/select.h)? Else answers 400: false. */
static bool globs_ok(struct httpd_req *req, json_t *body, const char *key)
{
	json_t *v = json_object_get(body, key), *it;
	size_t i;

	if (!v)
		return true;
	if (!json_is_array(v) || json_array_size(v) > 1000) {
		fail(req, 400, "%s must be an array of at most 1000 patterns", key);
		return false;
	}
	json_array_foreach(v, i, it)
		if (hub_glob_check(json_string_value(it))) {
			fail(req, 400, "%s: '%s' is not a pattern (1-1024 characters, no control characters)", key,
			     json_string_value(it) ? json_string_value(it) : "(not a string)");
			return false;
		}
	return true;
}

static int do_mount(struct agent *a, struct httpd_req *req, json_t *body)
{
	const char *dir = json_string_value(json_object_get(body, "dir"));
	const char *word = json_string_value(json_object_get(body, "prefetch"));
	struct hub_spec spec;

	if (word && strcmp(word, "all") && strcmp(word, "none"))
		return fail(req, 400, "prefetch is \"all\", \"none\" or an array of patterns, not '%s'", word);
	if (!word && !globs_ok(req, body, "prefetch"))
		return 0;
	if (body_spec(req, body, &spec))
		return 0;
	if (!dir || dir[0] != '/' || path_check_str(dir + 1))
		fail(req, 400, "the folder must be an absolute path");
	else if (mount_at(a, dir, NULL))
		fail(req, 409, "%s is mounted already (hubmirror umount %s)", dir, dir);
	else {
		resolve_start(a, req, &spec, body, dir);
		return 0;
	}
	hub_spec_release(&spec);
	return 0;
}

static int do_pull(struct agent *a, struct httpd_req *req, json_t *body)
{
	struct hub_spec spec;

	if (!globs_ok(req, body, "include") || !globs_ok(req, body, "exclude"))
		return 0;
	if (body_spec(req, body, &spec))
		return 0;
	resolve_start(a, req, &spec, body, NULL);
	return 0;
}

static int do_umount(struct agent *a, struct httpd_req *req, json_t *body)
{
	const char *dir = json_string_value(json_object_get(body, "dir"));
	struct agent_snap *s = NULL;
	struct agent_mount *am = dir ? mount_at(a, dir, &s) : NULL;
	char *err = NULL, *d;
	bool in_use = false;
	size_t relinked = 0, unlinked = 0;

	if (!am)
		return fail(req, 404, "%s is not mounted by this agent", dir ? dir : "that");
	d = xstrdup(dir); /* dir may be the mount's own string, freed by the detach */
	if (agent_mount_detach(a, s, (size_t)(am - s->mounts), &in_use, &relinked, &unlinked, &err)) {
		fail(req, 409, "%s", err ? err : "cannot unmount");
		free(err);
		free(d);
		return 0;
	}
	agent_snap_used(a, s);
	/* in_use: files are open there, or another mount namespace (a container started while it was
	 * mounted) holds a copy: those go on reading until they let go (docs/agent.md) */
	/* relinked: hub cache links now to the cache's verified files; unlinked: links taken away */
	answer(req, 200, json_pack("{s:s, s:s, s:b, s:I, s:I}", "dir", d, "btih", s->btih, "in_use", in_use, "relinked",
				   (json_int_t)relinked, "unlinked", (json_int_t)unlinked));
	free(d);
	return 0;
}

/* ---- verify -------------------------------------------------------------------------------------- */

/* Read back and hash every piece of the snapshots held (or those of one spec), on a worker: what
 * fails is fetched again (p2p_session_verify), the answer says what was found. */
struct verify_job {
	struct agent *a;
	size_t n;
	char (*btih)[41];
	int *checked, *damaged, *r;
	json_t *names;                  /* per snapshot: its specs, for the answer (loop only) */
};

static void verify_work(void *job)
{
	struct verify_job *v = job;

	for (size_t i = 0; i < v->n && !atomic_load(&v->a->quit); i++)
		v->r[i] = p2p_session_verify(v->a->ses, v->btih[i], &v->checked[i], &v->damaged[i]);
}

static void verify_done(void *job, struct httpd_req *req)
{
	struct verify_job *v = job;
	json_t *out = json_array();
	int bad = 0;

	for (size_t i = 0; i < v->n; i++) {
		struct agent_snap *s = agent_snap_find(v->a, v->btih[i]);
		/* not whole any more: a pull from now on waits for the pieces fetched again */
		if (s && v->damaged[i])
			agent_snap_damaged(v->a, s);
		if (req)
			json_array_append_new(out, json_pack("{s:s, s:O, s:i, s:i, s:b}", "btih", v->btih[i], "specs",
							     json_array_get(v->names, i), "pieces", v->checked[i],
							     "damaged", v->damaged[i], "held", v->r[i] == 0));
		bad += v->damaged[i];
	}
	if (req)
		answer(req, 200, json_pack("{s:o, s:i}", "snapshots", out, "damaged", bad));
	else
		json_decref(out);
	json_decref(v->names);
	free(v->btih);
	free(v->checked);
	free(v->damaged);
	free(v->r);
	free(v);
}

static int do_verify(struct agent *a, struct httpd_req *req, json_t *body)
{
	const char *want = json_string_value(json_object_get(body, "spec"));
	struct verify_job *v = xcalloc(1, sizeof(*v));
	char *canon = NULL;
	struct hub_spec sp;

	if (want) {
		if (hub_spec_parse(want, &sp)) {
			free(v);
			return fail(req, 400, "'%s' is not a SPEC like hf:org/name", want);
		}
		canon = hub_spec_format(&sp, 0);
		hub_spec_release(&sp);
	}
	v->a = a;
	v->names = json_array();
	v->btih = xcalloc(a->nsnaps + 1, sizeof(*v->btih));
	v->checked = xcalloc(a->nsnaps + 1, sizeof(int));
	v->damaged = xcalloc(a->nsnaps + 1, sizeof(int));
	v->r = xcalloc(a->nsnaps + 1, sizeof(int));
	for (size_t i = 0; i < a->nsnaps; i++) {
		json_t *specs = json_array(), *nm;
		bool match = !canon;
		size_t k;
		json_array_foreach(a->snaps[i]->names, k, nm) {
			json_array_append(specs, json_object_get(nm, "spec"));
			match |= canon && json_string_value(json_object_get(nm, "spec")) &&
				 !strcmp(json_string_value(json_object_get(nm, "spec")), canon);
		}
		if (!match) {
			json_decref(specs);
			continue;
		}
		memcpy(v->btih[v->n], a->snaps[i]->btih, 41);
		json_array_append_new(v->names, specs);
		v->n++;
	}
	free(canon);
	if (want && !v->n) {
		verify_done(v, NULL);
		return fail(req, 404, "this agent holds no snapshot of %s", want);
	}
	httpd_defer(req, verify_work, verify_done, v);
	return 0;
}

/* POST /v1/drop {"spec"}: the snapshots of SPEC (of SPEC@REV: that ref's or commit's) leave the cache,
 * as `hf cache delete` does: their torrent, their files and their record. Not one that is mounted or
 * still in use (it says where), nor while it is being checked or linked. The answer names each dropped
 * snapshot (spec, revision, commit, btih, the cache's folder of it) so that the caller can take its
 * hub cache links away. */
static int do_drop(struct agent *a, struct httpd_req *req, json_t *body)
{
	const char *want = json_string_value(json_object_get(body, "spec"));
	json_t *dropped = json_array();
	struct agent_snap **pick;
	char *canon;
	struct hub_spec sp;
	size_t n = 0;

	if (!want || hub_spec_parse(want, &sp)) {
		json_decref(dropped);
		return fail(req, 400, "'%s' is not a SPEC like hf:org/name[@rev]", want ? want : "");
	}
	canon = hub_spec_format(&sp, 0);
	pick = xcalloc(a->nsnaps + 1, sizeof(*pick));
	for (size_t i = 0; i < a->nsnaps; i++) {
		struct agent_snap *s = a->snaps[i];
		json_t *nm;
		size_t k;
		bool match = false;
		json_array_foreach(s->names, k, nm) {
			const char *ns = json_string_value(json_object_get(nm, "spec"));
			const char *rev = json_string_value(json_object_get(nm, "revision"));
			const char *commit = json_string_value(json_object_get(nm, "commit"));
			match |= ns && !strcmp(ns, canon) &&
				 (!sp.revision || (rev && !strcmp(rev, sp.revision)) ||
				  (commit && strlen(sp.revision) >= 7 &&
				   !strncmp(commit, sp.revision, strlen(sp.revision))));
		}
		if (!match)
			continue;
		if (s->nmounts) {
			fail(req, 409, "%s is mounted on %s: umount it first", want, s->mounts[0].dir);
			goto out;
		}
		/* (a pull waiting for it is no use of it: that pull learns it was dropped, below; a snapshot
		 * that never completes, its mirror gone, must not be kept for good by the pull that waits) */
		if (s->nlingering || s->settling || s->evicting) {
			fail(req, 409, "%s is in use (%s): try again when it is not", want,
			     s->nlingering ? "an unmounted copy still serves open files or another mount namespace"
					   : "being checked");
			goto out;
		}
		pick[n++] = s;
	}
	if (!n) {
		fail(req, 404, "this agent holds no snapshot of %s", want);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct agent_snap *s = pick[i];
		size_t k, unlinked = agent_snap_unlink_hubs(s); /* the links pulls and umounts made */
		json_t *nm;
		json_array_foreach(s->names, k, nm) json_array_append_new(
			dropped,
			json_pack("{s:O?, s:O?, s:O?, s:s, s:s, s:I}", "spec", json_object_get(nm, "spec"), "revision",
				  json_object_get(nm, "revision"), "commit", json_object_get(nm, "commit"), "btih",
				  s->btih, "folder", s->save, "unlinked", (json_int_t)(k ? 0 : unlinked)));
		log_info("agent", "dropping %s @ %.12s from the cache, as asked", s->spec ? s->spec : s->btih,
			 s->commit ? s->commit : "");
		json_array_foreach(s->pending_links, k, nm) { /* the pulls waiting for it fail, saying why */
			char id[32];
			snprintf(id, sizeof(id), "%" PRId64, (int64_t)json_integer_value(json_object_get(nm, "id")));
			json_object_set_new(a->links_done, id, json_string("dropped from the cache (hubmirror drop) "
									     "before it was whole"));
		}
		agent_snap_forget(a, s);
		agent_drop_files(a, s->btih);
		agent_snap_free(s);
	}
	agent_evict_now(a); /* the files go on a worker; the cache is measured again */
	answer(req, 200, json_pack("{s:o}", "dropped", dropped));
	dropped = NULL;
out:
	json_decref(dropped);
	free(pick);
	free(canon);
	hub_spec_release(&sp);
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
		return fail(req,
			    !strcmp(path, "/v1/mount") || !strcmp(path, "/v1/umount") || !strcmp(path, "/v1/pull")
				    ? 405
				    : 404,
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
	else if (!strcmp(path, "/v1/verify"))
		do_verify(a, req, body);
	else if (!strcmp(path, "/v1/http"))
		do_http(a, req, body);
	else if (!strcmp(path, "/v1/drop"))
		do_drop(a, req, body);
	else
		fail(req, 404, "no such call: %s", path);
	json_decref(body);
	return 0;
}
