/*
 * want.c - which files of a snapshot the agent fetches (struct agent_snap's want): a partial pull
 * (`pull --include/--exclude`, the `hf download` rules of hub/select.h), what a mount prefetches, and
 * the union of those over time. libtorrent fetches the wanted files' pieces in the background and
 * nothing else; a mount's reads and the local endpoint ask for other pieces as they read them
 * (p2p_session_want_range). Piece priorities only (p2p.h, struct p2p_add).
 */
#include <stdlib.h>
#include <string.h>

#include "agent-int.h"
#include "base/xmalloc.h"
#include "hub/select.h"
#include "p2p/p2p.h"

/* The strings of a JSON array (borrowed from it), *n of them; NULL-safe. Caller frees the array. */
static const char **strings(json_t *arr, size_t *n)
{
	const char **v = xcalloc(json_array_size(arr) + 1, sizeof(*v));
	json_t *it;
	size_t i;

	*n = 0;
	json_array_foreach(arr, i, it)
		if (json_string_value(it))
			v[(*n)++] = json_string_value(it);
	return v;
}

json_t *agent_select(json_t *meta, json_t *include, json_t *exclude)
{
	size_t ni, ne, i;
	const char **inc, **exc;
	json_t *out, *f;

	if (!json_array_size(include) && !json_array_size(exclude))
		return NULL;
	inc = strings(include, &ni);
	exc = strings(exclude, &ne);
	out = json_array();
	json_array_foreach(json_object_get(meta, "files"), i, f) {
		const char *p = json_string_value(json_object_get(f, "path"));
		if (p && hub_select(inc, ni, exc, ne, p, json_integer_value(json_object_get(f, "size"))))
			json_array_append_new(out, json_string(p));
	}
	free(inc);
	free(exc);
	return out;
}

json_t *agent_prefetch(json_t *meta, json_t *prefetch)
{
	const char *word = json_string_value(prefetch);
	size_t np = 0, i;
	const char **pats;
	json_t *out, *f;

	if (word && !strcmp(word, "all"))
		return NULL;
	out = json_array();
	if (word && !strcmp(word, "none"))
		return out;
	pats = strings(json_is_array(prefetch) ? prefetch : NULL, &np);
	json_array_foreach(json_object_get(meta, "files"), i, f) {
		const char *p = json_string_value(json_object_get(f, "path"));
		if (p && (hub_is_metadata(p, json_integer_value(json_object_get(f, "size"))) ||
			  hub_glob_match_any(pats, np, p)))
			json_array_append_new(out, json_string(p));
	}
	free(pats);
	return out;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The strings of want, sorted (borrowed), for bsearch. */
static const char **sorted(json_t *want, size_t *n)
{
	const char **v = strings(want, n);

	qsort(v, *n, sizeof(*v), by_str);
	return v;
}

static bool in(const char *const *v, size_t n, const char *p)
{
	return bsearch(&p, v, n, sizeof(*v), by_str) != NULL;
}

int *agent_want_indices(const struct p2p_file_list *l, json_t *want, size_t *n)
{
	int *idx = xcalloc(l->n + 1, sizeof(*idx));
	size_t nw = 0;
	const char **w = want ? sorted(want, &nw) : NULL;

	*n = 0;
	for (size_t i = 0; i < l->n; i++)
		if (!want || in(w, nw, l->v[i].path))
			idx[(*n)++] = l->v[i].index;
	free(w);
	return idx;
}

void agent_snap_want(struct agent *a, struct agent_snap *s, json_t *want)
{
	struct p2p_file_list l = { 0 };
	size_t nw = 0, n = 0, i;
	const char **have;
	json_t *it, *more;
	int *idx;

	if (!s->want)
		return; /* every file already */
	if (p2p_session_files(a->ses, s->btih, &l))
		return;
	if (!want) {
		json_object_del(s->meta, "want");
		s->want = NULL;
		more = NULL;
	} else {
		have = sorted(s->want, &nw);
		more = json_array();
		json_array_foreach(want, i, it)
			if (json_string_value(it) && !in(have, nw, json_string_value(it)))
				json_array_append(more, it);
		free(have);
		json_array_foreach(more, i, it)
			json_array_append(s->want, it);
	}
	idx = agent_want_indices(&l, more, &n);
	if (n) {
		p2p_session_want_files(a->ses, s->btih, idx, n);
		/* verified and kept by sha256 again once the new files are in (the settle job) */
		s->verified = false;
		s->indexed = false;
		s->index_tries = 0;
		s->want_gen++;
		agent_snap_remember(a, s);
		agent_fill_soon(a);
	}
	free(idx);
	json_decref(more);
	p2p_file_list_release(&l);
}

bool agent_verify_wanted(struct agent *a, const char *btih, json_t *want)
{
	struct p2p_file_list l = { 0 };
	size_t nw = 0;
	const char **w;
	bool all = true;

	if (p2p_session_files(a->ses, btih, &l))
		return false;
	w = want ? sorted(want, &nw) : NULL;
	for (size_t i = 0; all && i < l.n; i++)
		if (!want || in(w, nw, l.v[i].path))
			all = p2p_session_have_range(a->ses, btih, l.v[i].index, 0, l.v[i].size) == 1;
	free(w);
	p2p_file_list_release(&l);
	return all;
}

struct p2p_known *agent_wanted_known(struct agent *a, const struct agent_snap *s, size_t *n, struct p2p_known **others,
				     size_t *nothers)
{
	struct p2p_known *k = xcalloc(s->nknown + 1, sizeof(*k));
	struct p2p_file_list l = { 0 };
	int64_t *held = NULL;
	size_t nw = 0, nwhole = 0;
	const char **w = s->want ? sorted(s->want, &nw) : NULL, **whole = NULL;

	*n = 0;
	*others = NULL;
	*nothers = 0;
	/* the files held whole, by path */
	if (s->want && !p2p_session_files(a->ses, s->btih, &l)) {
		held = xcalloc(l.n + 1, sizeof(*held));
		whole = xcalloc(l.n + 1, sizeof(*whole));
		if (!p2p_session_files_held(a->ses, s->btih, &l, held))
			for (size_t i = 0; i < l.n; i++)
				if (l.v[i].size > 0 && held[i] == l.v[i].size)
					whole[nwhole++] = l.v[i].path;
		qsort(whole, nwhole, sizeof(*whole), by_str);
	}
	for (size_t i = 0; i < s->nknown; i++) {
		if (!s->want || in(w, nw, s->known[i].path)) {
			k[(*n)++] = s->known[i];
		} else if (nwhole && in(whole, nwhole, s->known[i].path)) {
			if (!*others)
				*others = xcalloc(s->nknown, sizeof(**others));
			(*others)[(*nothers)++] = s->known[i];
		}
	}
	free(w);
	free(whole);
	free(held);
	p2p_file_list_release(&l);
	return k;
}
