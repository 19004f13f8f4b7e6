/*
 * seeder.c - the mirror's libtorrent seed (see seeder.h).
 *
 * Alerts come from libtorrent's threads: the wakeup only does uv_async_send; the loop drains them.
 * The seed folders are built under a temporary name and renamed, so a folder that exists is whole.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "p2p/p2p.h"
#include "access.h"
#include "seeder.h"
#include "store/store.h"
#include "mirror/torrents.h"

struct seeded {
	char btih[41];
	char btmh[65];
	int64_t snapshot_id;
	bool seen;              /* kept by the last scan: a head's, or a swarm holds it */
	bool head;              /* a ref's snapshot's at the last scan */
	bool bad;               /* a piece failed its check: no longer seeded (until restart) */
	bool laying;            /* its folder being laid out on a worker (mirror_seeder_claim): not seeded yet */
};

struct mirror_seeder {
	uv_loop_t *loop;
	struct mirror_data *d;
	struct p2p_session *ses;
	uv_async_t wake;
	uv_timer_t timer;
	int open_handles;
	char *root;             /* <data>/p2p/seed */
	struct seeded *v;
	size_t n, cap;
	int port;
	bool super_seed;
	const struct mirror_access *access;
	bool (*held)(void *ud, const char *btih, const char *btmh); /* NULL: nothing is held */
	void *held_ud;
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static void remove_tree(const char *dir)
{
	if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		log_warn("seeder", "cannot remove %s: %s", dir, strerror(errno));
}

static struct seeded *find(const struct mirror_seeder *s, const char *btih)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].btih, btih))
			return &s->v[i];
	return NULL;
}

/* A new entry at the end of s's table (unset). */
static struct seeded *seeded_new(struct mirror_seeder *s)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
	}
	return &s->v[s->n++];
}

/* x becomes torrent t's entry, seen now, with how's flags. */
static void seeded_set(struct seeded *x, const struct catalog_torrent *t, struct seeded how)
{
	*x = how;
	x->snapshot_id = t->snapshot_id;
	x->seen = true;
	memcpy(x->btih, t->btih, sizeof(x->btih));
	memcpy(x->btmh, t->btmh, sizeof(x->btmh));
}

bool mirror_seeder_has(const struct mirror_seeder *s, const char *btih)
{
	const struct seeded *x = s ? find(s, btih) : NULL;

	return x && !x->bad && !x->laying;
}

bool mirror_seeder_ready(const struct mirror_seeder *s, const char *btih)
{
	struct p2p_torrent_status st;

	return mirror_seeder_has(s, btih) && !p2p_session_torrent_status(s->ses, btih, &st) && !st.checking;
}

int mirror_seeder_port(const struct mirror_seeder *s)
{
	return s->port;
}

void mirror_seeder_stats(const struct mirror_seeder *s, int64_t *torrents, int64_t *held, int64_t *uploaded)
{
	int64_t up = 0, down = 0;

	if (s && p2p_session_totals(s->ses, &up, &down))
		up = 0;
	*torrents = *held = 0;
	for (size_t i = 0; s && i < s->n; i++) {
		bool on = !s->v[i].bad && !s->v[i].laying;
		*torrents += on;
		*held += on && !s->v[i].head;
	}
	*uploaded = up;
}

/* ---- seed folders ----------------------------------------------------------------------------- */

struct farm {
	const struct store *store;
	const char *root;       /* .../<btih>.tmp/<name> */
	int err;
};

static int link_file(void *ud, const struct catalog_entry *e)
{
	struct farm *f = ud;
	char *link = xasprintf("%s/%s", f->root, e->path), *blob, *slash;
	int r = 0;

	/* the path passed path_check at sync; make its folders, then the link */
	slash = strrchr(link, '/');
	*slash = '\0';
	r = path_mkdirs(link, 0755);
	*slash = '/';
	if (!r) {
		blob = store_cache_path(f->store, e->sha256); /* (a link: nothing brought in) */
		if (symlink(blob, link) < 0)
			r = -errno;
		free(blob);
	}
	free(link);
	f->err = r;
	return r;
}

int mirror_seeder_lay_out(const char *root, const struct store *store, struct catalog *cat,
			  const struct catalog_torrent *t)
{
	char *dir = xasprintf("%s/%s", root, t->btih), *tmp = xasprintf("%s.tmp", dir);
	char *name_dir = xasprintf("%s/%s", tmp, t->name);
	struct farm f = { store, name_dir, 0 };
	struct stat st;
	int r = 0;

	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		goto out; /* built by an earlier run: a folder that exists is whole */
	remove_tree(tmp);
	r = path_mkdirs(name_dir, 0755);
	if (!r)
		r = catalog_snapshot_walk(cat, t->snapshot_id, NULL, NULL, 0, link_file, &f);
	if (!r && f.err)
		r = f.err;
	if (!r && rename(tmp, dir) < 0)
		r = -errno;
	if (r)
		remove_tree(tmp);
out:
	free(dir);
	free(tmp);
	free(name_dir);
	return r;
}

/* Seed t from its folder (laid out here, on the loop, unless a worker did it first: the heads a
 * rescan finds; docs/security.md's known gap). *x, when not NULL, is its entry (a claim's); else one is
 * made. */
static int add_torrent(struct mirror_seeder *s, const struct catalog_torrent *t, bool head, struct seeded *x)
{
	char *dir = xasprintf("%s/%s", s->root, t->btih), *data = NULL, *why = NULL;
	size_t len = 0;
	struct p2p_add a = { 0 };
	int r;

	r = mirror_seeder_lay_out(s->root, s->d->store, s->d->catalog, t);
	if (r) {
		log_warn("seeder", "%s: cannot lay out its files: %s", t->name, err_str(r));
		goto out;
	}
	r = mirror_torrent_load(s->d, t->btih, NULL, 0, NULL, 0, &data, &len);
	if (r) {
		log_warn("seeder", "%s: cannot read torrents/%s.torrent: %s", t->name, t->btih, err_str(r));
		goto out;
	}
	a.torrent = (const unsigned char *)data;
	a.len = len;
	a.save_path = dir;
	a.seed_mode = true;
	a.super_seed = s->super_seed;
	a.upload_only = true; /* the files are links into the store: never written by libtorrent */
	r = p2p_session_add(s->ses, &a, NULL, &why);
	if (r) {
		log_warn("seeder", "%s: %s", t->name, why ? why : err_str(r));
		goto out;
	}
	if (!x)
		x = seeded_new(s);
	seeded_set(x, t, (struct seeded){ .head = head });
	log_debug("seeder", "seeding %s (%s)%s", t->name, t->btih, head ? "" : ": a swarm holds it");
out:
	free(why);
	free(data);
	free(dir);
	return r;
}

/* May anyone read the snapshot's repo without a token? If not, its torrent is not seeded (and one
 * seeded before, say before the operator closed it, stops at this scan). */
static bool public_snapshot(struct mirror_seeder *s, int64_t snapshot_id)
{
	struct catalog_repo repo = { 0 };
	bool yes;

	if (catalog_snapshot_repo(s->d->catalog, snapshot_id, &repo))
		return false;
	yes = mirror_access_public(s->access, &repo);
	catalog_repo_release(&repo);
	return yes;
}

static int scan_one(void *ud, const struct catalog_torrent *t)
{
	struct mirror_seeder *s = ud;
	struct seeded *have = find(s, t->btih);

	if (!public_snapshot(s, t->snapshot_id))
		return 0;
	if (have)
		have->seen = have->head = true; /* (one being laid out is added when that is done) */
	else
		add_torrent(s, t, true, NULL); /* logged; retried at the next scan */
	return 0;
}

/* A torrent that is no head's any more (an older commit, a snapshot gc --keep kept) stays seeded while
 * peers other than the mirror hold its swarm, and the catalog still has it open to anyone. */
static bool still_held(struct mirror_seeder *s, const struct seeded *x)
{
	return s->held && s->held(s->held_ud, x->btih, x->btmh) && catalog_torrent_known(s->d->catalog, x->btih) == 1 &&
	       public_snapshot(s, x->snapshot_id);
}

/* Seed folders no torrent of the seed's has (of torrents dropped by an earlier run or version, or
 * left half built by a crash), removed. */
static void sweep_folders(struct mirror_seeder *s)
{
	DIR *dh = opendir(s->root);
	struct dirent *e;

	while (dh && (e = readdir(dh))) {
		char btih[41], *dir;
		const struct seeded *x;
		if (e->d_name[0] == '.' || strlen(e->d_name) < 40)
			continue;
		snprintf(btih, sizeof(btih), "%.40s", e->d_name);
		if ((x = find(s, btih)) && (x->laying || !strcmp(e->d_name, btih)))
			continue; /* seeded, or being laid out (its .tmp is a worker's) */
		dir = xasprintf("%s/%s", s->root, e->d_name);
		remove_tree(dir);
		free(dir);
	}
	if (dh)
		closedir(dh);
}

void mirror_seeder_set_access(struct mirror_seeder *s, const struct mirror_access *access)
{
	s->access = access;
	mirror_seeder_rescan(s);
}

void mirror_seeder_set_held(struct mirror_seeder *s, bool (*held)(void *ud, const char *btih, const char *btmh),
			    void *ud)
{
	s->held = held;
	s->held_ud = ud;
}

struct uncached {
	const struct store *store;
	int n, of;
};

static int count_uncached(void *ud, const struct catalog_entry *e)
{
	struct uncached *u = ud;
	char *blob = store_cache_path(u->store, e->sha256);

	u->of++;
	u->n += access(blob, F_OK) < 0;
	free(blob);
	return 0;
}

/* A torrent left seed mode without being whole: some of its pieces did not check. With the store in a
 * bucket, the seed's folder links to the local cache, which holds only what is read now: the contents
 * it lacks are not damage (the swarm's web seed serves them from the bucket, docs/operations.md). Else
 * a blob changed under it. */
static void say_unseeded(struct mirror_seeder *s, const struct seeded *x, const struct p2p_torrent_status *st)
{
	struct uncached u = { s->d->store, 0, 0 };

	if (store_in_bucket(s->d->store))
		catalog_snapshot_walk(s->d->catalog, x->snapshot_id, NULL, NULL, 0, count_uncached, &u);
	if (u.n)
		log_info("seeder", "torrent %s: %d of its %d files are in the store's bucket and not in the local "
			 "cache: not seeded by the mirror (the swarm's web seed serves them from the bucket)", x->btih,
			 u.n, u.of);
	else
		log_error("seeder", "torrent %s: %d of %d pieces failed their check: a blob in the store is "
			  "damaged; no longer seeded (run 'hubmirror verify')", x->btih,
			  st->num_pieces - st->pieces_have, st->num_pieces);
}

void mirror_seeder_rescan(struct mirror_seeder *s)
{
	size_t keep = 0;

	for (size_t i = 0; i < s->n; i++)
		s->v[i].seen = s->v[i].head = false;
	if (catalog_torrents_heads_each(s->d->catalog, scan_one, s)) {
		log_warn("seeder", "catalog: %s", catalog_errmsg(s->d->catalog));
		for (size_t i = 0; i < s->n; i++)
			s->v[i].seen = true; /* keep everything on a failed scan */
	}
	/* the heads are seeded; of the rest, what a swarm holds stays (and what is being laid out for one);
	 * a damaged one is remembered while the catalog has it, so that no announce claims it again */
	for (size_t i = 0; i < s->n; i++)
		if (!s->v[i].seen)
			s->v[i].seen =
				s->v[i].laying || (s->v[i].bad ? catalog_torrent_known(s->d->catalog, s->v[i].btih) == 1
							       : still_held(s, &s->v[i]));
	/* no longer a head and no swarm holds it, or gc dropped it: stop seeding it, remove its folder
	 * (its .torrent stays while the catalog has it: an agent that asks again makes the seed take it
	 * back); and a torrent whose seed found a bad piece (it left seed mode without being whole: a blob
	 * changed under it) stops being seeded: verify quarantines the blob and the next sync fetches it
	 * again */
	for (size_t i = 0; i < s->n; i++) {
		struct p2p_torrent_status st;
		char *dir;
		if (s->v[i].seen && !s->v[i].bad && !s->v[i].laying &&
		    !p2p_session_torrent_status(s->ses, s->v[i].btih, &st) && !st.seed_mode && !st.seeding) {
			say_unseeded(s, &s->v[i], &st);
			p2p_session_remove(s->ses, s->v[i].btih);
			s->v[i].bad = true;
		}
		if (s->v[i].seen) {
			s->v[keep++] = s->v[i];
			continue;
		}
		dir = xasprintf("%s/%s", s->root, s->v[i].btih);
		if (!s->v[i].bad)
			p2p_session_remove(s->ses, s->v[i].btih);
		remove_tree(dir);
		free(dir);
	}
	s->n = keep;
	sweep_folders(s);
}

char *mirror_seeder_claim(struct mirror_seeder *s, const struct catalog_torrent *t)
{
	if (!s || find(s, t->btih) || !public_snapshot(s, t->snapshot_id))
		return NULL;
	seeded_set(seeded_new(s), t, (struct seeded){ .laying = true });
	return xstrdup(s->root);
}

void mirror_seeder_claimed(struct mirror_seeder *s, const struct catalog_torrent *t, int laid_out)
{
	struct seeded *x = find(s, t->btih);

	if (!x || !x->laying)
		return;
	/* seeded now if its folder is there and it is still open to anyone (else the entry goes: the next
	 * announce claims it again); added as no head's: the next rescan says if it is one */
	if (laid_out || !public_snapshot(s, t->snapshot_id) || add_torrent(s, t, x->head, x)) {
		if (laid_out)
			log_warn("seeder", "%s: cannot lay out its files: %s", t->name, err_str(laid_out));
		*x = s->v[--s->n];
	}
}

/* ---- loop glue ---------------------------------------------------------------------------------- */

static void on_libtorrent_wakeup(void *ud)
{
	struct mirror_seeder *s = ud;

	uv_async_send(&s->wake); /* libtorrent's thread: nothing else here */
}

static void on_event(void *ud, const struct p2p_event *ev)
{
	(void)ud;
	if (ev->kind == P2P_EVENT_ERROR)
		log_warn("seeder", "torrent %s: %s", ev->btih ? ev->btih : "-", ev->message ? ev->message : "error");
}

static void on_wake(uv_async_t *a)
{
	struct mirror_seeder *s = a->data;

	p2p_session_drain(s->ses, on_event, s);
}

static void on_timer(uv_timer_t *t)
{
	mirror_seeder_rescan(t->data);
}

int mirror_seeder_new(uv_loop_t *loop, struct mirror_data *d, const struct mirror_seeder_config *cfg,
		      struct mirror_seeder **out, char **errmsg)
{
	struct mirror_seeder *s = xcalloc(1, sizeof(*s));
	struct p2p_session_config pc = { 0 };
	struct p2p_session_status st;
	int r;

	s->loop = loop;
	s->d = d;
	s->super_seed = cfg->super_seed;
	s->access = cfg->access;
	s->root = mirror_data_path(d, MIRROR_DATA_SEED);
	r = path_mkdirs(s->root, 0755);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot create %s: %s", s->root, err_str(r));
		goto fail;
	}
	pc.listen_interfaces = cfg->listen;
	pc.local_upload_limit = cfg->upload_limit;
	pc.lan_tuning = true;
	pc.origin = true; /* agents take what only the mirror has over HTTP, not from this seed */
	r = p2p_session_new(&pc, &s->ses, errmsg);
	if (r)
		goto fail;
	if (p2p_session_status(s->ses, &st) == 0)
		s->port = st.listen_port;
	uv_async_init(loop, &s->wake, on_wake);
	s->wake.data = s;
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
	s->open_handles = 2;
	p2p_session_set_wakeup(s->ses, on_libtorrent_wakeup, s);
	mirror_seeder_rescan(s);
	uv_timer_start(&s->timer, on_timer, cfg->rescan_ms ? cfg->rescan_ms : 30000,
		       cfg->rescan_ms ? cfg->rescan_ms : 30000);
	*out = s;
	return 0;
fail:
	free(s->root);
	free(s);
	return r;
}

static void on_closed(uv_handle_t *h)
{
	struct mirror_seeder *s = h->data;

	if (--s->open_handles == 0) {
		free(s->v);
		free(s->root);
		free(s);
	}
}

void mirror_seeder_free(struct mirror_seeder **sp)
{
	struct mirror_seeder *s;

	if (!sp || !*sp)
		return;
	s = *sp;
	*sp = NULL;
	/* the session first: after it, no libtorrent thread can call the wakeup */
	p2p_session_free(&s->ses);
	uv_close((uv_handle_t *)&s->wake, on_closed);
	uv_close((uv_handle_t *)&s->timer, on_closed);
}
