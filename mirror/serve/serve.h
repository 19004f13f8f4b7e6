/*
 * serve.h - the mirror node: `hubmirror serve` as a library call. Opens the data directory, answers
 * HTTP (the Hugging Face and ModelScope APIs, the catalog API and web page, metrics, health, the
 * swarm's torrents, tracker and web seed) from the catalog and store only, seeds its public torrents
 * over BitTorrent, and runs the nightly sync as a child process at a set time.
 */
#ifndef HM_MIRROR_SERVE_H
#define HM_MIRROR_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct mirror_serve_config {
	const char *data_dir;       /* borrowed */
	const char *listen;         /* "HOST:PORT" */
	const char *sync_at;        /* "HH:MM" local time, or NULL: no daily schedule */
	double sync_every_s;        /* > 0: also sync this many seconds after the previous sync ended */
	const char *self_exe;       /* the hubmirror binary to run for the scheduled sync */
	const char *hf_upstream;    /* passed to the scheduled sync; NULL: its defaults */
	const char *ms_upstream;
	FILE *access_log;           /* NULL: none */
	const char *tokens_file;    /* operator tokens (access.h), or NULL */
	int auth_mode;              /* enum mirror_access_mode */
	const char *ready_file;     /* if set, "http://HOST:PORT\n" is written there once listening */
	/* HTTP timeouts in milliseconds (see struct httpd_config); 0: the server's defaults. */
	unsigned header_timeout_ms;
	unsigned idle_timeout_ms;
	unsigned write_timeout_ms;
	const char *p2p_listen;     /* the BitTorrent seed's listen interfaces; NULL: no seed */
	int64_t p2p_upload_limit;   /* bytes/s, 0: unlimited */
	unsigned p2p_rescan_ms;     /* 0: the seeder's default */
	bool p2p_super_seed;        /* BEP 16 super-seeding: about one copy out, slower start */
	int search_budget_ms;       /* longest a catalog search may run on the loop; 0: 100 */
	size_t max_connections;     /* HTTP connections open at once (503 past it); 0: 16384 */
	const char *trusted_proxies; /* peer addresses whose X-Forwarded-* count, comma-separated; NULL */
	const char *tls_cert;       /* PEM certificate chain: HTTPS on the same port (tls.h); NULL: none */
	const char *tls_key;        /* its PEM private key */
	const char *config_path;    /* the configuration file serve read (passed on to the scheduled sync),
				     * or NULL */
	const char *admin_token;    /* the operator's API (/api/admin/) with this bearer token; NULL: off */
	const char *admin_token_file; /* where it came from: advertised in <data>/serve.admin, with our
				       * URL, for the CLI on this machine (NULL: nothing advertised) */
	void (*on_sighup)(void *ud); /* called first on SIGHUP (the CLI reads the file again and says what
				     * changed), or NULL */
	void *on_sighup_ud;
	const char *peer_mirrors;   /* the deployment's other mirrors, comma-separated base URLs; NULL */
	const char *on_demand;      /* patterns of repos fetched when a client asks (ondemand.h); NULL: off */
	const char *local_namespaces; /* namespaces whose repos are the mirror's own, written through uploads
				     * (comma-separated; docs/uploads.md); NULL: none, read-only */
	const char *local_quota;    /* "NS=BYTES,NS=BYTES": what each local namespace may hold (checked
				     * by the CLI: local namespaces, sizes in bytes); NULL: no bound */
	int64_t write_body_max;     /* the most one commit's or push's body may hold; 0: 1 GiB */
	int64_t write_spool_max;    /* what all of them being received may hold at once; 0: 4 GiB */
	const char *s3_keys;        /* the S3 API's access keys file (routes.h); NULL: anonymous only */
	const char *s3_domain;      /* the S3 API's own host name, buckets as its subdomains; NULL: none */
	double on_demand_ttl_s;     /* untouched this long, such a repo stops being tracked; 0: 30 days */
	int on_demand_max_repos;    /* repos tracked on demand at once; 0: 1000 */
	int64_t quota_bytes;        /* [store] quota, for on-demand fetches; 0: none */
	const char *hf_token;       /* upstream tokens, for on-demand fetches only (NULL: anonymous) */
	const char *ms_token;
	const char *hf_token_file;  /* where they came from (handed to the syncs on-demand starts) */
	const char *ms_token_file;
	int64_t xet_backfill_rate;  /* bytes/s at which the Xet identities the store lacks are computed in
				     * the background (xet-backfill.h); 0: not */
	unsigned shutdown_grace_ms; /* on SIGTERM, how long answers in flight may take to finish; 0: stop
				     * at once (cmd-serve's default is 10 s) */
};

/* Parse "HH:MM" into minutes after midnight; -1 when malformed. */
int mirror_parse_hhmm(const char *s);

/* Run until SIGINT or SIGTERM; SIGHUP loads the TLS certificate and key again. Returns 0, or a negative code with
 * *errmsg (malloc'd). */
int mirror_serve(const struct mirror_serve_config *cfg, char **errmsg);

#endif
