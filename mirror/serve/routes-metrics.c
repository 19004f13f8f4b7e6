/*
 * routes-metrics.c - GET /metrics in the Prometheus text format (version 0.0.4): the HTTP server's
 * counters, the sync history, the store, and one gauge pair per repository. Names follow the
 * Prometheus conventions: a unit suffix, `_total` for counters.
 */
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "ondemand.h"
#include "base/buf.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "store/store.h"
#include "store/bucket.h"
#include "routes-int.h"
#include "seeder.h"
#include "p2p/tracker.h"

/* A label value: backslash, double quote and newline escaped. */
static void label(struct buf *b, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			buf_addch(b, '\\');
		if (*v == '\n') {
			buf_adds(b, "\\n");
			continue;
		}
		buf_addch(b, *v);
	}
}

static void head(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int runs_cb(void *ud, const char *outcome, int64_t runs, int64_t files, int64_t bytes)
{
	struct buf *b = ud;

	buf_adds(b, "hubmirror_sync_runs_total{outcome=\"");
	label(b, outcome);
	buf_addf(b, "\"} %lld\n", (long long)runs);
	(void)files;
	(void)bytes;
	return 0;
}

struct up_ctx {
	int64_t files, bytes;
};

static int up_cb(void *ud, const char *outcome, int64_t runs, int64_t files, int64_t bytes)
{
	struct up_ctx *u = ud;

	(void)outcome;
	(void)runs;
	u->files += files;
	u->bytes += bytes;
	return 0;
}

/* The server's own counters (the loop's state: read there). */
static void http_part(struct mirror_routes *rt, struct buf *b)
{
	struct httpd_stats hs;
	int64_t spool_bytes = 0;
	uint64_t spool_refused = 0;

	httpd_get_stats(rt->httpd, &hs);
	mirror__spool_stats(rt, &spool_bytes, &spool_refused);
	if (rt->ondemand)
		mirror_ondemand_metrics(rt->ondemand, b);
	head(b, "hubmirror_http_requests_total", "counter", "HTTP requests answered, by route and status.");
	mirror__metrics_requests(rt, b);
	head(b, "hubmirror_http_response_bytes_total", "counter", "Bytes sent to HTTP clients (headers and bodies).");
	buf_addf(b, "hubmirror_http_response_bytes_total %llu\n", (unsigned long long)hs.bytes_sent);
	head(b, "hubmirror_http_connections", "gauge", "Open client connections.");
	buf_addf(b, "hubmirror_http_connections %llu\n", (unsigned long long)hs.connections_open);
	head(b, "hubmirror_http_connections_total", "counter", "Client connections accepted.");
	buf_addf(b, "hubmirror_http_connections_total %llu\n", (unsigned long long)hs.connections_total);
	head(b, "hubmirror_http_bodies_spilled_total", "counter",
	     "Answers of 1 MiB or more sent from a temporary file instead of memory.");
	buf_addf(b, "hubmirror_http_bodies_spilled_total %llu\n", (unsigned long long)hs.bodies_spilled);
	head(b, "hubmirror_write_spool_bytes", "gauge",
	     "Bytes the bodies of commits and pushes being received or read hold in the spool.");
	buf_addf(b, "hubmirror_write_spool_bytes %lld\n", (long long)spool_bytes);
	head(b, "hubmirror_write_bodies_refused_total", "counter",
	     "Commit and push bodies refused or cut off for a bound (size, quota, disk, spool).");
	buf_addf(b, "hubmirror_write_bodies_refused_total %llu\n", (unsigned long long)spool_refused);
	head(b, "hubmirror_http_connections_refused_total", "counter",
	     "Connections answered 503 and closed: --max-connections were open.");
	buf_addf(b, "hubmirror_http_connections_refused_total %llu\n", (unsigned long long)hs.connections_refused);
	head(b, "hubmirror_http_tls_connections_total", "counter", "Connections that spoke TLS (serve --tls-cert).");
	buf_addf(b, "hubmirror_http_tls_connections_total %llu\n", (unsigned long long)hs.tls_connections);
	head(b, "hubmirror_http_tls_errors_total", "counter",
	     "TLS connections that ended on a TLS failure (handshake, bad record).");
	buf_addf(b, "hubmirror_http_tls_errors_total %llu\n", (unsigned long long)hs.tls_errors);
	head(b, "hubmirror_http_deferred_total", "counter",
	     "Answers built on a worker thread, off the event loop (listings, searches).");
	buf_addf(b, "hubmirror_http_deferred_total %llu\n", (unsigned long long)hs.deferred_total);
	head(b, "hubmirror_http_deferred_refused_total", "counter",
	     "Requests answered 503: too many answers were waiting for a worker.");
	buf_addf(b, "hubmirror_http_deferred_refused_total %llu\n", (unsigned long long)hs.deferred_refused);
	head(b, "hubmirror_http_deferred_running", "gauge", "Answers being built on worker threads now.");
	buf_addf(b, "hubmirror_http_deferred_running %llu\n", (unsigned long long)hs.deferred_running);
	head(b, "hubmirror_http_deferred_waiting", "gauge", "Answers waiting for a worker thread now.");
	buf_addf(b, "hubmirror_http_deferred_waiting %llu\n", (unsigned long long)hs.deferred_waiting);
}

/* The swarm's counters (the loop's state too). */
static void swarm_part(struct mirror_routes *rt, struct buf *b)
{
	struct p2p_tracker_stats ts;
	uint64_t deduped = 0;

	rt->fronts->swarm_stats(rt, &ts, &deduped);
	head(b, "hubmirror_tracker_announces_total", "counter", "Announces the swarm's tracker answered.");
	buf_addf(b, "hubmirror_tracker_announces_total %llu\n", (unsigned long long)ts.announces);
	head(b, "hubmirror_tracker_torrents", "gauge",
	     "Swarms with live peers (v1 and truncated v2 hashes count apart).");
	buf_addf(b, "hubmirror_tracker_torrents %zu\n", ts.torrents);
	head(b, "hubmirror_tracker_peers", "gauge", "Live peers over all swarms, by role.");
	buf_addf(b, "hubmirror_tracker_peers{role=\"seeder\"} %zu\n", ts.seeders);
	buf_addf(b, "hubmirror_tracker_peers{role=\"leecher\"} %zu\n", ts.peers - ts.seeders);
	if (rt->seeder) {
		int64_t seeded = 0, held = 0, uploaded = 0;
		mirror_seeder_stats(rt->seeder, &seeded, &held, &uploaded);
		head(b, "hubmirror_seeder_torrents", "gauge", "Torrents the mirror seeds over BitTorrent.");
		buf_addf(b, "hubmirror_seeder_torrents %lld\n", (long long)seeded);
		head(b, "hubmirror_seeder_held_torrents", "gauge",
		     "Of those, torrents of no ref's snapshot, seeded while peers hold their swarms.");
		buf_addf(b, "hubmirror_seeder_held_torrents %lld\n", (long long)held);
		head(b, "hubmirror_seeder_uploaded_bytes_total", "counter",
		     "Payload bytes the mirror's BitTorrent seed sent to peers.");
		buf_addf(b, "hubmirror_seeder_uploaded_bytes_total %lld\n", (long long)uploaded);
	}
	head(b, "hubmirror_tracker_peer_uploaded_bytes", "gauge",
	     "What the swarms' live peers report having uploaded in their current sessions (BitTorrent peers other "
	     "than the mirror).");
	buf_addf(b, "hubmirror_tracker_peer_uploaded_bytes %lld\n", (long long)ts.peer_uploaded);
	head(b, "hubmirror_webseed_bytes_total", "counter",
	     "Bytes the mirror sent to the swarm as its web seed (headers included).");
	buf_addf(b, "hubmirror_webseed_bytes_total %llu\n", (unsigned long long)mirror__route_bytes(rt, "webseed"));
	head(b, "hubmirror_webseed_fill_deduped_total", "counter",
	     "Agents' fill requests answered 409: another agent had just fetched those bytes (take them from the "
	     "swarm).");
	buf_addf(b, "hubmirror_webseed_fill_deduped_total %llu\n", (unsigned long long)deduped);
}

/* The store's bucket, when it has one: the backend's calls, bytes, errors, time, and the local cache's
 * hits and misses (store/bucket.h). */
static void bucket_part(const struct store *st, struct buf *b)
{
	struct store_bucket_stats s;

	if (!store_in_bucket(st))
		return;
	store_bucket_stats(&s);
	head(b, "hubmirror_store_bucket_calls_total", "counter", "Calls to the store's bucket (a put or a listing: "
	     "several requests).");
	buf_addf(b, "hubmirror_store_bucket_calls_total %lld\n", (long long)s.requests);
	head(b, "hubmirror_store_bucket_errors_total", "counter", "Calls to the store's bucket that failed.");
	buf_addf(b, "hubmirror_store_bucket_errors_total %lld\n", (long long)s.errors);
	head(b, "hubmirror_store_bucket_seconds_total", "counter", "Time the calls to the store's bucket took.");
	buf_addf(b, "hubmirror_store_bucket_seconds_total %.6f\n", s.seconds);
	head(b, "hubmirror_store_bucket_read_bytes_total", "counter", "Bytes read from the store's bucket.");
	buf_addf(b, "hubmirror_store_bucket_read_bytes_total %lld\n", (long long)s.bytes_in);
	head(b, "hubmirror_store_bucket_written_bytes_total", "counter", "Bytes written to the store's bucket.");
	buf_addf(b, "hubmirror_store_bucket_written_bytes_total %lld\n", (long long)s.bytes_out);
	head(b, "hubmirror_store_cache_reads_total", "counter", "Reads of the bucket's local cache: found there "
	     "(hit) or brought in from the bucket (miss).");
	buf_addf(b, "hubmirror_store_cache_reads_total{result=\"hit\"} %lld\n", (long long)s.cache_hits);
	buf_addf(b, "hubmirror_store_cache_reads_total{result=\"miss\"} %lld\n", (long long)s.cache_misses);
}

/* Sync history and store totals (the totals count every file of the catalog). */
static void catalog_part(struct catalog *c, struct buf *b)
{
	struct catalog_totals t;
	struct up_ctx up = { 0, 0 };

	head(b, "hubmirror_sync_runs_total", "counter", "Sync runs by outcome.");
	catalog_run_totals(c, runs_cb, b);
	catalog_run_totals(c, up_cb, &up);
	head(b, "hubmirror_upstream_fetched_bytes_total", "counter", "Bytes fetched from upstream hubs by syncs.");
	buf_addf(b, "hubmirror_upstream_fetched_bytes_total %lld\n", (long long)up.bytes);
	head(b, "hubmirror_upstream_fetched_files_total", "counter", "Files fetched from upstream hubs by syncs.");
	buf_addf(b, "hubmirror_upstream_fetched_files_total %lld\n", (long long)up.files);
	if (!catalog_totals(c, &t)) {
		head(b, "hubmirror_store_bytes", "gauge", "Bytes in the store (each distinct content once).");
		buf_addf(b, "hubmirror_store_bytes %lld\n", (long long)t.unique_bytes);
		head(b, "hubmirror_store_blobs", "gauge", "Distinct contents in the store.");
		buf_addf(b, "hubmirror_store_blobs %lld\n", (long long)t.blobs);
		head(b, "hubmirror_dedup_saved_bytes", "gauge",
		     "Bytes that deduplication saves over storing every snapshot whole.");
		buf_addf(b, "hubmirror_dedup_saved_bytes %lld\n", (long long)t.dedup_saved_bytes);
		head(b, "hubmirror_repos", "gauge", "Tracked repositories.");
		buf_addf(b, "hubmirror_repos %lld\n", (long long)t.repos);
	}
	{
		int64_t pending = 0;
		if (!catalog_requests_pending(c, &pending)) {
			head(b, "hubmirror_requests_pending", "gauge",
			     "Users' requests for repositories, waiting for the operator.");
			buf_addf(b, "hubmirror_requests_pending %lld\n", (long long)pending);
		}
	}
}

static void repo_labels(struct buf *b, const char *metric, const struct catalog_repo *r)
{
	buf_adds(b, metric);
	buf_adds(b, "{hub=\"");
	label(b, r->hub);
	buf_adds(b, "\",type=\"");
	label(b, r->type);
	buf_adds(b, "\",repo=\"");
	label(b, r->name);
}

/* One gauge pair per repository, those the scrape's token may read (docs/security.md). */
static void repos_part(struct catalog *c, const struct mirror_access *access, const char *tok, struct buf *b)
{
	struct catalog_repo *repos = NULL;
	size_t n = 0;
	bool *visible;

	if (catalog_repo_list(c, &repos, &n))
		return;
	visible = xcalloc(n ? n : 1, sizeof(*visible));
	for (size_t i = 0; i < n; i++)
		visible[i] = mirror_access_visible(access, tok, &repos[i]) &&
			     (!access || mirror_access_allows(access, tok, repos[i].hub, repos[i].type, repos[i].name));
	head(b, "hubmirror_repo_last_sync_timestamp_seconds", "gauge",
	     "When a sync of each repository was last attempted, by the outcome it had (Unix time).");
	for (size_t i = 0; i < n; i++) {
		if (!visible[i])
			continue;
		repo_labels(b, "hubmirror_repo_last_sync_timestamp_seconds", &repos[i]);
		buf_adds(b, "\",status=\"");
		label(b, repos[i].sync_status);
		buf_addf(b, "\"} %lld\n", (long long)repos[i].last_sync_at);
	}
	head(b, "hubmirror_repo_last_success_timestamp_seconds", "gauge",
	     "When a sync of each repository last ended ok (Unix time; 0: never).");
	for (size_t i = 0; i < n; i++) {
		if (!visible[i])
			continue;
		repo_labels(b, "hubmirror_repo_last_success_timestamp_seconds", &repos[i]);
		buf_addf(b, "\"} %lld\n", (long long)repos[i].last_ok_at);
	}
	head(b, "hubmirror_repo_size_bytes", "gauge", "Size of each repository's synced snapshot.");
	for (size_t i = 0; i < n; i++) {
		if (!visible[i])
			continue;
		repo_labels(b, "hubmirror_repo_size_bytes", &repos[i]);
		buf_addf(b, "\"} %lld\n", (long long)repos[i].total_size);
	}
	catalog_repo_list_free(repos, n);
	free(visible);
}

/* The loop writes its own counters; a worker adds the catalog's (a count of every file, a line per
 * repo) between and after them, with the access rules of the moment the scrape came (a reference:
 * a SIGHUP may swap the rules meanwhile). */
struct metrics_job {
	struct mirror__job j;
	struct buf http, swarm;
	char *token;
	struct mirror_access *access;
};

static void metrics_build(struct mirror__job *job, struct catalog *cat)
{
	struct metrics_job *mj = (struct metrics_job *)job;
	struct buf b;

	buf_init(&b);
	buf_add(&b, mj->http.data, mj->http.len);
	catalog_part(cat, &b);
	bucket_part(job->rt->data->store, &b);
	buf_add(&b, mj->swarm.data, mj->swarm.len);
	repos_part(cat, mj->access, mj->token, &b);
	job->status = 200;
	job->ctype = "text/plain; version=0.0.4; charset=utf-8";
	job->text = buf_detach(&b, &job->len);
}

static void metrics_release(struct mirror__job *job)
{
	struct metrics_job *mj = (struct metrics_job *)job;

	buf_release(&mj->http);
	buf_release(&mj->swarm);
	free(mj->token);
	mirror_access_free(&mj->access);
	free(mj);
}

int mirror__route_metrics(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	struct metrics_job *mj = xcalloc(1, sizeof(*mj));
	char tb[512];
	const char *tok = mirror__request_token(req, tb, sizeof(tb));

	(void)rest;
	(void)arg;
	mj->j.build = metrics_build;
	mj->j.release = metrics_release;
	buf_init(&mj->http);
	buf_init(&mj->swarm);
	http_part(rt, &mj->http);
	swarm_part(rt, &mj->swarm);
	mj->token = tok ? xstrdup(tok) : NULL;
	mj->access = mirror_access_ref(rt->access);
	mirror__defer(rt, req, &mj->j);
	return 0;
}
