/*
 * share.c - several mirrors on one bucket: the mirror's id, its live set, the others' (see share.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "share.h"
#include "store/bucket.h"
#include "store/store.h"

/* A live set older than this is named by gc's warning: its mirror may be gone (docs/operations.md). */
#define STALE_S (30 * 24 * 3600)

int mirror_share_id(struct mirror_data *d, char out[33])
{
	char *p = xasprintf("%s/mirror-id", d->dir), *text = NULL, *tmp = NULL;
	unsigned char b[16];
	size_t n = 0;
	int r = path_read_file(p, 64, &text, &n);

	if (r == -ENOENT) {
		/* made once: through a name of its own, linked under the real one (another process making it
		 * at once loses, and reads the winner's) */
		char id[33];
		if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
			r = -errno;
			goto out;
		}
		hex_encode(b, sizeof(b), id);
		id[32] = '\n';
		tmp = xasprintf("%s.%ld", p, (long)getpid());
		r = path_write_atomic(tmp, id, 33, 0644);
		if (!r && link(tmp, p) < 0 && errno != EEXIST)
			r = -errno;
		unlink(tmp);
		if (!r)
			r = path_read_file(p, 64, &text, &n);
	}
	if (!r && n >= 32) {
		memcpy(out, text, 32);
		out[32] = '\0';
	}
	if (!r && (n < 32 || !hex_is_lower(out, 32)))
		r = -EINVAL;
out:
	if (r)
		log_warn("store", "%s: %s", p, r == -EINVAL ? "not a mirror id (32 lowercase hex)" : err_str(r));
	free(text);
	free(tmp);
	free(p);
	return r;
}

static int add_named(void *ud, const char *sha256)
{
	return store_bucket_live_add(ud, sha256);
}

int mirror_share_publish(struct mirror_data *d, char **errmsg)
{
	struct store_bucket_live *l = NULL;
	char id[33];
	int r;

	if (!store_bucket_of(d->store))
		return 0;
	r = mirror_share_id(d, id);
	if (!r)
		r = store_bucket_live_begin(store_bucket_of(d->store), id, &l);
	if (!r && (r = catalog_named_each(d->catalog, add_named, l)) == 0)
		r = store_bucket_live_commit(&l);
	store_bucket_live_abort(&l);
	if (r && errmsg)
		*errmsg = xasprintf("the live set of mirror %s in the bucket: %s (%s)", id, err_str(r),
				    r == HM_ERR_SQLITE ? catalog_errmsg(d->catalog) : store_bucket_errmsg());
	return r;
}

struct mirror_share {
	char self[33];
	unsigned char (*v)[32];     /* the others' names, sorted */
	size_t n, cap;
	int64_t earliest;           /* the earliest live set's time */
	int64_t grace_s;
	int others;
	bool skip;                  /* the set being read is this mirror's own */
};

static int take_set(void *ud, const char *id, int64_t written, const char *sha256)
{
	struct mirror_share *sh = ud;

	if (!sha256) {
		sh->skip = !strcmp(id, sh->self);
		if (written < sh->earliest)
			sh->earliest = written;
		if (sh->skip)
			return 0;
		sh->others++;
		if (written < time(NULL) - STALE_S)
			log_warn("gc", "mirror %s wrote its live set to the bucket %lld days ago: what it names is "
				 "kept, and nothing the bucket got since a grace before it goes, until it writes "
				 "one again or its mirrors/%s/live is deleted (docs/operations.md, section 8)",
				 id, (long long)((time(NULL) - written) / 86400), id);
		return 0;
	}
	if (sh->skip)
		return 0;
	if (sh->n == sh->cap)
		sh->v = xreallocarray(sh->v, sh->cap = sh->cap ? sh->cap * 2 : 4096, sizeof(*sh->v));
	return hex_decode(sha256, sh->v[sh->n++], 32) ? HM_ERR_UPSTREAM : 0;
}

static int cmp32(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}

int mirror_share_load(struct mirror_data *d, int64_t grace_s, struct mirror_share **out, char **errmsg)
{
	struct mirror_share *sh = xcalloc(1, sizeof(*sh));
	int r = mirror_share_id(d, sh->self);

	sh->earliest = INT64_MAX;
	sh->grace_s = grace_s;
	if (!r && store_bucket_of(d->store))
		r = store_bucket_live_each(store_bucket_of(d->store), take_set, sh);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("the live sets of the mirrors on the bucket: %s (%s)", err_str(r),
					    store_bucket_errmsg());
		mirror_share_free(&sh);
		return r;
	}
	if (sh->n)
		qsort(sh->v, sh->n, sizeof(*sh->v), cmp32);
	*out = sh;
	return 0;
}

bool mirror_share_names(const struct mirror_share *sh, const char *sha256)
{
	unsigned char k[32];

	return sh->n && !hex_decode(sha256, k, 32) && bsearch(k, sh->v, sh->n, sizeof(*sh->v), cmp32);
}

int64_t mirror_share_cutoff(const struct mirror_share *sh)
{
	/* (no set read, not even this mirror's own: nothing is known of the bucket's clock, keep all) */
	return sh->earliest == INT64_MAX ? INT64_MIN : sh->earliest - sh->grace_s;
}

int mirror_share_others(const struct mirror_share *sh)
{
	return sh->others;
}

void mirror_share_free(struct mirror_share **sh)
{
	if (!sh || !*sh)
		return;
	free((*sh)->v);
	free(*sh);
	*sh = NULL;
}
