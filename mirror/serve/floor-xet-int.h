/*
 * floor-xet-int.h - the Xet pieces of the read floor (floor-xet.c, docs/protocols/xet.md): what the
 * Hugging Face front's resolve and listings and the CAS fronts (reads, writes) share. Nothing outside this folder
 * includes it; routes-int.h does, for every front.
 */
#ifndef HM_MIRROR_FLOOR_XET_INT_H
#define HM_MIRROR_FLOOR_XET_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct catalog_entry;
struct httpd_req;
struct mirror_routes;

#define MIRROR__XET_FILEINFO "application/vnd.xet-fileinfo+json"
#define MIRROR__XET_CAS "/xet-cas"       /* the CAS API's prefix under our own origin */
#define MIRROR__XET_TOKEN_TTL 3600       /* seconds a read token lives */
#define MIRROR__XET_XORB_MAX (64 << 20)  /* a virtual xorb's bytes, headers included, as the spec's xorbs */

/* The Xet file hash of entry e's content as the mirror knows it (out: 65 bytes): the catalog's, else
 * its identity file's header (then recorded in the catalog). Quick, for the loop: 0, or -1 when not
 * known yet (nothing is computed here). */
int mirror__xet_hash(struct mirror_routes *rt, const struct catalog_entry *e, char *out);
/* The headers a resolve of a file the mirror serves by Xet carries: X-Xet-Hash, the Link relations
 * xet-auth (our xet-read-token route for repo type/name at commit) and xet-reconstruction-info (our
 * CAS), and X-Xet-Refresh-Route. */
void mirror__xet_headers(struct httpd_req *req, const char *type, const char *name, const char *commit,
			 const char *xet_hash);
/* Does the request ask for the Xet file-info form (its Accept names it)? */
bool mirror__xet_wants_fileinfo(const struct httpd_req *req);

/* A content's virtual xorbs (docs/protocols/xet.md, "Virtual xorbs"): one run of its chunks is chunks
 * [first, first + n), len bytes as a xorb holds them uncompressed (an 8-byte header before each). */
struct mirror__xet_run {
	size_t first, n;
	uint64_t len;
};
struct xet_chunk;
/* The runs of chunks c[0..nc): each as many chunks as fit in MIRROR__XET_XORB_MAX. *out malloc'd;
 * returns their number. */
size_t mirror__xet_runs(const struct xet_chunk *c, size_t nc, struct mirror__xet_run **out);
/* The xorb hash of run r of chunks c, in its text form (hex: 65 bytes). */
void mirror__xet_run_hash(const struct xet_chunk *c, const struct mirror__xet_run *r, char *hex);

#endif
