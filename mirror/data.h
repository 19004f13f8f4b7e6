/*
 * data.h - a mirror's data directory, and where everything in it lives (every path is made here):
 *
 *   catalog.db                 the catalog (catalog/)
 *   store/blobs/<h0h1>/<sha256> the content-addressed store, store/tmp/ its partial files and the
 *                              server's spill files (store/store.h)
 *   sync.lock                  the sync lock (mirror_data_lock)
 *   serve.lock                 held (shared) by every running `serve` (mirror_data_serve_lock)
 *   serve.admin                a serve with the operator API: {"url", "pid", "token_file"}, so the
 *                              CLI on this machine goes through it (docs/commands/serve.md)
 *   sync.tokens                which upstream tokens the last sync used (hashes cut short, mode 0600):
 *                              a change makes the next sync ask again for repos upstream refused
 *   sync.progress              the running (or last) sync's progress, JSON, rewritten every second
 *                              (mirror/sync.h)
 *   torrents/<btih>.torrent    the swarm's torrents of snapshots, torrents/.work/ their hashing farms
 *   p2p/secret                 the key of the capabilities in guarded repos' torrents
 *   p2p/seed/<btih>/           the BitTorrent seed's folders of links to the store
 *   xet-uploads/<hash>         xorbs a Xet client uploaded, until a shard names them, and their record
 *                              files (serve's own: mirror/serve/routes-xet-write.c; with a bucket, the
 *                              xorbs are in its staging area and only the records here)
 */
#ifndef HM_MIRROR_DATA_H
#define HM_MIRROR_DATA_H

struct catalog;
struct store;

#include <stdbool.h>
#include <stdint.h>

struct mirror_data {
	char *dir;                   /* owned */
	int lock_fd;                 /* -1 unless the sync lock is held */
	int serve_fd;                /* -1 unless this process serves the directory */
	struct catalog *catalog;     /* owned */
	struct store *store;  /* owned */
	unsigned made;               /* mirror_data_create: what it made (MIRROR_DATA_MADE_*); 0 for a
				      * directory that held a mirror already */
};

/* What mirror_data_create made that was not there: the catalog (so: a new mirror), the folder. */
enum { MIRROR_DATA_MADE_CATALOG = 1, MIRROR_DATA_MADE_DIR = 2 };

/* The default data directory: $HUBMIRROR_DATA, else /var/lib/hubmirror. Static or environment. */
const char *mirror_data_default_dir(void);

/*
 * Open a data directory: its catalog and store. A directory without a catalog is refused (-ENOENT,
 * the message names it and the commands that make one): a mistyped --data must not become an empty
 * mirror that serves nothing. mirror_data_create makes what is missing (add, init, import, restore).
 * On success *out is owned by the caller (mirror_data_free); on failure *errmsg (malloc'd, if errmsg)
 * says what failed, with the path. Returns 0, -errno, HM_ERR_SQLITE or HM_ERR_SCHEMA.
 */
int mirror_data_open(const char *dir, struct mirror_data **out, char **errmsg);
int mirror_data_create(const char *dir, struct mirror_data **out, char **errmsg);
void mirror_data_free(struct mirror_data **d);
/* A command that made a new mirror (mirror_data_create) and then failed takes it back: d is freed,
 * and what the layout above holds that was not there before it (the catalog, the store, torrents,
 * locks; the folder, when it was made too) is removed. Nothing that was there is touched. Returns 0
 * or -errno (what could not be removed stays). Frees d like mirror_data_free whatever it returns. */
int mirror_data_unmake(struct mirror_data **d);

/*
 * Take the data directory's sync lock (<dir>/sync.lock, an flock held until the process exits or
 * mirror_data_unlock). With wait, block until it is free; otherwise return HM_ERR_LOCKED at once, and
 * *holder_pid (if not NULL) names the process that holds it (0 if unknown). Returns 0 or -errno.
 */
int mirror_data_lock(struct mirror_data *d, bool wait, long *holder_pid);
void mirror_data_unlock(struct mirror_data *d);

/* A serve announces itself for its whole life (a shared flock on serve.lock: several serves may share
 * a directory); returns 0, -EWOULDBLOCK while a restore holds the directory, or -errno.
 * mirror_data_serve_exclude keeps every serve out (the exclusive flock, held until
 * mirror_data_free): a restore must not swap the catalog under one. Returns 0, 1 when a serve runs,
 * or -errno. */
int mirror_data_serve_lock(struct mirror_data *d);
int mirror_data_serve_exclude(struct mirror_data *d);

/* Paths in the data directory (the layout above); each malloc'd, the caller frees. btih: 40 hex. */
enum mirror_data_place {
	MIRROR_DATA_TORRENTS,     /* torrents/ */
	MIRROR_DATA_TORRENT_WORK, /* torrents/.work: older versions hashed torrents through symlinks here */
	MIRROR_DATA_P2P,          /* p2p/ */
	MIRROR_DATA_P2P_SECRET,   /* p2p/secret */
	MIRROR_DATA_SEED,         /* p2p/seed */
	MIRROR_DATA_SPILL,        /* store/tmp */
	MIRROR_DATA_LOCK,         /* sync.lock */
	MIRROR_DATA_SYNC_TOKENS,  /* sync.tokens */
	MIRROR_DATA_SYNC_PROGRESS, /* sync.progress */
	MIRROR_DATA_CATALOG,      /* catalog.db */
	MIRROR_DATA_SERVE_LOCK,   /* serve.lock */
	MIRROR_DATA_SERVE_ADMIN,  /* serve.admin */
	MIRROR_DATA_XET_UPLOADS,  /* xet-uploads/ */
};
char *mirror_data_path(const struct mirror_data *d, enum mirror_data_place place);
/* The same for a data directory not opened (dir as given). */
char *mirror_data_path_in(const char *dir, enum mirror_data_place place);
/* Does a serve hold dir now (serve.lock)? Opens nothing else. */
bool mirror_data_serve_running(const char *dir);
char *mirror_data_torrent_path(const struct mirror_data *d, const char *btih);

/*
 * The room a write from outside (a commit's or a push's body as it arrives, a push's files) may take
 * on the file system of place (a folder of the data directory) without eating the store's reserve: the
 * space free there for us, less 5% of the file system (at most 1 GiB), which is left to what the store,
 * the catalog and the logs must always be able to write. 0 when there is none, -errno when the file
 * system cannot be read. *block (may be NULL) is the file system's block size, the least a file takes (a block).
 * (docs/uploads.md, "Bodies and their bounds")
 */
int64_t mirror_data_room(const struct mirror_data *d, enum mirror_data_place place, int64_t *block);

#endif
