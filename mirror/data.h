/*
 * data.h - a mirror's data directory: <dir>/catalog.db and <dir>/store/.
 */
#ifndef HM_MIRROR_DATA_H
#define HM_MIRROR_DATA_H

struct catalog;
struct mirror_store;

struct mirror_data {
	char *dir;                   /* owned */
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

#endif
