/*
 * catalog.h - the SQLite catalog: what the mirror holds and where it came from.
 *
 * Knows nothing of HTTP or upstreams. One struct catalog per open database; it is not thread-safe
 * (open one per thread). The database runs in WAL mode with foreign keys on, so readers (serve) and
 * the one writer (sync) do not block each other.
 */
#ifndef HM_CATALOG_H
#define HM_CATALOG_H

struct catalog;

/*
 * Open (creating if needed) the catalog at path and bring its schema up to date, running the
 * migrations in order from the stored version in one transaction each. On success *out is owned by
 * the caller (catalog_free). On failure returns HM_ERR_SQLITE (with *errmsg, malloc'd, if errmsg is
 * not NULL), HM_ERR_SCHEMA when the file was written by a newer hubmirror, or -errno.
 */
int catalog_open(const char *path, struct catalog **out, char **errmsg);

/* Close and free. Accepts NULL and *c == NULL. */
void catalog_free(struct catalog **c);

/* The schema version this binary writes, and the one stored in the open database. */
int catalog_schema_version(void);
int catalog_stored_version(struct catalog *c);

#endif
