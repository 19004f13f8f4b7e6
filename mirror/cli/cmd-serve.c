/*
 * cmd-serve.c - `hubmirror serve`: the mirror node (mirror/serve/serve.c).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "base/log.h"
#include "hub/hub.h"
#include "cli.h"
#include "config.h"
#include "prepare.h"
#include "mirror/serve/access.h"
#include "mirror/data.h"
#include "mirror/serve/serve.h"

/* --auth open|listed|all into an access mode (f->dest an int). */
static int take_auth(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	int *auth = f->dest;

	if (!strcmp(arg, "open"))
		*auth = ACCESS_OPEN;
	else if (!strcmp(arg, "listed"))
		*auth = ACCESS_LISTED;
	else if (!strcmp(arg, "all"))
		*auth = ACCESS_ALL;
	else
		return cli_usage_error(self, "--auth takes open, listed or all");
	return CLI_OK;
}

/* --sync-every 90, 15m or 6h: seconds, up to 30 days (f->dest a double). */
static int take_every(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);
	double mult = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : -1;

	if (end == arg || mult < 0 || v <= 0 || v * mult > 30 * 86400)
		return cli_usage_error(self, "--sync-every takes a duration like 90, 15m or 6h, not '%s'", arg);
	*(double *)f->dest = v * mult;
	return CLI_OK;
}

/* --on-demand-ttl: a duration (90, 15m, 6h, 30d) in seconds (f->dest a double). */
static int take_ttl(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);
	double mult = !*end || !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600
		    : !strcmp(end, "d") ? 86400 : -1;

	if (end == arg || mult < 0 || !(v > 0) || v * mult > 3650 * 86400.0)
		return cli_usage_error(self, "--on-demand-ttl takes a duration like 30d, 12h or 90, not '%s'", arg);
	*(double *)f->dest = v * mult;
	return CLI_OK;
}

/* The timeouts and --p2p-rescan: seconds (fractions allowed) in (0, 86400] to milliseconds (f->dest
 * an unsigned). */
static int take_timeout(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v > 0) || v > 86400)
		return cli_usage_error(self, "--%s takes seconds, above 0 and at most 86400", f->name);
	*(unsigned *)f->dest = v * 1000 < 1 ? 1 : (unsigned)(v * 1000);
	return CLI_OK;
}

/* --shutdown-grace: seconds, 0 (stop at once) to 3600. */
static int take_grace(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v >= 0) || v > 3600)
		return cli_usage_error(self, "--%s takes seconds, 0 to 3600", f->name);
	*(unsigned *)f->dest = (unsigned)(v * 1000);
	return CLI_OK;
}

/* --listen and --p2p-listen (which also takes off): HOST:PORT. --sync-at: HH:MM. Checked as they
 * are taken, so a bad value in the configuration file is named with its line. */
static int take_address(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	bool p2p = !strcmp(f->name, "p2p-listen");

	if (!strrchr(arg, ':') && !(p2p && !strcmp(arg, "off")))
		return cli_usage_error(self, "--%s takes HOST:PORT%s, not '%s'", f->name, p2p ? " or off" : "", arg);
	*(const char **)f->dest = arg;
	return CLI_OK;
}

static int take_hhmm(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	if (mirror_parse_hhmm(arg) < 0)
		return cli_usage_error(self, "--%s takes HH:MM (local time), not '%s'", f->name, arg);
	*(const char **)f->dest = arg;
	return CLI_OK;
}

/* What the options mean together: the auth mode, addresses, times. Returns 0 or CLI_USAGE. */
/* --local: namespaces by the Hub's rules, none of which an --on-demand pattern names (a local
 * namespace's repos are never fetched from upstream). Returns 0, or CLI_USAGE after saying why. */
static int check_local(const struct cli_command *self, const struct mirror_serve_config *cfg)
{
	char **ns = str_split(cfg->local_namespaces, ", ", NULL), **pat = NULL;
	int bad = 0;

	for (char **n = ns; *n && !bad; n++) {
		char *probe = xasprintf("%s/x", *n);
		if (strchr(*n, '/') || hub_check_name(HUB_HF, probe))
			bad = cli_usage_error(self, "--local takes namespaces (acme,research), not '%s'", *n);
		free(probe);
	}
	pat = cfg->on_demand && !bad ? str_split(cfg->on_demand, ", ", NULL) : NULL;
	for (char **p = pat; p && *p && !bad; p++) {
		const char *s = *p, *t;
		size_t len;
		if ((t = skip_prefix(s, "hf:")) || (t = skip_prefix(s, "ms:")))
			s = t;
		if ((t = skip_prefix(s, "datasets/")))
			s = t;
		len = strcspn(s, "/");
		for (char **n = ns; *n && !bad; n++)
			if (strlen(*n) == len && !strncasecmp(*n, s, len))
				bad = cli_usage_error(self,
						      "--on-demand pattern '%s' names the local namespace '%s': its "
						      "repos are this mirror's own, never fetched",
						      *p, *n);
	}
	str_split_free(ns);
	if (pat)
		str_split_free(pat);
	return bad;
}

/* HOST:PORT's host ("" for a bare :PORT; brackets of an IPv6 address kept) into h, its port; -1
 * when it has none. */
static long split_address(const char *a, char *h, size_t cap)
{
	const char *colon = strrchr(a, ':');
	char *end;
	long port;

	if (!colon)
		return -1;
	port = strtol(colon + 1, &end, 10);
	snprintf(h, cap, "%.*s", (int)(colon - a), a);
	return colon[1] && !*end ? port : -1;
}

static bool any_host(const char *h)
{
	return !*h || !strcmp(h, "0.0.0.0") || !strcmp(h, "[::]") || !strcmp(h, "*");
}

const char *cli_listen_default(bool p2p)
{
	const char *e = getenv(p2p ? "HUBMIRROR_P2P_LISTEN" : "HUBMIRROR_LISTEN");

	return e ? e : p2p ? "0.0.0.0:6881" : "0.0.0.0:8080";
}

bool cli_ports_clash(const char *listen, const char *p2p_listen)
{
	char h1[256], h2[256];
	long p1, p2;

	if (!listen || !p2p_listen || !strcmp(p2p_listen, "off") || !strcmp(listen, "off"))
		return false;
	p1 = split_address(listen, h1, sizeof(h1));
	p2 = split_address(p2p_listen, h2, sizeof(h2));
	return p1 > 0 && p1 == p2 && (any_host(h1) || any_host(h2) || !strcasecmp(h1, h2));
}

static int serve_check(const struct cli_command *self, struct mirror_serve_config *cfg, int auth)
{
	if (auth < 0)
		auth = cfg->tokens_file ? ACCESS_LISTED : ACCESS_OPEN;
	if (auth != ACCESS_OPEN && !cfg->tokens_file)
		return cli_usage_error(self, "--auth %s needs --tokens FILE", auth == ACCESS_ALL ? "all" : "listed");
	cfg->auth_mode = auth;
	if (cfg->sync_at && mirror_parse_hhmm(cfg->sync_at) < 0)
		return cli_usage_error(self, "--sync-at takes HH:MM (local time), not '%s'", cfg->sync_at);
	if (!strrchr(cfg->listen, ':'))
		return cli_usage_error(self, "--listen takes HOST:PORT, not '%s'", cfg->listen);
	if (!strcmp(cfg->p2p_listen, "off"))
		cfg->p2p_listen = NULL;
	else if (!strrchr(cfg->p2p_listen, ':'))
		return cli_usage_error(self, "--p2p-listen takes HOST:PORT or off, not '%s'", cfg->p2p_listen);
	else if (cli_ports_clash(cfg->listen, cfg->p2p_listen))
		return cli_usage_error(self,
				       "--listen %s and --p2p-listen %s are one port: the seed would take another "
				       "without a word (give it its own, or off)",
				       cfg->listen, cfg->p2p_listen);
	if (cfg->local_namespaces && check_local(self, cfg))
		return CLI_USAGE;
	if (cfg->peer_mirrors) {
		/* base URLs that go into torrents verbatim: http(s), and nothing a client would misread */
		char **list = str_split(cfg->peer_mirrors, ", ", NULL);
		int bad = 0;
		for (char **p = list; *p && !bad; p++)
			if ((!skip_prefix(*p, "http://") && !skip_prefix(*p, "https://")) || strpbrk(*p, "\"'<>\\?#") ||
			    strlen(*p) > 512)
				bad = cli_usage_error(
					self, "--peer-mirror takes http(s)://HOST[:PORT] base URLs, not '%s'", *p);
		str_split_free(list);
		if (bad)
			return bad;
	}
	return 0;
}

/* Reads the admin token file (a token of at least 12 characters) and, for a serve that fetches on
 * demand, the upstream token files into p, and hands them to its configuration. Returns CLI_OK, or
 * CLI_FAILED after saying why. */
static int read_token_files(struct cli_serve_prep *p)
{
	struct mirror_serve_config *cfg = &p->cfg;

	if (p->admin_token_file && cli_read_token_file(p->admin_token_file, "admin token file", &p->admin_token))
		return CLI_FAILED;
	if (p->admin_token && strlen(p->admin_token) < 12) {
		/* it opens the operator's API: one short enough to guess is refused */
		fprintf(stderr, "hubmirror: admin token file '%s' holds a token of %zu characters: use at least 12 "
			"(openssl rand -hex 16)\n", p->admin_token_file, strlen(p->admin_token));
		return CLI_FAILED;
	}
	cfg->admin_token = p->admin_token;
	cfg->admin_token_file = p->admin_token_file;
	/* upstream tokens: only a serve that fetches on demand holds them (the sync reads its own) */
	if (cfg->on_demand &&
	    ((p->hf_token_file && cli_read_token_file(p->hf_token_file, "Hugging Face token file", &p->hf_token)) ||
	     (p->ms_token_file && cli_read_token_file(p->ms_token_file, "ModelScope token file", &p->ms_token))))
		return CLI_FAILED;
	cfg->hf_token = p->hf_token;
	cfg->ms_token = p->ms_token;
	cfg->hf_token_file = cfg->on_demand ? p->hf_token_file : NULL;
	cfg->ms_token_file = cfg->on_demand ? p->ms_token_file : NULL;
	return CLI_OK;
}

/* --local-quota NS=SIZE,...: each a local namespace, each size a size; into p->local_quota in bytes
 * (what serve is handed). Returns CLI_OK, or CLI_USAGE after saying why. */
static int read_local_quota(const struct cli_command *self, struct cli_serve_prep *p)
{
	char **list = str_split(p->local_quota_arg, ", ", NULL), **ns;
	struct buf b = { 0 };
	int r = CLI_OK;

	ns = p->cfg.local_namespaces ? str_split(p->cfg.local_namespaces, ", ", NULL) : NULL;
	for (char **q = list; *q && r == CLI_OK; q++) {
		char *eq = strchr(*q, '=');
		int64_t bytes = 0;
		bool known = false;
		if (eq)
			*eq = '\0';
		for (char **n = ns; n && *n && eq; n++)
			known |= !strcasecmp(*n, *q);
		if (!eq || cli_parse_size(eq + 1, &bytes))
			r = cli_usage_error(self, "--local-quota takes NS=SIZE (acme=500G), not '%s'", *q);
		else if (!known)
			r = cli_usage_error(self, "--local-quota names '%s', which is not one of --local's namespaces",
					    *q);
		else
			buf_addf(&b, "%s%s=%lld", b.len ? "," : "", *q, (long long)bytes);
	}
	str_split_free(list);
	if (ns)
		str_split_free(ns);
	if (r == CLI_OK) {
		p->local_quota = buf_detach(&b, NULL);
		p->cfg.local_quota = p->local_quota;
	}
	buf_release(&b);
	return r;
}

/* Takes the store quota from the configuration file: the syncs' ([store] quota, which they read from
 * the file), within which on-demand fetches keep too. Returns CLI_OK, or CLI_USAGE after saying why. */
static int read_quota(const struct cli_command *self, struct cli_serve_prep *p)
{
	for (size_t k = 0; k < p->conf.n; k++)
		if (!strcmp(p->conf.v[k].section, "store") && !strcmp(p->conf.v[k].key, "quota") &&
		    cli_parse_size(p->conf.v[k].value, &p->cfg.quota_bytes))
			return cli_usage_error(self, "[store] quota: '%s' is not a size", p->conf.v[k].value);
	return p->local_quota_arg ? read_local_quota(self, p) : CLI_OK;
}

/* (Over 100 lines, and it reads better whole: most of it is serve's option table, one option and its
 * help a line or two each, as every command declares them; the steps after it are a dozen lines.) */
int cli_serve_prepare(int argc, char **argv, struct cli_serve_prep *p)
{
	const struct cli_command *self = cli_find("serve");
	struct mirror_serve_config *cfg = &p->cfg;
	const struct cli_flag flags[] = {
		CLI_STR("data", &cfg->data_dir, "DIR",
			"data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_FN("listen", &cfg->listen, take_address, "HOST:PORT",
		       "address to listen on (default $HUBMIRROR_LISTEN or 0.0.0.0:8080;\nport 0 picks a free one)"),
		CLI_FN("sync-at", &cfg->sync_at, take_hhmm, "HH:MM",
		       "run 'hubmirror sync --wait' every day at this local time"),
		CLI_FN("sync-every", &cfg->sync_every_s, take_every, "D",
		       "also run it D after the previous run ended (90, 15m, 6h)"),
		CLI_STR("tokens", &cfg->tokens_file, "FILE",
			"operator tokens: lines 'TOKEN *' or 'TOKEN SPEC...' ('#' comments)"),
		CLI_FN("auth", &p->auth, take_auth, "MODE",
		       "open (no token), listed (repos named in FILE need a token granting\n"
		       "them; the default with --tokens) or all (every request but /healthz)"),
		CLI_STR("hf-upstream", &cfg->hf_upstream, "URL", "passed to the scheduled sync"),
		CLI_STR("ms-upstream", &cfg->ms_upstream, "URL", "passed to the scheduled sync"),
		CLI_STR("access-log", &p->access, "FILE",
			"one line per request (common log format plus seconds); - for stdout"),
		CLI_STR("ready-file", &cfg->ready_file, "FILE",
			"write the base URL there once listening (for scripts)"),
		CLI_FN("header-timeout", &cfg->header_timeout_ms, take_timeout, "S",
		       "close a connection whose request (line, headers, body) takes longer\n"
		       "than S seconds from its first byte (default 15)"),
		CLI_FN("idle-timeout", &cfg->idle_timeout_ms, take_timeout, "S",
		       "close a keep-alive connection idle between requests for S seconds\n(default 75)"),
		CLI_FN("write-timeout", &cfg->write_timeout_ms, take_timeout, "S",
		       "close a connection whose client accepts no byte of the answer for S\nseconds (default 120)"),
		CLI_FN("p2p-listen", &cfg->p2p_listen, take_address, "A",
		       "where the mirror seeds its torrents over BitTorrent (default\n"
		       "$HUBMIRROR_P2P_LISTEN or 0.0.0.0:6881; off: web seed and tracker only)"),
		CLI_RATE("p2p-upload-limit", &cfg->p2p_upload_limit, "N",
			 "cap the seed's upload, LAN peers included (bytes/s, k/M/G suffixes)"),
		CLI_FN("p2p-rescan", &cfg->p2p_rescan_ms, take_timeout, "S",
		       "look for torrents a sync made, or gc dropped, every S seconds (30)"),
		CLI_INT_TAKES("search-budget", &cfg->search_budget_ms, 1, 60000, "milliseconds, 1 to 60000", "MS",
			      "the longest one catalog search may run; past it a 400 (100)"),
		CLI_INT_TAKES("max-connections", &p->max_connections, 1, 1000000, "a number, 1 to 1000000", "N",
			      "HTTP connections open at once; past it a 503 (16384)"),
		CLI_STR("trusted-proxy", &cfg->trusted_proxies, "A",
			"believe X-Forwarded-Host/-Proto only from these peer addresses"),
		CLI_STR("config", &p->config, "FILE",
			"the configuration file (default $HUBMIRROR_CONFIG, else\n"
			"/etc/hubmirror/hubmirror.conf if present); options given here win"),
		CLI_STR("admin-token-file", &p->admin_token_file, "FILE",
			"turn on the operator's API (/api/admin/: status, sync now, pause,\n"
			"add and remove repos) for requests bearing the token in FILE (mode 600)"),
		CLI_STR("local", &cfg->local_namespaces, "NS[,NS...]",
			"namespaces whose repos are this mirror's own: pushed by users with\n"
			"a write grant (docs/uploads.md), never synced or fetched on demand"),
		CLI_STR("s3-domain", &cfg->s3_domain, "HOST",
			"a host name of the S3 API's own (docs/protocols/s3.md): requests to it\n"
			"are S3's, path-style, and to BUCKET.HOST virtual-host style"),
		CLI_STR("s3-keys", &cfg->s3_keys, "FILE",
			"access keys of the S3 API (docs/protocols/s3.md): lines ACCESS_KEY_ID\n"
			"SECRET_ACCESS_KEY [TOKEN] (mode 600); a signed request acts with TOKEN"),
		CLI_STR("local-quota", &p->local_quota_arg, "NS=SIZE[,...]",
			"what each local namespace's repos may hold (acme=500G)"),
		CLI_SIZE("write-body-max", &cfg->write_body_max, (int64_t)1 << 20, "SIZE",
			 "the most one commit's or git push's body may send (1G); more is\n"
			 "refused before it is kept (docs/uploads.md)"),
		CLI_SIZE("write-spool-max", &cfg->write_spool_max, (int64_t)1 << 20, "SIZE",
			 "what all the commit and push bodies being received may hold at once\n(4G)"),
		CLI_STR("peer-mirror", &cfg->peer_mirrors, "URL[,URL...]",
			"the deployment's other mirrors: every torrent lists them\n"
			"after this one, as trackers and web seeds (docs/deployment.md)"),
		CLI_STR("on-demand", &cfg->on_demand, "PATTERNS",
			"fetch from upstream what a client asks for that the list lacks, for\n"
			"repos these comma-separated globs cover (hf:Qwen/*, hf:datasets/*,\n"
			"ms:qwen/*, or *): tracked at once, large files fetched when first\n"
			"asked and streamed while they verify; the nightly sync completes them"),
		CLI_FN("on-demand-ttl", &cfg->on_demand_ttl_s, take_ttl, "D",
		       "a repo tracked on demand that nobody asks for this long (30d, 12h)\n"
		       "stops being tracked; gc drops its contents (default 30d)"),
		CLI_INT_TAKES("on-demand-max-repos", &cfg->on_demand_max_repos, 1, 1000000, "a number, 1 to 1000000",
			      "N", "at most N repos tracked on demand at once; past it a new one\n"
			      "is answered 503 until one expires (default 1000)"),
		CLI_STR("hf-token-file", &p->hf_token_file, "FILE",
			"upstream token for on-demand fetches from Hugging Face (mode 600)"),
		CLI_STR("ms-token-file", &p->ms_token_file, "FILE", "the same for ModelScope"),
		CLI_FN("shutdown-grace", &cfg->shutdown_grace_ms, take_grace, "S",
		       "on SIGTERM/SIGINT, stop taking connections and let answers in flight\n"
		       "finish for up to S seconds (default 10; 0: stop at once)"),
		CLI_RATE("xet-backfill", &cfg->xet_backfill_rate, "BYTES/S",
			 "compute the Xet identities of contents stored without one (an older\n"
			 "hubmirror's) in the background, reading at most this fast (32M; 0: not)"),
		CLI_STR("tls-cert", &cfg->tls_cert, "FILE",
			"HTTPS on the same port (PEM certificate chain, its key in\n"
			"--tls-key); plain HTTP still answers there. SIGHUP loads them again"),
		CLI_STR("tls-key", &cfg->tls_key, "FILE", "the key of --tls-cert (PEM)"),
		CLI_BOOL("p2p-super-seed", &cfg->p2p_super_seed,
			 "offer each peer only pieces no peer has yet: the mirror sends about one\n"
			 "copy of a model however many fetch it, at the cost of a slower start\n"
			 "(experimental: a lone client without the web seed can stall at the end)"),
		CLI_END,
	};
	int r;

	memset(p, 0, sizeof(*p));
	p->auth = -1;
	cfg->data_dir = mirror_data_default_dir();
	cfg->shutdown_grace_ms = 10000;
	cfg->xet_backfill_rate = 32000000;
	cfg->listen = cli_listen_default(false);
	cfg->p2p_listen = cli_listen_default(true);
	cli_help_if_asked(self, argc, argv, flags); /* before the file: its help whatever the file holds */
	cfg->config_path = config_path(config_option(argc, argv, "config"));
	/* the file's mistakes all said, those of its lines and those of its values */
	r = config_load(cfg->config_path, &p->conf);
	if (r != CLI_FAILED && config_apply(&p->conf, self, CONFIG_SERVE, flags) != CLI_OK)
		r = CLI_USAGE;
	if (r != CLI_OK)
		goto fail;
	r = CLI_USAGE;
	if (cli_parse_flags(self, argc, argv, flags))
		goto fail;
	cfg->max_connections = (size_t)p->max_connections;
	if (optind < argc) {
		cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
		goto fail;
	}
	if (serve_check(self, cfg, p->auth))
		goto fail;
	if (!cfg->tls_cert != !cfg->tls_key) {
		cli_usage_error(self, "--tls-cert and --tls-key go together");
		goto fail;
	}
	if ((r = read_token_files(p)) != CLI_OK || (r = read_quota(self, p)) != CLI_OK)
		goto fail;
	return CLI_OK;
fail:
	cli_serve_prep_release(p);
	return r;
}

void cli_serve_prep_release(struct cli_serve_prep *p)
{
	config_release(&p->conf);
	FREE_AND_NULL(&p->hf_token);
	FREE_AND_NULL(&p->ms_token);
	FREE_AND_NULL(&p->admin_token);
	FREE_AND_NULL(&p->local_quota);
}

/* SIGHUP: read the configuration file again. The certificate files and the tokens file's contents
 * are loaded again by serve itself; every other setting is taken at start, so a change is said to need a restart (the
 * scheduled sync reads the file at each run, so its settings apply from the next one). */
static void serve_reread(void *ud)
{
	struct cli_serve_prep *p = ud;
	struct config now;
	int changed = 0;

	if (!p->cfg.config_path)
		return;
	if (config_load(p->cfg.config_path, &now) != CLI_OK) {
		log_error("serve", "SIGHUP: %s does not load (see above); the settings in use stay",
			  p->cfg.config_path);
		return;
	}
	for (size_t i = 0; i < now.n; i++) {
		const char *before = NULL;
		for (size_t k = 0; k < p->conf.n; k++)
			if (!strcmp(p->conf.v[k].section, now.v[i].section) && !strcmp(p->conf.v[k].key, now.v[i].key))
				before = p->conf.v[k].value;
		if (before && !strcmp(before, now.v[i].value))
			continue;
		changed++;
		/* [sync] keys serve itself passes on (schedule, upstreams) are fixed at start; [store]
		 * retention and quota are the sync's; the bucket's keys (url, s3-endpoint, region,
		 * credentials-file, cache-size) are the store serve opened at start */
		if ((!strcmp(now.v[i].section, "store") &&
		     (!strcmp(now.v[i].key, "retention") || !strcmp(now.v[i].key, "quota"))) ||
		    (!strcmp(now.v[i].section, "sync") && strcmp(now.v[i].key, "at") && strcmp(now.v[i].key, "every") &&
		     strcmp(now.v[i].key, "hf-upstream") && strcmp(now.v[i].key, "ms-upstream")))
			log_info("serve", "SIGHUP: [%s] %s changed: the next scheduled sync uses it", now.v[i].section,
				 now.v[i].key);
		else
			log_warn("serve", "SIGHUP: [%s] %s changed: restart serve to apply it", now.v[i].section,
				 now.v[i].key);
	}
	for (size_t k = 0; k < p->conf.n; k++) {
		bool still = false;
		for (size_t i = 0; i < now.n && !still; i++)
			still = !strcmp(p->conf.v[k].section, now.v[i].section) &&
				!strcmp(p->conf.v[k].key, now.v[i].key);
		if (!still) {
			changed++;
			log_warn("serve", "SIGHUP: [%s] %s removed: restart serve to apply it", p->conf.v[k].section,
				 p->conf.v[k].key);
		}
	}
	if (!changed)
		log_info("serve", "SIGHUP: %s unchanged", p->cfg.config_path);
	config_release(&now);
}

/* The access log, appended to: made mode 0640 (it names clients and what they read), and one that
 * others could read made so too. NULL on failure. */
static FILE *open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0137))
		fchmod(fd, st.st_mode & 0640);
	if (!(f = fdopen(fd, "a")))
		close(fd);
	return f;
}

int cmd_serve(int argc, char **argv)
{
	struct cli_serve_prep p;
	struct mirror_serve_config cfg;
	char exe[4096], *err = NULL;
	size_t exelen = sizeof(exe);
	int r;

	if ((r = cli_serve_prepare(argc, argv, &p)) != CLI_OK)
		return r;
	cfg = p.cfg;
	cfg.on_sighup = serve_reread;
	cfg.on_sighup_ud = &p;
	if (uv_exepath(exe, &exelen))
		snprintf(exe, sizeof(exe), "%s", "hubmirror");
	cfg.self_exe = exe;
	if (p.access) {
		cfg.access_log = !strcmp(p.access, "-") ? stdout : open_log(p.access);
		if (!cfg.access_log) {
			fprintf(stderr, "hubmirror: cannot open access log '%s'\n", p.access);
			cli_serve_prep_release(&p);
			return CLI_FAILED;
		}
	}
	r = mirror_serve(&cfg, &err);
	if (cfg.access_log && cfg.access_log != stdout)
		fclose(cfg.access_log);
	cli_serve_prep_release(&p); /* cfg borrowed its strings */
	if (r) {
		fprintf(stderr, "hubmirror: serve: %s\n", err ? err : err_str(r));
		free(err);
		return CLI_FAILED;
	}
	return CLI_OK;
}
