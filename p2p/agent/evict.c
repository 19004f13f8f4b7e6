/*
 * evict.c - the cache's size (agent --cache-size): measured on a worker thread, and kept under the
 * limit by dropping the least recently used snapshots that are neither mounted, pinned, nor being
 * pulled or checked. A mounted snapshot is never dropped, whatever the size.
 *
 * What counts is the disk the cache holds: every regular file once per inode (a content shared by
 * two snapshots is one inode, hard-linked), its allocated blocks (sparse files of a download in
 * progress count what they hold). A by-sha256 entry whose inode no snapshot links any more (link
 * count 1) is a leftover of a dropped snapshot: the walk removes it.
 *
 * Past the limit, snapshots go, then cold pieces of what stays (a thinning job). The room a writer
 * asks for, and whether it waits for these jobs, is evict-room.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"
#include "evict-int.h"
#include "base/log.h"
#include "base/size.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "p2p/p2p.h"

struct agent_evict *agent_evict_new(void)
{
	struct agent_evict *e = xcalloc(1, sizeof(struct agent_evict));

	e->lt_down = -1;
	return e;
}

void agent_evict_free(struct agent_evict **e)
{
	if (!e || !*e)
		return;
	for (size_t i = 0; i < (*e)->ndrop; i++)
		free((*e)->drop[i]);
	free((*e)->drop);
	free(*e);
	*e = NULL;
}

void agent_evict_listen(struct agent *a, const struct agent_evict_listener *l)
{
	a->evict->l = *l;
}

int64_t agent_cache_used(const struct agent *a)
{
	return a->evict->cache_used;
}

/* (<cache>/.dropped/: agent_drop_files moves a dropped snapshot's files there) */
void agent_evict_recall(struct agent *a)
{
	char *trash = agent_path_trash(a);
	struct dirent **names = NULL;
	int n = scandir(trash, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..")) {
			a->evict->drop = xreallocarray(a->evict->drop, a->evict->ndrop + 1, sizeof(*a->evict->drop));
			a->evict->drop[a->evict->ndrop++] = xasprintf("%s/%s", trash, names[i]->d_name);
		}
		free(names[i]);
	}
	free(names);
	free(trash);
}

struct inode {
	dev_t dev;
	ino_t ino;
	int64_t bytes;
};

struct walk {
	int64_t used;
	struct inode *shared;           /* files with more than one name, counted once at the end */
	size_t nshared, cap;
};

/* nftw has no user pointer: the walk of this thread (one sizing job runs at a time). */
static _Thread_local struct walk *cur;

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *base = path + ftw->base;

	(void)type;
	if (!S_ISREG(st->st_mode))
		return 0;
	if (st->st_nlink == 1 && ftw->level >= 1 && strlen(base) == 64 && ftw->base >= 10 &&
	    skip_prefix(path + ftw->base - 10, AGENT_KEPT_DIR "/")) {
		unlink(path); /* its snapshots are gone */
		return 0;
	}
	if (st->st_nlink == 1) {
		cur->used += (int64_t)st->st_blocks * 512;
		return 0;
	}
	if (cur->nshared == cur->cap) {
		cur->cap = cur->cap ? 2 * cur->cap : 256;
		cur->shared = xreallocarray(cur->shared, cur->cap, sizeof(*cur->shared));
	}
	cur->shared[cur->nshared++] = (struct inode){ st->st_dev, st->st_ino, (int64_t)st->st_blocks * 512 };
	return 0;
}

static int by_inode(const void *pa, const void *pb)
{
	const struct inode *a = pa, *b = pb;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/* Bytes of disk under dir, each inode once. */
static int64_t disk_used(const char *dir)
{
	struct walk w = { 0 };

	cur = &w;
	nftw(dir, visit, 32, FTW_PHYS);
	if (w.nshared)
		qsort(w.shared, w.nshared, sizeof(*w.shared), by_inode);
	for (size_t i = 0; i < w.nshared; i++)
		if (i == 0 || by_inode(&w.shared[i - 1], &w.shared[i]))
			w.used += w.shared[i].bytes;
	free(w.shared);
	cur = NULL;
	return w.used;
}

static int rm_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

struct sizing {
	uv_work_t w;
	struct agent *a;
	char **drop;                    /* folders and files of dropped snapshots, deleted first */
	size_t ndrop;
	int64_t used;
};

static void size_work(uv_work_t *w)
{
	struct sizing *z = w->data;

	for (size_t i = 0; i < z->ndrop; i++)
		nftw(z->drop[i], rm_visit, 32, FTW_DEPTH | FTW_PHYS);
	z->used = disk_used(z->a->cfg->cache_dir);
}

void agent_snap_used(struct agent *a, struct agent_snap *s)
{
	s->last_used = time(NULL);
	s->use_seq = ++a->evict->use_counter;
}

/* Least recently used first: those not used since a restart by their time, then the rest in the
 * order they were used (a second holds several uses; two pulls in one second must not tie). */
/* ---- the choice, pure (tests/unit/test-p2p-agent-policy.c) ------------------------------------ */

struct ranked {
	struct agent_evict_cand c;
	size_t i; /* its index in the caller's array */
};

static int by_last_use(const void *pa, const void *pb)
{
	const struct agent_evict_cand *a = &((const struct ranked *)pa)->c, *b = &((const struct ranked *)pb)->c;

	if (!a->use_seq != !b->use_seq)
		return a->use_seq ? 1 : -1;
	if (a->use_seq)
		return a->use_seq < b->use_seq ? -1 : 1;
	return a->last_used < b->last_used ? -1 : a->last_used > b->last_used;
}

size_t agent_evict_pick(const struct agent_evict_cand *c, size_t n, int64_t used, int64_t limit, size_t *pick,
			int64_t *used_after)
{
	struct ranked *r = xcalloc(n ? n : 1, sizeof(*r));
	size_t npick = 0;

	for (size_t i = 0; i < n; i++)
		r[i] = (struct ranked){ .c = c[i], .i = i };
	if (n)
		qsort(r, n, sizeof(*r), by_last_use);
	for (size_t k = 0; k < n && used > limit; k++) {
		if (r[k].c.busy)
			continue;
		used -= r[k].c.held;
		pick[npick++] = r[k].i;
	}
	free(r);
	*used_after = used;
	return npick;
}

/* Can s go? Not while mounted, pinned, waiting to be linked, linked by a pull in the last minute
 * (--keep-pulled: its caller loads it next, offline maybe), or being checked or thinned on a worker. */
bool agent_snap_evictable(struct agent *a, const struct agent_snap *s)
{
	int keep = a->cfg->keep_pulled_s ? a->cfg->keep_pulled_s : 60;

	return !s->nmounts && !s->nlingering && !s->pinned && !json_array_size(s->pending_links) && !s->settling &&
	       !s->evicting && !(keep > 0 && s->linked_ms && uv_now(&a->loop) - s->linked_ms < (uint64_t)keep * 1000);
}

void agent_drop_files(struct agent *a, const char *btih)
{
	char *dir = agent_path_snap(a, btih), *trash = agent_path_trash(a);
	char *to = xasprintf("%s/%s.%llu", trash, btih, (unsigned long long)++a->evict->drop_counter);
	char *js = agent_path_desc(a, btih), *tp = agent_path_torrent(a, btih);

	/* Out of the snapshot's own names at once: a mount or pull of the same snapshot a moment later
	 * makes them anew, and the deletion (on a worker, later) only ever touches the dropped copy.
	 * Files libtorrent still has open follow the rename. */
	unlink(js);
	unlink(tp);
	mkdir(trash, 0700);
	if (rename(dir, to) == 0 || errno == ENOENT) {
		free(dir);
		dir = to;
	} else {
		log_warn("agent", "cannot move %s aside (%s): it is deleted in place", dir, strerror(errno));
		free(to);
	}
	a->evict->drop = xreallocarray(a->evict->drop, a->evict->ndrop + 1, sizeof(*a->evict->drop));
	a->evict->drop[a->evict->ndrop++] = dir;
	free(trash);
	free(js);
	free(tp);
}

/* ---- cold pieces of snapshots that stay (mounted, in use): they go, least recently read first ---- */

struct thin {
	struct agent_snap *s;
	struct p2p_cold *v;             /* the pieces to take out, least recently read first */
	size_t n;
	char **unkeep;                  /* by-sha256 names of the files they are in (their other name), */
	char **ours;                    /* and those files */
	size_t nunkeep;
	int64_t freed;
	size_t evicted;
	int r;
	char *err;
};

struct thin_job {
	uv_work_t w;
	struct agent *a;
	struct thin *t;
	size_t n;
};

static void thin_work(uv_work_t *w)
{
	struct thin_job *j = w->data;

	for (size_t i = 0; i < j->n; i++) {
		struct thin *t = &j->t[i];
		/* a file kept by sha256 has that name too, and only a file with one name is emptied: the
		 * content leaves by-sha256 first (a content another snapshot shares keeps its bytes) */
		for (size_t k = 0; k < t->nunkeep; k++) {
			struct stat st, mine;
			if (lstat(t->unkeep[k], &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 2 &&
			    lstat(t->ours[k], &mine) == 0 && mine.st_ino == st.st_ino && mine.st_dev == st.st_dev)
				unlink(t->unkeep[k]);
		}
		t->r = p2p_session_evict_pieces(j->a->ses, t->s->btih, t->s->torrent, t->s->tlen, t->v, t->n, &t->freed,
						&t->evicted, &t->err);
	}
}

static void thin_done(uv_work_t *w, int status)
{
	struct thin_job *j = w->data;
	struct agent *a = j->a;
	char f[32], c[32];

	(void)status;
	a->evict->evicting = false;
	a->evict->thin_idle = true;
	a->evict->thin_ended_ms = uv_now(&a->loop);
	for (size_t i = 0; i < j->n; i++) {
		if (j->t[i].evicted) {
			a->evict->thin_idle = false;
			a->evict->short_since = 0; /* room was made: a writer that finds none again waits anew */
		}
	}
	for (size_t i = 0; i < j->n; i++) {
		struct thin *t = &j->t[i];
		t->s->evicting = false;
		t->s->pieces_seen = 0; /* fewer pieces now, on purpose: not damage */
		t->s->web_on = false;  /* added again without its web seeds: they join again when needed */
		a->evict->freed += t->freed > 0 ? t->freed : 0;
		if (t->r) {
			log_warn("agent", "%s: cannot take pieces out of the cache: %s",
				t->s->spec ? t->s->spec : t->s->btih, t->err ? t->err : "?");
		} else if (t->evicted) {
			if (a->evict->l.thinned)
				a->evict->l.thinned(a->evict->l.ud, t->s, t->v,
						    t->n); /* (the fill fetches them again) */
			json_object_del(t->s->meta, "whole");
			agent_snap_remember(a, t->s);
			size_human(t->freed, f, sizeof(f));
			size_human(a->cfg->cache_size, c, sizeof(c));
			log_info("agent", "%s: %zu %s (%s) read least recently left the cache to keep it "
				"under %s; read again, they are fetched again", t->s->spec ? t->s->spec : t->s->btih,
				t->evicted, t->evicted == 1 ? "piece" : "pieces", f, c);
		}
		free(t->v);
		for (size_t k = 0; k < t->nunkeep; k++) {
			free(t->unkeep[k]);
			free(t->ours[k]);
		}
		free(t->unkeep);
		free(t->ours);
		free(t->err);
	}
	free(j->t);
	free(j);
	agent_evict_now(a); /* measured again */
	if (a->evict->l.room)
		a->evict->l.room(a->evict->l.ud); /* a fill waiting for room goes on */
}

struct cand {
	size_t snap;                    /* index into the thin array */
	struct p2p_cold c;
};

static int by_touch(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	return a->c.touched < b->c.touched ? -1 : a->c.touched > b->c.touched;
}

/* The entry of l (in torrent order: by offset) whose bytes hold piece p, or -1. */
static ssize_t file_of_piece(const struct p2p_file_list *l, int p)
{
	int64_t at = (int64_t)p * l->piece_size;
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->v[mid].offset + l->v[mid].size <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->n && l->v[lo].offset <= at ? (ssize_t)lo : -1;
}

/* The by-sha256 names of the contents of the files of t's pieces (those s knows). */
static void kept_names(struct agent *a, struct thin *t, const struct p2p_file_list *l)
{
	char *seen = xcalloc(l->n + 1, 1);

	for (size_t k = 0; k < t->n; k++) {
		ssize_t f = file_of_piece(l, t->v[k].piece);
		if (f < 0 || seen[f])
			continue;
		seen[f] = 1;
		for (size_t q = 0; q < t->s->nknown; q++) {
			const char *sha = t->s->known[q].sha256;
			if (strcmp(t->s->known[q].path, l->v[f].path) || !sha || strlen(sha) != 64 || strchr(sha, '/'))
				continue;
			t->unkeep = xreallocarray(t->unkeep, t->nunkeep + 1, sizeof(*t->unkeep));
			t->ours = xreallocarray(t->ours, t->nunkeep + 1, sizeof(*t->ours));
			t->unkeep[t->nunkeep] = agent_path_kept(a, sha);
			t->ours[t->nunkeep++] = xasprintf("%s/%s/%s", t->s->save, l->name, l->v[f].path);
			break;
		}
	}
	free(seen);
}

/* Take cold pieces out of the snapshots that stay, least recently read first, about over bytes: of
 * files they do not want (what a mount read besides), never of a pinned snapshot, never one read in
 * the last idle_s seconds. On a worker (thin_work). true: a job takes some out. */
bool agent_evict_thin(struct agent *a, int64_t over, int idle_s)
{
	struct thin *t = xcalloc(a->nsnaps + 1, sizeof(*t));
	struct cand *all = NULL;
	size_t nt = 0, nall = 0;
	int64_t sum = 0;

	for (size_t i = 0; i < a->nsnaps; i++) {
		struct agent_snap *s = a->snaps[i];
		struct p2p_file_list l = { 0 };
		struct p2p_cold *v = NULL;
		size_t n = 0, nkeep = 0;
		int *keep;
		if (s->pinned || s->evicting || !s->want || p2p_session_files(a->ses, s->btih, &l))
			continue;
		keep = agent_want_indices(&l, s->want, &nkeep);
		if (!p2p_session_cold_pieces(a->ses, s->btih, keep, nkeep, idle_s, &v, &n) && n) {
			all = xreallocarray(all, nall + n, sizeof(*all));
			for (size_t k = 0; k < n; k++)
				all[nall++] = (struct cand){ nt, v[k] };
			t[nt++].s = s;
		}
		free(v);
		free(keep);
		p2p_file_list_release(&l);
	}
	if (nall)
		qsort(all, nall, sizeof(*all), by_touch);
	for (size_t k = 0; k < nall && sum < over; k++) {
		struct thin *x = &t[all[k].snap];
		x->v = xreallocarray(x->v, x->n + 1, sizeof(*x->v));
		x->v[x->n++] = all[k].c;
		sum += all[k].c.size;
	}
	free(all);
	/* the snapshots with pieces to go, and the kept names of their files */
	{
		size_t m = 0;
		for (size_t i = 0; i < nt; i++) {
			struct p2p_file_list l = { 0 };
			if (!t[i].n)
				continue;
			t[m] = t[i];
			if (!p2p_session_files(a->ses, t[m].s->btih, &l)) {
				kept_names(a, &t[m], &l);
				p2p_file_list_release(&l);
			}
			t[m].s->evicting = true;
			m++;
		}
		nt = m;
	}
	if (!nt) {
		free(t);
		/* (said once the cache is over it: a writer finding no room yet waits, short_wait) */
		if (!a->evict->over_said && agent_evict_use_now(a) > a->cfg->cache_size) {
			char u[32], c[32];
			size_human(agent_evict_use_now(a), u, sizeof(u));
			size_human(a->cfg->cache_size, c, sizeof(c));
			log_warn("agent", "the cache holds %s, over its %s: what is left is wanted by pulls or "
				"mounts (their --include, --prefetch), pinned, pulled this minute or read this moment",
				u, c);
			a->evict->over_said = true;
		}
		return false;
	}
	{
		struct thin_job *j = xcalloc(1, sizeof(*j));
		j->a = a;
		j->t = t;
		j->n = nt;
		j->w.data = j;
		a->evict->evicting = true;
		uv_queue_work(&a->loop, &j->w, thin_work, thin_done);
	}
	return true;
}

/* The cache's use now, about: what the last sizing measured, plus what was written since it began (the
 * fill's bytes as they are written, libtorrent's as of the last tick), less what thinning freed since.
 * Bytes written while the walk ran may count twice (never none): the estimate errs high. */
int64_t agent_evict_use_now(struct agent *a)
{
	const struct agent_evict *e = a->evict;

	return e->cache_used + (e->written - e->written_sized) - (e->freed - e->freed_sized);
}

void agent_evict_wrote(struct agent *a, int64_t bytes)
{
	a->evict->written += bytes;
}

void agent_evict_count(struct agent *a)
{
	int64_t down = 0;

	/* what libtorrent wrote since the last tick (from peers and web seeds; the whole session's count,
	 * which a torrent added again does not reset) */
	if (!p2p_session_totals(a->ses, NULL, &down)) {
		if (a->evict->lt_down >= 0 && down > a->evict->lt_down)
			a->evict->written += down - a->evict->lt_down;
		a->evict->lt_down = down;
	}
	if (a->cfg->cache_size > 0 && a->evict->measured && agent_evict_use_now(a) > a->cfg->cache_size &&
	    !a->evict->sizing && !a->evict->evicting)
		agent_evict_now(a); /* measured at once, then evicted (size_done) */
}

/* Drop snapshots, least recently used first, until used is under the limit (the choice:
 * agent_evict_pick); *used_after: what is left. Returns how many went. */
static size_t evict_snaps(struct agent *a, int64_t used, int64_t *used_after)
{
	size_t n = a->nsnaps, npick;
	struct agent_snap **snaps = xcalloc(n ? n : 1, sizeof(*snaps));
	struct agent_evict_cand *c = xcalloc(n ? n : 1, sizeof(*c));
	size_t *pick = xcalloc(n ? n : 1, sizeof(*pick));

	for (size_t i = 0; i < n; i++) {
		struct p2p_torrent_status st = { 0 };
		struct agent_snap *s = a->snaps[i];
		snaps[i] = s;
		c[i].last_used = s->last_used;
		c[i].use_seq = s->use_seq;
		c[i].busy = !agent_snap_evictable(a, s);
		if (!c[i].busy)
			p2p_session_torrent_status(a->ses, s->btih, &st);
		/* every piece it has, wanted or not: a mount wants little (its metadata, --prefetch) and
		 * holds what it read besides, which its eviction frees too (counting only the wanted pieces
		 * took such a snapshot for nearly empty, and the round took the next one too); and what
		 * the direct fill wrote, which libtorrent does not count yet */
		c[i].held = st.held + (!c[i].busy && a->evict->l.unseen ? a->evict->l.unseen(s) : 0);
	}
	npick = agent_evict_pick(c, n, used, a->cfg->cache_size, pick, used_after);
	for (size_t k = 0; k < npick; k++) {
		struct agent_snap *s = snaps[pick[k]];
		char c1[32], u[32];
		size_human(a->cfg->cache_size, c1, sizeof(c1));
		size_human(used, u, sizeof(u));
		log_info("agent", "evicting %s @ %.12s (last used %lld s ago) to keep the cache under %s (it would "
			"hold %s)", s->spec ? s->spec : s->btih, s->commit ? s->commit : "",
			(long long)(time(NULL) - s->last_used), c1, u);
		agent_snap_unlink_hubs(s); /* no link left dangling (a pull's, a mount's relinked at umount) */
		agent_snap_forget(a, s);
		agent_drop_files(a, s->btih);
		agent_snap_free(s);
	}
	free(snaps);
	free(c);
	free(pick);
	return npick;
}

/* Past the limit: snapshots go (evict_snaps), then cold pieces of what stays. */
static void choose(struct agent *a, int64_t used)
{
	evict_snaps(a, used, &used);
	/* still over: cold pieces of what stays go, down to 90% of the size (so that a reader does not
	 * make it evict at every tick) */
	if (used > a->cfg->cache_size && !a->evict->ndrop && !a->evict->evicting)
		agent_evict_thin(a, used - a->cfg->cache_size / 10 * 9, PIECE_IDLE_S);
	if (used <= a->cfg->cache_size)
		a->evict->over_said = false;
	if (a->evict->ndrop)
		agent_evict_now(a); /* delete what was dropped and measure again at the next tick */
}

static void size_done(uv_work_t *w, int status)
{
	struct sizing *z = w->data;
	struct agent *a = z->a;
	int64_t used;

	(void)status;
	a->evict->sizing = false;
	a->evict->deleting = false;
	a->evict->sized_at = time(NULL);
	a->evict->cache_used = z->used;
	a->evict->written_sized = a->evict->written_walk;
	a->evict->freed_sized = a->evict->freed_walk;
	a->evict->measured = true;
	for (size_t i = 0; i < z->ndrop; i++)
		free(z->drop[i]);
	free(z->drop);
	free(z);
	/* (with what was written since the walk began; and when a writer waits for room, what it asked
	 * for counted as its admission counts it (agent_evict_need): a round that counted less left the
	 * writer still short, and it thinned or came past the bound while snapshots could go) */
	used = a->evict->room_bytes ? agent_evict_need(a, a->evict->room_bytes) : agent_evict_use_now(a);
	a->evict->room_bytes = 0;
	if (!a->stopping && a->cfg->cache_size > 0 && used > a->cfg->cache_size)
		choose(a, used);
	if (a->evict->l.room && !a->stopping)
		a->evict->l.room(a->evict->l.ud); /* a fill waiting for dropped files to go goes on */
}

void agent_evict_tick(struct agent *a)
{
	struct sizing *z;

	a->evict->ticks++;
	/* never while a thinning job runs: the walk would see some of its holes, and the estimate would
	 * count them twice (measured, and freed since) */
	if (a->evict->sizing || a->evict->evicting || a->stopping)
		return;
	/* measured every 10 s (and at once after a drop or when a snapshot came); without a limit,
	 * every minute for status */
	if (!a->evict->ndrop && a->nsnaps == a->evict->sized_nsnaps &&
	    time(NULL) - a->evict->sized_at < (a->cfg->cache_size > 0 ? 10 : 60))
		return;
	a->evict->sized_nsnaps = a->nsnaps;
	z = xcalloc(1, sizeof(*z));
	z->a = a;
	z->drop = a->evict->drop;
	z->ndrop = a->evict->ndrop;
	a->evict->written_walk = a->evict->written;
	a->evict->freed_walk = a->evict->freed;
	a->evict->deleting = a->evict->ndrop > 0;
	a->evict->drop = NULL;
	a->evict->ndrop = 0;
	z->w.data = z;
	a->evict->sizing = true;
	uv_queue_work(&a->loop, &z->w, size_work, size_done);
}

void agent_evict_now(struct agent *a)
{
	a->evict->sized_at = 0;
}
