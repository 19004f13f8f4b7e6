/*
 * floor-xet.c - the Xet pieces of the read floor (floor-xet-int.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/http/httpd.h"
#include "hub/xet/xet.h"
#include "mirror/data.h"
#include "store/store-xet.h"
#include "routes-int.h"

int mirror__xet_hash(struct mirror_routes *rt, const struct catalog_entry *e, char *out)
{
	if (hex_is_lower(e->xet_hash, 64)) {
		memcpy(out, e->xet_hash, 65);
		return 0;
	}
	/* stored before the catalog knew Xet hashes, or by a writer that does not record them: the
	 * identity file says it (56 bytes read), and the catalog learns it for the next time */
	if (store_xet_file_hash(rt->data->store, e->sha256, out))
		return -1;
	switch (catalog_blob_set_xet(rt->data->catalog, e->sha256, out)) {
	case 0:
		return 0;
	case HM_ERR_HASH_MISMATCH:
		return -1;   /* upstream names these bytes otherwise: plain HTTP only */
	default:
		log_warn("serve", "catalog: %s", catalog_errmsg(rt->data->catalog));
		return 0;
	}
}

void mirror__xet_headers(struct httpd_req *req, const char *type, const char *name, const char *commit,
			 const char *xet_hash)
{
	char *base = mirror__self_base(req);

	httpd_add_header(req, "X-Xet-Hash", xet_hash);
	httpd_add_headerf(req, "X-Xet-Refresh-Route", "/api/%ss/%s/xet-read-token/%s", type, name, commit);
	httpd_add_headerf(req, "Link",
			  "<%s/api/%ss/%s/xet-read-token/%s>; rel=\"xet-auth\", "
			  "<%s" MIRROR__XET_CAS "/v1/reconstructions/%s>; rel=\"xet-reconstruction-info\"",
			  base, type, name, commit, base, xet_hash);
	free(base);
}

bool mirror__xet_wants_fileinfo(const struct httpd_req *req)
{
	const char *accept = httpd_header(req, "Accept");

	return accept && strstr(accept, MIRROR__XET_FILEINFO);
}

/* ---- virtual xorbs ---- */

size_t mirror__xet_runs(const struct xet_chunk *c, size_t nc, struct mirror__xet_run **out)
{
	struct mirror__xet_run *r = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < nc; i++) {
		uint64_t need = XET_XORB_CHUNK_HEADER_LEN + c[i].size;
		if (!n || r[n - 1].len + need > MIRROR__XET_XORB_MAX) {
			if (n == cap)
				r = xreallocarray(r, cap = cap ? 2 * cap : 8, sizeof(*r));
			r[n++] = (struct mirror__xet_run){ i, 0, 0 };
		}
		r[n - 1].n++;
		r[n - 1].len += need;
	}
	*out = r;
	return n;
}

void mirror__xet_run_hash(const struct xet_chunk *c, const struct mirror__xet_run *r, char *hex)
{
	struct xet_node *nodes = xcalloc(r->n ? r->n : 1, sizeof(*nodes));
	struct xet_hash h;

	for (size_t i = 0; i < r->n; i++)
		nodes[i] = (struct xet_node){ c[r->first + i].hash, c[r->first + i].size };
	xet_xorb_hash(nodes, r->n, &h);
	xet_hash_hex(&h, hex);
	free(nodes);
}
