/*
 * schema.c - the catalog schema and its history.
 *
 * History (PRAGMA user_version):
 *   1  repos (tracked repos and their upstream metadata), blobs (one row per distinct sha256 in the
 *      store), snapshots (hub, type, repo, commit) and their files, refs pointing at snapshots, sync
 *      runs and per-repo sync results.
 *   2  snapshots.selection: the include/exclude globs and options a snapshot was selected with, so a
 *      change of them makes the next sync select again even when the commit did not move.
 *   3  repo_fts: an FTS5 index over repo names, authors, tags, pipeline tag, library, license and card
 *      text, kept by triggers on repos; sync_runs_by_start for the history.
 *   4  indexes for browsing sorts (name, downloads, likes, last sync).
 *   5  repo_fts holds live repos only (a removed repo leaves it, a re-added one returns), so a
 *      search can count and rank from the index alone; the index is rewritten only when an indexed
 *      column (or removed_at) changes, not on every sync status update.
 *   6  torrents: the swarm's torrent of a snapshot (v1 and v2 info-hashes, name, piece size); the
 *      .torrent file itself is torrents/<btih>.torrent in the data directory. Two snapshots with the
 *      same name and files have the same torrent, so the hashes are indexed, not unique.
 *   7  repo_fts gains a facets column ("hubhf typemodel"): a search narrowed to a hub or a type
 *      counts and ranks from the index alone (user words never match it: they are column-filtered).
 *   8  blob_fetches: which repo's request fetched each content, recorded as the bytes land (before
 *      any snapshot names them), so a repo may name content it did not fetch only when a repo anyone
 *      may read fetched or names it, and a run that failed halfway still resumes from what it got.
 *   9  repos.private = -1 (unknown) for ModelScope repos: their visibility was never read before, so
 *      the next sync asks for it (sync asks only when unknown or when the listing changed).
 *  10  refs beyond the followed one: repos.refs_policy ('tags' (the default), 'default', 'all', or a
 *      JSON array of ref names) and repos.refs_checked_at (when upstream's refs were last listed);
 *      refs.kind gains 'convert' (Hugging Face's refs/convert/parquet), so refs is rebuilt.
 *  11  repos.upstream_name: the name upstream answers with now when it differs from the one the repo
 *      was added under (a renamed repo), so the mirror answers to both.
 *  12  snapshots.pinned_at: an operator's pin (hubmirror pin), when set; gc, retention and the store
 *      quota never drop a pinned snapshot of a tracked repo.
 *  13  requests: users' requests for repositories the mirror lacks (one pending per repo, votes),
 *      approved (then tracked) or declined by the operator.
 *  14  blobs.present: 0 for a content a snapshot names that the store does not hold yet (a repo
 *      fetched on demand: its snapshot is listed at once, its large files come when first asked);
 *      such a snapshot is provisional (selection NULL, no torrent, not exported) until a sync
 *      completes it. Everything that counts or reads the store counts present blobs only.
 *  15  tiers: repos.tier (1: synced from the Hub itself; N+1: from a hubmirror of tier N), repos.upstream
 *      (the base URL it was synced from) and repos.origin_checked_at (when the Hub was last asked about
 *      it, by this mirror or by the first one up the chain); repos.created_at, when upstream says it
 *      created the repo.
 *  16  repos.last_ok_at: when a sync of the repo last ended ok (last_sync_at is the last attempt,
 *      whatever its outcome), so staleness can be watched apart from failures.
 *  17  the mirror's own repositories (local namespaces, docs/uploads.md): repos.local (1: made and
 *      written through the upload API, never synced), and commits: a local snapshot's git commit (its
 *      parent commit id, tree id, author, time and message), so the commit id the API gave is the one
 *      git clone rebuilds, and its history has parents.
 *  18  commits.raw: a pushed commit's own text, when git wrote it in a way the fields alone do not
 *      give back (kept so that git clone rebuilds the pusher's very commit id).
 *  19  holds: contents promised to a writer (an upload awaiting its commit, a commit or a push in
 *      flight) until a time; gc and the store quota take no content a live hold names, even when no
 *      snapshot names it (docs/uploads.md, "What gc keeps").
 *  20  oci_tars: a file's OCI tar layer as served (docs/protocols/oci.md): its header and digest, computed
 *      once per content and path, so an image's manifest is made without reading the file again.
 *  21  blob_xet: a content's Xet file hash (docs/protocols/xet.md), recorded when the mirror learns it
 *      (a sync stores the file, the server reads its identity), so the CAS finds a file by it; a row
 *      goes with its blob's.
 *  22  xet_ranges: where each chunk of an upstream xorb that a sync through Xet stored lies in the
 *      store (the content, its offset and length there, and the chunk's hash), keyed by the xorb's
 *      hash and the chunk's index in it, so a later reconstruction that names those chunks is read
 *      from the store instead of fetched (docs/protocols/xet.md, "Sync through Xet"); rows go with
 *      their blob's.
 *  23  xet_dedup: the chunks of each stored content that the global dedup query (docs/protocols/xet.md,
 *      "Dedup") answers for: its first chunk and those whose hash is 0 mod 1024 (a thousandth of the
 *      others); a row goes with its blob's.
 *  24  xet_stated: the Xet hash upstream states for a content the store already held when a sync
 *      listed it (the tree's xetHash), and whether the mirror's own identity of the bytes names
 *      another (refused: the content is then not offered through Xet, docs/protocols/xet.md,
 *      "Identities of older contents"); a row goes with its blob's.
 *
 * Rules: a migration only ever moves from version N-1 to N; released migrations are never edited,
 * a change is a new entry at the end of `migrations`.
 */
#include <stddef.h>

#include "catalog-int.h"

static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE repos ("
	"  id            INTEGER PRIMARY KEY,"
	"  hub           TEXT NOT NULL CHECK (hub IN ('hf', 'ms')),"
	"  type          TEXT NOT NULL CHECK (type IN ('model', 'dataset')),"
	"  name          TEXT NOT NULL," /* org/name as upstream spells it */
	"  follow_rev    TEXT NOT NULL," /* revision the nightly sync follows */
	"  include_globs TEXT NOT NULL DEFAULT '[]'," /* JSON arrays of globs */
	"  exclude_globs TEXT NOT NULL DEFAULT '[]',"
	"  options       TEXT NOT NULL DEFAULT '{}'," /* JSON: further per-repo sync options */
	"  added_at      INTEGER NOT NULL,"
	"  removed_at    INTEGER," /* untracked: kept for history until gc */
	"  gated         TEXT," /* NULL/'false', 'auto', 'manual' */
	"  private       INTEGER NOT NULL DEFAULT 0,"
	"  card_data     TEXT," /* JSON */
	"  tags          TEXT," /* JSON array */
	"  pipeline_tag  TEXT,"
	"  library_name  TEXT,"
	"  license       TEXT,"
	"  downloads     INTEGER,"
	"  likes         INTEGER,"
	"  last_modified TEXT,"
	"  sync_status   TEXT NOT NULL DEFAULT 'never'," /* never, ok, gated, denied, missing, error */
	"  sync_error    TEXT,"
	"  last_sync_at  INTEGER,"
	"  UNIQUE (hub, type, name)"
	");"
	"CREATE TABLE blobs ("
	"  sha256    TEXT PRIMARY KEY,"
	"  size      INTEGER NOT NULL,"
	"  stored_at INTEGER NOT NULL"
	") WITHOUT ROWID;"
	"CREATE TABLE snapshots ("
	"  id         INTEGER PRIMARY KEY,"
	"  repo_id    INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,"
	"  commit_id  TEXT NOT NULL,"
	"  synced_at  INTEGER NOT NULL,"
	"  file_count INTEGER NOT NULL,"
	"  total_size INTEGER NOT NULL,"
	"  UNIQUE (repo_id, commit_id)"
	");"
	"CREATE TABLE files ("
	"  snapshot_id INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,"
	"  path        TEXT NOT NULL,"
	"  size        INTEGER NOT NULL,"
	"  git_oid     TEXT," /* git blob SHA-1 (HF ETag of regular files) */
	"  lfs_oid     TEXT," /* LFS sha256, NULL for regular files */
	"  sha256      TEXT NOT NULL REFERENCES blobs(sha256),"
	"  PRIMARY KEY (snapshot_id, path)"
	") WITHOUT ROWID;"
	"CREATE INDEX files_by_blob ON files(sha256);"
	"CREATE TABLE refs ("
	"  repo_id     INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,"
	"  name        TEXT NOT NULL," /* main, v1.0, refs/pr/1 */
	"  kind        TEXT NOT NULL CHECK (kind IN ('branch', 'tag', 'pr')),"
	"  snapshot_id INTEGER NOT NULL REFERENCES snapshots(id),"
	"  updated_at  INTEGER NOT NULL,"
	"  PRIMARY KEY (repo_id, name)"
	");"
	"CREATE TABLE sync_runs ("
	"  id            INTEGER PRIMARY KEY,"
	"  started_at    INTEGER NOT NULL,"
	"  ended_at      INTEGER,"
	"  outcome       TEXT," /* NULL while running; ok, partial, failed */
	"  repos_ok      INTEGER NOT NULL DEFAULT 0,"
	"  repos_failed  INTEGER NOT NULL DEFAULT 0,"
	"  files_fetched INTEGER NOT NULL DEFAULT 0,"
	"  bytes_fetched INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE TABLE sync_results ("
	"  run_id        INTEGER NOT NULL REFERENCES sync_runs(id) ON DELETE CASCADE,"
	"  repo_id       INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,"
	"  outcome       TEXT NOT NULL,"
	"  commit_id     TEXT,"
	"  files_fetched INTEGER NOT NULL DEFAULT 0,"
	"  bytes_fetched INTEGER NOT NULL DEFAULT 0,"
	"  error         TEXT,"
	"  PRIMARY KEY (run_id, repo_id)"
	");",
	/* 1 -> 2 */
	"ALTER TABLE snapshots ADD COLUMN selection TEXT;",
	/* 2 -> 3 */
	"CREATE VIRTUAL TABLE repo_fts USING fts5(name, author, tags, pipeline_tag, library_name, license, card);"
	"CREATE TRIGGER repos_fts_ai AFTER INSERT ON repos BEGIN"
	"  INSERT INTO repo_fts (rowid, name, author, tags, pipeline_tag, library_name, license, card)"
	"  VALUES (new.id, new.name, CASE WHEN instr(new.name, '/') THEN substr(new.name, 1, instr(new.name, '/') - 1) "
	"END,"
	"          new.tags, new.pipeline_tag, new.library_name, new.license, new.card_data);"
	"END;"
	"CREATE TRIGGER repos_fts_au AFTER UPDATE ON repos BEGIN"
	"  DELETE FROM repo_fts WHERE rowid = old.id;"
	"  INSERT INTO repo_fts (rowid, name, author, tags, pipeline_tag, library_name, license, card)"
	"  VALUES (new.id, new.name, CASE WHEN instr(new.name, '/') THEN substr(new.name, 1, instr(new.name, '/') - 1) "
	"END,"
	"          new.tags, new.pipeline_tag, new.library_name, new.license, new.card_data);"
	"END;"
	"CREATE TRIGGER repos_fts_ad AFTER DELETE ON repos BEGIN"
	"  DELETE FROM repo_fts WHERE rowid = old.id;"
	"END;"
	"INSERT INTO repo_fts (rowid, name, author, tags, pipeline_tag, library_name, license, card)"
	"  SELECT id, name, CASE WHEN instr(name, '/') THEN substr(name, 1, instr(name, '/') - 1) END,"
	"         tags, pipeline_tag, library_name, license, card_data FROM repos;"
	"CREATE INDEX sync_runs_by_start ON sync_runs(started_at);",
	/* 3 -> 4 */
	"CREATE INDEX repos_by_name ON repos(name);"
	"CREATE INDEX repos_by_downloads ON repos(downloads);"
	"CREATE INDEX repos_by_likes ON repos(likes);"
	"CREATE INDEX repos_by_last_sync ON repos(last_sync_at);",
	/* 4 -> 5 */
	"DROP TRIGGER repos_fts_ai;"
	"DROP TRIGGER repos_fts_au;"
	"CREATE TRIGGER repos_fts_ai AFTER INSERT ON repos WHEN new.removed_at IS NULL BEGIN"
	"  INSERT INTO repo_fts (rowid, name, author, tags, pipeline_tag, library_name, license, card)"
	"  VALUES (new.id, new.name, CASE WHEN instr(new.name, '/') THEN substr(new.name, 1, instr(new.name, '/') - 1) "
	"END,"
	"          new.tags, new.pipeline_tag, new.library_name, new.license, new.card_data);"
	"END;"
	"CREATE TRIGGER repos_fts_au AFTER UPDATE OF name, tags, pipeline_tag, library_name, license, card_data,"
	"  removed_at ON repos BEGIN"
	"  DELETE FROM repo_fts WHERE rowid = old.id;"
	"  INSERT INTO repo_fts (rowid, name, author, tags, pipeline_tag, library_name, license, card)"
	"  SELECT new.id, new.name, CASE WHEN instr(new.name, '/') THEN substr(new.name, 1, instr(new.name, '/') - 1) "
	"END,"
	"         new.tags, new.pipeline_tag, new.library_name, new.license, new.card_data WHERE new.removed_at IS "
	"NULL;"
	"END;"
	"DELETE FROM repo_fts WHERE rowid IN (SELECT id FROM repos WHERE removed_at IS NOT NULL);",
	/* 5 -> 6 */
	"CREATE TABLE torrents ("
	"  snapshot_id INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,"
	"  btih        TEXT NOT NULL," /* v1 info-hash, hex */
	"  btmh        TEXT NOT NULL," /* v2 info-hash (sha256), hex */
	"  name        TEXT NOT NULL,"
	"  piece_size  INTEGER NOT NULL,"
	"  created_at  INTEGER NOT NULL"
	");"
	"CREATE INDEX torrents_by_btih ON torrents(btih);"
	"CREATE INDEX torrents_by_btmh ON torrents(btmh);",
	/* 6 -> 7 */
	"DROP TRIGGER repos_fts_ai;"
	"DROP TRIGGER repos_fts_au;"
	"DROP TRIGGER repos_fts_ad;"
	"DROP TABLE repo_fts;"
	"CREATE VIRTUAL TABLE repo_fts USING fts5(name, author, tags, pipeline_tag, library_name, license, card, "
	"facets);"
	"CREATE TRIGGER repos_fts_ai AFTER INSERT ON repos WHEN new.removed_at IS NULL BEGIN"
	"  INSERT INTO repo_fts (rowid, name, author, tags, pipeline_tag, library_name, license, card, facets)"
	"  VALUES (new.id, new.name, CASE WHEN instr(new.name, '/') THEN substr(new.name, 1, instr(new.name, '/') - 1) "
	"END,"
	"          new.tags, new.pipeline_tag, new.library_name, new.license, new.card_data,"
	"          'hub' || new.hub || ' type' || new.type);"
	"END;"
	"CREATE TRIGGER repos_fts_au AFTER UPDATE OF name, tags, pipeline_tag, library_name, license, card_data,"
	"  removed_at ON repos BEGIN"
	"  DELETE FROM repo_fts WHERE rowid = old.id;"
	"  INSERT INTO repo_fts (rowid, name, author, tags, pipeline_tag, library_name, license, card, facets)"
	"  SELECT new.id, new.name, CASE WHEN instr(new.name, '/') THEN substr(new.name, 1, instr(new.name, '/') - 1) "
	"END,"
	"         new.tags, new.pipeline_tag, new.library_name, new.license, new.card_data,"
	"         'hub' || new.hub || ' type' || new.type WHERE new.removed_at IS NULL;"
	"END;"
	"CREATE TRIGGER repos_fts_ad AFTER DELETE ON repos BEGIN"
	"  DELETE FROM repo_fts WHERE rowid = old.id;"
	"END;"
	"INSERT INTO repo_fts (rowid, name, author, tags, pipeline_tag, library_name, license, card, facets)"
	"  SELECT id, name, CASE WHEN instr(name, '/') THEN substr(name, 1, instr(name, '/') - 1) END,"
	"         tags, pipeline_tag, library_name, license, card_data, 'hub' || hub || ' type' || type"
	"  FROM repos WHERE removed_at IS NULL;",
	/* 7 -> 8 */
	"CREATE TABLE blob_fetches ("
	"  sha256  TEXT NOT NULL,"
	"  repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,"
	"  PRIMARY KEY (sha256, repo_id)"
	") WITHOUT ROWID;",
	/* 8 -> 9 */
	"UPDATE repos SET private = -1 WHERE hub = 'ms';",
	/* 9 -> 10 */
	"CREATE TABLE refs_new ("
	"  repo_id     INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,"
	"  name        TEXT NOT NULL," /* main, v1.0, refs/pr/1, refs/convert/parquet */
	"  kind        TEXT NOT NULL CHECK (kind IN ('branch', 'tag', 'pr', 'convert')),"
	"  snapshot_id INTEGER NOT NULL REFERENCES snapshots(id),"
	"  updated_at  INTEGER NOT NULL,"
	"  PRIMARY KEY (repo_id, name)"
	");"
	"INSERT INTO refs_new (repo_id, name, kind, snapshot_id, updated_at)"
	"  SELECT repo_id, name, kind, snapshot_id, updated_at FROM refs;"
	"DROP TABLE refs;"
	"ALTER TABLE refs_new RENAME TO refs;"
	"ALTER TABLE repos ADD COLUMN refs_policy TEXT NOT NULL DEFAULT 'tags';"
	"ALTER TABLE repos ADD COLUMN refs_checked_at INTEGER;",
	/* 10 -> 11 (in parentheses: two literals joined on purpose) */
	("ALTER TABLE repos ADD COLUMN upstream_name TEXT;"
	 "CREATE INDEX repos_by_upstream_name ON repos(hub, type, upstream_name) WHERE upstream_name IS NOT NULL;"),
	/* 11 -> 12 */
	"ALTER TABLE snapshots ADD COLUMN pinned_at INTEGER;",
	/* 12 -> 13 */
	("CREATE TABLE requests ("
	 "  id           INTEGER PRIMARY KEY,"
	 "  hub          TEXT NOT NULL,"
	 "  type         TEXT NOT NULL,"
	 "  name         TEXT NOT NULL,"
	 "  reason       TEXT,"
	 "  requested_by TEXT,"
	 "  requested_at INTEGER NOT NULL,"
	 "  state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'declined')),"
	 "  decided_at   INTEGER,"
	 "  decided_by   TEXT,"
	 "  note         TEXT,"
	 "  votes        INTEGER NOT NULL DEFAULT 1"
	 ");"
	 "CREATE UNIQUE INDEX requests_pending ON requests(hub, type, name) WHERE state = 'pending';"),
	/* 13 -> 14 */
	"ALTER TABLE blobs ADD COLUMN present INTEGER NOT NULL DEFAULT 1;",
	/* 14 -> 15 */
	("ALTER TABLE repos ADD COLUMN tier INTEGER;"
	 "ALTER TABLE repos ADD COLUMN upstream TEXT;"
	 "ALTER TABLE repos ADD COLUMN origin_checked_at INTEGER;"
	 "ALTER TABLE repos ADD COLUMN created_at INTEGER;"),
	/* 15 -> 16 */
	("ALTER TABLE repos ADD COLUMN last_ok_at INTEGER;"
	 "UPDATE repos SET last_ok_at = last_sync_at WHERE sync_status = 'ok';"),
	/* 16 -> 17 */
	("ALTER TABLE repos ADD COLUMN local INTEGER NOT NULL DEFAULT 0;"
	 "CREATE TABLE commits ("
	 "  snapshot_id INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,"
	 "  parent      TEXT," /* commit id; NULL for a repository's first */
	 "  tree        TEXT NOT NULL,"
	 "  author      TEXT NOT NULL," /* NAME <EMAIL>, also the committer */
	 "  at          INTEGER NOT NULL,"
	 "  message     TEXT NOT NULL"
	 ");"),
	/* 17 -> 18 */
	"ALTER TABLE commits ADD COLUMN raw TEXT;",
	/* 18 -> 19 */
	("CREATE TABLE holds ("
	 "  sha256  TEXT NOT NULL,"
	 "  owner   TEXT NOT NULL," /* upload:REPO_ID, commit:NONCE, push:NONCE */
	 "  until   INTEGER NOT NULL," /* unix seconds */
	 "  PRIMARY KEY (sha256, owner)"
	 ") WITHOUT ROWID;"
	 "CREATE INDEX holds_by_owner ON holds(owner);"),
	/* 19 -> 20 */
	("CREATE TABLE oci_tars ("
	 "  sha256  TEXT NOT NULL,"
	 "  path    TEXT NOT NULL," /* the tar entry's name: the file's path in its repo */
	 "  digest  TEXT NOT NULL," /* sha256:... of the whole layer */
	 "  header  BLOB NOT NULL," /* the tar header the digest was computed with */
	 "  PRIMARY KEY (sha256, path)"
	 ") WITHOUT ROWID;"
	 "CREATE INDEX oci_tars_by_digest ON oci_tars(digest);"),
	/* 20 -> 21 */
	("CREATE TABLE blob_xet ("
	 "  sha256   TEXT PRIMARY KEY,"
	 "  xet_hash TEXT NOT NULL" /* the Xet file hash, in its text form */
	 ") WITHOUT ROWID;"
	 "CREATE INDEX blob_xet_by_hash ON blob_xet(xet_hash);"
	 "CREATE TRIGGER blob_xet_gone AFTER DELETE ON blobs BEGIN"
	 "  DELETE FROM blob_xet WHERE sha256 = old.sha256;"
	 "END;"),
	/* 21 -> 22 */
	("CREATE TABLE xet_ranges ("
	 "  xorb    TEXT NOT NULL," /* upstream's xorb hash, in its text form */
	 "  chunk   INTEGER NOT NULL," /* the chunk's index in that xorb */
	 "  sha256  TEXT NOT NULL," /* the stored content that holds the chunk's bytes */
	 "  offset  INTEGER NOT NULL," /* where they start in it */
	 "  length  INTEGER NOT NULL,"
	 "  hash    TEXT NOT NULL," /* the chunk's hash, checked when read back */
	 "  PRIMARY KEY (xorb, chunk)"
	 ") WITHOUT ROWID;"
	 "CREATE INDEX xet_ranges_by_sha256 ON xet_ranges(sha256);"
	 "CREATE TRIGGER xet_ranges_gone AFTER DELETE ON blobs BEGIN"
	 "  DELETE FROM xet_ranges WHERE sha256 = old.sha256;"
	 "END;"),
	/* 22 -> 23 */
	("CREATE TABLE xet_dedup ("
	 "  chunk   TEXT NOT NULL," /* a chunk hash, in its text form */
	 "  sha256  TEXT NOT NULL," /* a content whose chunks include it */
	 "  PRIMARY KEY (chunk, sha256)"
	 ") WITHOUT ROWID;"
	 "CREATE INDEX xet_dedup_by_sha256 ON xet_dedup(sha256);"
	 "CREATE TRIGGER xet_dedup_gone AFTER DELETE ON blobs BEGIN"
	 "  DELETE FROM xet_dedup WHERE sha256 = old.sha256;"
	 "END;"),
	/* 23 -> 24 */
	("CREATE TABLE xet_stated ("
	 "  sha256   TEXT PRIMARY KEY,"
	 "  xet_hash TEXT NOT NULL," /* upstream's xetHash for the content, in its text form */
	 "  refused  INTEGER NOT NULL DEFAULT 0" /* 1: the mirror's identity of the bytes names another */
	 ") WITHOUT ROWID;"
	 "CREATE TRIGGER xet_stated_gone AFTER DELETE ON blobs BEGIN"
	 "  DELETE FROM xet_stated WHERE sha256 = old.sha256;"
	 "END;"),
};

int catalog__migration_count(void)
{
	return (int)(sizeof(migrations) / sizeof(migrations[0]));
}

const char *catalog__migration(int to_version)
{
	if (to_version < 1 || to_version > catalog__migration_count())
		return NULL;
	return migrations[to_version - 1];
}
