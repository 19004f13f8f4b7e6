/*
 * maint.h - keeping a data directory healthy: gc (drop what nothing needs) and verify (re-hash the
 * store). Both expect the caller to hold the sync lock, so no sync publishes blobs meanwhile.
 */
#ifndef HM_MIRROR_MAINT_H
#define HM_MIRROR_MAINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mirror_progress;

struct mirror_data;

struct mirror_gc_report {
	int64_t snapshots_dropped;   /* catalog snapshots dropped */
	int64_t blobs_removed;       /* blob files deleted (catalog rows dropped + orphans) */
	int64_t bytes_freed;
	int64_t orphans_removed;     /* blob files the catalog did not know (a crash between rename and
				      * commit leaves these), and Xet identity files of contents gone */
	int64_t partials_removed;    /* stale .part files, and identity files a killed writer left unnamed */
	int64_t torrents_removed;    /* torrent files of dropped snapshots */
	int64_t git_removed;         /* git repositories (docs/git.md) of repos no longer tracked */
	int64_t uploads_kept;        /* contents uploaded and held for the commit that names them */
	int64_t uploads_until;       /* the last of those holds' ends (unix seconds) */
	int64_t writes_kept;         /* contents held by commits or pushes in flight */
	int64_t restored;            /* contents put back: a writer held them while gc took them */
	int64_t bucket_uploads_aborted; /* with a bucket: unfinished uploads to it older than the partials'
					 * age (a crashed writer's), aborted */
	int64_t bucket_kept_shared;  /* with a bucket: contents kept because another mirror's live set names
				      * them (mirror/share.h) */
	int64_t bucket_kept_young;   /* with a bucket: contents kept as younger than the grace before the
				      * earliest live set, or being put now */
	int64_t bucket_mirrors;      /* the other mirrors that wrote a live set to the bucket */
	int64_t bucket_trash_restored; /* with a bucket: contents put back from its trash, a live set or this
					* catalog naming them (another mirror counted on one as gc took it) */
	int64_t bucket_trash_removed;  /* the trash's objects deleted: unwanted, and older than the cutoff the
					* reaps take (or put back) */
	int64_t bucket_trash_kept;     /* the trash's objects kept: younger than that cutoff */
};

/*
 * Contents no snapshot names go, but for those a writer holds (catalog_hold: an upload awaiting its
 * commit, a commit or push in flight), which the report counts; each goes through store_reap,
 * so a writer that holds a content while gc takes it gets it back.
 * keep: snapshots kept per tracked repo besides those a ref points at (>= 1). Partial downloads older
 * than partial_max_age_s are deleted (a later sync would have resumed them), and so are the bucket's
 * unfinished uploads as old (store_sweep_uploads). With a bucket, the mirror's live set is
 * written first, and a content goes from the bucket only when no other mirror's live set names it and
 * the bucket got it grace_s before the earliest live set or more (mirror/share.h). dry_run changes nothing
 * and reports what would go. progress, if not NULL, hears of the store's walk (entries seen, of about
 * the contents the catalog holds). Returns 0 or an error (with *errmsg, malloc'd).
 */
/* The grace gc gives a bucket's contents by default: 48 hours (docs/operations.md, section 8). */
#define MIRROR_GC_GRACE ((int64_t)48 * 3600)
int mirror_gc(struct mirror_data *d, int keep, int64_t partial_max_age_s, int64_t grace_s, bool dry_run,
	      struct mirror_gc_report *rep, const struct mirror_progress *progress, char **errmsg);
/* With a bucket: the objects of its staging area (a Xet upload's xorbs awaiting their shard, store/bucket.h)
 * written age_s seconds ago or more, and its unfinished uploads as old, removed (dry_run: counted);
 * *removed counts them. Without a bucket: 0, nothing done. Returns 0 or an error (*errmsg malloc'd). */
#define MIRROR_GC_XET_STAGED_AGE ((int64_t)24 * 3600) /* serve's promise to a xorb (docs/protocols/xet.md) */
int mirror_gc_xet_staged(struct mirror_data *d, int64_t age_s, bool dry_run, int64_t *removed, char **errmsg);

/* A content verify found bad, and what holds it: "hf:org/name @ 5d1e2b9c0a1f: path" (the newest
 * ten files that name it). */
struct mirror_verify_damage {
	char sha256[65];
	bool missing;                /* else corrupt */
	char **uses;                 /* owned */
	size_t nuses;
};

/* A content whose Xet identity verify computed and upstream names otherwise (not offered through Xet). */
struct mirror_verify_xet_refused {
	char sha256[65];
	char stated[65];             /* upstream's Xet hash for it */
	char ours[65];               /* the one its bytes make */
};

struct mirror_verify_report {
	int64_t blobs_checked;
	int64_t bytes_checked;
	int64_t corrupt;             /* hashed to something else: quarantined */
	int64_t missing;             /* in the catalog, not in the store */
	int64_t repos_marked;        /* repos marked damaged (the next sync refetches) */
	struct mirror_verify_damage *damage; /* owned: each bad content (mirror_verify_report_release) */
	size_t ndamage;
	int64_t xet_computed;        /* Xet identities computed in the same read (none known before) */
	struct mirror_verify_xet_refused *xet_refused; /* owned: contents whose Xet hash upstream states otherwise */
	size_t nxet_refused;
};
void mirror_verify_report_release(struct mirror_verify_report *rep);

/* Re-hash every catalog blob (progress, if not NULL, hears of each: contents and bytes of the whole).
 * Corrupt ones are quarantined, and they and missing ones are handed to
 * the next sync to fetch again (catalog_blob_damaged). A content of a local store whose Xet identity is
 * not known gets it in the same read (docs/protocols/xet.md, "Identities of older contents"): its
 * identity file, its Xet hash and dedup chunks recorded; or, where upstream states another Xet hash,
 * it is reported and not offered through Xet. Returns 0 or an error (with *errmsg). */
int mirror_verify(struct mirror_data *d, struct mirror_verify_report *rep, const struct mirror_progress *progress,
		  char **errmsg);

#endif
