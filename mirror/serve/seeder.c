/*
 * seeder.c - the mirror's libtorrent seed (see seeder.h).
 *
 * Alerts come from libtorrent's threads: the wakeup only does uv_async_send; the loop drains them.
 * The seed folders are built under a temporary name and renamed, so a folder that exists is whole.
 */
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
#include "mirror/store.h"
#include "mirror/torrents.h"

struct seeded {
	char btih[41];
	bool seen;              /* in the catalog at the last scan */
	bool bad;               /* a piece failed its check: no longer seeded (until restart) */
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

bool mirror_seeder_has(const struct mirror_seeder *s, const char *btih)
{
	const struct seeded *x = s ? find(s, btih) : NULL;

	return x && !x->bad;
}

int mirror_seeder_port(const struct mirror_seeder *s)
{
	return s->port;
}

void mirror_seeder_stats(const struct mirror_seeder *s, int64_t *torrents, int64_t *uploaded)
{
	int64_t up = 0, down = 0;

	if (s && p2p_session_totals(s->ses, &up, &down))
		up = 0;
	*torrents = 0;
	for (size_t i = 0; s && i < s->n; i++)
		*torrents += !s->v[i].bad;
	*uploaded = up;
}

/* ---- seed folders ----------------------------------------------------------------------------- */

struct farm {
	struct mirror_seeder *s;
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
		blob = mirror_store_blob_path(f->s->d->store, e->sha256);
		if (symlink(blob, link) < 0)
			r = -errno;
		free(blob);
	}
	free(link);
	f->err = r;
	return r;
}

/* <root>/<btih>/<name>/<path> -> blob for every file of the snapshot; built as <btih>.tmp, renamed. */
static int build_farm(struct mirror_seeder *s, const struct catalog_torrent *t, char **dir_out)
{
	char *dir = xasprintf("%s/%s", s->root, t->btih), *tmp = xasprintf("%s.tmp", dir);
	char *name_dir = xasprintf("%s/%s", tmp, t->name);
	struct farm f = { s, name_dir, 0 };
	struct stat st;
	int r = 0;

	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		goto out; /* built by an earlier run: a folder that exists is whole */
	remove_tree(tmp);
	r = path_mkdirs(name_dir, 0755);
	if (!r)
		r = catalog_snapshot_walk(s->d->catalog, t->snapshot_id, NULL, NULL, 0, link_file, &f);
	if (!r && f.err)
		r = f.err;
	if (!r && rename(tmp, dir) < 0)
		r = -errno;
	if (r)
		remove_tree(tmp);
out:
	if (!r) {
		*dir_out = dir;
		dir = NULL;
	}
	free(dir);
	free(tmp);
	free(name_dir);
	return r;
}

static int add_torrent(struct mirror_seeder *s, const struct catalog_torrent *t)
{
	char *dir = NULL, *data = NULL, *why = NULL;
	size_t len = 0;
	struct p2p_add a = { 0 };
	int r;

	r = build_farm(s, t, &dir);
	if (r) {
		log_warn("seeder", "%s: cannot lay out its files: %s", t->name, err_str(r));
		return r;
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
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
	}
	memcpy(s->v[s->n].btih, t->btih, sizeof(s->v[s->n].btih));
	s->v[s->n].seen = true;
	s->v[s->n].bad = false;
	s->n++;
	log_debug("seeder", "seeding %s (%s)", t->name, t->btih);
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
		have->seen = true;
	else
		add_torrent(s, t); /* logged; retried at the next scan */
	return 0;
}

void mirror_seeder_set_access(struct mirror_seeder *s, const struct mirror_access *access)
{
	s->access = access;
	mirror_seeder_rescan(s);
}

void mirror_seeder_rescan(struct mirror_seeder *s)
{
	size_t keep = 0;

	for (size_t i = 0; i < s->n; i++)
		s->v[i].seen = false;
	if (catalog_torrents_each(s->d->catalog, scan_one, s)) {
		log_warn("seeder", "catalog: %s", catalog_errmsg(s->d->catalog));
		for (size_t i = 0; i < s->n; i++)
			s->v[i].seen = true; /* keep everything on a failed scan */
	}
	/* torrents gc dropped: stop seeding them, remove their folders; and a torrent whose seed found a
	 * bad piece (it left seed mode without being whole: a blob changed under it) stops being seeded:
	 * verify quarantines the blob and the next sync fetches it again */
	for (size_t i = 0; i < s->n; i++) {
		struct p2p_torrent_status st;
		char *dir;
		if (s->v[i].seen && !s->v[i].bad && !p2p_session_torrent_status(s->ses, s->v[i].btih, &st) &&
		    !st.seed_mode && !st.seeding) {
			log_error("seeder", "torrent %s: %d of %d pieces failed their check: a blob in the store is "
				  "damaged; no longer seeded (run 'hubmirror verify')", s->v[i].btih,
				  st.num_pieces - st.pieces_have, st.num_pieces);
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
	uv_timer_start(&s->timer, on_timer, cfg->rescan_ms ? cfg->rescan_ms : 30000, cfg->rescan_ms ? cfg->rescan_ms : 30000);
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
