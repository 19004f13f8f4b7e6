/*
 * snaps.c - the agent's table of snapshots (see agent-int.h): finding, adding and forgetting them,
 * what each is remembered as in the cache (<cache>/agent/<btih>.torrent and .json, written to a
 * temporary name and renamed) and taken back from after a restart, the names (spec, revision, commit)
 * each is known by, and linking one into the hub caches. It stands below the agent's other rooms:
 * the loop (agent.c), the control API, eviction and preheat call it; it calls none of them and
 * logs through base/log.h. It asks the files' selection (want.c) and the fill (fill.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/cache.h"
#include "hub/hub.h"
#include "p2p/mount.h"
#include "p2p/p2p.h"

struct agent_snap *agent_snap_find(struct agent *a, const char *btih)
{
	for (size_t i = 0; i < a->nsnaps; i++)
		if (!strcmp(a->snaps[i]->btih, btih))
			return a->snaps[i];
	return NULL;
}

void agent_snap_free(struct agent_snap *s)
{
	free(s->known);
	free(s->torrent);
	free(s->save);
	free(s->mounts);
	free(s->lingering);
	json_decref(s->links_done);
	for (size_t i = 0; i < s->nweb; i++)
		free(s->web_seeds[i]);
	free(s->web_seeds);
	for (size_t i = 0; i < s->ntrackers; i++)
		free(s->trackers[i]);
	free(s->trackers);
	json_decref(s->pending_links);
	json_decref(s->work_want);
	json_decref(s->meta);
	free(s);
}

void agent_snap_forget(struct agent *a, struct agent_snap *s)
{
	agent_fill_stop(a, s);
	p2p_session_remove(a->ses, s->btih);
	for (size_t i = 0; i < a->nsnaps; i++)
		if (a->snaps[i] == s) {
			memmove(&a->snaps[i], &a->snaps[i + 1], (a->nsnaps - i - 1) * sizeof(*a->snaps));
			a->nsnaps--;
			break;
		}
}

/* The files the meta names with a sha256 (borrowed from it). */
static void snap_known(struct agent_snap *s)
{
	json_t *files = json_object_get(s->meta, "files"), *it;
	size_t i;

	s->known = xcalloc(json_array_size(files) + 1, sizeof(*s->known));
	json_array_foreach(files, i, it) {
		const char *p = json_string_value(json_object_get(it, "path"));
		const char *h = json_string_value(json_object_get(it, "sha256"));
		if (p && h) {
			s->known[s->nknown].path = p;
			s->known[s->nknown].sha256 = h;
			s->nknown++;
		}
	}
}

/* ---- remembered on disk: written on the loop, made durable on a worker ---- */

/* The names written since the last sync job began, fsynced (with their folder) by one job at a time:
 * an fsync waits for the journal, and on ext4 the journal waits for the data of every file written
 * before (a download's writes: 0.3 s measured on the loop, where it held every mount's reads). */
struct sync_job {
	uv_work_t w;
	struct agent *a;
	char **path;
	size_t n;
};

/* fsync each of the n names, then their folder (all in <cache>/agent) */
static void fsync_names(char *const *path, size_t n)
{
	for (size_t i = 0; i < n; i++)
		path_fsync(path[i]); /* (gone meanwhile: dropped; nothing to make durable) */
	if (n)
		path_fsync_parent(path[0]);
}

static void sync_work(uv_work_t *w)
{
	struct sync_job *j = w->data;

	fsync_names(j->path, j->n);
}

static void sync_start(struct agent *a);

static void sync_done(uv_work_t *w, int status)
{
	struct sync_job *j = w->data;
	struct agent *a = j->a;

	(void)status;
	for (size_t i = 0; i < j->n; i++)
		free(j->path[i]);
	free(j->path);
	free(j);
	a->unsynced.syncing = false;
	sync_start(a);
}

static void sync_start(struct agent *a)
{
	struct sync_job *j;

	if (a->unsynced.syncing || !a->unsynced.n)
		return;
	j = xcalloc(1, sizeof(*j));
	j->a = a;
	j->path = a->unsynced.path;
	j->n = a->unsynced.n;
	a->unsynced.path = NULL;
	a->unsynced.n = 0;
	j->w.data = j;
	a->unsynced.syncing = true;
	uv_queue_work(&a->loop, &j->w, sync_work, sync_done);
}

static void unsynced(struct agent *a, char *path)
{
	for (size_t i = 0; i < a->unsynced.n; i++)
		if (!strcmp(a->unsynced.path[i], path)) {
			free(path);
			return;
		}
	a->unsynced.path = xreallocarray(a->unsynced.path, a->unsynced.n + 1, sizeof(*a->unsynced.path));
	a->unsynced.path[a->unsynced.n++] = path;
}

void agent_snaps_sync(struct agent *a)
{
	fsync_names(a->unsynced.path, a->unsynced.n);
	for (size_t i = 0; i < a->unsynced.n; i++)
		free(a->unsynced.path[i]);
	free(a->unsynced.path);
	a->unsynced.path = NULL;
	a->unsynced.n = 0;
}

void agent_snap_remember(struct agent *a, struct agent_snap *s)
{
	char *dir = agent_path_state(a), *tp, *mp, *js;
	int r = 0;

	path_mkdirs(dir, 0700);
	tp = agent_path_torrent(a, s->btih);
	mp = agent_path_desc(a, s->btih);
	js = json_dumps(s->meta, JSON_COMPACT);
	/* the description last: a snapshot is taken back only with both (the torrent never changes) */
	if (!s->torrent_saved && !(r = path_write_replace(tp, s->torrent, s->tlen, 0600))) {
		s->torrent_saved = true;
		unsynced(a, tp);
		tp = NULL;
	}
	if (r || (r = path_write_replace(mp, js, strlen(js), 0600)) != 0)
		log_warn("agent", "cannot remember %s in %s (%s): a restart will not seed it", s->btih, dir,
			 err_str(r));
	else
		unsynced(a, xstrdup(mp));
	sync_start(a);
	free(js);
	free(tp);
	free(mp);
	free(dir);
}

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool str_eq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Add the name from describes (its spec, revision and commit), asked for as asked, to s->names, or
 * bring the one it already has up to date; returns it (borrowed). */
static json_t *add_name(struct agent_snap *s, json_t *from, const char *asked)
{
	const char *spec = jstr(from, "spec"), *rev = jstr(from, "revision"), *commit = jstr(from, "commit");
	json_t *it, *synced = json_object_get(from, "synced_at");
	size_t i;

	if (!asked)
		asked = "";
	json_array_foreach(s->names, i, it) {
		if (str_eq(jstr(it, "spec"), spec) && str_eq(jstr(it, "revision"), rev) &&
		    str_eq(jstr(it, "commit"), commit)) {
			/* asked for plainly once: what a plain mount gets offline, whatever was asked since */
			if (!*asked)
				json_object_set_new(it, "asked", json_string(""));
			json_object_set_new(it, "taken_at", json_integer((json_int_t)time(NULL)));
			if (json_is_integer(synced))
				json_object_set(it, "synced_at", synced);
			return it;
		}
	}
	it = json_pack("{s:s?, s:s?, s:s?, s:s, s:I}", "spec", spec, "revision", rev, "commit", commit, "asked", asked,
		       "taken_at", (json_int_t)time(NULL));
	if (json_is_integer(synced))
		json_object_set(it, "synced_at", synced);
	json_array_append_new(s->names, it);
	return it;
}

/* A description from before names were kept: its own spec is its only name (asked plainly when it
 * is at the hub's default branch). */
static void names_from_meta(struct agent_snap *s)
{
	struct hub_spec sp;
	const char *asked = NULL;

	if (s->spec && s->revision && !hub_spec_parse(s->spec, &sp)) {
		if (strcmp(s->revision, hub_default_revision(sp.hub)))
			asked = s->revision;
		hub_spec_release(&sp);
	}
	add_name(s, s->meta, asked);
}

json_t *agent_snap_name_by_commit(const struct agent_snap *s, const char *commit)
{
	json_t *it;
	size_t i;

	json_array_foreach(s->names, i, it)
		if (str_eq(jstr(it, "commit"), commit))
			return it;
	return NULL;
}

json_t *agent_held(struct agent *a, const char *spec, const char *revision, struct agent_snap **out)
{
	json_t *best = NULL, *it;
	struct hub_spec sp;
	const char *dflt = NULL;
	size_t k;

	*out = NULL;
	if (!hub_spec_parse(spec, &sp)) {
		dflt = hub_default_revision(sp.hub);
		hub_spec_release(&sp);
	}
	for (size_t i = 0; i < a->nsnaps; i++)
		json_array_foreach(a->snaps[i]->names, k, it) {
			const char *rev = jstr(it, "revision"), *asked = jstr(it, "asked");
			bool match;
			if (!str_eq(jstr(it, "spec"), spec))
				continue;
			if (revision && *revision)
				match = str_eq(rev, revision) || str_eq(jstr(it, "commit"), revision) ||
					str_eq(asked, revision);
			else /* a plain request: what a plain one got, or the hub's default branch */
				match = (asked && !*asked) || str_eq(rev, dflt);
			if (match && (!best || json_integer_value(json_object_get(it, "taken_at")) >=
					       json_integer_value(json_object_get(best, "taken_at")))) {
				best = it;
				*out = a->snaps[i];
			}
		}
	return best;
}

/* The pieces of the files s wants (for a snapshot taken back verified: they were all in). */
static unsigned char *wanted_pieces(const struct agent_snap *s, const struct p2p_file_list *l)
{
	unsigned char *have = xcalloc((size_t)l->pieces + 1, 1);
	size_t n = 0;
	int *idx = agent_want_indices(l, s->want, &n);

	for (size_t i = 0, k = 0; i < l->n && k < n; i++) {
		if (l->v[i].index != idx[k])
			continue;
		k++;
		for (int64_t p = l->v[i].offset / l->piece_size;
		     l->v[i].size > 0 && p <= (l->v[i].offset + l->v[i].size - 1) / l->piece_size; p++)
			have[p] = 1;
	}
	free(idx);
	return have;
}

/* The strings of arr as a NULL-terminated array (*n of them), malloc'd. */
static char **str_array(json_t *arr, size_t *n)
{
	char **v = xcalloc(json_array_size(arr) + 1, sizeof(*v));
	json_t *it;
	size_t i;

	*n = 0;
	json_array_foreach(arr, i, it)
		if (json_string_value(it) && *json_string_value(it))
			v[(*n)++] = xstrdup(json_string_value(it));
	return v;
}

/* s's trackers and web seeds from now on: sources ({"trackers", "web_seeds"}, consumed), kept in its
 * meta (a restart takes them back). */
static void snap_sources(struct agent_snap *s, json_t *sources)
{
	for (size_t i = 0; i < s->nweb; i++)
		free(s->web_seeds[i]);
	free(s->web_seeds);
	for (size_t i = 0; i < s->ntrackers; i++)
		free(s->trackers[i]);
	free(s->trackers);
	s->web_seeds = str_array(json_object_get(sources, "web_seeds"), &s->nweb);
	s->trackers = str_array(json_object_get(sources, "trackers"), &s->ntrackers);
	json_object_set_new(s->meta, "sources", sources);
}

/* A snapshot held was asked for again, and its mirror named its swarm's trackers and web seeds
 * (sources, borrowed): where they moved (a mirror at a new address, another --mirror list), s
 * follows them at once: libtorrent announces there, its web seeds and the fill ask there. Without
 * this a snapshot stayed tied for good to the mirror it first came from. */
static void snap_follow(struct agent *a, struct agent_snap *s, json_t *sources)
{
	if (!json_is_object(sources) || json_equal(sources, json_object_get(s->meta, "sources")))
		return;
	log_info("agent", "%s: its mirror is now %s", s->spec ? s->spec : s->btih,
		 json_string_value(json_array_get(json_object_get(sources, "web_seeds"), 0))
			 ? json_string_value(json_array_get(json_object_get(sources, "web_seeds"), 0))
			 : "elsewhere");
	snap_sources(s, json_incref(sources));
	p2p_session_set_sources(a->ses, s->btih, (const char *const *)s->trackers, s->ntrackers,
				s->web_on ? (const char *const *)s->web_seeds : NULL, s->web_on ? s->nweb : 0);
	agent_fill_sources(a, s);
	agent_snap_remember(a, s);
}

/* A new entry for the snapshot meta describes (consumed) with a copy of its torrent: its names, what it
 * wants, where its files go. *name: the name it was asked by (taken back: its first). Neither in the
 * table nor in the session yet. */
static struct agent_snap *snap_new(struct agent *a, json_t *meta, const unsigned char *torrent, size_t tlen,
			     const char *btih, bool recalled, const char *asked, json_t *want, json_t **name)
{
	struct agent_snap *s = xcalloc(1, sizeof(*s));
	json_t *nm;

	memcpy(s->btih, btih, 41);
	s->meta = meta;
	s->spec = json_string_value(json_object_get(meta, "spec"));
	s->revision = json_string_value(json_object_get(meta, "revision"));
	s->commit = json_string_value(json_object_get(meta, "commit"));
	s->name = json_string_value(json_object_get(meta, "name"));
	if (!json_is_array(json_object_get(meta, "names")))
		json_object_set_new(meta, "names", json_array());
	s->names = json_object_get(meta, "names");
	if (!recalled) {
		if (want)
			json_object_set_new(meta, "want", json_deep_copy(want));
		else
			json_object_del(meta, "want");
	}
	s->want = json_is_array(json_object_get(meta, "want")) ? json_object_get(meta, "want") : NULL;
	if (recalled && !json_array_size(s->names))
		names_from_meta(s);
	nm = recalled ? json_array_get(s->names, 0) : add_name(s, meta, asked);
	if (name)
		*name = nm;
	s->pending_links = json_array();
	s->links_done = json_object();
	s->last_used = time(NULL);
	s->torrent = xmalloc(tlen);
	memcpy(s->torrent, torrent, tlen);
	s->tlen = tlen;
	s->save = agent_path_snap(a, btih);
	snap_known(s);
	/* where its swarm is: what the mirror said now, or (taken back) what it said then, put on the
	 * mirrors this agent is told about now */
	if (recalled || !json_is_object(json_object_get(meta, "sources")))
		snap_sources(s, agent_sources(a->cfg->mirror, NULL, (const char *)torrent, tlen,
					      json_object_get(meta, "sources")));
	else
		snap_sources(s, json_incref(json_object_get(meta, "sources")));
	return s;
}

/* Add s to the session, its folder made and the contents the instance holds already placed in it;
 * whole: taken back verified (seed mode, or the wanted pieces had). 0, or an error with *errmsg. */
static int snap_start(struct agent *a, struct agent_snap *s, bool whole, char **errmsg)
{
	struct p2p_add add = { 0 };
	struct p2p_file_list l = { 0 };
	unsigned char *have = NULL;
	int *idx = NULL;
	int r;

	if (mkdir(s->save, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		if (errmsg)
			*errmsg = xasprintf("cannot create %s: %s", s->save, strerror(-r));
		return r;
	}
	/* contents this instance holds already (another revision): placed before the torrent starts */
	if (!whole)
		p2p_keep_place(a->cfg->cache_dir, s->name, s->known, s->nknown, s->torrent, s->tlen, s->save);
	add.torrent = s->torrent;
	add.len = s->tlen;
	add.save_path = s->save;
	/* held whole (a mount read every file, say) though it wants some: seed mode too */
	add.seed_mode = whole && (!s->want || json_is_true(json_object_get(s->meta, "whole")));
	if (s->want && !add.seed_mode) {
		if ((r = p2p_torrent_files(s->torrent, s->tlen, &l, errmsg)) != 0)
			return r;
		add.select = true;
		add.want = idx = agent_want_indices(&l, s->want, &add.nwant);
		if (whole) {
			add.have = have = wanted_pieces(s, &l);
			add.nhave = (size_t)l.pieces;
		}
	}
	s->verified = s->finished = whole;
	s->unchecked = whole; /* its bytes are read back before a pull links them (agent_snap_check) */
	if (s->nweb) {
		add.no_url_list = true; /* peers first: see struct agent_snap */
		add.origin_last = !a->cfg->no_fill; /* what only the mirror has comes over HTTP (fill.c) */
	}
	if (s->ntrackers) { /* the mirrors' now (meta's "sources"), not those the torrent was made with */
		add.trackers = (const char *const *)s->trackers;
		add.ntrackers = s->ntrackers;
	}
	s->added_ms = uv_now(&a->loop);
	r = p2p_session_add(a->ses, &add, NULL, errmsg);
	free(idx);
	free(have);
	p2p_file_list_release(&l);
	return r;
}

/* agent_snap_add; whole: the snapshot was verified in the cache before (a restart). One wanted whole
 * is added in seed mode: no recheck of every file up front, each piece verified when first read or
 * asked for (p2p_session_have_range reads seed-mode pieces back from the file); one of some files
 * with their pieces given as had, each read back from the file before a read may have it. */
static struct agent_snap *snap_add(struct agent *a, json_t *meta, const unsigned char *torrent, size_t tlen,
				   bool recalled, bool whole, const char *asked, json_t *want, json_t **name,
				   char **errmsg)
{
	struct agent_snap *s;
	char btih[41];

	if (p2p_torrent_info_hash(torrent, tlen, btih, errmsg)) {
		json_decref(meta);
		return NULL;
	}
	if ((s = agent_snap_find(a, btih))) {
		/* the same files under another name (a twin, another ref): its own entry, the same bytes */
		size_t before = json_array_size(s->names);
		json_t *nm = add_name(s, meta, asked);
		if (name)
			*name = nm;
		if (json_array_size(s->names) != before)
			agent_snap_remember(a, s);
		if (!recalled)
			snap_follow(a, s, json_object_get(meta, "sources"));
		json_decref(meta);
		agent_snap_want(a, s, want);
		return s;
	}
	s = snap_new(a, meta, torrent, tlen, btih, recalled, asked, want, name);
	if (snap_start(a, s, whole, errmsg)) {
		agent_snap_free(s);
		return NULL;
	}
	agent_snap_remember(a, s);
	a->snaps = xreallocarray(a->snaps, a->nsnaps + 1, sizeof(*a->snaps));
	a->snaps[a->nsnaps++] = s; /* the cache's sizing sees the table change (agent_evict_tick) */
	if (!whole)
		agent_fill_soon(a); /* a lone instance should not wait for the tick */
	return s;
}

struct agent_snap *agent_snap_add(struct agent *a, json_t *meta, const unsigned char *torrent, size_t tlen,
			    const char *asked, json_t *want, json_t **name, char **errmsg)
{
	return snap_add(a, meta, torrent, tlen, false, false, asked, want, name, errmsg);
}

/* Take back the snapshots an earlier run held (their bytes are in the cache). */
void agent_snaps_recall(struct agent *a)
{
	char *dir = agent_path_state(a);
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		size_t len = strlen(nm);
		if (len == 45 && !strcmp(nm + 40, ".json")) {
			char *mp = agent_path_desc(a, nm), *tp = agent_path_torrent(a, nm), *err = NULL;
			json_t *meta = json_load_file(mp, 0, NULL);
			char *tor = NULL;
			size_t tlen = 0;
			if (meta && !path_read_file(tp, 128 << 20, &tor, &tlen) &&
			    !snap_add(a, meta, (const unsigned char *)tor, tlen, true,
				      json_is_true(json_object_get(meta, "verified")), NULL, NULL, NULL, &err))
				log_warn("agent", "cannot take back %.40s: %s", nm, err ? err : "?");
			else if (!meta)
				log_warn("agent", "%s is unreadable: skipped", mp);
			free(err);
			free(tor);
			free(mp);
			free(tp);
		}
		free(names[i]);
	}
	free(names);
	free(dir);
}

int agent_snap_link(struct agent *a, const struct agent_snap *s, json_t *name, json_t *where, const char *dir,
		    bool wanted_only, char **errmsg)
{
	const char *nspec = jstr(name, "spec"), *rev = jstr(name, "revision"), *commit = jstr(name, "commit");
	const char *hf = json_string_value(json_object_get(where, "hf_cache"));
	const char *ms = json_string_value(json_object_get(where, "ms_cache"));
	const char *msh = json_string_value(json_object_get(where, "ms_hub_cache"));
	struct p2p_file_list files = { 0 };
	struct hub_spec spec;
	const char **paths;
	size_t n = 0, nw = 0;
	int *idx = NULL, r = 0;

	if (!nspec || !rev || !commit || hub_spec_parse(nspec, &spec)) {
		*errmsg = xstrdup("the snapshot has no usable spec");
		return HM_ERR_BAD_SPEC;
	}
	if ((r = p2p_session_files(a->ses, s->btih, &files)) != 0) {
		*errmsg = xasprintf("cannot list the snapshot's files: %s", err_str(r));
		hub_spec_release(&spec);
		return r;
	}
	/* a pull links what the cache holds: the files wanted (as `hf download --include` leaves them) */
	idx = agent_want_indices(&files, wanted_only ? s->want : NULL, &nw);
	paths = xcalloc(files.n ? files.n : 1, sizeof(*paths));
	for (size_t i = 0, k = 0; i < files.n && k < nw; i++)
		if (files.v[i].index == idx[k]) {
			paths[n++] = files.v[i].path;
			k++;
		}
	if (hf && spec.hub == HUB_HF)
		r = hub_cache_link_hf(hf, hub_type_name(spec.type), spec.name, rev, commit, dir, paths, n, errmsg);
	else if (ms && spec.hub == HUB_MS)
		r = hub_cache_link_ms(ms, msh, hub_type_name(spec.type), spec.name, rev, commit, dir, paths, n, errmsg);
	free(idx);
	free(paths);
	p2p_file_list_release(&files);
	hub_spec_release(&spec);
	return r;
}

/* ---- the hub cache links the agent made into its own files, taken away when those go ---- */

void agent_snap_linked(struct agent *a, struct agent_snap *s, json_t *name, json_t *where)
{
	json_t *links = json_object_get(s->meta, "hub_links"), *rec, *it;
	size_t i;

	rec = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "hf_cache", json_object_get(where, "hf_cache"),
			"ms_cache", json_object_get(where, "ms_cache"), "ms_hub_cache",
			json_object_get(where, "ms_hub_cache"), "spec", json_object_get(name, "spec"), "revision",
			json_object_get(name, "revision"), "commit", json_object_get(name, "commit"));
	if (!json_is_array(links)) {
		links = json_array();
		json_object_set_new(s->meta, "hub_links", links);
	}
	json_array_foreach(links, i, it)
		if (json_equal(it, rec)) {
			json_decref(rec);
			return;
		}
	json_array_append_new(links, rec);
	agent_snap_remember(a, s);
}

size_t agent_hub_unlink(json_t *name, json_t *where, const char *target)
{
	const char *hf = jstr(where, "hf_cache"), *ms = jstr(where, "ms_cache"), *msh = jstr(where, "ms_hub_cache");
	const char *rev = jstr(name, "revision"), *commit = jstr(name, "commit");
	struct hub_spec spec;
	size_t n = 0;

	if (!jstr(name, "spec") || !commit || hub_spec_parse(jstr(name, "spec"), &spec))
		return 0;
	if (hf && spec.hub == HUB_HF)
		n += hub_cache_unlink_hf(hf, hub_type_name(spec.type), spec.name, rev, commit, target);
	if (ms && spec.hub == HUB_MS) {
		char *dir = hub_cache_ms_dir(ms, hub_type_name(spec.type), spec.name);
		n += hub_cache_unlink_into(dir, target, 1);
		free(dir);
	}
	if (msh && rev && spec.hub == HUB_MS) {
		char *dir = hub_cache_ms_hub_snapshot(msh, hub_type_name(spec.type), spec.name, rev);
		n += hub_cache_unlink_into(dir, target, 0);
		free(dir);
	}
	hub_spec_release(&spec);
	return n;
}

size_t agent_snap_unlink_hubs(struct agent_snap *s)
{
	json_t *it;
	size_t i, n = 0;

	json_array_foreach(json_object_get(s->meta, "hub_links"), i, it)
		n += agent_hub_unlink(it, it, s->save);
	if (n)
		log_info("agent", "%s: %zu %s in the hub caches into its files taken away with them",
			 s->spec ? s->spec : s->btih, n, n == 1 ? "link" : "links");
	return n;
}
