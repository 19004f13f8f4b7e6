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

#endif
