/*
 * cmd-serve.c - `hubmirror serve`: the mirror node (mirror/serve/serve.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "base/err.h"
#include "cli.h"
#include "mirror/serve/access.h"
#include "mirror/data.h"
#include "mirror/serve/serve.h"

/* Seconds (fractions allowed) to milliseconds; 0 when not a number in (0, 86400]. */
static unsigned parse_timeout(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v > 0) || v > 86400)
		return 0;
	return v * 1000 < 1 ? 1 : (unsigned)(v * 1000);
}

/* One option of serve's command line into *cfg (and the auth mode, the access log path). Returns 0,
 * or CLI_USAGE after saying what is wrong. */
static int serve_option(const struct cli_command *self, int c, const char *arg, struct mirror_serve_config *cfg,
			int *auth, const char **access)
{
	switch (c) {
	case 'd': cfg->data_dir = arg; break;
	case 'l': cfg->listen = arg; break;
	case 's': cfg->sync_at = arg; break;
	case 'K': cfg->tokens_file = arg; break;
	case 'A':
		if (!strcmp(arg, "open"))
			*auth = ACCESS_OPEN;
		else if (!strcmp(arg, "listed"))
			*auth = ACCESS_LISTED;
		else if (!strcmp(arg, "all"))
			*auth = ACCESS_ALL;
		else
			return cli_usage_error(self, "--auth takes open, listed or all");
		break;
	case 'E': {
		char *end;
		double v = strtod(arg, &end);
		double mult = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : -1;
		if (end == arg || mult < 0 || v <= 0 || v * mult > 30 * 86400)
			return cli_usage_error(self, "--sync-every takes a duration like 90, 15m or 6h, not '%s'", arg);
		cfg->sync_every_s = v * mult;
		break;
	}
	case 'H': cfg->hf_upstream = arg; break;
	case 'M': cfg->ms_upstream = arg; break;
	case 'a': *access = arg; break;
	case 'r': cfg->ready_file = arg; break;
	case 'P': cfg->p2p_listen = arg; break;
	case 'S': cfg->p2p_super_seed = true; break;
	case 'X': cfg->trusted_proxies = arg; break;
	case 'C': {
		char *end;
		long v = strtol(arg, &end, 10);
		if (end == arg || *end || v < 1 || v > 1000000)
			return cli_usage_error(self, "--max-connections takes a number, 1 to 1000000");
		cfg->max_connections = (size_t)v;
		break;
	}
	case 'B': {
		char *end;
		long v = strtol(arg, &end, 10);
		if (end == arg || *end || v < 1 || v > 60000)
			return cli_usage_error(self, "--search-budget takes milliseconds, 1 to 60000");
		cfg->search_budget_ms = (int)v;
		break;
	}
	case 'R': {
		unsigned ms = parse_timeout(arg);
		if (!ms)
			return cli_usage_error(self, "--p2p-rescan takes seconds, above 0 and at most 86400");
		cfg->p2p_rescan_ms = ms;
		break;
	}
	case 'U':
		if (cli_parse_rate(arg, &cfg->p2p_upload_limit))
			return cli_usage_error(self, "--p2p-upload-limit takes bytes per second (k, M, G), not '%s'", arg);
		break;
	case 'T': case 'I': case 'W': {
		unsigned ms = parse_timeout(arg);
		if (!ms)
			return cli_usage_error(self, "--%s-timeout takes seconds, above 0 and at most 86400",
					       c == 'T' ? "header" : c == 'I' ? "idle" : "write");
		if (c == 'T')
			cfg->header_timeout_ms = ms;
		else if (c == 'I')
			cfg->idle_timeout_ms = ms;
		else
			cfg->write_timeout_ms = ms;
		break;
	}
	default: return cli_usage_error(self, "unknown option");
	}
	return 0;
}

/* What the options mean together: the auth mode, addresses, times. Returns 0 or CLI_USAGE. */
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
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "listen", required_argument, NULL, 'l' },
		{ "sync-at", required_argument, NULL, 's' },
		{ "sync-every", required_argument, NULL, 'E' },
		{ "tokens", required_argument, NULL, 'K' },
		{ "auth", required_argument, NULL, 'A' },
		{ "hf-upstream", required_argument, NULL, 'H' },
		{ "ms-upstream", required_argument, NULL, 'M' },
		{ "access-log", required_argument, NULL, 'a' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "header-timeout", required_argument, NULL, 'T' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ "write-timeout", required_argument, NULL, 'W' },
		{ "p2p-listen", required_argument, NULL, 'P' },
		{ "p2p-upload-limit", required_argument, NULL, 'U' },
		{ "p2p-rescan", required_argument, NULL, 'R' },
		{ "p2p-super-seed", no_argument, NULL, 'S' },
		{ "search-budget", required_argument, NULL, 'B' },
		{ "max-connections", required_argument, NULL, 'C' },
		{ "trusted-proxy", required_argument, NULL, 'X' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *self = cli_find("serve");
	struct mirror_serve_config cfg = { 0 };
	const char *access = NULL;
	char exe[4096], *err = NULL;
	size_t exelen = sizeof(exe);
	int c, r, auth = -1;

	cfg.data_dir = mirror_data_default_dir();
	cfg.listen = getenv("HUBMIRROR_LISTEN") ? getenv("HUBMIRROR_LISTEN") : "0.0.0.0:8080";
	cfg.p2p_listen = getenv("HUBMIRROR_P2P_LISTEN") ? getenv("HUBMIRROR_P2P_LISTEN") : "0.0.0.0:6881";
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if ((r = serve_option(self, c, optarg, &cfg, &auth, &access)) != 0)
			return r;
	if (optind < argc)
		return cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
	if ((r = serve_check(self, &cfg, auth)) != 0)
		return r;
	if (uv_exepath(exe, &exelen))
		snprintf(exe, sizeof(exe), "%s", "hubmirror");
	cfg.self_exe = exe;
	if (access) {
		cfg.access_log = !strcmp(access, "-") ? stdout : fopen(access, "a");
		if (!cfg.access_log) {
			fprintf(stderr, "hubmirror: cannot open access log '%s'\n", access);
			return CLI_FAILED;
		}
	}
	r = mirror_serve(&cfg, &err);
	if (cfg.access_log && cfg.access_log != stdout)
		fclose(cfg.access_log);
	if (r) {
		fprintf(stderr, "hubmirror: serve: %s\n", err ? err : err_str(r));
		free(err);
		return CLI_FAILED;
	}
	return CLI_OK;
}
