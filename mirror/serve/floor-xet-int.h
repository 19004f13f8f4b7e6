/*
 * floor-xet-int.h - the Xet pieces of the read floor (floor-xet.c, docs/protocols/xet.md): what the
 * Hugging Face front's resolve and listings and the CAS front share. Nothing outside this folder
 * includes it; routes-int.h does, for every front.
 */
#ifndef HM_MIRROR_FLOOR_XET_INT_H
#define HM_MIRROR_FLOOR_XET_INT_H

#include <stdbool.h>
#include <stdint.h>

struct catalog_entry;
struct httpd_req;
struct mirror_routes;

#define MIRROR__XET_FILEINFO "application/vnd.xet-fileinfo+json"
#define MIRROR__XET_CAS "/xet-cas"       /* the CAS API's prefix under our own origin */
#define MIRROR__XET_TOKEN_TTL 3600       /* seconds a read token lives */

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

#endif
