/*
 * data.c - opening a data directory: one place that knows its layout.
 */
#include <stdlib.h>

#include "base/err.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "store.h"

const char *mirror_data_default_dir(void)
{
	const char *e = getenv("HUBMIRROR_DATA");
	return e && *e ? e : "/var/lib/hubmirror";
}

int mirror_data_open(const char *dir, struct mirror_data **out, char **errmsg)
{
	struct mirror_data *d = xcalloc(1, sizeof(*d));
	char *p = NULL, *cerr = NULL;
	int r;

	d->dir = xstrdup(dir);
	r = path_mkdirs(dir, 0755);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot create data directory '%s': %s", dir, err_str(r));
		goto fail;
	}
	p = xasprintf("%s/catalog.db", dir);
	r = catalog_open(p, &d->catalog, &cerr);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("'%s': %s", p, cerr ? cerr : err_str(r));
		goto fail;
	}
	free(p);
	p = xasprintf("%s/store", dir);
	r = mirror_store_open(p, &d->store);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot open store '%s': %s", p, err_str(r));
		goto fail;
	}
	free(p);
	*out = d;
	return 0;
fail:
	free(p);
	free(cerr);
	mirror_data_free(&d);
	return r;
}

void mirror_data_free(struct mirror_data **d)
{
	if (!d || !*d)
		return;
	catalog_free(&(*d)->catalog);
	mirror_store_free(&(*d)->store);
	free((*d)->dir);
	free(*d);
	*d = NULL;
}
