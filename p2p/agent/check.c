/*
 * check.c - a finished snapshot's check, beside the snapshot table: its wanted files verified in the
 * cache by a settle job on libuv's thread pool at idle priority (a pull waits for it; a damaged piece
 * is fetched again first), then its pulls' links into the hub caches, and once it is quiet its
 * contents kept by sha256 (an index job). The loop's tick calls agent_check_tick for each snapshot.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/bug.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "p2p/p2p.h"

/* ---- finished snapshots: verified in the cache, contents kept by sha256 -------------------------- */

#define INDEX_QUIET_MS 3000     /* no byte came for this long: the contents are kept by sha256 */

/* The IO class of the calling thread (ioprio_set; glibc has no wrapper): idle, or back to the
 * default (its CPU niceness decides). */
static void io_idle(bool idle)
{
	enum { WHO_PROCESS = 1, CLASS_IDLE = 3, CLASS_SHIFT = 13 };

	syscall(SYS_ioprio_set, WHO_PROCESS, 0, idle ? CLASS_IDLE << CLASS_SHIFT : 0);
}

static void return_normal(const struct sched_param *normal)
{
	pthread_setschedparam(pthread_self(), SCHED_OTHER, normal);
	io_idle(false);
}

void agent_thread_idle(bool idle)
{
	struct sched_param p = { 0 };

	if (idle) {
		pthread_setschedparam(pthread_self(), SCHED_IDLE, &p);
		io_idle(true);
	} else {
		return_normal(&p);
	}
}

static void settle_work(uv_work_t *w)
{
	struct agent_snap *s = w->data;
	struct agent *a = s->work.loop->data;
	struct sched_param idle = { 0 }, normal = { 0 };

	/* Hashing a whole snapshot must not slow the reads it runs beside (the download often ends while a
	 * loader still reads): it runs at SCHED_IDLE, on CPU time nobody else wants. A file whose last
	 * writes are still pending is tried again at the next tick. */
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
	io_idle(true); /* and its reads wait for everybody else's */
	s->work_verified = agent_verify_wanted(a, s->btih, s->work_want);
	return_normal(&normal);
}

/* ---- contents kept by sha256: a job of its own ---------------------------------------------------- */

/* After a snapshot's files are verified, and once it is quiet (no byte for INDEX_QUIET_MS, so a piece
 * read back never competes with a loader), its contents are kept by sha256 (p2p_keep_index: hard links
 * to what the torrent proved, no pass over the bytes; a pull does not wait for it). The job holds
 * copies of what it needs, never the snapshot: eviction may drop the snapshot meanwhile (the job then
 * finds its torrent gone and keeps nothing), and waits for nobody's idle-priority reads. The files
 * wanted must all be kept; the others held whole (read through a mount) are kept too. */
struct index_job {
	uv_work_t w;
	struct agent *a;
	char btih[41];
	const void *owner;              /* the snapshot it was for: compared, never dereferenced */
	unsigned gen;                   /* its want_gen then */
	struct p2p_known *known, *others;
	size_t nknown, nothers;
	bool ok;                        /* every wanted content is kept */
};

static struct p2p_known *known_copy(const struct p2p_known *k, size_t n)
{
	struct p2p_known *c = xcalloc(n + 1, sizeof(*c));

	for (size_t i = 0; i < n; i++) {
		c[i].path = xstrdup(k[i].path);
		c[i].sha256 = k[i].sha256 ? xstrdup(k[i].sha256) : NULL;
	}
	return c;
}

static void known_free(struct p2p_known *k, size_t n)
{
	for (size_t i = 0; k && i < n; i++) {
		free((char *)k[i].path);
		free((char *)k[i].sha256);
	}
	free(k);
}

static void index_work(uv_work_t *w)
{
	struct index_job *j = w->data;
	struct sched_param idle = { 0 }, normal = { 0 };

	pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
	io_idle(true);
	j->ok = p2p_keep_index(j->a->ses, j->btih, j->a->cfg->cache_dir, j->known, j->nknown) == 0;
	if (j->others)
		p2p_keep_index(j->a->ses, j->btih, j->a->cfg->cache_dir, j->others, j->nothers);
	return_normal(&normal);
}

static void index_done(uv_work_t *w, int status)
{
	struct index_job *j = w->data;
	struct agent_snap *s = agent_snap_find(j->a, j->btih);

	(void)status;
	if (s && s == j->owner && s->index_job == j) {
		s->index_job = NULL;
		/* a file whose last writes are pending is tried again, for a minute at most */
		if (j->gen == s->want_gen)
			s->indexed = j->ok || ++s->index_tries >= 60;
		if (!s->indexed)
			s->settle_after = uv_now(&j->a->loop) + 1000;
	}
	known_free(j->known, j->nknown);
	known_free(j->others, j->nothers);
	free(j);
}

static void index_start(struct agent *a, struct agent_snap *s)
{
	struct index_job *j = xcalloc(1, sizeof(*j));
	struct p2p_known *k, *o;
	size_t nk = 0, no = 0;

	BUG_ON(s->index_job); /* one at a time: the tick starts one only when none runs */
	j->a = a;
	memcpy(j->btih, s->btih, sizeof(j->btih));
	j->owner = s;
	j->gen = s->want_gen;
	k = agent_wanted_known(a, s, &nk, &o, &no);
	j->known = known_copy(k, nk);
	j->nknown = nk;
	j->others = o ? known_copy(o, no) : NULL;
	j->nothers = no;
	free(k);
	free(o);
	s->index_job = j;
	s->held_indexed = s->held_now;
	j->w.data = j;
	uv_queue_work(&a->loop, &j->w, index_work, index_done);
}

void agent_snap_check(struct agent *a, struct agent_snap *s)
{
	(void)a;
	/* taken back whole at a restart and not read back since: every byte is hashed again first (the
	 * settle job), and a damaged piece is fetched again, before anything links the files */
	if (s->unchecked)
		s->verified = false;
}

/* Of outcomes keyed by link id (a number), the newest max stay. */
static void keep_newest(json_t *by_id, size_t max)
{
	while (json_object_size(by_id) > max) {
		const char *k, *oldest = NULL;
		json_t *v;
		json_object_foreach(by_id, k, v)
			if (!oldest || strtoll(k, NULL, 10) < strtoll(oldest, NULL, 10))
				oldest = k;
		json_object_del(by_id, oldest);
	}
}

void agent_link_pending(struct agent *a, struct agent_snap *s)
{
	char *dir = xasprintf("%s/%s", s->save, s->name ? s->name : "");
	json_t *it;
	size_t i;

	json_array_foreach(s->pending_links, i, it) {
		char *errmsg = NULL, id[32];
		json_t *name = json_object_get(it, "name");
		snprintf(id, sizeof(id), "%" PRId64, (int64_t)json_integer_value(json_object_get(it, "id")));
		/* each pull's outcome is its own: a bad hub cache path fails that pull, not the next */
		if (agent_snap_link(a, s, name, it, dir, true, &errmsg)) {
			if (!errmsg)
				errmsg = xstrdup("cannot link into the hub cache");
			log_warn("agent", "%s: %s", json_string_value(json_object_get(name, "spec")), errmsg);
			json_object_set_new(s->links_done, id, json_string(errmsg));
		} else {
			json_object_set_new(s->links_done, id, json_null());
			agent_snap_linked(a, s, name, it); /* taken away if its files leave the cache */
			s->linked_ms = uv_now(&a->loop);
		}
		json_object_set(a->links_done, id, json_object_get(s->links_done, id));
		free(errmsg);
	}
	json_array_clear(s->pending_links);
	keep_newest(a->links_done, 1024);
	keep_newest(s->links_done, 256); /* a snapshot pulled again and again keeps the last outcomes only */
	free(dir);
}

void agent_snap_whole(struct agent *a, struct agent_snap *s, const struct p2p_torrent_status *st)
{
	if (st->seeding && s->verified && s->want && !json_is_true(json_object_get(s->meta, "whole"))) {
		json_object_set_new(s->meta, "whole", json_true());
		agent_snap_remember(a, s);
	}
}

static void settle_done(uv_work_t *w, int status)
{
	struct agent_snap *s = w->data;
	struct agent *a = s->work.loop->data;

	(void)status;
	BUG_ON(!s->settling); /* one settle job per snapshot at a time, and s stays while it runs */
	s->settling = false;
	json_decref(s->work_want);
	s->work_want = NULL;
	if (s->work_gen != s->want_gen || s->work_damage_gen != s->damage_gen) {
		/* more files were asked for meanwhile: what the job found says nothing of them; or damage
		 * was found meanwhile: what it found verified may be what is damaged now */
		s->verified = false;
		agent_evict_now(a);
		return;
	}
	if (s->work_verified)
		s->unchecked = false;
	else
		s->settle_after = uv_now(&a->loop) + 5000; /* a piece missing or damaged: not again at once */
	if (s->work_verified && !s->verified) {
		/* remembered: a restart takes it back whole, without rechecking every byte first */
		json_object_set_new(s->meta, "verified", json_true());
		agent_snap_remember(a, s);
	}
	s->verified = s->work_verified;
	if (s->verified) {
		struct p2p_torrent_status st;
		/* at once, not at the next tick: a kill right after must not lose it */
		if (!p2p_session_torrent_status(a->ses, s->btih, &st))
			agent_snap_whole(a, s, &st);
		agent_link_pending(a, s);
		agent_shortcuts(a, s);
	}
	agent_evict_now(a); /* the download's bytes are all in now */
}

void agent_check_tick(struct agent *a, struct agent_snap *s)
{
	/* verified at once (a pull waits for it: the settle job); kept by sha256 once quiet */
	if (s->finished && !s->verified && !s->settling && !a->stopping && uv_now(&a->loop) >= s->settle_after) {
		s->settling = true;
		s->work_want = s->want ? json_deep_copy(s->want) : NULL;
		s->work_gen = s->want_gen;
		s->work_damage_gen = s->damage_gen;
		s->work.data = s;
		uv_queue_work(&a->loop, &s->work, settle_work, settle_done);
	} else if (s->finished && s->verified && !s->indexed && !s->index_job && !s->settling && !a->stopping &&
		   uv_now(&a->loop) - s->held_changed_ms >= INDEX_QUIET_MS && uv_now(&a->loop) >= s->settle_after) {
		index_start(a, s);
	}
}
