/*
 * sync-twins.c - one content known by git id on one hub and by sha256 on the other (a config.json
 * of a model published on both), fetched once per run: see sync-int.h.
 */
#include <string.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "store/store.h"
#include "sync-int.h"

/* Twins are looked for among files up to this size: git ids name regular (not LFS) files, which the
 * Hub keeps small; hashing one again to compare is cheap. */
#define TWIN_MAX_SIZE ((int64_t)64 << 20)

/* Is j's content the blob sha256 that job k brought, and may j's repos take it from k (content
 * fetched for a closed repo goes to that repo only: mirror__sync_may_take's rule)? */
static bool twin_match(struct mirror__sync *s, const struct mirror__sync_job *k, const struct mirror__sync_job *j,
		       const char *sha256)
{
	char oid[41];
	int64_t got = -1;

	if (!sha256 || !(k->owner->is_public || k->owner->cr->id == j->owner->cr->id) ||
	    !store_has(s->d->store, sha256, j->size))
		return false;
	if (strlen(j->key) == 64)
		return !strcmp(j->key, sha256);
	return !store_git_oid(s->d->store, sha256, oid, &got) && got == j->size && !strcmp(oid, j->key);
}

/* j's content came with its twin (sha256): its files take it without a fetch. Returns false when
 * some of its waiters may not take it (they need their own fetch: the caller queues j for them). */
static bool twin_take(struct mirror__sync *s, struct mirror__sync_job *j, const struct mirror__sync_job *k,
		      const char *sha256)
{
	log_debug("sync", "%s: the same content as %.12s (the other hub's name for it), fetched once", j->f->path,
		  k->key);
	j->state = JOB_OK;
	memcpy(j->result_sha, sha256, 65);
	s->files_done++;
	if (!mirror__sync_job_notify(j, 0, sha256))
		return true;
	j->owner = j->waiters[0].repo;
	j->f = j->owner->wants[j->waiters[0].idx].f;
	return false;
}

/* Before j starts: a job of the other kind of key (a git id for a sha256, or the reverse) and the
 * same size may bring the same content (a Hugging Face regular file and a ModelScope file). One that
 * ended already is compared now (returns 1: j took its content); one still running makes j wait for
 * it (returns 2); else 0 and j is fetched. */
int mirror__sync_twin_check(struct mirror__sync *s, struct mirror__sync_job *j)
{
	size_t klen = strlen(j->key), compared = 0;

	if (j->size > TWIN_MAX_SIZE)
		return 0;
	for (size_t i = 0; i < s->njobs; i++) {
		struct mirror__sync_job *k = s->jobs[i];
		if (k == j || k->size != j->size || strlen(k->key) == klen)
			continue;
		if (k->state == JOB_RUNNING) {
			j->state = JOB_TWIN;
			k->twins = xreallocarray(k->twins, k->ntwins + 1, sizeof(*k->twins));
			k->twins[k->ntwins++] = j;
			return 2;
		}
		if (k->state == JOB_OK && compared++ < 16 && twin_match(s, k, j, k->result_sha))
			return twin_take(s, j, k, k->result_sha) ? 1 : 0;
	}
	return 0;
}

/* k ended (sha256 its content, NULL on failure): its twins take that content when it is theirs and
 * they may, or are fetched as usual. */
void mirror__sync_twins_release(struct mirror__sync_job *k, const char *sha256)
{
	struct mirror__sync *s = k->s;
	struct mirror__sync_job **tw = k->twins;
	size_t n = k->ntwins;

	k->twins = NULL;
	k->ntwins = 0;
	for (size_t i = 0; i < n; i++) {
		struct mirror__sync_job *j = tw[i];
		if (twin_match(s, k, j, sha256) && twin_take(s, j, k, sha256))
			continue;
		j->state = JOB_QUEUED;
		mirror__sync_enqueue(s, j);
	}
	free(tw);
}
