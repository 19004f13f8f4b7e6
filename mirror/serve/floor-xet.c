/*
 * floor-xet.c - the Xet pieces of the read floor (floor-xet-int.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/http/httpd.h"
#include "mirror/data.h"
#include "mirror/store-xet.h"
#include "routes-int.h"

int mirror__xet_hash(struct mirror_routes *rt, const struct catalog_entry *e, char *out)
{
	if (hex_is_lower(e->xet_hash, 64)) {
		memcpy(out, e->xet_hash, 65);
		return 0;
	}
	/* stored before the catalog knew Xet hashes, or by a writer that does not record them: the
	 * identity file says it (56 bytes read), and the catalog learns it for the next time */
	if (mirror_store_xet_file_hash(rt->data->store, e->sha256, out))
		return -1;
	if (catalog_blob_set_xet(rt->data->catalog, e->sha256, out))
		log_warn("serve", "catalog: %s", catalog_errmsg(rt->data->catalog));
	return 0;
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
