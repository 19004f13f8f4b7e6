/*
 * sync.h - the sync engine: bring tracked repos up to date in the store and the catalog.
 *
 * Per repo: resolve the followed revision upstream; an unchanged commit costs that one request.
 * Otherwise list the files, select them (include/exclude globs, prefer_safetensors), and fetch the
 * contents the store lacks, files in parallel under a byte budget, each content once however many
 * repos or revisions want it. Every byte is verified by the store before it becomes a blob. When all
 * files of a repo are in, the snapshot is recorded and the ref moved in one transaction; if any file
 * failed, the repo keeps its previous snapshot and the partial files stay for the next run to resume.
 *
 * Then a second pass for the refs a repo mirrors besides the followed one (its refs policy: tags by
 * default, docs/commands/add.md): upstream's refs are listed (one request) when the followed snapshot
 * changed in this run, when they were last listed a week ago or more, when the policy names branches
 * (all, or a list: every run), or with check_refs. A ref at a commit the catalog holds (selected
 * the same way) is pointed there without a request; any other is listed and fetched like the
 * followed revision, sharing the run's content jobs. Once every wanted ref is in, refs upstream no
 * longer has are dropped (their snapshots stay addressable by commit until gc).
 *
 * The caller holds the data directory's sync lock (mirror_data_lock).
 */
#ifndef HM_MIRROR_SYNC_H
#define HM_MIRROR_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hub/http/http.h"

struct catalog_repo;
struct mirror_data;

struct mirror_sync_repo_result;

/* A run's progress, for mirror_sync_config.on_progress. */
struct mirror_sync_progress {
	size_t repos_done, repos_total;
	int64_t files_done, files_total;
	int64_t bytes_done, bytes_total;
	double bytes_per_s;           /* since the run started */
	const char *file;             /* the biggest file in flight (its path), or NULL */
	int file_percent;             /* how much of it is in */
	double waiting_s;             /* a wait upstream asked for (429), or 0 */
	bool done;                    /* the run's last call */
};

struct mirror_sync_config {
	const char *hf_base;          /* upstream base URLs; NULL: the public hubs */
	const char *ms_base;
	const char *hf_token;         /* NULL: anonymous; never logged */
	const char *ms_token;
	int max_parallel_files;       /* 0: 8 */
	int64_t max_inflight_bytes;   /* sum of the sizes of files being fetched; 0: 8 GiB. One file
				       * always runs, however big. */
	int max_parallel_listings;    /* repos being resolved/listed at once; 0: 8 */
	int max_file_tries;           /* attempts per file without progress; 0: 5 */
	/* Where the run stands, twice a second and once more at its end (p->done), for a live progress
	 * line the caller draws (the CLI's, on a terminal); may be NULL. Its on_repo lines come between
	 * two calls: the caller clears its line first. */
	void (*on_progress)(void *ud, const struct mirror_sync_progress *p);
	void *on_progress_ud;
	/* Called as each repo's first pass ends (its refs come later, in the report), so its line can
	 * be printed as it happens; may be NULL. */
	void (*on_repo)(void *ud, const struct mirror_sync_repo_result *res);
	void *on_repo_ud;
	bool check_refs;              /* list upstream's refs of every repo whose policy wants any, now */
	int64_t quota_bytes;          /* the store's size limit (sync-quota.c); 0: none */
	bool provisional;             /* on demand: fetch only the contents upstream names by git id (the
				       * small regular files), name the others (their sha256) absent, and
				       * record the followed snapshot at once, selected by nothing, so
				       * the next sync completes it; no refs pass, no quota, no torrents.
				       * The caller need not hold the sync lock. */
	struct hub_http_config http;  /* retry and timeout knobs */
	bool no_xet;                  /* never through Xet (--xet off): every content over plain HTTP */
};

/* One ref of the second pass. */
struct mirror_sync_ref_result {
	char *name;           /* owned: v1.0, dev, refs/convert/parquet */
	const char *kind;     /* static: branch, tag, convert */
	char *commit;         /* owned: the snapshot's commit (ModelScope: tree id), NULL when it failed */
	const char *outcome;  /* static: ok (fetched), unchanged, missing (named, not upstream), skipped, or
			       * the error's outcome (gated, denied, error, ...) */
	char *error;          /* owned, NULL when fine */
};

struct mirror_sync_repo_result {
	char *spec;           /* hf:org/name (owned) */
	const char *outcome;  /* static: ok, unchanged, gated, denied, missing, disabled, error */
	char *commit;         /* synced commit (owned), NULL on failure */
	char *error;          /* owned, NULL when fine */
	char *warning;        /* owned: synced, but something to tell (globs that selected nothing) */
	bool reported;        /* given to on_repo already */
	int64_t files;        /* files in the snapshot (selected) */
	int64_t bytes;        /* their total size */
	int64_t files_fetched;
	int64_t bytes_fetched;
	int64_t skipped_unsafe;
	struct mirror_sync_ref_result *refs;   /* the second pass, when upstream's refs were listed */
	size_t nrefs;
	bool refs_listed;     /* upstream's refs were asked for in this run */
	char *refs_error;     /* owned: why listing them failed, or NULL */
	int64_t refs_dropped; /* refs upstream no longer has, dropped */
};

struct mirror_sync_report {
	int64_t run_id;
	struct mirror_sync_repo_result *repos;
	size_t nrepos;
	size_t ok;            /* ok + unchanged */
	size_t failed;
	int64_t files_fetched;
	int64_t bytes_fetched;
	uint64_t upstream_requests;   /* HTTP attempts sent upstream, retries and redirects included */
	double seconds;
	int64_t torrents_made;        /* torrents made after the run for snapshots that had none */
	int64_t quota_dropped;        /* old snapshots dropped to stay under the store quota */
	int64_t quota_freed;          /* bytes that freed */
	char *torrents_error;         /* owned: why making them failed, or NULL */
};

/*
 * Sync the n repos (from catalog_repo_list/get; borrowed), then make the swarm's torrent of every
 * snapshot that has none (docs/p2p.md; a failure there is report->torrents_error, the sync stands).
 * Fills *report (release it with mirror_sync_report_release) and returns 0 when the run itself worked,
 * whatever the repos' outcomes; a negative code (and *errmsg, malloc'd) when it could not run at all.
 */
int mirror_sync_run(struct mirror_data *d, const struct catalog_repo *repos, size_t n,
		    const struct mirror_sync_config *cfg, struct mirror_sync_report *report, char **errmsg);
void mirror_sync_report_release(struct mirror_sync_report *r);

/* Does path match one of the globs of the JSON array text (fnmatch, '*' crosses '/', a pattern
 * ending in '/' matches everything below)? An empty array matches nothing. */
bool mirror_glob_match_any(const char *globs_json, const char *path);

#endif
