/*
 * catalog.h - the SQLite catalog: what the mirror holds and where it came from.
 *
 * Knows nothing of HTTP or upstreams. One struct catalog per open database; it is not thread-safe
 * (open one per thread). The database runs in WAL mode with foreign keys on, so readers (serve) and
 * the one writer (sync) do not block each other.
 */
#ifndef HM_CATALOG_H
#define HM_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Copy the open catalog to dest (a new file) as of one moment, safe while others read and write it
 * (SQLite's online backup); dest stands alone (no WAL). Returns 0 or HM_ERR_SQLITE with *errmsg. */
int catalog_backup(struct catalog *c, const char *dest, char **errmsg);

/* Is the file at path a sound hubmirror catalog this binary can open? Read-only. *version (its
 * schema version) and *repos (tracked or removed) are set on success. Returns 0, HM_ERR_SQLITE or
 * HM_ERR_SCHEMA (newer than this binary), with *errmsg. */
int catalog_file_check(const char *path, int *version, int64_t *repos, char **errmsg);

/* ---- tracked repositories ---------------------------------------------------------------------- */

#include <stdbool.h>
#include <stdint.h>

/* A tracked repo as the catalog has it. Strings are owned by the struct: catalog_repo_release(). */
struct catalog_repo {
	int64_t id;
	char *hub;            /* "hf" | "ms" */
	char *type;           /* "model" | "dataset" */
	char *name;           /* "org/name" */
	char *follow_rev;     /* revision the sync follows */
	char *include_globs;  /* JSON array text */
	char *exclude_globs;  /* JSON array text */
	char *options;        /* JSON object text */
	int64_t added_at;     /* unix seconds */
	char *sync_status;    /* never, ok, gated, denied, missing, error */
	char *sync_error;     /* NULL unless the last sync failed, or (status ok) warned: its warning */
	int64_t last_sync_at; /* 0 when never */
	char *head_commit;    /* commit the followed ref points at, NULL before the first sync */
	char *head_selection; /* the selection that snapshot was made with (catalog_repo_selection) */
	int64_t file_count;   /* of that snapshot */
	int64_t total_size;   /* bytes, of that snapshot */
	/* upstream metadata as of the last sync (NULL / -1 when unknown) */
	char *gated;          /* "false", "auto", "manual" */
	int private_;
	char *card_data;      /* JSON object text */
	char *tags;           /* JSON array text */
	char *pipeline_tag;
	char *library_name;
	char *license;
	int64_t downloads;
	int64_t likes;
	char *last_modified;
	char *refs_policy;    /* which refs besides follow_rev: "tags", "default", "all", or a JSON array */
	int64_t refs_checked_at; /* when upstream's refs were last listed, 0 never */
	char *upstream_name;  /* the name upstream answers with now, when it renamed the repo; else NULL */
	int tier;             /* 1: synced from the Hub; N+1: from a hubmirror of tier N; 0: never synced */
	char *upstream;       /* the base URL the last successful sync asked, NULL before one */
	int64_t origin_checked_at; /* when the Hub was last asked about it, here or up the chain; 0 unknown */
	int64_t created_at;   /* when upstream says the repo was created; 0 unknown */
	int64_t last_ok_at;   /* when a sync of it last ended ok; 0 never (last_sync_at: the last attempt) */
	bool local;           /* the mirror's own (a local namespace's, written through uploads): never synced */
};

void catalog_repo_release(struct catalog_repo *r);

/* The selection key of a repo's current options (include, exclude, options): a snapshot made with
 * another key must be selected again. Caller frees. */
char *catalog_repo_selection(const struct catalog_repo *r);
void catalog_repo_list_free(struct catalog_repo *list, size_t n);

/*
 * Track a repo, or update the options of one already tracked (and track it again if it was removed).
 * *created (may be NULL) tells which. Globs/options are JSON text (NULL: "[]" / "{}"). All strings
 * borrowed. Returns 0, HM_ERR_LOCAL (the name is one of the mirror's own repos: never tracked from
 * upstream) or HM_ERR_SQLITE.
 */
int catalog_repo_add(struct catalog *c, const char *hub, const char *type, const char *name,
		     const char *follow_rev, const char *include_globs, const char *exclude_globs,
		     const char *options, bool *created);

/* Stop tracking (its snapshots stay until gc). Returns 0, HM_ERR_NOT_FOUND, or HM_ERR_SQLITE. */
int catalog_repo_remove(struct catalog *c, const char *hub, const char *type, const char *name);
/* Delete the repo's row outright (with what hangs off it), when no snapshot of it was ever recorded:
 * a listing on demand that failed leaves nothing. Returns 0, HM_ERR_NOT_FOUND (no such repo, or it
 * has snapshots: catalog_repo_remove it), or HM_ERR_SQLITE. */
int catalog_repo_forget(struct catalog *c, const char *hub, const char *type, const char *name);
/* How many tracked repos were added on demand (options say on_demand). Returns 0 or HM_ERR_SQLITE. */
int catalog_repo_count_ondemand(struct catalog *c, int64_t *n);

/* One tracked repo. Returns 0 (fills *out), HM_ERR_NOT_FOUND, or HM_ERR_SQLITE. */
int catalog_repo_get(struct catalog *c, const char *hub, const char *type, const char *name,
		     struct catalog_repo *out);

/* All tracked repos ordered by hub, type, name. *out (array of *n) is owned by the caller
 * (catalog_repo_list_free). Returns 0 or HM_ERR_SQLITE. */
int catalog_repo_list(struct catalog *c, struct catalog_repo **out, size_t *n);
/* The same, of the tracked repos upstream says are private. */
int catalog_repo_list_private(struct catalog *c, struct catalog_repo **out, size_t *n);

/* The last SQLite error message of this connection (borrowed until the next call). */
const char *catalog_errmsg(struct catalog *c);

/* Transactions around several calls: BEGIN IMMEDIATE / COMMIT / ROLLBACK. 0 or HM_ERR_SQLITE. */
int catalog_begin(struct catalog *c);
int catalog_commit(struct catalog *c);
void catalog_rollback(struct catalog *c);

/* ---- sync: snapshots, blobs, runs ------------------------------------------------------------- */

/* One file of a snapshot to record. Strings borrowed for the call. */
struct catalog_file {
	const char *path;
	int64_t size;
	const char *git_oid;   /* NULL when unknown */
	const char *lfs_oid;   /* NULL for regular files */
	const char *sha256;    /* content hash: the blob's name in the store */
	bool absent;           /* the store does not hold it yet (a provisional snapshot: blobs.present 0) */
};

/*
 * Record a complete snapshot and point the ref at it, in one transaction: the blobs (inserted if new),
 * the snapshot (reused if this commit was recorded before with the same selection; its files are
 * replaced when the selection differs), its files, the ref. Either all of it is
 * visible afterwards or none. The ref is a tag when tag is set (upstream says so), else a branch, or a
 * pull request's refs/pr/N. Returns 0 or HM_ERR_SQLITE.
 */
int catalog_snapshot_commit(struct catalog *c, int64_t repo_id, const char *commit, const char *ref_name, bool tag,
			    const char *selection, const struct catalog_file *files, size_t n);

/* ---- the mirror's own repositories (local namespaces; local.c, docs/uploads.md) ---- */

/* The selection every snapshot of a local repo has (catalog_repo_selection of its row): all its files. */
#define CATALOG_LOCAL_SELECTION "[]\n[]\n{}"

struct catalog_commit;
/* Make a local repo (following main), private or not, with its first commit cm on branch ref (files:
 * its whole tree) in the same transaction, so that no crash leaves a repo without a branch; with cm
 * NULL, none (a bundle's import records the history after). *repo_id (may be NULL): its row. With a
 * commit, a local repo of exactly that name that has no snapshot at all is taken over (an older
 * version made the repo and its first commit in two transactions, and one killed between them left
 * it so). Returns 0, HM_ERR_EXISTS (a repo of that name, in any letter case, tracked or local),
 * -ENOSPC (the catalog's disk is full) or HM_ERR_SQLITE. */
int catalog_local_create(struct catalog *c, const char *hub, const char *type, const char *name, bool private_,
			 const struct catalog_commit *cm, const char *ref, const struct catalog_file *files, size_t n,
			 int64_t *repo_id);
/* Delete a local repo with its snapshots, refs and commits (its contents stay for gc). Returns 0,
 * HM_ERR_NOT_FOUND (no local repo of that id) or HM_ERR_SQLITE. */
int catalog_local_delete(struct catalog *c, int64_t repo_id);
/* The commit ref (a branch or tag name) of repo_id points at. out: 41 bytes. Returns 0,
 * HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_local_head(struct catalog *c, int64_t repo_id, const char *ref, char out[41]);

/* A local repo's commit: its id and what git needs to rebuild it (mirror/gitobj.h). */
struct catalog_commit {
	const char *id;        /* 40 hex */
	const char *parent;    /* 40 hex, NULL for the first */
	const char *tree;      /* 40 hex */
	const char *author;    /* "NAME <EMAIL>", also the committer (raw: the author) */
	int64_t at;            /* unix seconds, +0000 (raw: the author's time) */
	const char *message;
	const char *raw;       /* a pushed commit: the object git hashed (gitobj_commit_parse); else NULL */
};
/* Record commit cm (files: its whole tree) and point branch ref at it, in one transaction, only when
 * ref points at cm->parent now (no ref at all for a NULL parent). Returns 0, HM_ERR_CONFLICT (the ref
 * is elsewhere: the caller computes again on the new head, or refuses), -ENOSPC (the catalog's disk is
 * full) or HM_ERR_SQLITE. */
int catalog_local_commit(struct catalog *c, int64_t repo_id, const char *ref, const struct catalog_commit *cm,
			 const struct catalog_file *files, size_t n);
/* Record commit cm of repo_id (files: its whole tree) without moving a ref: a commit another mirror
 * made, brought by a bundle (its refs come after). Returns 0 or HM_ERR_SQLITE. */
int catalog_local_record(struct catalog *c, int64_t repo_id, const struct catalog_commit *cm,
			 const struct catalog_file *files, size_t n);
/* One ref a git push moves (docs/uploads.md): from old (NULL: it must not exist) to new (NULL: delete). */
struct catalog_push_ref {
	const char *name;      /* a branch or tag name (main, v1.0) */
	bool tag;
	const char *old, *new_;
};
/* One commit a push brings, with its whole tree. */
struct catalog_push_commit {
	struct catalog_commit cm;
	const struct catalog_file *files;
	size_t n;
};
/* A git push in one transaction: record the commits (each after its parent), then move every ref, each
 * only when it is where the pusher saw it. Returns 0, HM_ERR_CONFLICT (a ref moved meanwhile: nothing
 * recorded), HM_ERR_NOT_FOUND (a new ref's commit is not the repo's), -ENOSPC (a full disk) or HM_ERR_SQLITE. */
int catalog_local_push(struct catalog *c, int64_t repo_id, const struct catalog_push_commit *cs, size_t nc,
		       const struct catalog_push_ref *refs, size_t nr);
/* Make ref name of repo_id (a tag when tag, else a branch) point at commit, one of the repo's, or with
 * commit NULL delete it. Returns 0, HM_ERR_EXISTS (making one that exists), HM_ERR_NOT_FOUND (deleting
 * one that does not, or no such commit) or HM_ERR_SQLITE. */
int catalog_local_ref(struct catalog *c, int64_t repo_id, const char *name, bool tag, const char *commit);
/* What the local repos of hub under namespace ns (any letter case) hold: the bytes of every content a
 * snapshot of theirs names, each content once (a namespace's quota). Returns 0 or HM_ERR_SQLITE.
 * catalog_namespace_holds: does one of them name sha256 already? 1, 0 or HM_ERR_SQLITE. */
int catalog_namespace_bytes(struct catalog *c, const char *hub, const char *ns, int64_t *bytes);
int catalog_namespace_holds(struct catalog *c, const char *hub, const char *ns, const char *sha256);
/* Which local repos' commits hold content sha256 (verify's words for a content lost from the store:
 * no upstream has it, so no sync brings it back): fn(ud, hub, type, name, commit) for each, repo by
 * repo, newest commit first; a non-zero return stops and is returned. *mirrored: whether a mirrored
 * repo's snapshot names it too (then a sync fetches it again, for the local repos as well). Returns 0
 * or HM_ERR_SQLITE. */
int catalog_local_naming(struct catalog *c, const char *sha256, bool *mirrored,
			 int (*fn)(void *ud, const char *hub, const char *type, const char *name, const char *commit),
			 void *ud);
/* The commit of repo_id with this id. *out's strings are malloc'd (catalog_commit_release). Returns 0,
 * HM_ERR_NOT_FOUND (none, or not a local repo's) or HM_ERR_SQLITE. */
int catalog_commit_get(struct catalog *c, int64_t repo_id, const char *commit, struct catalog_commit *out);
void catalog_commit_release(struct catalog_commit *cm);

/* ---- refs beyond the followed one (the sync's second pass) ---- */

/* Set which refs the sync mirrors besides follow_rev: "tags", "default", "all" or a JSON array of
 * names. A change makes the next sync list upstream's refs (refs_checked_at cleared). Returns 0,
 * HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_repo_set_refs(struct catalog *c, const char *hub, const char *type, const char *name,
			  const char *policy);

/* The commit ref name of repo_id points at, when its snapshot was selected with selection. out: 41
 * bytes. Returns 0, HM_ERR_NOT_FOUND (no such ref, or selected otherwise) or HM_ERR_SQLITE. */
int catalog_ref_commit(struct catalog *c, int64_t repo_id, const char *name, const char *selection, char *out);

/* Point ref name (a tag when tag, else a branch, refs/pr/N or refs/convert/X by its name) at the
 * repo's snapshot of commit, when that snapshot exists and was selected with selection. Returns 0,
 * HM_ERR_NOT_FOUND (then it must be listed and fetched: catalog_snapshot_commit) or HM_ERR_SQLITE. */
int catalog_ref_point(struct catalog *c, int64_t repo_id, const char *name, bool tag, const char *commit,
		      const char *selection);

/* When the repo's snapshot of commit was synced, as another mirror recorded it (an imported bundle):
 * answers that show the time then match that mirror's. Returns 0 or HM_ERR_SQLITE. */
int catalog_snapshot_set_synced_at(struct catalog *c, int64_t repo_id, const char *commit, int64_t when);

/* Upstream's refs were listed and every wanted one is in: drop the repo's refs that are neither the
 * followed one nor named in keep (a JSON array of names; their snapshots stay addressable by commit
 * until gc), and record the time. *dropped (may be NULL) counts them. Returns 0 or HM_ERR_SQLITE. */
int catalog_refs_checked(struct catalog *c, int64_t repo_id, const char *keep, int64_t when, int64_t *dropped);

/* The sha256 of content with this git blob id and size, if the catalog has seen it. out: 65 bytes.
 * Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_sha256_for_git_oid(struct catalog *c, const char *git_oid, int64_t size, char *out);

/* May repo repo_id name the blob sha256 without fetching (or uploading) it (docs/security.md)? When
 * repo_id itself fetched it, or a complete snapshot of repo_id names it; or when a repo everyone may
 * read fetched it, verified: otherwise a listing (or a commit) could publish a closed repo's content
 * under an open name. The catalog knows only upstream's part of "everyone may read": not gated or
 * private upstream, or opened with add --open; everyone (NULL: nothing more) decides the rest for
 * each such repo, with what the catalog does not know (serve's tokens file: the access layer's
 * rule, mirror_access_may_name). Errors count as no. */
typedef bool (*catalog_repo_test_fn)(void *ud, const struct catalog_repo *r);
bool catalog_blob_public_or_own(struct catalog *c, const char *sha256, int64_t repo_id, catalog_repo_test_fn everyone,
				void *ud);

/* Did the content come from an upstream, verified there (a fetch by a mirrored repo, or a complete
 * snapshot of one names it)? 0 for one the store got only from users (uploads, pushes, local repos of
 * a bundle): sync and on-demand fetch such a content from their upstream once (replacing the store's
 * copy) before they name it. 1, 0 (errors too). */
int catalog_blob_from_upstream(struct catalog *c, const char *sha256);

/* Record that repo_id's own request fetched the content sha256 (for catalog_blob_public_or_own).
 * Returns 0 or HM_ERR_SQLITE. */
int catalog_blob_fetched(struct catalog *c, const char *sha256, int64_t repo_id);

/* May the snapshot's file of content sha256 be served from the store's copy? A complete snapshot's
 * always; a provisional one's (listed on demand) only when its repo may name the content without a
 * fetch (catalog_blob_public_or_own, with everyone and ud) and, for a mirrored repo, it came from an
 * upstream (catalog_blob_from_upstream), else its bytes must come from its own upstream first. Returns 1, 0,
 * HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_snapshot_trusts(struct catalog *c, int64_t snapshot_id, const char *sha256, catalog_repo_test_fn everyone,
			    void *ud);

/* Upstream metadata of a repo. Any field may be NULL (then the column keeps its value). JSON fields
 * are JSON text. */
struct catalog_repo_meta {
	const char *gated;        /* "false", "auto", "manual" */
	int private_;             /* -1 unknown, 0, 1 */
	const char *card_data;
	const char *tags;
	const char *pipeline_tag;
	const char *library_name;
	const char *license;
	int64_t downloads;        /* -1 unknown */
	int64_t likes;            /* -1 unknown */
	const char *last_modified;
	const char *upstream_name; /* the name upstream answered with ("": the repo's own: clear) */
	int tier;                 /* 0: keep */
	const char *upstream;     /* NULL: keep */
	int64_t origin_checked_at; /* 0: keep */
	int64_t created_at;       /* 0: keep */
};

/* Record the outcome of syncing one repo: status (ok, gated, denied, missing, disabled, error), error
 * text (NULL when ok), the time, and metadata (meta may be NULL). Returns 0 or HM_ERR_SQLITE. */
int catalog_repo_set_sync(struct catalog *c, int64_t repo_id, const char *status, const char *error,
			  int64_t when, const struct catalog_repo_meta *meta);

/* Sync runs. begin returns the run id in *run_id; stale runs (never ended) are closed as
 * 'interrupted' first. */
int catalog_run_begin(struct catalog *c, int64_t *run_id);
int catalog_run_result(struct catalog *c, int64_t run_id, int64_t repo_id, const char *outcome,
		       const char *commit, int64_t files, int64_t bytes, const char *error);
int catalog_run_end(struct catalog *c, int64_t run_id, const char *outcome, int64_t repos_ok,
		    int64_t repos_failed, int64_t files, int64_t bytes);

/* ---- maintenance: gc and verify ---------------------------------------------------------------- */

/*
 * Drop the snapshots nothing needs: all snapshots of removed repos (and their refs), and of tracked
 * repos those that no ref points at and no pin holds beyond the keep most recent ones. Then drop the blob rows no file
 * references. One transaction (with dry_run, rolled back). *dead (array of 65-byte hex names, *ndead
 * long, caller frees) lists the blobs whose files the caller should now delete from the store.
 * Returns 0 or HM_ERR_SQLITE.
 */
struct catalog_gc_stats {
	int64_t snapshots_dropped;
	int64_t blobs_dropped;
	int64_t bytes_dropped;
};
int catalog_gc(struct catalog *c, int keep, bool dry_run, struct catalog_gc_stats *stats,
	       char (**dead)[65], size_t *ndead);

/* Pin (pin true: now) or unpin a snapshot: gc, retention and the store quota never drop a pinned
 * snapshot of a tracked repo. Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_snapshot_pin(struct catalog *c, int64_t snapshot_id, bool pin);

/* The bytes of the contents the catalog holds (each once). Returns 0 or HM_ERR_SQLITE. */
int catalog_store_bytes(struct catalog *c, int64_t *bytes);

/*
 * Make room under the store quota: drop snapshots, those of removed repos first, then old ones of
 * tracked repos (no ref points at them, not pinned) oldest first, until the contents only they held,
 * less those held(ud, sha256) says are in use, add up to at least need bytes. Drops no more than that.
 * In one transaction: when all the candidates together free less than need, nothing is dropped.
 * *freed: the bytes freed (or that all candidates would free), *dropped: snapshots dropped, *dead:
 * the blobs to delete from the store now (as catalog_gc's). Returns 0 or HM_ERR_SQLITE.
 */
int catalog_quota_evict(struct catalog *c, int64_t need, bool (*held)(void *ud, const char *sha256), void *ud,
			int64_t *freed, int64_t *dropped, char (**dead)[65], size_t *ndead);

/* When the blob entered this store (unix seconds). Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_blob_stored_at(struct catalog *c, const char *sha256, int64_t *at);

/* A content a provisional snapshot named is in the store now (fetched on demand): present. Returns 0
 * or HM_ERR_SQLITE. */
int catalog_blob_set_present(struct catalog *c, const char *sha256);
/* Does the store hold it as far as the catalog knows (a row, present)? 1, 0 or HM_ERR_SQLITE. */
int catalog_blob_present(struct catalog *c, const char *sha256);
/* Are all the contents of the snapshot's files present (not a provisional snapshot)? 1, 0 or
 * HM_ERR_SQLITE. */
int catalog_snapshot_complete(struct catalog *c, int64_t snapshot_id);

/* ---- Xet file hashes (schema v20; xet.c, docs/protocols/xet.md) ---- */
/* Record content sha256's Xet file hash (64 lowercase hex, its text form). 0, HM_ERR_SQLITE, or
 * HM_ERR_HASH_MISMATCH when upstream states another for it (catalog_xet_stated_set): nothing recorded,
 * and the statement marked refused. */
int catalog_blob_set_xet(struct catalog *c, const char *sha256, const char *xet_hash);
/* Upstream states xet_hash for content sha256, which the store holds (schema v24: a sync's listing of a
 * content it already had). Kept; where the recorded Xet hash is another, that one goes (the content is
 * no longer offered through Xet) and the statement is marked refused. 1 then, 0, or HM_ERR_SQLITE.
 * Writes only when something changes. */
int catalog_xet_stated_set(struct catalog *c, const char *sha256, const char *xet_hash);
/* Upstream's statement for content sha256: 0 with out (65 bytes) and *refused (the mirror's identity
 * of the bytes names another), HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_xet_stated(struct catalog *c, const char *sha256, char *out, bool *refused);
/* Up to max present contents, in sha256 order after `after` ("" or NULL: from the first), whose Xet
 * hash the catalog does not know and whose statement is not refused: the identities left to compute
 * (docs/protocols/xet.md, "Identities of older contents"). Their sha256 into out, sizes into sizes;
 * *n of them (fewer than max: the end). 0 or HM_ERR_SQLITE. */
int catalog_xet_unknown(struct catalog *c, const char *after, size_t max, char (*out)[65], int64_t *sizes,
			size_t *n);
/* The Xet hash recorded for content sha256 into out (65 bytes): 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_blob_xet(struct catalog *c, const char *sha256, char *out);
/* A content the store holds (present) that a snapshot of repo repo_id names and whose Xet hash is
 * xet_hash: its sha256 (out: 65 bytes) and size. So a Xet token of one repo finds only that repo's
 * files. 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_repo_xet_file(struct catalog *c, int64_t repo_id, const char *xet_hash, char *sha256, int64_t *size);
/* The global dedup query's index (schema v23): content sha256 holds the chunks chunks[0..n) (text form,
 * 64 hex each), those its identity makes eligible (docs/protocols/xet.md, "Dedup"). Replaces what was
 * recorded for it. 0 or HM_ERR_SQLITE. */
int catalog_xet_dedup_set(struct catalog *c, const char *sha256, const char (*chunks)[65], size_t n);
/* Up to max present contents recorded as holding chunk (64 hex), their sha256 into out: *n of them.
 * Whoever may read them is the caller's to decide. 0 or HM_ERR_SQLITE. */
int catalog_xet_dedup_find(struct catalog *c, const char *chunk, char (*out)[65], size_t max, size_t *n);

/* ---- stored chunks of upstream's xorbs (schema v22; xet.c, docs/protocols/xet.md "Sync through Xet") ---- */
/* One chunk of an upstream xorb (its hash and the chunk's index in it) and where the store holds its
 * bytes: content sha256 at offset, length bytes; hash is the chunk's own (64 hex, text form). */
struct catalog_xet_range {
	char xorb[65];
	uint32_t chunk;
	char sha256[65];
	int64_t offset;
	uint32_t length;
	char hash[65];
};
/* Record n chunks (each names its content), in one transaction; a chunk already recorded is pointed at
 * the new place. 0 or HM_ERR_SQLITE. */
int catalog_xet_ranges_add(struct catalog *c, const struct catalog_xet_range *r, size_t n);
/* Where chunk `chunk` of xorb `xorb` lies in a content the store holds (present): 0 and *out,
 * HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_xet_range_find(struct catalog *c, const char *xorb, uint32_t chunk, struct catalog_xet_range *out);

/* Is this sha256 a blob the catalog knows (present or not), or one a live hold names (a writer's
 * promise: catalog_hold)? Returns 1, 0, or HM_ERR_SQLITE. gc takes no content it says 1 of. */
int catalog_blob_known(struct catalog *c, const char *sha256);

/*
 * Holds (schema v19): contents promised to a writer until a time, kept from gc and the store quota
 * even when no snapshot names them: an upload awaiting its commit ("upload:REPO_ID"), a commit's or a
 * push's contents while it is made ("commit:NONCE", "push:NONCE"). A writer holds a content before it
 * publishes it or checks that the store has it; gc moves a content aside, asks again, and puts it
 * back when a hold came meanwhile (mirror/maint.c), so the two never cross.
 */
/* Hold n contents for owner until (unix seconds; a hold already there keeps the later end), in one
 * transaction. Returns 0, -ENOSPC (the catalog's disk is full) or HM_ERR_SQLITE. */
int catalog_hold(struct catalog *c, const char *owner, int64_t until, const char *const *sha256, size_t n);
/* Let go of owner's holds. Returns 0 or HM_ERR_SQLITE. */
int catalog_hold_drop(struct catalog *c, const char *owner);
/* Does a live hold (until after now) name sha256? 1, 0 or HM_ERR_SQLITE. */
int catalog_held(struct catalog *c, const char *sha256, int64_t now);
/* Drop the holds that ended by now (with dry_run: only count them) and count those that keep contents
 * no snapshot names: for gc's report. Returns 0 or HM_ERR_SQLITE. */
struct catalog_holds_stats {
	int64_t expired;        /* holds dropped */
	int64_t uploads;        /* contents uploads hold, awaiting their commit */
	int64_t uploads_until;  /* the last of those holds' ends */
	int64_t writes;         /* contents commits or pushes in flight hold */
};
int catalog_holds_sweep(struct catalog *c, int64_t now, bool dry_run, struct catalog_holds_stats *out);

/* Call fn for every content gc keeps (catalog_blob_known says 1 of: a blob present or not, or one a live
 * hold names), each once, in sha256 order, until it returns non-zero (which is returned): a mirror's
 * live set in a bucket several share (mirror/share.c). */
int catalog_named_each(struct catalog *c, int (*fn)(void *ud, const char *sha256), void *ud);

/* Call fn for every catalog blob (sha256, size) until it returns non-zero (which is returned). */
int catalog_blob_each(struct catalog *c, int (*fn)(void *ud, const char *sha256, int64_t size), void *ud);

/*
 * A blob failed verification (or vanished): make every snapshot that holds it be selected again by
 * the next sync (which refetches the content), and mark the tracked repos concerned as 'damaged'.
 * Returns the number of repos marked, or HM_ERR_SQLITE.
 */
int catalog_blob_damaged(struct catalog *c, const char *sha256);

/* Call fn for each file of a snapshot that holds the blob (its repo's hub, type, name, the snapshot's
 * commit, the path), newest snapshots first, at most max of them; until fn returns non-zero (which is
 * returned). For saying what a damaged blob breaks. 0 or HM_ERR_SQLITE. */
int catalog_blob_uses(struct catalog *c, const char *sha256, int max,
		      int (*fn)(void *ud, const char *hub, const char *type, const char *name, const char *commit,
				const char *path),
		      void *ud);

/* ---- serving: lookups for the hub APIs --------------------------------------------------------- */

struct catalog_snapshot {
	int64_t id;
	int64_t repo_id;
	char commit[41];
	int64_t synced_at;
	int64_t file_count;
	int64_t total_size;
	int64_t pinned_at;    /* when an operator pinned it (hubmirror pin), 0 when not pinned */
};

struct catalog_entry {
	char *path;
	int64_t size;
	char git_oid[41];     /* "" when unknown */
	char lfs_oid[65];     /* "" for regular files */
	char sha256[65];
	char xet_hash[65];    /* the content's Xet file hash (catalog_blob_xet), "" when not known */
};

void catalog_entry_release(struct catalog_entry *e);

/*
 * Find repo (hub, type, name; tracked or removed-but-not-collected) and the snapshot of rev: a ref
 * name (main, v1.0, refs/pr/1), a full commit id of a synced snapshot, or NULL/"HEAD" for the followed
 * revision. Returns 0 (both filled), HM_ERR_NOT_FOUND with *repo_found telling whether the repo
 * exists (then only the revision is unknown; *repo is filled), or HM_ERR_SQLITE. The caller releases
 * *repo when it was filled (on 0, or on NOT_FOUND with *repo_found).
 */
int catalog_resolve(struct catalog *c, const char *hub, const char *type, const char *name, const char *rev,
		    struct catalog_repo *repo, struct catalog_snapshot *snap, bool *repo_found);

/*
 * catalog_resolve for the file-serving hot path: one query in the common case, and *repo holds only
 * id, hub, type, name, follow_rev, gated, private_, options and local (the rest NULL / 0, downloads and
 * likes -1): what deciding access needs. Same results otherwise.
 */
int catalog_resolve_lite(struct catalog *c, const char *hub, const char *type, const char *name, const char *rev,
			 struct catalog_repo *repo, struct catalog_snapshot *snap, bool *repo_found);

/* The tracked repo (or removed, not yet collected) that upstream now calls name (it was renamed
 * after it was added under another). *tracked is malloc'd. Returns 0, HM_ERR_NOT_FOUND or
 * HM_ERR_SQLITE. */
int catalog_repo_alias(struct catalog *c, const char *hub, const char *type, const char *name, char **tracked);

/* The name of repo id (of hub and type). *name is malloc'd. Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_repo_name_by_id(struct catalog *c, int64_t id, const char *hub, const char *type, char **name);

/* One file of a snapshot. Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_snapshot_file(struct catalog *c, int64_t snapshot_id, const char *path, struct catalog_entry *out);

/*
 * Files of a snapshot in path order, from the first path > after (NULL: from the start), whose path
 * starts with prefix (NULL or "": all), at most limit of them (0: no limit). fn gets each entry
 * (borrowed for the call) and stops the walk by returning non-zero (returned). Returns 0 or an error.
 */
int catalog_snapshot_walk(struct catalog *c, int64_t snapshot_id, const char *prefix, const char *after,
			  size_t limit, int (*fn)(void *ud, const struct catalog_entry *e), void *ud);

/* Does a snapshot of repo_id that one of its refs points at have a file of content sha256, held by the
 * store? *size (may be NULL) gets its size. Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_repo_content(struct catalog *c, int64_t repo_id, const char *sha256, int64_t *size);

/* Refs of a repo: fn(ud, name, kind, commit) for each, in name order. */
int catalog_refs_each(struct catalog *c, int64_t repo_id,
		      int (*fn)(void *ud, const char *name, const char *kind, const char *commit), void *ud);

/*
 * Repos with at least one snapshot, of hub and type, whose name contains search (NULL: any) and whose
 * org is author (NULL: any), in name order after the name `after` (NULL: from the start), at most
 * limit, leaving out the repos hidden names (as catalog_search.hidden; NULL: none). fn gets each repo
 * (borrowed) and its followed snapshot (NULL when not synced).
 */
int catalog_repos_each(struct catalog *c, const char *hub, const char *type, const char *search,
		       const char *author, const char *after, size_t limit, const char *hidden,
		       int (*fn)(void *ud, const struct catalog_repo *r), void *ud);

/* ---- swarm: torrents of snapshots --------------------------------------------------------------- */

struct catalog_torrent {
	int64_t snapshot_id;
	char btih[41];        /* v1 info-hash, lowercase hex */
	char btmh[65];        /* v2 info-hash (sha256), lowercase hex */
	char name[256];       /* the torrent's root directory name */
	int64_t piece_size;
	int64_t created_at;
};

/* Record (or replace) the torrent of a snapshot. Returns 0 or HM_ERR_SQLITE. */
int catalog_torrent_put(struct catalog *c, const struct catalog_torrent *t);

/* The repo (tracked or removed-but-not-collected) a snapshot belongs to. Returns 0 (fills *out: release
 * it), HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_snapshot_repo(struct catalog *c, int64_t snapshot_id, struct catalog_repo *out);

/* The torrent of a snapshot. Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_torrent_get(struct catalog *c, int64_t snapshot_id, struct catalog_torrent *out);

/* A torrent by info-hash as peers announce it: 40 hex digits of the v1 hash or of the first 20 bytes
 * of the v2 hash (BEP 52's truncated form), or the 64 digits of the whole v2 hash. Any snapshot with
 * that torrent (they share files and names). Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_torrent_find(struct catalog *c, const char *hash_hex, struct catalog_torrent *out);

/* Snapshots that refs point at and that have no torrent yet: fn(ud, snapshot id, repo name) for each,
 * oldest first; a non-zero return stops the walk and is returned. */
int catalog_torrent_missing_each(struct catalog *c, int (*fn)(void *ud, int64_t snapshot_id, const char *name),
				 void *ud);

/* Every torrent row, in snapshot order: fn(ud, t) (borrowed); a non-zero return stops and is returned. */
int catalog_torrents_each(struct catalog *c, int (*fn)(void *ud, const struct catalog_torrent *t), void *ud);
/* The torrents of the snapshots a ref (a branch, a tag, a followed revision) points at, each once, in
 * snapshot order: what the mirror's seed always seeds. As catalog_torrents_each otherwise. */
int catalog_torrents_heads_each(struct catalog *c, int (*fn)(void *ud, const struct catalog_torrent *t), void *ud);

/* Drop the torrent rows whose .torrent file is gone (have(ud, btih) false): the next sync makes
 * them again, with the same info-hashes. *dropped counts them. Returns 0 or HM_ERR_SQLITE. */
int catalog_torrents_drop_missing(struct catalog *c, bool (*have)(void *ud, const char *btih), void *ud,
				  int64_t *dropped);

/* Whether any torrent row has this v1 hash (gc keeps its file). 1, 0 or HM_ERR_SQLITE. */
int catalog_torrent_known(struct catalog *c, const char *btih);

/* ---- browsing ------------------------------------------------------------------------------------ */

struct catalog_search {
	const char *q;            /* words to search (names, authors, tags, task, library, license, card);
				   * a word is a run of letters and digits; each word of 2 or more characters
				   * matches as a prefix, a lone character as a whole word; repeated words count
				   * once; at most CATALOG_SEARCH_MAX_WORDS words of at most
				   * CATALOG_SEARCH_MAX_WORD bytes; NULL or "": everything */
	const char *hub;          /* "hf" / "ms" or NULL */
	const char *type;         /* "model" / "dataset" or NULL */
	const char *org;          /* exact org, or NULL */
	const char *tag;          /* exact tag, or NULL */
	const char *status;       /* sync status, or NULL */
	int gated;                /* -1 any, 0 not gated, 1 gated */
	int64_t min_size;         /* bytes of the synced snapshot, -1: no bound */
	int64_t max_size;
	const char *sort;         /* relevance (only with q), name, size, last_synced, downloads, likes */
	bool desc;
	size_t offset;
	size_t limit;             /* 0: no limit */
	int budget_ms;            /* give up after this long (0: no bound), so that one query cannot hold
				   * a server's loop: sqlite's progress handler interrupts it */
	const char *hidden;       /* a JSON array of "hub:type:name" keys of repos to leave out, as if
				   * they were not tracked (not counted, never matched); NULL: none */
};

#define CATALOG_SEARCH_MAX_WORDS 8
#define CATALOG_SEARCH_MAX_WORD 64

/* Why s would be refused (a static sentence), or NULL if it is fine. */
const char *catalog_search_refusal(const struct catalog_search *s);

/* Tracked repos matching s, in its order; fn gets each (borrowed). *total (may be NULL) is the number
 * of matches ignoring offset and limit. Returns 0, HM_ERR_USAGE for what catalog_search_refusal
 * refuses, HM_ERR_TIMEOUT past s->budget_ms (fn may have had some rows), or HM_ERR_SQLITE. */
int catalog_search(struct catalog *c, const struct catalog_search *s,
		   int (*fn)(void *ud, const struct catalog_repo *r), void *ud, int64_t *total);

struct catalog_totals {
	int64_t repos;            /* tracked */
	int64_t repos_synced;     /* with a snapshot at their followed revision */
	int64_t snapshots;
	int64_t files;            /* file rows over all snapshots */
	int64_t blobs;            /* distinct contents */
	int64_t unique_bytes;     /* sum of distinct contents: what the store holds */
	int64_t logical_bytes;    /* sum over the snapshots that refs point at: what clients see */
	int64_t dedup_saved_bytes; /* logical bytes of all snapshots minus unique bytes */
};
int catalog_totals(struct catalog *c, struct catalog_totals *out);

/* Sync runs, newest first (at most limit). fn gets each run's columns. */
struct catalog_run {
	int64_t id, started_at, ended_at;   /* ended_at 0 while running */
	const char *outcome;                /* NULL while running */
	int64_t repos_ok, repos_failed, files_fetched, bytes_fetched;
};
int catalog_runs_each(struct catalog *c, size_t limit, int (*fn)(void *ud, const struct catalog_run *r), void *ud);

/* A repo's outcome in each sync run that had it, newest first (at most limit): fn(ud, run, result). */
struct catalog_repo_result {
	const char *outcome, *commit, *error;  /* commit, error: NULL when none */
	int64_t files_fetched, bytes_fetched;
};
int catalog_repo_results_each(struct catalog *c, int64_t repo_id, size_t limit,
			      int (*fn)(void *ud, const struct catalog_run *run, const struct catalog_repo_result *res),
			      void *ud);

/* The snapshots of a repo, newest first: fn(ud, snapshot) (borrowed for the call). */
int catalog_snapshots_each(struct catalog *c, int64_t repo_id,
			   int (*fn)(void *ud, const struct catalog_snapshot *snap), void *ud);

/* Sync runs grouped by outcome ("running" for open ones): fn(ud, outcome, runs, files, bytes). */
int catalog_run_totals(struct catalog *c,
		       int (*fn)(void *ud, const char *outcome, int64_t runs, int64_t files, int64_t bytes), void *ud);

/* ---- requests: users ask for repositories the mirror does not track ----------------------------- */

struct catalog_request {
	int64_t id;
	char *hub, *type, *name;
	char *reason;           /* NULL when none given */
	char *requested_by;     /* who asked first: "token:<8 hex of its sha256>" or a peer address */
	int64_t requested_at;
	char *state;            /* pending, approved, declined */
	int64_t decided_at;     /* 0 while pending */
	char *decided_by;       /* NULL while pending */
	char *note;             /* the operator's word on it, or NULL */
	int64_t votes;          /* how many times it was asked for while pending */
};
void catalog_request_release(struct catalog_request *q);

/* Record a request (a pending one for the same repo gains a vote instead: *created false). At most
 * max_pending pending requests (0: no limit): HM_ERR_QUOTA beyond. Returns 0 or an error. */
int catalog_request_add(struct catalog *c, const char *hub, const char *type, const char *name, const char *reason,
			const char *by, int64_t max_pending, int64_t *id, bool *created);
/* Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE; release *out. */
int catalog_request_get(struct catalog *c, int64_t id, struct catalog_request *out);
/* Approve or decline a pending request (the caller tracks the repo on approval). Returns 0,
 * HM_ERR_NOT_FOUND (no such pending request) or HM_ERR_SQLITE. */
int catalog_request_decide(struct catalog *c, int64_t id, bool approve, const char *by, const char *note);
/* Requests of state (NULL: all), pending first (most votes first), then decided, newest first; at
 * most limit (0: all). fn gets each (borrowed for the call). */
int catalog_requests_each(struct catalog *c, const char *state, size_t limit,
			  int (*fn)(void *ud, const struct catalog_request *q), void *ud);
int catalog_requests_pending(struct catalog *c, int64_t *n);

/* OCI tar layers (schema v20, docs/protocols/oci.md): the digest of the layer of content sha256 named
 * path, computed once (hub_oci_tar_digest) and kept with its header. */
struct catalog_oci_tar {
	char sha256[65];          /* the file's content */
	unsigned char *header;    /* owned: free it */
	size_t header_len;
	int64_t size;             /* the file's */
	int64_t snapshot_id;      /* a snapshot of the repo that names the file */
};
/* The layer's digest into digest (72 bytes) and its header's length. Returns 0, HM_ERR_NOT_FOUND or
 * HM_ERR_SQLITE. */
int catalog_oci_tar_get(struct catalog *c, const char *sha256, const char *path, char digest[72], size_t *header_len);
/* Keep a layer's digest and header (one already kept stays). Returns 0, -ENOSPC or HM_ERR_SQLITE. */
int catalog_oci_tar_put(struct catalog *c, const char *sha256, const char *path, const char *digest,
			const unsigned char *header, size_t header_len);
/* The layer of digest of a file of one of repo_id's snapshots the store holds (a ref's first), into
 * *out. Returns 0, HM_ERR_NOT_FOUND or HM_ERR_SQLITE. */
int catalog_oci_tar_find(struct catalog *c, int64_t repo_id, const char *digest, struct catalog_oci_tar *out);

/* Repos tracked on demand (options.on_demand, serve --on-demand): a client asked for repo_id at `at`
 * (options.on_demand.last). Returns 0 or HM_ERR_SQLITE. */
int catalog_ondemand_touch(struct catalog *c, int64_t repo_id, int64_t at);
/* Stop tracking the repos tracked on demand that nobody asked for since before (their snapshots go
 * with the next gc); fn(ud, spec) for each. Returns 0 or an error. */
int catalog_ondemand_expire(struct catalog *c, int64_t before, int (*fn)(void *ud, const char *spec), void *ud);

#endif
