/*
 * catalog-int.h - private to catalog/: nothing outside this folder includes it.
 */
#ifndef HM_CATALOG_INT_H
#define HM_CATALOG_INT_H

#include <sqlite3.h>

#include "catalog.h"

struct catalog {
	sqlite3 *db;
};

/* Number of migrations (= newest schema version) and the SQL that moves to_version-1 -> to_version. */
int catalog__migration_count(void);
const char *catalog__migration(int to_version);

/* catalog_repo_get that also finds removed (not yet collected) repos. */
int catalog__repo_get_any(struct catalog *c, const char *hub, const char *type, const char *name,
			  struct catalog_repo *out);

#endif
