/*
 * sync.c - what the sync engine writes: snapshots with their files and blobs, refs, per-repo status
 * and metadata, and the history of runs.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/str.h"
#include "catalog-int.h"

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* A ref's kind: upstream said tag, else by its name. */
static const char *ref_kind(const char *name, bool tag)
{
	if (tag)
		return "tag";
	if (skip_prefix(name, "refs/pr/"))
		return "pr";
	return skip_prefix(name, "refs/convert/") ? "convert" : "branch";
}

/* Point ref_name (of kind) of repo_id at snapshot snap_id, inside the caller's transaction. */
static int ref_upsert(struct catalog *c, int64_t repo_id, const char *ref_name, const char *kind, int64_t snap_id)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c,
			     "INSERT INTO refs (repo_id, name, kind, snapshot_id, updated_at) "
			     "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (repo_id, name) DO UPDATE SET "
			     "kind = excluded.kind, snapshot_id = excluded.snapshot_id, "
			     "updated_at = CASE WHEN snapshot_id = excluded.snapshot_id AND kind = excluded.kind "
			     "THEN updated_at ELSE excluded.updated_at END",
			     &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, ref_name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, snap_id);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
	return catalog__run(st);
}

/* The snapshot row of repo_id's commit, when there is one: *snap_id (0: none) and whether it was
 * selected as selection says (*same). Inside the caller's transaction. */
static int snapshot_find(struct catalog *c, int64_t repo_id, const char *commit, const char *selection,
			 int64_t *snap_id, int *same)
{
	sqlite3_stmt *st = NULL;
	int64_t id = 0;
	int same_selection = 0, rc;

	if (catalog__prepare(c, "SELECT id, selection IS ?3 FROM snapshots WHERE repo_id = ?1 AND commit_id = ?2", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, commit, -1, SQLITE_STATIC);
	bind_text_or_null(st, 3, selection);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		id = sqlite3_column_int64(st, 0);
		same_selection = sqlite3_column_int(st, 1);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return HM_ERR_SQLITE; /* a failed lookup is not "no snapshot": that would insert a second */
	*snap_id = id;
	*same = same_selection;
	return 0;
}

/* Snapshot snap_id selected anew (selection, n files of total bytes): its files and its torrent go, its
 * row says the new selection. Inside the caller's transaction. */
static int snapshot_reselect(struct catalog *c, int64_t snap_id, const char *selection, size_t n, int64_t total)
{
	/* new files; so a new torrent too: the old one (its hashes) no longer describes them */
	static const char *const drop[] = { "DELETE FROM torrents WHERE snapshot_id = ?1",
					    "DELETE FROM files WHERE snapshot_id = ?1" };
	sqlite3_stmt *st = NULL;

	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		if (catalog__prepare(c, drop[i], &st))
			return HM_ERR_SQLITE;
		sqlite3_bind_int64(st, 1, snap_id);
		if (catalog__run(st))
			return HM_ERR_SQLITE;
	}
	if (catalog__prepare(c,
			     "UPDATE snapshots SET synced_at = ?2, file_count = ?3, total_size = ?4, "
			     "selection = ?5 WHERE id = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, snap_id);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
	sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
	sqlite3_bind_int64(st, 4, total);
	bind_text_or_null(st, 5, selection);
	return catalog__run(st);
}

/* A new snapshot row for repo_id's commit (selection, n files of total bytes): its id in *snap_id.
 * Inside the caller's transaction. */
static int snapshot_insert(struct catalog *c, int64_t repo_id, const char *commit, const char *selection, size_t n,
			   int64_t total, int64_t *snap_id)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c,
			     "INSERT INTO snapshots (repo_id, commit_id, synced_at, file_count, total_size, "
			     "selection) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, commit, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
	sqlite3_bind_int64(st, 4, (sqlite3_int64)n);
	sqlite3_bind_int64(st, 5, total);
	bind_text_or_null(st, 6, selection);
	if (catalog__run(st))
		return HM_ERR_SQLITE;
	*snap_id = sqlite3_last_insert_rowid(c->db);
	return 0;
}

/* The n files of snapshot snap_id, each with its blob first, through the prepared statements blob and
 * file. Inside the caller's transaction. */
static int files_insert(sqlite3_stmt *blob, sqlite3_stmt *file, int64_t snap_id, const struct catalog_file *files,
			size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(blob);
		sqlite3_bind_text(blob, 1, files[i].sha256, -1, SQLITE_STATIC);
		sqlite3_bind_int64(blob, 2, files[i].size);
		sqlite3_bind_int64(blob, 3, (sqlite3_int64)time(NULL));
		sqlite3_bind_int(blob, 4, !files[i].absent);
		if (sqlite3_step(blob) != SQLITE_DONE)
			return HM_ERR_SQLITE;
		sqlite3_reset(file);
		sqlite3_bind_int64(file, 1, snap_id);
		sqlite3_bind_text(file, 2, files[i].path, -1, SQLITE_STATIC);
		sqlite3_bind_int64(file, 3, files[i].size);
		bind_text_or_null(file, 4, files[i].git_oid);
		bind_text_or_null(file, 5, files[i].lfs_oid);
		sqlite3_bind_text(file, 6, files[i].sha256, -1, SQLITE_STATIC);
		if (sqlite3_step(file) != SQLITE_DONE)
			return HM_ERR_SQLITE;
	}
	return 0;
}

int catalog__snapshot_record(struct catalog *c, int64_t repo_id, const char *commit, const char *ref_name, bool tag,
			     const char *selection, const struct catalog_file *files, size_t n, int64_t *snapshot_id)
{
	sqlite3_stmt *blob = NULL, *file = NULL;
	int64_t total = 0, snap_id = 0;
	int r = HM_ERR_SQLITE, same_selection = 0;
	const char *kind = ref_name ? ref_kind(ref_name, tag) : NULL;

	for (size_t i = 0; i < n; i++)
		total += files[i].size;
	/* a content named before without being held becomes present when a snapshot brings it */
	if (catalog__prepare(c, "INSERT INTO blobs (sha256, size, stored_at, present) VALUES (?1, ?2, ?3, ?4) "
			     "ON CONFLICT (sha256) DO UPDATE SET present = 1, stored_at = excluded.stored_at "
			     "WHERE excluded.present = 1 AND blobs.present = 0", &blob) ||
	    catalog__prepare(c, "INSERT INTO files (snapshot_id, path, size, git_oid, lfs_oid, sha256) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &file))
		goto out;
	/* A commit seen before (a ref moved back, or a revision re-added) keeps its snapshot row; if it
	 * was selected differently, its files are replaced. */
	if (snapshot_find(c, repo_id, commit, selection, &snap_id, &same_selection))
		goto out;
	if (snap_id && !same_selection) {
		if (snapshot_reselect(c, snap_id, selection, n, total))
			goto out;
	} else if (!snap_id) {
		if (snapshot_insert(c, repo_id, commit, selection, n, total, &snap_id))
			goto out;
	}
	if (!same_selection && files_insert(blob, file, snap_id, files, n))
		goto out;
	r = ref_name ? ref_upsert(c, repo_id, ref_name, kind, snap_id) : 0;
	if (!r && snapshot_id)
		*snapshot_id = snap_id;
out:
	sqlite3_finalize(blob);
	sqlite3_finalize(file);
	return r;
}

int catalog_snapshot_commit(struct catalog *c, int64_t repo_id, const char *commit, const char *ref_name, bool tag,
			    const char *selection, const struct catalog_file *files, size_t n)
{
	int r;

	if (catalog_begin(c))
		return HM_ERR_SQLITE;
	r = catalog__snapshot_record(c, repo_id, commit, ref_name, tag, selection, files, n, NULL);
	if (r || catalog_commit(c)) {
		catalog_rollback(c);
		return HM_ERR_SQLITE;
	}
	return 0;
}

int catalog_sha256_for_git_oid(struct catalog *c, const char *git_oid, int64_t size, char *out)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE, rc;

	if (catalog__prepare(c,
			     "SELECT sha256 FROM files WHERE git_oid = ?1 AND size = ?2 AND lfs_oid IS NULL LIMIT 1",
			     &st))
		return r;
	sqlite3_bind_text(st, 1, git_oid, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, size);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 64) {
		memcpy(out, sqlite3_column_text(st, 0), 64);
		out[64] = '\0';
		r = 0;
	} else if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
		r = HM_ERR_NOT_FOUND;
	}
	sqlite3_finalize(st);
	return r;
}

struct everyone_ctx {
	catalog_repo_test_fn everyone;
	void *ud;
};

/* (catalog__repo_rows' callback: 1, which ends the walk, at the first repo everyone may read) */
static int everyone_reads(void *ud, const struct catalog_repo *r)
{
	const struct everyone_ctx *e = ud;

	return !e->everyone || e->everyone(e->ud, r);
}

bool catalog_blob_public_or_own(struct catalog *c, const char *sha256, int64_t repo_id, catalog_repo_test_fn everyone,
				void *ud)
{
	struct everyone_ctx e = { everyone, ud };
	sqlite3_stmt *st = NULL;
	int r;

	/* Own: a verified fetch (blob_fetches, written as the bytes land through the store writer) by
	 * repo_id itself, or a complete snapshot of repo_id names it (every content such a snapshot names
	 * passed this rule or was fetched when it was made). A provisional snapshot's rows (selection
	 * NULL: listed on demand, nothing fetched) count for nothing, nor do any files rows of other
	 * repos: a lying listing would publish through them. */
	if (catalog__prepare(c,
			     "SELECT 1 FROM blob_fetches WHERE sha256 = ?1 AND repo_id = ?2 "
			     "UNION ALL SELECT 1 FROM files f JOIN snapshots s ON s.id = f.snapshot_id "
			     "WHERE f.sha256 = ?1 AND s.repo_id = ?2 AND s.selection IS NOT NULL LIMIT 1", &st))
		return false;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, repo_id);
	r = catalog__has_row(st);
	if (r != 0)
		return r == 1;
	/* Public: a verified fetch by a repo everyone may read: open upstream (or opened here), and what
	 * the caller's rule says of it */
	if (catalog__prepare(c,
			     "SELECT " REPO_COLUMNS
			     "WHERE r.id IN (SELECT repo_id FROM blob_fetches WHERE sha256 = ?1) "
			     "AND (((r.gated IS NULL OR r.gated = 'false') AND coalesce(r.private, 0) != 1) "
			     "OR json_extract(coalesce(r.options, '{}'), '$.open') = 1)",
			     &st))
		return false;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	r = catalog__repo_rows(st, everyone_reads, &e);
	sqlite3_finalize(st);
	return r == 1;
}

int catalog_blob_from_upstream(struct catalog *c, const char *sha256)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(
		    c,
		    "SELECT 1 FROM blob_fetches b JOIN repos r ON r.id = b.repo_id WHERE b.sha256 = ?1 AND r.local = 0 "
		    "UNION ALL SELECT 1 FROM files f JOIN snapshots s ON s.id = f.snapshot_id JOIN repos r ON "
		    "r.id = s.repo_id WHERE f.sha256 = ?1 AND r.local = 0 AND s.selection IS NOT NULL LIMIT 1",
		    &st))
		return 0;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	return catalog__has_row(st) == 1;
}

int catalog_snapshot_trusts(struct catalog *c, int64_t snapshot_id, const char *sha256, catalog_repo_test_fn everyone,
			    void *ud)
{
	sqlite3_stmt *st = NULL;
	int64_t repo_id = 0;
	bool local = false;
	int r;

	if (catalog__prepare(c, "SELECT s.repo_id, s.selection IS NOT NULL, r.local FROM snapshots s "
			     "JOIN repos r ON r.id = s.repo_id WHERE s.id = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, snapshot_id);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW) {
		repo_id = sqlite3_column_int64(st, 0);
		r = sqlite3_column_int(st, 1);
		local = sqlite3_column_int(st, 2) != 0;
	} else {
		r = r == SQLITE_DONE ? HM_ERR_NOT_FOUND : HM_ERR_SQLITE;
	}
	sqlite3_finalize(st);
	if (r != 0)
		return r; /* complete (1), or an error */
	/* (a local repo has no upstream: what its users sent is all there is) */
	return catalog_blob_public_or_own(c, sha256, repo_id, everyone, ud) &&
	       (local || catalog_blob_from_upstream(c, sha256)) ? 1 : 0;
}

int catalog_blob_fetched(struct catalog *c, const char *sha256, int64_t repo_id)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c,
			     "INSERT INTO blob_fetches (sha256, repo_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, repo_id);
	return catalog__run(st);
}

int catalog_repo_set_sync(struct catalog *c, int64_t repo_id, const char *status, const char *error,
			  int64_t when, const struct catalog_repo_meta *m)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(
		    c,
		    "UPDATE repos SET sync_status = ?2, sync_error = ?3, last_sync_at = ?4, "
		    "last_ok_at = CASE WHEN ?2 = 'ok' THEN ?4 ELSE last_ok_at END, "
		    "gated = coalesce(?5, gated), private = coalesce(?6, private), "
		    "card_data = coalesce(?7, card_data), tags = coalesce(?8, tags), "
		    "pipeline_tag = coalesce(?9, pipeline_tag), library_name = coalesce(?10, library_name), "
		    "license = coalesce(?11, license), downloads = coalesce(?12, downloads), "
		    "likes = coalesce(?13, likes), last_modified = coalesce(?14, last_modified), "
		    "upstream_name = CASE WHEN ?15 IS NULL THEN upstream_name WHEN ?15 = '' THEN NULL ELSE ?15 END, "
		    "tier = coalesce(?16, tier), upstream = coalesce(?17, upstream), "
		    "origin_checked_at = coalesce(?18, origin_checked_at), created_at = coalesce(?19, created_at) "
		    "WHERE id = ?1",
		    &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC);
	bind_text_or_null(st, 3, error);
	sqlite3_bind_int64(st, 4, when);
	if (m) {
		bind_text_or_null(st, 5, m->gated);
		if (m->private_ >= 0)
			sqlite3_bind_int(st, 6, m->private_);
		bind_text_or_null(st, 7, m->card_data);
		bind_text_or_null(st, 8, m->tags);
		bind_text_or_null(st, 9, m->pipeline_tag);
		bind_text_or_null(st, 10, m->library_name);
		bind_text_or_null(st, 11, m->license);
		if (m->downloads >= 0)
			sqlite3_bind_int64(st, 12, m->downloads);
		if (m->likes >= 0)
			sqlite3_bind_int64(st, 13, m->likes);
		bind_text_or_null(st, 14, m->last_modified);
		bind_text_or_null(st, 15, m->upstream_name);
		if (m->tier > 0)
			sqlite3_bind_int(st, 16, m->tier);
		bind_text_or_null(st, 17, m->upstream);
		if (m->origin_checked_at > 0)
			sqlite3_bind_int64(st, 18, m->origin_checked_at);
		if (m->created_at > 0)
			sqlite3_bind_int64(st, 19, m->created_at);
	}
	return catalog__run(st);
}

int catalog_run_begin(struct catalog *c, int64_t *run_id)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	/* Only one sync runs at a time (the caller holds the lock), so an open run is a crashed one. */
	if (sqlite3_exec(c->db, "UPDATE sync_runs SET outcome = 'interrupted' WHERE outcome IS NULL",
			 NULL, NULL, NULL) != SQLITE_OK)
		return r;
	if (catalog__prepare(c, "INSERT INTO sync_runs (started_at) VALUES (?1)", &st))
		return r;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL));
	r = catalog__run(st);
	if (!r)
		*run_id = sqlite3_last_insert_rowid(c->db);
	return r;
}

int catalog_run_result(struct catalog *c, int64_t run_id, int64_t repo_id, const char *outcome,
		       const char *commit, int64_t files, int64_t bytes, const char *error)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c,
			     "INSERT OR REPLACE INTO sync_results (run_id, repo_id, outcome, commit_id, files_fetched, "
			     "bytes_fetched, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int64(st, 2, repo_id);
	sqlite3_bind_text(st, 3, outcome, -1, SQLITE_STATIC);
	bind_text_or_null(st, 4, commit);
	sqlite3_bind_int64(st, 5, files);
	sqlite3_bind_int64(st, 6, bytes);
	bind_text_or_null(st, 7, error);
	return catalog__run(st);
}

int catalog_run_end(struct catalog *c, int64_t run_id, const char *outcome, int64_t repos_ok,
		    int64_t repos_failed, int64_t files, int64_t bytes)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "UPDATE sync_runs SET ended_at = ?2, outcome = ?3, repos_ok = ?4, repos_failed = ?5, "
			     "files_fetched = ?6, bytes_fetched = ?7 WHERE id = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
	sqlite3_bind_text(st, 3, outcome, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, repos_ok);
	sqlite3_bind_int64(st, 5, repos_failed);
	sqlite3_bind_int64(st, 6, files);
	sqlite3_bind_int64(st, 7, bytes);
	return catalog__run(st);
}

/* ---- refs beyond the followed one ------------------------------------------------------------- */

int catalog_repo_set_refs(struct catalog *c, const char *hub, const char *type, const char *name,
			  const char *policy)
{
	sqlite3_stmt *st = NULL;
	int r;

	if (catalog__prepare(c, "UPDATE repos SET refs_policy = ?4, refs_checked_at = CASE WHEN refs_policy = ?4 "
			     "THEN refs_checked_at END WHERE hub = ?1 AND type = ?2 AND name = ?3", &st))
		return HM_ERR_SQLITE;
	catalog__bind_repo(st, hub, type, name);
	sqlite3_bind_text(st, 4, policy, -1, SQLITE_STATIC);
	r = catalog__run_changed(c, st);
	return r;
}

int catalog_ref_commit(struct catalog *c, int64_t repo_id, const char *name, const char *selection, char *out)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_NOT_FOUND, rc;

	if (catalog__prepare(c, "SELECT s.commit_id FROM refs f JOIN snapshots s ON s.id = f.snapshot_id "
			     "WHERE f.repo_id = ?1 AND f.name = ?2 AND s.selection IS ?3", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	bind_text_or_null(st, 3, selection);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 40) {
		memcpy(out, sqlite3_column_text(st, 0), 40);
		out[40] = '\0';
		r = 0;
	} else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		r = HM_ERR_SQLITE;
	}
	sqlite3_finalize(st);
	return r;
}

int catalog_ref_point(struct catalog *c, int64_t repo_id, const char *name, bool tag, const char *commit,
		      const char *selection)
{
	sqlite3_stmt *st = NULL;
	int64_t snap_id = 0;
	int rc;

	if (catalog__prepare(c, "SELECT id FROM snapshots WHERE repo_id = ?1 AND commit_id = ?2 AND selection IS ?3",
			     &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, commit, -1, SQLITE_STATIC);
	bind_text_or_null(st, 3, selection);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		snap_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return HM_ERR_NOT_FOUND;
	if (rc != SQLITE_ROW)
		return HM_ERR_SQLITE;
	return ref_upsert(c, repo_id, name, ref_kind(name, tag), snap_id);
}

int catalog_refs_checked(struct catalog *c, int64_t repo_id, const char *keep, int64_t when, int64_t *dropped)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	if (catalog_begin(c))
		return HM_ERR_SQLITE;
	if (catalog__prepare(c, "DELETE FROM refs WHERE repo_id = ?1 AND "
			     "name <> (SELECT follow_rev FROM repos WHERE id = ?1) AND "
			     "name NOT IN (SELECT value FROM json_each(?2))", &st))
		goto out;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, keep, -1, SQLITE_STATIC);
	if (catalog__run(st))
		goto out;
	if (dropped)
		*dropped = sqlite3_changes(c->db);
	if (catalog__prepare(c, "UPDATE repos SET refs_checked_at = ?2 WHERE id = ?1", &st))
		goto out;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_int64(st, 2, when);
	r = catalog__run(st);
out:
	if (r || catalog_commit(c)) {
		catalog_rollback(c);
		return HM_ERR_SQLITE;
	}
	return 0;
}

int catalog_snapshot_set_synced_at(struct catalog *c, int64_t repo_id, const char *commit, int64_t when)
{
	sqlite3_stmt *st = NULL;

	if (catalog__prepare(c, "UPDATE snapshots SET synced_at = ?3 WHERE repo_id = ?1 AND commit_id = ?2", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, commit, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, when);
	return catalog__run(st);
}
