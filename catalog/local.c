/*
 * local.c - the mirror's own repositories (schema v17; docs/uploads.md): made, committed to and deleted
 * through the upload API, never synced. Their snapshots are commits with parents, recorded with what
 * git needs to rebuild the same commit ids.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog-int.h"

/* Is a repo of that hub, type and name here (in any letter case, as the Hub, where names differ only in
 * case would be one repo)? A removed tracked repo is gone first: its history goes with the name. */
static int name_taken(struct catalog *c, const char *hub, const char *type, const char *name)
{
	sqlite3_stmt *st = NULL;
	int rc, r = HM_ERR_SQLITE;

	if (catalog__prepare(c, "DELETE FROM repos WHERE hub = ?1 AND type = ?2 AND name = ?3 COLLATE NOCASE "
			     "AND removed_at IS NOT NULL", &st))
		return r;
	catalog__bind_repo(st, hub, type, name);
	if (catalog__run(st))
		return r;
	if (catalog__prepare(c, "SELECT 1 FROM repos WHERE hub = ?1 AND type = ?2 AND name = ?3 COLLATE NOCASE", &st))
		return r;
	catalog__bind_repo(st, hub, type, name);
	rc = sqlite3_step(st);
	r = rc == SQLITE_ROW ? HM_ERR_EXISTS : rc == SQLITE_DONE ? 0 : HM_ERR_SQLITE;
	sqlite3_finalize(st);
	return r;
}

int catalog_local_delete(struct catalog *c, int64_t repo_id)
{
	sqlite3_stmt *st = NULL;

	/* its snapshots, files, refs, commits and torrents go by cascade; its contents stay until gc */
	if (catalog__prepare(c, "DELETE FROM repos WHERE id = ?1 AND local = 1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	return catalog__run_changed(c, st);
}

int catalog_local_head(struct catalog *c, int64_t repo_id, const char *ref, char out[41])
{
	sqlite3_stmt *st = NULL;
	int rc, r = HM_ERR_SQLITE;

	if (catalog__prepare(c, "SELECT s.commit_id FROM refs f JOIN snapshots s ON s.id = f.snapshot_id "
			     "WHERE f.repo_id = ?1 AND f.name = ?2", &st))
		return r;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, ref, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 40) {
		memcpy(out, sqlite3_column_text(st, 0), 40);
		out[40] = '\0';
		r = 0;
	} else if (rc == SQLITE_DONE) {
		r = HM_ERR_NOT_FOUND;
	}
	sqlite3_finalize(st);
	return r;
}

/* The commit's row beside its snapshot, and the repo's lastModified, in the caller's transaction. */
static int commit_insert(struct catalog *c, int64_t repo_id, int64_t snap_id, const struct catalog_commit *cm)
{
	sqlite3_stmt *st = NULL;
	char iso[32];
	time_t t = (time_t)cm->at;
	struct tm tm;

	if (catalog__prepare(c, "INSERT OR REPLACE INTO commits (snapshot_id, parent, tree, author, at, message, raw) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, snap_id);
	if (cm->parent)
		sqlite3_bind_text(st, 2, cm->parent, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, cm->tree, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, cm->author, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, cm->at);
	sqlite3_bind_text(st, 6, cm->message, -1, SQLITE_STATIC);
	if (cm->raw)
		sqlite3_bind_text(st, 7, cm->raw, -1, SQLITE_STATIC);
	if (catalog__run(st))
		return HM_ERR_SQLITE;
	gmtime_r(&t, &tm);
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	if (catalog__prepare(c, "UPDATE repos SET last_modified = ?2 WHERE id = ?1", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, iso, -1, SQLITE_STATIC);
	return catalog__run(st);
}

/* A test hook (tests/README.md, "Fault hooks"): with $HUBMIRROR_TEST_KILL naming this point, the
 * process kills itself here (SIGKILL) as a crash at that moment would. Read in this one place; the
 * fault tests (t0843) use it to kill create_repo between its repo row and its first commit. */
static void test_kill_point(const char *point)
{
	const char *v = getenv("HUBMIRROR_TEST_KILL");

	if (v && !strcmp(v, point))
		raise(SIGKILL);
}

/* A local repo of exactly that name that has no snapshot at all: what an older version left when it
 * was killed between making the repo and its first commit (two transactions then). Its id, or 0. */
static int64_t never_committed(struct catalog *c, const char *hub, const char *type, const char *name)
{
	sqlite3_stmt *st = NULL;
	int64_t id = 0;

	if (catalog__prepare(c,
			     "SELECT id FROM repos r WHERE hub = ?1 AND type = ?2 AND name = ?3 AND local = 1 AND "
			     "removed_at IS NULL AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.repo_id = r.id)",
			     &st))
		return 0;
	catalog__bind_repo(st, hub, type, name);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return id;
}

/* The row of a new local repo (or the one taken over, made private or not as asked now). */
static int repo_row(struct catalog *c, const char *hub, const char *type, const char *name, bool private_,
		    bool take_over, int64_t *id)
{
	sqlite3_stmt *st = NULL;
	int r;

	if (take_over && (*id = never_committed(c, hub, type, name))) {
		if (catalog__prepare(c, "UPDATE repos SET private = ?2 WHERE id = ?1", &st))
			return HM_ERR_SQLITE;
		sqlite3_bind_int64(st, 1, *id);
		sqlite3_bind_int(st, 2, private_ ? 1 : 0);
		return catalog__run(st);
	}
	if ((r = name_taken(c, hub, type, name)))
		return r;
	if (catalog__prepare(c, "INSERT INTO repos (hub, type, name, follow_rev, added_at, created_at, local, private, "
			     "gated, sync_status) VALUES (?1, ?2, ?3, 'main', ?4, ?4, 1, ?5, 'false', 'ok')", &st))
		return HM_ERR_SQLITE;
	catalog__bind_repo(st, hub, type, name);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
	sqlite3_bind_int(st, 5, private_ ? 1 : 0);
	if ((r = catalog__run(st)))
		return r;
	*id = sqlite3_last_insert_rowid(c->db);
	return 0;
}

int catalog_local_create(struct catalog *c, const char *hub, const char *type, const char *name, bool private_,
			 const struct catalog_commit *cm, const char *ref, const struct catalog_file *files, size_t n,
			 int64_t *repo_id)
{
	int64_t id = 0, snap_id = 0;
	int r;

	if (catalog_begin(c))
		return catalog__failed(c);
	r = repo_row(c, hub, type, name, private_, cm != NULL, &id);
	if (!r && cm) {
		test_kill_point("create-repo");
		r = catalog__snapshot_record(c, id, cm->id, ref, false, CATALOG_LOCAL_SELECTION, files, n, &snap_id);
		if (!r)
			r = commit_insert(c, id, snap_id, cm);
	}
	if (r == HM_ERR_SQLITE || (!r && catalog_commit(c)))
		r = catalog__failed(c);
	if (r) {
		catalog_rollback(c);
		return r;
	}
	if (repo_id)
		*repo_id = id;
	return 0;
}

int catalog_local_commit(struct catalog *c, int64_t repo_id, const char *ref, const struct catalog_commit *cm,
			 const struct catalog_file *files, size_t n)
{
	char head[41];
	int64_t snap_id = 0;
	int r;

	if (catalog_begin(c))
		return catalog__failed(c);
	/* the commit was made on cm->parent: it goes in only while the ref still points there */
	r = catalog_local_head(c, repo_id, ref, head);
	if (r == HM_ERR_NOT_FOUND)
		r = cm->parent ? HM_ERR_CONFLICT : 0;
	else if (!r && (!cm->parent || strcmp(head, cm->parent)))
		r = HM_ERR_CONFLICT;
	if (!r)
		r = catalog__snapshot_record(c, repo_id, cm->id, ref, false, CATALOG_LOCAL_SELECTION, files, n,
					     &snap_id);
	if (!r)
		r = commit_insert(c, repo_id, snap_id, cm);
	if (r == HM_ERR_SQLITE || (!r && catalog_commit(c)))
		r = catalog__failed(c);
	if (r) {
		catalog_rollback(c);
		return r;
	}
	return 0;
}

int catalog_local_record(struct catalog *c, int64_t repo_id, const struct catalog_commit *cm,
			 const struct catalog_file *files, size_t n)
{
	int64_t snap_id = 0;
	int r;

	if (catalog_begin(c))
		return HM_ERR_SQLITE;
	r = catalog__snapshot_record(c, repo_id, cm->id, NULL, false, CATALOG_LOCAL_SELECTION, files, n, &snap_id);
	if (!r)
		r = commit_insert(c, repo_id, snap_id, cm);
	if (r || catalog_commit(c)) {
		catalog_rollback(c);
		return HM_ERR_SQLITE;
	}
	return 0;
}

static void read_commit(sqlite3_stmt *st, void *out)
{
	struct catalog_commit *cm = out;
	const unsigned char *p = sqlite3_column_text(st, 1);

	cm->id = xstrdup((const char *)sqlite3_column_text(st, 0));
	cm->parent = p ? xstrdup((const char *)p) : NULL;
	cm->tree = xstrdup((const char *)sqlite3_column_text(st, 2));
	cm->author = xstrdup((const char *)sqlite3_column_text(st, 3));
	cm->at = sqlite3_column_int64(st, 4);
	cm->message = xstrdup((const char *)sqlite3_column_text(st, 5));
	p = sqlite3_column_text(st, 6);
	cm->raw = p ? xstrdup((const char *)p) : NULL;
}

int catalog_commit_get(struct catalog *c, int64_t repo_id, const char *commit, struct catalog_commit *out)
{
	sqlite3_stmt *st = NULL;
	struct catalog_commit cm = { 0 };
	int r;

	if (catalog__prepare(c, "SELECT s.commit_id, m.parent, m.tree, m.author, m.at, m.message, m.raw FROM commits m "
			     "JOIN snapshots s ON s.id = m.snapshot_id WHERE s.repo_id = ?1 AND s.commit_id = ?2", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, commit, -1, SQLITE_STATIC);
	r = catalog__one_row(st, read_commit, &cm);
	sqlite3_finalize(st);
	if (!r)
		*out = cm;
	return r;
}

void catalog_commit_release(struct catalog_commit *cm)
{
	if (!cm)
		return;
	free((char *)cm->id);
	free((char *)cm->parent);
	free((char *)cm->tree);
	free((char *)cm->author);
	free((char *)cm->message);
	free((char *)cm->raw);
	memset(cm, 0, sizeof(*cm));
}

/* Move (or make, or delete) one ref of a push, in the caller's transaction, when it is at ref->old. */
static int push_ref(struct catalog *c, int64_t repo_id, const struct catalog_push_ref *ref)
{
	sqlite3_stmt *st = NULL;
	char head[41];
	int r = catalog_local_head(c, repo_id, ref->name, head);

	if (r == HM_ERR_NOT_FOUND)
		r = ref->old ? HM_ERR_CONFLICT : 0;
	else if (!r && (!ref->old || strcmp(head, ref->old)))
		r = HM_ERR_CONFLICT;
	if (r)
		return r;
	if (catalog__prepare(c, "DELETE FROM refs WHERE repo_id = ?1 AND name = ?2", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, ref->name, -1, SQLITE_STATIC);
	if ((r = catalog__run(st)) || !ref->new_)
		return r;
	if (catalog__prepare(c, "INSERT INTO refs (repo_id, name, kind, snapshot_id, updated_at) SELECT ?1, ?2, ?3, "
			     "id, ?5 FROM snapshots WHERE repo_id = ?1 AND commit_id = ?4", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, ref->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, ref->tag ? "tag" : "branch", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, ref->new_, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
	return catalog__run_changed(c, st);
}

int catalog_local_push(struct catalog *c, int64_t repo_id, const struct catalog_push_commit *cs, size_t nc,
		       const struct catalog_push_ref *refs, size_t nr)
{
	int r = 0;

	if (catalog_begin(c))
		return HM_ERR_SQLITE;
	for (size_t i = 0; i < nc && !r; i++) {
		int64_t snap_id = 0;
		r = catalog__snapshot_record(c, repo_id, cs[i].cm.id, NULL, false, CATALOG_LOCAL_SELECTION, cs[i].files,
					     cs[i].n, &snap_id);
		if (!r)
			r = commit_insert(c, repo_id, snap_id, &cs[i].cm);
	}
	for (size_t i = 0; i < nr && !r; i++)
		r = push_ref(c, repo_id, &refs[i]);
	if (r == HM_ERR_SQLITE || (!r && catalog_commit(c)))
		r = catalog__failed(c);
	if (r) {
		catalog_rollback(c);
		return r;
	}
	return 0;
}

int catalog_local_ref(struct catalog *c, int64_t repo_id, const char *name, bool tag, const char *commit)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE, rc;

	if (catalog_begin(c))
		return r;
	if (catalog__prepare(c, "SELECT 1 FROM refs WHERE repo_id = ?1 AND name = ?2", &st))
		goto out;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		goto out;
	if (commit && rc == SQLITE_ROW) {
		r = HM_ERR_EXISTS;
		goto out;
	}
	if (!commit) {
		r = rc == SQLITE_DONE ? HM_ERR_NOT_FOUND : 0;
		if (!r && !catalog__prepare(c, "DELETE FROM refs WHERE repo_id = ?1 AND name = ?2", &st)) {
			sqlite3_bind_int64(st, 1, repo_id);
			sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
			r = catalog__run(st);
		} else if (!r) {
			r = HM_ERR_SQLITE;
		}
		goto out;
	}
	/* the new ref points at a commit the repo has */
	if (catalog__prepare(c, "INSERT INTO refs (repo_id, name, kind, snapshot_id, updated_at) SELECT ?1, ?2, ?3, "
			     "id, ?5 FROM snapshots WHERE repo_id = ?1 AND commit_id = ?4", &st))
		goto out;
	sqlite3_bind_int64(st, 1, repo_id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, tag ? "tag" : "branch", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, commit, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
	r = catalog__run_changed(c, st);
out:
	if (r || catalog_commit(c)) {
		catalog_rollback(c);
		return r ? r : HM_ERR_SQLITE;
	}
	return 0;
}

/* The blobs any snapshot of a local repo of hub under namespace ns names, each once. */
#define NAMESPACE_BLOBS                                                                                    \
	"SELECT DISTINCT f.sha256, f.size FROM files f JOIN snapshots s ON s.id = f.snapshot_id "          \
	"JOIN repos r ON r.id = s.repo_id WHERE r.local = 1 AND r.hub = ?1 AND "                           \
	"lower(substr(r.name, 1, length(?2) + 1)) = lower(?2 || '/')"

int catalog_namespace_bytes(struct catalog *c, const char *hub, const char *ns, int64_t *bytes)
{
	sqlite3_stmt *st = NULL;
	int r = HM_ERR_SQLITE;

	if (catalog__prepare(c, "SELECT coalesce(sum(size), 0) FROM (" NAMESPACE_BLOBS ")", &st))
		return r;
	sqlite3_bind_text(st, 1, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*bytes = sqlite3_column_int64(st, 0);
		r = 0;
	}
	sqlite3_finalize(st);
	return r;
}

int catalog_namespace_holds(struct catalog *c, const char *hub, const char *ns, const char *sha256)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (catalog__prepare(c, "SELECT 1 FROM (" NAMESPACE_BLOBS ") WHERE sha256 = ?3", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, hub, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, sha256, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : HM_ERR_SQLITE;
}

int catalog_local_naming(struct catalog *c, const char *sha256, bool *mirrored,
			 int (*fn)(void *ud, const char *hub, const char *type, const char *name, const char *commit),
			 void *ud)
{
	sqlite3_stmt *st = NULL;
	int r = 0, rc;

	if (catalog__prepare(c, "SELECT EXISTS (SELECT 1 FROM files f JOIN snapshots s ON s.id = f.snapshot_id "
			     "JOIN repos r ON r.id = s.repo_id WHERE f.sha256 = ?1 AND NOT r.local)", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*mirrored = sqlite3_column_int(st, 0) != 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return HM_ERR_SQLITE;
	if (catalog__prepare(c, "SELECT DISTINCT r.hub, r.type, r.name, s.commit_id, m.at FROM files f "
			     "JOIN snapshots s ON s.id = f.snapshot_id JOIN repos r ON r.id = s.repo_id "
			     "LEFT JOIN commits m ON m.snapshot_id = s.id WHERE f.sha256 = ?1 AND r.local "
			     "ORDER BY r.name, m.at DESC, s.commit_id", &st))
		return HM_ERR_SQLITE;
	sqlite3_bind_text(st, 1, sha256, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = fn(ud, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
		       (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3));
		if (r)
			break;
	}
	return catalog__rows_end(st, rc, r);
}
