/*
 * mounts.c - what the agent does with a snapshot's FUSE mounts besides making them (control.c):
 * shortcuts, the big verified files served as read-only bind mounts of the cache's files so a loader
 * reads them as local files, and detaching a mount, which lingers while something still uses it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "p2p/mount.h"
#include "p2p/p2p.h"

/* Shortcuts (p2p_mount_shortcut): once a snapshot's wanted files are verified in the cache (read
 * back and hashed in this run), where
 * they stay while it is mounted (eviction keeps wanted files), each mount serves the big ones as
 * read-only bind mounts of the cache's files, so a loader reads them as local files. On a worker:
 * the mount calls look paths up through the FUSE mount, whose threads may all be waiting for
 * pieces. */
#define SHORTCUT_MIN ((int64_t)1 << 20)  /* smaller files stay on FUSE: the page cache has them */
#define SHORTCUT_MAX 4096               /* per mount (each is a mount in the kernel's table) */

struct shortcut_job {
	uv_work_t w;
	struct p2p_mount *m;            /* held (p2p_mount_hold) until done */
	bool drop;                      /* take them away (the cache's bytes are damaged) */
	unsigned gen;                   /* p2p_mount_shortcut_gen when the files were found verified */
	char **path, **source;
	size_t n;
	char *spec;
	int failed;
	char *errmsg;
};

static void shortcut_work(uv_work_t *w)
{
	struct shortcut_job *j = w->data;

	if (j->drop) {
		p2p_mount_shortcuts_drop(j->m);
		return;
	}
	for (size_t i = 0; i < j->n; i++) {
		char *errmsg = NULL;
		int r = p2p_mount_shortcut(j->m, j->path[i], j->source[i], j->gen, &errmsg);
		if (r == -EPERM || r == -ENOENT || r == -ESTALE) {
			free(errmsg);
			break; /* not root, the mount is going, or fenced (damage found since the files were
				 * verified): nothing more to do */
		}
		if (r) {
			j->failed++;
			if (!j->errmsg)
				j->errmsg = errmsg;
			else
				free(errmsg);
		}
	}
}

static void shortcut_free(struct shortcut_job *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->path[i]);
		free(j->source[i]);
	}
	free(j->path);
	free(j->source);
	free(j->spec);
	free(j->errmsg);
	free(j);
}

static void shortcut_done(uv_work_t *w, int status)
{
	struct shortcut_job *j = w->data;

	(void)status;
	p2p_mount_hold(j->m, false);
	if (j->failed)
		log_warn("agent", "%s: %d %s on FUSE: %s", j->spec, j->failed,
			 j->failed == 1 ? "file stays" : "files stay", j->errmsg ? j->errmsg : "?");
	shortcut_free(j);
}

void agent_shortcuts_drop(struct agent *a, struct agent_snap *s)
{
	for (size_t k = 0; k < s->nmounts; k++) {
		struct shortcut_job *j;
		/* a shortcut asked for before now is not made, even on a job that runs after the drop;
		 * and the drop goes even where none is made yet (one may be being made) */
		p2p_mount_shortcuts_fence(s->mounts[k].m);
		j = xcalloc(1, sizeof(*j));
		j->drop = true;
		j->m = s->mounts[k].m;
		j->spec = xstrdup(s->spec ? s->spec : s->btih);
		j->w.data = j;
		p2p_mount_hold(j->m, true);
		uv_queue_work(&a->loop, &j->w, shortcut_work, shortcut_done);
	}
}

void agent_shortcuts(struct agent *a, struct agent_snap *s)
{
	struct p2p_file_list l = { 0 };
	size_t nw = 0;
	int *idx;

	/* (not one taken back whole at a restart and not read back since: FUSE reads check each piece of
	 * it in the file, a shortcut would not; a pull verifies it) */
	if (!s->verified || s->unchecked || !s->nmounts || a->stopping || getuid() != 0 ||
	    p2p_session_files(a->ses, s->btih, &l))
		return;
	idx = agent_want_indices(&l, s->want, &nw);
	for (size_t k = 0; k < s->nmounts; k++) {
		struct shortcut_job *j = xcalloc(1, sizeof(*j));
		j->path = xcalloc(nw + 1, sizeof(*j->path));
		j->source = xcalloc(nw + 1, sizeof(*j->source));
		for (size_t i = 0, q = 0; i < l.n && q < nw && j->n < SHORTCUT_MAX; i++) {
			if (l.v[i].index != idx[q])
				continue;
			q++;
			if (l.v[i].size < SHORTCUT_MIN)
				continue;
			j->path[j->n] = xstrdup(l.v[i].path);
			j->source[j->n++] = xasprintf("%s/%s/%s", s->save, l.name, l.v[i].path);
		}
		if (!j->n || p2p_mount_shortcuts(s->mounts[k].m) >= j->n) {
			shortcut_free(j); /* nothing (more) to serve directly */
			continue;
		}
		j->m = s->mounts[k].m;
		j->gen = p2p_mount_shortcut_gen(j->m);
		j->spec = xstrdup(s->spec ? s->spec : s->btih);
		j->w.data = j;
		p2p_mount_hold(j->m, true);
		uv_queue_work(&a->loop, &j->w, shortcut_work, shortcut_done);
	}
	free(idx);
	p2p_file_list_release(&l);
}

/* The hub cache links mount k made point into its folder, empty once it is gone: they point at the
 * cache's own files instead where those are verified (the files s wants, as a pull links them), and
 * the others go (a link into an empty folder is worse than none: huggingface_hub would hand out a
 * path without a file). Said in the log, and counted for umount's answer. */
static void relink(struct agent *a, struct agent_snap *s, size_t k, size_t *relinked, size_t *unlinked)
{
	struct agent_mount *m = &s->mounts[k];
	size_t yes = 0, no;
	char *err = NULL;

	if (!m->where || !json_object_size(m->where))
		return;
	if (s->verified && !s->unchecked && !json_array_size(s->pending_links)) {
		char *dir = xasprintf("%s/%s", s->save, s->name ? s->name : "");
		if (!agent_snap_link(a, s, m->name, m->where, dir, true, &err)) {
			yes = s->want ? json_array_size(s->want) : json_array_size(json_object_get(s->meta, "files"));
			agent_snap_linked(a, s, m->name, m->where); /* taken away if they leave the cache */
		} else {
			log_warn("agent", "%s: cannot link the cache's files into the hub cache: %s",
				 s->spec ? s->spec : s->btih, err ? err : "?");
		}
		free(err);
		free(dir);
	}
	no = agent_hub_unlink(m->name, m->where, m->dir);
	if (yes || no)
		log_info("agent", "%s: unmounted from %s: %zu %s in the hub cache now point at the cache's verified "
			 "files, %zu %s into the mount taken away", s->spec ? s->spec : s->btih, m->dir, yes,
			 yes == 1 ? "file" : "files", no, no == 1 ? "link" : "links");
	if (relinked)
		*relinked = yes;
	if (unlinked)
		*unlinked = no;
}

void agent_mount_forget(struct agent *a, struct agent_snap *s, size_t k, size_t *relinked, size_t *unlinked)
{
	relink(a, s, k, relinked, unlinked);
	free(s->mounts[k].dir);
	json_decref(s->mounts[k].where);
	s->mounts[k] = s->mounts[--s->nmounts];
}

int agent_mount_detach(struct agent *a, struct agent_snap *s, size_t k, bool *in_use, size_t *relinked,
		       size_t *unlinked, char **errmsg)
{
	struct p2p_mount *m = s->mounts[k].m;
	int r;

	*in_use = false;
	if ((r = p2p_mount_detach(m, errmsg)) != 0)
		return r;
	agent_mount_forget(a, s, k, relinked, unlinked);
	/* With nobody left on it the kernel ends the connection as the detach returns, and the mount's
	 * loop a moment later (its threads winding down): that moment is waited for (at most 2 s), so that
	 * what comes next (`drop` right after `umount`) finds no copy lingering. One still in use lingers
	 * (the tick frees it once its last user lets go), and nothing here waits for its users. */
	*in_use = p2p_mount_connected(m);
	if (*in_use ? p2p_mount_release(&m) : p2p_mount_release_ended(&m, 2000))
		return 0;
	s->lingering = xreallocarray(s->lingering, s->nlingering + 1, sizeof(*s->lingering));
	s->lingering[s->nlingering++] = m;
	return 0;
}
