/*
 * backup.h - the catalog out and back: a consistent copy taken while the mirror serves and syncs,
 * and a restore that puts one in place and says what the store lacks of it. The store is
 * content-addressed, so the catalog is what a backup must keep; what a restored catalog names and
 * the store no longer holds is fetched again by the next sync.
 */
#ifndef HM_MIRROR_BACKUP_H
#define HM_MIRROR_BACKUP_H

#include <stdint.h>

struct mirror_data;

/* Write the catalog of d to out (created through a temporary file and renamed; an existing out is
 * replaced) as of one moment, safe while serve and sync run. *bytes: its size. Returns 0 or an
 * error with *errmsg. */
int mirror_backup(struct mirror_data *d, const char *out, int64_t *bytes, char **errmsg);

struct mirror_restore_report {
	int version;               /* the backup's schema version (migrated on open when older) */
	int64_t repos;
	int64_t blobs;             /* contents the catalog names */
	int64_t blobs_missing;     /* ... that the store lacks: their repos are marked damaged */
	int64_t repos_damaged;
	int64_t torrents_dropped;  /* rows whose .torrent file is gone: the next sync makes them again */
};

/* Put the catalog backup file in place as dir's catalog: refused while a serve or a sync uses dir,
 * and when file is not a sound hubmirror catalog (nothing is changed then). The old catalog and its
 * WAL are replaced atomically. Returns 0 or an error with *errmsg. */
int mirror_restore(const char *dir, const char *file, struct mirror_restore_report *rep, char **errmsg);

#endif
