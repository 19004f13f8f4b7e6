/*
 * cmd-config.c - `hubmirror config check|show [FILE]`: the configuration file checked as serve and
 * sync would read it, and the settings it makes.
 */
#include <stdio.h>
#include <unistd.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "cli.h"
#include "config.h"
#include "hub/http/tls.h"
#include "mirror/serve/access.h"
#include "prepare.h"
#include "store/s3.h"

/* HOST:PORT with a port serve can bind (0 picks a free one). */
static bool port_ok(const char *v)
{
	const char *colon = strrchr(v, ':');
	char *end;
	long port;

	if (!colon || !colon[1])
		return false;
	port = strtol(colon + 1, &end, 10);
	return !*end && port >= 0 && port <= 65535;
}

/* Each of a comma list is an http:// or https:// URL. */
static bool urls_ok(const char *v)
{
	char **list = str_split(v, ",", NULL);
	bool ok = true;

	for (char **p = list; *p && ok; p++) {
		const char *u = *p, *host;
		while (*u == ' ')
			u++;
		host = skip_prefix(u, "http://") ? skip_prefix(u, "http://") : skip_prefix(u, "https://");
		ok = host && *host;
	}
	str_split_free(list);
	return ok;
}

/* What serve and sync would trip on at start that their option parsing lets by: a port out of range,
 * an upstream without its scheme, an access log in a folder that is not there, a data directory
 * that holds no mirror. Each said with the file and line; returns how many. */
static int values_check(const struct config *conf)
{
	int bad = 0;

	for (size_t i = 0; i < conf->n; i++) {
		const struct config_entry *e = &conf->v[i];
		char *why = NULL;
		if (!strcmp(e->key, "listen") && strcmp(e->value, "off") && !port_ok(e->value))
			why = xasprintf("'%s' is not HOST:PORT with a port from 0 to 65535", e->value);
		else if ((strstr(e->key, "upstream") || !strcmp(e->key, "peer-mirrors")) && !urls_ok(e->value))
			why = xasprintf("'%s' is not a URL: write it with its scheme (https://%s)", e->value, e->value);
		else if (!strcmp(e->key, "access-log") && strcmp(e->value, "-")) {
			char *dir = xstrdup(e->value), *slash = strrchr(dir, '/');
			if (slash)
				*(slash == dir ? slash + 1 : slash) = '\0';
			if (access(slash ? dir : ".", W_OK) < 0)
				why = xasprintf("'%s': its folder %s: %s (serve would exit at start)", e->value,
						slash ? dir : ".", strerror(errno));
			free(dir);
		} else if (!strcmp(e->section, "serve") && !strcmp(e->key, "data")) {
			char *cat = xasprintf("%s/catalog.db", e->value);
			if (access(cat, F_OK) < 0)
				why = xasprintf(
					"'%s' holds no mirror: 'hubmirror add' (or 'hubmirror init') makes one there; "
					"serve refuses it",
					e->value);
			free(cat);
		}
		if (why) {
			fprintf(stderr, "hubmirror: %s:%d: [%s] %s: %s\n", conf->path, e->line, e->section, e->key,
				why);
			free(why);
			bad++;
		}
	}
	return bad;
}

/* The file's value of [section] key (NULL when it has none), and its line. */
static const struct config_entry *entry(const struct config *conf, const char *section, const char *key)
{
	for (size_t i = 0; i < conf->n; i++)
		if (!strcmp(conf->v[i].section, section) && !strcmp(conf->v[i].key, key))
			return &conf->v[i];
	return NULL;
}

/* serve's HTTP port and its seed's, as the file leaves them (the environment's or the defaults where
 * it says nothing): one port is refused. Returns 1 when it is, said with the file's line. */
static int ports_check(const struct config *conf)
{
	const struct config_entry *l = entry(conf, "serve", "listen"), *p = entry(conf, "p2p", "listen");
	const char *listen = l ? l->value : cli_listen_default(false);
	const char *p2p = p ? p->value : cli_listen_default(true);

	if (!cli_ports_clash(listen, p2p))
		return 0;
	fprintf(stderr, "hubmirror: %s:%d: [%s] listen: '%s' is the port of %s '%s' too: the seed would take another "
		"without a word (give it its own, or off)\n", conf->path, p ? p->line : l->line, p ? "p2p" : "serve",
		p ? p2p : listen, p ? "[serve] listen" : "[p2p] listen", p ? listen : p2p);
	return 1;
}

/* "hubmirror: FILE:LINE: [store] KEY: " and what the bucket's probe found wrong, in one line. */
static void store_said(const struct config *conf, const struct config_s3 *c, struct store_s3 *s, int err,
		       const char *step)
{
	const char *code = store_s3_errcode(s), *msg = *store_s3_errmsg(s) ? store_s3_errmsg(s) : err_str(err);
	const char *key = "url", *ep = c->endpoint ? c->endpoint : "AWS's endpoint";
	int line = c->url_line;
	char *what;

	if (err == HM_ERR_CURL) {
		if (c->endpoint_line) {
			key = "s3-endpoint";
			line = c->endpoint_line;
		}
		what = xasprintf("%s does not answer (%s)", ep, msg);
	} else if (err == HM_ERR_AUTH) {
		if (c->keys_line) {
			key = "credentials-file";
			line = c->keys_line;
		}
		what = xasprintf("%s refuses the keys from %s: %s (%s)", ep, c->keys_from,
				 !strcmp(code, "InvalidAccessKeyId") ? "it knows no such access key" :
				 "the secret key is not the access key's", code);
	} else if (!strcmp(code, "NoSuchBucket")) {
		what = xasprintf("%s has no bucket '%s' (%s)", ep, c->bucket, code);
	} else if (err == -EACCES) {
		what = xasprintf("the keys from %s may not %s objects in %s (%s)", c->keys_from, step, c->url,
				 *code ? code : "403");
	} else {
		what = xasprintf("the store's probe could not %s an object in %s: %s", step, c->url, msg);
	}
	fprintf(stderr, "hubmirror: %s:%d: [store] %s: %s\n", conf->path, line, key, what);
	free(what);
}

/* [store] url's bucket reached: a probe object of this process's written, read, listed and deleted
 * under its prefix. Returns 0, or 1 after saying in one line what is wrong. */
static int store_check(const struct config *conf, const struct config_s3 *c)
{
	struct store_s3_config sc = { .endpoint = c->endpoint, .bucket = c->bucket, .prefix = c->prefix,
				      .region = c->region, .access_key = c->access_key, .secret_key = c->secret_key,
				      .session_token = c->session_token, .connect_timeout_ms = 5000, .stall_s = 15,
				      .tries = 1 }; /* what is wrong is said at once, not tried again for 30 s */
	struct store_s3 *s = NULL;
	const char *why = NULL, *step = NULL;
	char host[64] = "host", *key;
	int err;

	if (store_s3_new(&sc, &s, &why)) {
		fprintf(stderr, "hubmirror: %s:%d: [store] url: %s\n", conf->path, c->url_line, why);
		return 1;
	}
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, "/")] = '\0';
	key = xasprintf(".hubmirror-probe/%s-%d", host, (int)getpid());
	err = store_s3_probe(s, key, &step);
	if (err)
		store_said(conf, c, s, err, step);
	else
		printf("%s: the store's bucket %s at %s: written, read, listed and deleted\n", conf->path, c->url,
		       c->endpoint ? c->endpoint : "AWS");
	free(key);
	store_s3_free(&s);
	return err ? 1 : 0;
}

/* Every mistake of the file in one run: its lines (unknown sections and keys, repeats), its values as
 * serve's and sync's options take them, what they would trip on at start, one port for two uses;
 * then, when those pass, the files serve reads at start (tokens, certificate). Exit 2 when the file
 * is not one serve and sync would read, 1 when it is but would not work, 0 when all passes. */
static int config_check(const char *path)
{
	struct cli_serve_prep sp;
	struct cli_sync_opts so;
	struct config conf, sconf;
	struct config_s3 s3;
	struct mirror_access *a = NULL;
	struct hub_tls *tls = NULL;
	char *argv[] = { "serve", "--config", (char *)path, NULL }, *err = NULL;
	int r, rs, ry, bad, store;

	if ((r = config_load(path, &conf)) == CLI_FAILED) {
		config_release(&conf);
		return r;
	}
	/* serve's options (and what they mean together), then sync's (and its token files): each says
	 * what the load said no more */
	rs = cli_serve_prepare(3, argv, &sp);
	ry = cli_sync_prepare(0, NULL, path, &so, &sconf);
	config_release(&sconf);
	cli_sync_opts_release(&so);
	store = config_s3(&conf, &s3);
	bad = values_check(&conf) + ports_check(&conf) + (store < 0);
	if (r == CLI_USAGE || rs == CLI_USAGE || ry == CLI_USAGE) {
		r = CLI_USAGE;
	} else if (rs != CLI_OK || ry != CLI_OK || bad) {
		r = CLI_FAILED;
	} else if (sp.cfg.tokens_file &&
		   mirror_access_load(sp.cfg.tokens_file, (enum mirror_access_mode)sp.cfg.auth_mode, &a, &err)) {
		/* the files serve would read at start */
		fprintf(stderr, "hubmirror: %s: tokens: %s\n", path, err ? err : "cannot be read");
		r = CLI_FAILED;
	} else if (sp.cfg.tls_cert && hub_tls_new(sp.cfg.tls_cert, sp.cfg.tls_key, &tls, &err)) {
		fprintf(stderr, "hubmirror: %s: %s\n", path, err ? err : "TLS certificate");
		r = CLI_FAILED;
	} else if (store > 0 && store_check(&conf, &s3)) {
		r = CLI_FAILED; /* (the files serve reads are fine: the bucket is what is not) */
	} else {
		printf("%s: ok (%zu %s)\n", path, sp.conf.n, cli_plural((long long)sp.conf.n, "setting", "settings"));
	}
	if (store > 0)
		config_s3_release(&s3);
	free(err);
	mirror_access_free(&a);
	hub_tls_free(&tls);
	if (rs == CLI_OK)
		cli_serve_prep_release(&sp);
	config_release(&conf);
	return r;
}

static void show_key(void *ud, const char *section, const char *key, const char *option, unsigned which,
		     const char *value)
{
	const char **last = ud;

	if (!*last || strcmp(*last, section))
		printf("%s[%s]\n", *last ? "\n" : "", section);
	*last = section;
	if (value)
		printf("%s = %s\n", key, value);
	else if (!option)
		printf("# %s: not set\n", key);
	else
		printf("# %s: not set (--%s's default)\n", key, option);
	(void)which;
}

int cmd_config(int argc, char **argv)
{
	const struct cli_command *self = cli_find("config");
	const char *path, *last = NULL;
	struct config conf;
	int r;

	cli_help_if_asked(self, argc, argv, NULL); /* no options: FILE is any word */
	if (argc < 2 || argc > 3 || (strcmp(argv[1], "check") && strcmp(argv[1], "show")))
		return cli_usage_error(self, "expected 'check' or 'show', and at most a FILE");
	path = config_path(argc == 3 ? argv[2] : NULL);
	if (!path) {
		fprintf(stderr, "hubmirror: no configuration file: name one, set HUBMIRROR_CONFIG, or write %s\n",
			CONFIG_DEFAULT_PATH);
		return CLI_FAILED;
	}
	if (!strcmp(argv[1], "check"))
		return config_check(path);
	if ((r = config_load(path, &conf)) != CLI_OK)
		return r;
	printf("# %s: the settings it makes (the command line and then it win over the environment)\n", path);
	config_each_key(&conf, show_key, &last);
	config_release(&conf);
	return CLI_OK;
}
