/*
 * data.h - a mirror's data directory: <dir>/catalog.db and <dir>/store/.
 */
#ifndef HM_MIRROR_DATA_H
#define HM_MIRROR_DATA_H

struct catalog;
struct mirror_store;

#include <stdbool.h>

struct mirror_data {
	char *dir;                   /* owned */
	int lock_fd;                 /* -1 unless the sync lock is held */
	struct catalog *catalog;     /* owned */
	struct mirror_store *store;  /* owned */
};

/* The default data directory: $HUBMIRROR_DATA, else /var/lib/hubmirror. Static or environment. */
const char *mirror_data_default_dir(void);

/*
 * Open (creating) the data directory: its folder, catalog and store. On success *out is owned by the
 * caller (mirror_data_free); on failure *errmsg (malloc'd, if errmsg) says what failed, with the path.
 * Returns 0, -errno, HM_ERR_SQLITE or HM_ERR_SCHEMA.
 */
int mirror_data_open(const char *dir, struct mirror_data **out, char **errmsg);
void mirror_data_free(struct mirror_data **d);

/*
 * Take the data directory's sync lock (<dir>/sync.lock, an flock held until the process exits or
 * mirror_data_unlock). With wait, block until it is free; otherwise return HM_ERR_LOCKED at once, and
 * *holder_pid (if not NULL) names the process that holds it (0 if unknown). Returns 0 or -errno.
 */
int mirror_data_lock(struct mirror_data *d, bool wait, long *holder_pid);
void mirror_data_unlock(struct mirror_data *d);

#endif
