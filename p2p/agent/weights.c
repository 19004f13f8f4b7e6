/*
 * weights.c - what a mount fetches by default besides the metadata: the weight files a loader reads
 * whole, as a sharded checkpoint's index names them (docs/agent.md, "Some files of a snapshot").
 *
 * A safetensors checkpoint in shards comes with an index, <prefix>.safetensors.index.json, whose
 * "weight_map" names the shard (relative to the index's folder) of every tensor; every loader that
 * opens the checkpoint (transformers, vLLM, SGLang, diffusers per component) reads each shard it
 * names, whole. So once a mount with the default prefetch is made, a job on the thread pool waits
 * for each such index to be verified in the cache (it is metadata: the first thing fetched), reads
 * it and names its shards; on the loop they are added to what the snapshot wants, so they come while
 * the loader starts instead of as it reads. Other weight files (a GGUF repo's quantizations, an
 * original/consolidated copy beside the shards) are named by no index and stay fetched as read.
 *
 * Never for more than fits: when the shards with what is wanted already would pass the cache's bound
 * (--cache-size) or the room on its disk, nothing is added and the log says why. The index is only a
 * hint: a name it gives counts only when it is exactly a file of the snapshot.
 */
#include <stdlib.h>
#include <string.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/log.h"
#include "base/path.h"
#include "base/size.h"
#include "base/xmalloc.h"
#include "p2p/p2p.h"

#define WEIGHTS_INDEX_MAX ((int64_t)64 << 20) /* an index bigger than this is not read */
#define WEIGHTS_WAIT_S 60                      /* how long a job waits for an index's bytes */
#define WEIGHTS_SUFFIX ".safetensors.index.json"

struct weights_job {
	uv_work_t w;
	struct agent *a;
	char btih[41];
	struct p2p_file_list files;     /* the snapshot's, on the worker */
	const char **sorted;            /* its paths, sorted (borrowed from files) */
	json_t *named;                  /* the worker's answer: a set of the snapshot's paths the indexes
					 * name ({"path": true}), */
	int64_t bytes;                  /* their size, */
	int nindex;                     /* and how many indexes were read */
};

static bool is_index(const struct p2p_file_entry *e)
{
	size_t n = strlen(e->path), k = strlen(WEIGHTS_SUFFIX);

	return n > k && !strcmp(e->path + n - k, WEIGHTS_SUFFIX) && e->size > 0 && e->size <= WEIGHTS_INDEX_MAX;
}

/* The bytes of file e once verified in the cache (waited for, asked for first), or NULL. */
static char *index_bytes(struct weights_job *j, const struct p2p_file_entry *e, size_t *len)
{
	struct p2p_session *ses = j->a->ses;
	char *path = NULL, *data = NULL;
	uint64_t start = uv_hrtime() / 1000000, now = start, asked = start;
	int have;

	p2p_session_want_range(ses, j->btih, e->index, 0, e->size, 0);
	/* woken as pieces come, at most 50 ms apart (to see the agent stop); asked again each second */
	while ((have = p2p_session_have_range(ses, j->btih, e->index, 0, e->size)) == 0 &&
	       now - start < WEIGHTS_WAIT_S * 1000 && !atomic_load(&j->a->quit)) {
		p2p_session_wait_range(ses, j->btih, e->index, 0, e->size, 50);
		now = uv_hrtime() / 1000000;
		if (now - asked >= 1000) {
			p2p_session_want_range(ses, j->btih, e->index, 0, e->size, 0);
			asked = now;
		}
	}
	if (have == 1 && !p2p_session_file_path(ses, j->btih, e->index, &path) &&
	    path_read_file(path, (size_t)e->size, &data, len))
		data = NULL;
	free(path);
	return data;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Add to j->named the files of the snapshot that index e (its bytes data) names. */
static void take_index(struct weights_job *j, const struct p2p_file_entry *e, const char *data, size_t len)
{
	json_t *root = json_loadb(data, len, 0, NULL), *map = json_object_get(root, "weight_map"), *v;
	const char *slash = strrchr(e->path, '/'), *tensor;
	int dirlen = slash ? (int)(slash - e->path) + 1 : 0;

	json_object_foreach(map, tensor, v) {
		const char *shard = json_string_value(v);
		char *p;
		if (!shard)
			continue;
		p = xasprintf("%.*s%s", dirlen, e->path, shard);
		if (!json_object_get(j->named, p) && strcmp(p, e->path) &&
		    bsearch(&p, j->sorted, j->files.n, sizeof(*j->sorted), by_str))
			json_object_set_new(j->named, p, json_true());
		free(p);
	}
	json_decref(root);
	j->nindex++;
}

static void weights_work(uv_work_t *w)
{
	struct weights_job *j = w->data;

	j->sorted = xcalloc(j->files.n + 1, sizeof(*j->sorted));
	for (size_t i = 0; i < j->files.n; i++)
		j->sorted[i] = j->files.v[i].path;
	qsort(j->sorted, j->files.n, sizeof(*j->sorted), by_str);
	for (size_t i = 0; i < j->files.n && !atomic_load(&j->a->quit); i++) {
		size_t len = 0;
		char *data;
		if (!is_index(&j->files.v[i]) || !(data = index_bytes(j, &j->files.v[i], &len)))
			continue;
		take_index(j, &j->files.v[i], data, len);
		free(data);
	}
	for (size_t i = 0; i < j->files.n; i++)
		if (json_object_get(j->named, j->files.v[i].path))
			j->bytes += j->files.v[i].size;
}

/* On the loop: the shards named join what s wants, when they fit. */
static void weights_apply(struct agent *a, struct agent_snap *s, const struct weights_job *j)
{
	json_t *more = json_array(), *all = json_deep_copy(s->want), *v;
	const char *p, *name = s->spec ? s->spec : s->btih;
	int64_t total = 0, need;
	char *why = NULL, t[32], c[32];
	size_t n = json_object_size(j->named);
	bool one = n == 1, several = j->nindex > 1;

	json_object_foreach(j->named, p, v) {
		json_array_append_new(more, json_string(p));
		json_array_append_new(all, json_string(p));
	}
	need = agent_snap_need(a, s->meta, all, &total);
	size_human(j->bytes, t, sizeof(t));
	if (a->cfg->cache_size > 0 && total > a->cfg->cache_size) {
		size_human(a->cfg->cache_size, c, sizeof(c));
		why = xasprintf("with what it wants they pass the cache's bound (--cache-size %s)", c);
	} else if ((why = agent_room_refusal(a, name, need, total)) == NULL) {
		log_info("agent",
			 "%s: fetching in the background the %zu weight file%s its safetensors index%s name%s (%s)",
			 name, n, one ? "" : "s", several ? "es" : "", several ? "" : "s", t);
		agent_snap_want(a, s, more);
	}
	if (why)
		log_info("agent",
			 "%s: the %zu weight file%s its safetensors index%s name%s (%s) %s fetched as %s read, "
			 "not before: %s",
			 name, n, one ? "" : "s", several ? "es" : "", several ? "" : "s", t, one ? "is" : "are",
			 one ? "it is" : "they are", why);
	free(why);
	json_decref(more);
	json_decref(all);
}

static void weights_done(uv_work_t *w, int status)
{
	struct weights_job *j = w->data;
	struct agent *a = j->a;
	struct agent_snap *s = agent_snap_find(a, j->btih);

	/* still mounted, and not wanting every file already (a pull of the whole meanwhile) */
	if (status == 0 && s && s->nmounts && s->want && !a->stopping && json_object_size(j->named))
		weights_apply(a, s, j);
	free(j->sorted);
	p2p_file_list_release(&j->files);
	json_decref(j->named);
	free(j);
}

void agent_weights_prefetch(struct agent *a, struct agent_snap *s)
{
	struct weights_job *j;
	bool any = false;

	if (!s->want || a->stopping)
		return;
	j = xcalloc(1, sizeof(*j));
	if (!p2p_session_files(a->ses, s->btih, &j->files))
		for (size_t i = 0; i < j->files.n && !any; i++)
			any = is_index(&j->files.v[i]);
	if (!any) {
		p2p_file_list_release(&j->files);
		free(j);
		return;
	}
	j->a = a;
	memcpy(j->btih, s->btih, sizeof(j->btih));
	j->named = json_object();
	j->w.data = j;
	uv_queue_work(&a->loop, &j->w, weights_work, weights_done);
}
