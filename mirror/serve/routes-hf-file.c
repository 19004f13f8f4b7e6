/*
 * routes-hf-file.c - resolve and raw (D, E; routes-hf-int.h): a file's bytes from the store, with the
 * Hub's headers (ETag, X-Repo-Commit, X-Linked-Size, ...), ranges and conditional requests; a file
 * fetched on demand streams from its partial file while it verifies.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "store/store.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "access.h"
#include "ondemand.h"
#include "routes-hf-int.h"
#include "routes-int.h"

/* ---- D, E: resolve and raw ------------------------------------------------------------------------ */

/* An LFS file whose Xet hash the mirror knows is offered by Xet too (docs/protocols/xet.md): its
 * headers, and to a client that asks for the file-info form, that form instead of the bytes
 * (answered: true). */
static bool xet_offer(struct mirror__hf_req *h, struct httpd_req *req, const struct catalog_entry *e)
{
	char xh[65], *base, *refresh, *recon, *text;
	json_t *o;

	/* (no key for tokens, e.g. a read-only data directory: no Xet, or clients would fail, not fall back) */
	if (!h->rt->have_xet_key || mirror__xet_hash(h->rt, e, xh))
		return false;
	mirror__xet_headers(req, h->type, h->name, h->snap.commit, xh);
	if (!mirror__xet_wants_fileinfo(req))
		return false;
	base = mirror__self_base(req);
	refresh = xasprintf("/api/%ss/%s/xet-read-token/%s", h->type, h->name, h->snap.commit);
	recon = xasprintf("%s" MIRROR__XET_CAS "/v1/reconstructions/%s", base, xh);
	o = json_pack("{s:s, s:s, s:s, s:s, s:I}", "hash", xh, "refreshRoute", refresh, "reconstructionUrl", recon,
		      "etag", e->lfs_oid, "size", (json_int_t)e->size);
	text = json_dumps(o, JSON_COMPACT);
	httpd_respond_str(req, 200, MIRROR__XET_FILEINFO, text);
	free(text);
	json_decref(o);
	free(recon);
	free(refresh);
	free(base);
	return true;
}

void mirror__hf_file(struct mirror__hf_req *h, const char *rev, const char *path, bool raw)
{
	struct catalog_entry e;
	struct httpd_req *req = h->req;
	char etag[80], *fname, *disp;
	const char *base;
	int64_t a = 0, b = -1;
	int rr, r;

	if (mirror__hf_resolve_how(h, rev, true))
		return;
	if (!path || path_check_str(path)) {
		mirror__hf_error(req, 404, "EntryNotFound", "Entry not found", h->snap.commit);
		return;
	}
	r = catalog_snapshot_file(h->rt->data->catalog, h->snap.id, path, &e);
	if (r) {
		mirror__hf_error(req, r == HM_ERR_NOT_FOUND ? 404 : 500, r == HM_ERR_NOT_FOUND ? "EntryNotFound" : NULL,
			 r == HM_ERR_NOT_FOUND ? "Entry not found" : "catalog error", h->snap.commit);
		return;
	}
	if (!mirror_access_content_open(h->rt->access, &h->repo)) {
		/* the Hub's own answers: a gated repo's content, and a private repo to whom may not see it */
		if (h->repo.private_ == 1)
			mirror__hf_error(req, 401, NULL, "Invalid username or password.", NULL);
		else
			mirror__hf_error(req, 401, "GatedRepo",
					 "Access to this gated repository is restricted on this mirror.", NULL);
		goto out;
	}
	mirror__hf_cors(req);
	httpd_add_header(req, "X-Repo-Commit", h->snap.commit);
	/* The Hub's ETags, so caches built from the mirror and from the Hub are interchangeable. */
	snprintf(etag, sizeof(etag), "\"%s\"", e.lfs_oid[0] ? e.lfs_oid : (e.git_oid[0] ? e.git_oid : e.sha256));
	if (raw && e.lfs_oid[0]) {
		/* the git blob of an LFS file is its pointer; Range applies to it like to any file */
		char ptr[256];
		size_t n = mirror__hf_lfs_pointer(&e, ptr, sizeof(ptr));
		snprintf(etag, sizeof(etag), "\"%s\"", e.git_oid);
		httpd_add_header(req, "ETag", etag);
		httpd_add_header(req, "Accept-Ranges", "bytes");
		rr = httpd_parse_range(httpd_header(req, "Range"), (int64_t)n, &a, &b);
		if (rr < 0) {
			httpd_add_headerf(req, "Content-Range", "bytes */%zu", n);
			httpd_respond_str(req, 416, "text/plain", "range not satisfiable\n");
		} else if (rr > 0) {
			httpd_add_headerf(req, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%zu", a, b, n);
			httpd_respond(req, 206, "text/plain; charset=utf-8", ptr + a, (size_t)(b - a + 1));
		} else {
			httpd_respond(req, 200, "text/plain; charset=utf-8", ptr, n);
		}
		goto out;
	}
	httpd_add_header(req, "ETag", etag);
	if (e.lfs_oid[0]) {
		httpd_add_header(req, "X-Linked-Etag", etag);
		httpd_add_headerf(req, "X-Linked-Size", "%" PRId64, e.size);
		if (xet_offer(h, req, &e))
			goto out;
	}
	base = strrchr(e.path, '/') ? strrchr(e.path, '/') + 1 : e.path;
	fname = hub_url_escape(base, false);
	disp = xasprintf("inline; filename*=UTF-8''%s; filename=\"%s\"", fname, fname);
	httpd_add_header(req, "Content-Disposition", disp);
	free(fname);
	free(disp);
	if (httpd_etag_matches(httpd_header(req, "If-None-Match"), etag)) {
		httpd_respond_str(req, 304, NULL, "");
		goto out;
	}
	{
		struct mirror_ondemand_file of = { "hf", h->type, h->name, h->snap.commit, h->repo.follow_rev, e.path,
						   e.sha256, e.size, h->snap.repo_id, false };
		if (mirror__send_file(h->rt, req, h->snap.id, &of))
			mirror__hf_error(req, 503, NULL, "File temporarily unavailable on this mirror", h->snap.commit);
	}
out:
	catalog_entry_release(&e);
}
