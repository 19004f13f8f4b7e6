/*
 * config.c - the configuration file (see config.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>

#include "base/str.h"
#include "base/xmalloc.h"
#include "config.h"
#include "store/bucket.h"
#include "store/s3.h"

/* "--NAME VALUE" or "--NAME=VALUE" in argv (before a "--"): VALUE, borrowed; NULL when absent. */
const char *config_option(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			break;
		if (strncmp(a, "--", 2) || strncmp(a + 2, name, n))
			continue;
		if (a[2 + n] == '=')
			return a + 3 + n;
		if (!a[2 + n] && i + 1 < argc)
			return argv[i + 1];
	}
	return NULL;
}

struct config_key {
	const char *section;
	const char *key;
	const char *option;   /* the command-line option it stands for */
	unsigned which;       /* CONFIG_SERVE | CONFIG_SYNC */
	bool boolean;         /* an option without a value: true/false in the file */
};

static const struct config_key keys[] = {
	{ "serve", "data", "data", CONFIG_SERVE | CONFIG_SYNC, false },
	{ "serve", "listen", "listen", CONFIG_SERVE, false },
	{ "serve", "tls-cert", "tls-cert", CONFIG_SERVE, false },
	{ "serve", "tls-key", "tls-key", CONFIG_SERVE, false },
	{ "serve", "tokens", "tokens", CONFIG_SERVE, false },
	{ "serve", "auth", "auth", CONFIG_SERVE, false },
	{ "serve", "access-log", "access-log", CONFIG_SERVE, false },
	{ "serve", "trusted-proxy", "trusted-proxy", CONFIG_SERVE, false },
	{ "serve", "max-connections", "max-connections", CONFIG_SERVE, false },
	{ "serve", "search-budget", "search-budget", CONFIG_SERVE, false },
	{ "serve", "header-timeout", "header-timeout", CONFIG_SERVE, false },
	{ "serve", "idle-timeout", "idle-timeout", CONFIG_SERVE, false },
	{ "serve", "write-timeout", "write-timeout", CONFIG_SERVE, false },
	{ "serve", "shutdown-grace", "shutdown-grace", CONFIG_SERVE, false },
	{ "serve", "admin-token-file", "admin-token-file", CONFIG_SERVE, false },
	{ "serve", "on-demand", "on-demand", CONFIG_SERVE, false },
	{ "serve", "peer-mirrors", "peer-mirror", CONFIG_SERVE, false },
	{ "serve", "on-demand-ttl", "on-demand-ttl", CONFIG_SERVE, false },
	{ "serve", "on-demand-max-repos", "on-demand-max-repos", CONFIG_SERVE, false },
	{ "serve", "xet-backfill", "xet-backfill", CONFIG_SERVE, false },
	{ "hub", "local", "local", CONFIG_SERVE, false },
	{ "hub", "quota", "local-quota", CONFIG_SERVE, false },
	{ "hub", "write-body-max", "write-body-max", CONFIG_SERVE, false },
	{ "hub", "write-spool-max", "write-spool-max", CONFIG_SERVE, false },
	{ "s3", "keys", "s3-keys", CONFIG_SERVE, false },
	{ "s3", "domain", "s3-domain", CONFIG_SERVE, false },
	{ "sync", "at", "sync-at", CONFIG_SERVE, false },
	{ "sync", "every", "sync-every", CONFIG_SERVE, false },
	{ "sync", "hf-upstream", "hf-upstream", CONFIG_SERVE | CONFIG_SYNC, false },
	{ "sync", "ms-upstream", "ms-upstream", CONFIG_SERVE | CONFIG_SYNC, false },
	{ "sync", "hf-token-file", "hf-token-file", CONFIG_SERVE | CONFIG_SYNC, false },
	{ "sync", "ms-token-file", "ms-token-file", CONFIG_SERVE | CONFIG_SYNC, false },
	{ "sync", "jobs", "jobs", CONFIG_SYNC, false },
	{ "sync", "max-tries", "max-tries", CONFIG_SYNC, false },
	{ "sync", "retry-delay", "retry-delay", CONFIG_SYNC, false },
	{ "sync", "xet", "xet", CONFIG_SYNC, false },
	{ "store", "retention", "retention", CONFIG_SYNC, false },
	{ "store", "quota", "quota", CONFIG_SYNC, false },
	{ "store", "url", NULL, CONFIG_STORE, false },
	{ "store", "s3-endpoint", NULL, CONFIG_STORE, false },
	{ "store", "region", NULL, CONFIG_STORE, false },
	{ "store", "credentials-file", NULL, CONFIG_STORE, false },
	{ "store", "cache-size", NULL, CONFIG_STORE, false },
	{ "p2p", "listen", "p2p-listen", CONFIG_SERVE, false },
	{ "p2p", "upload-limit", "p2p-upload-limit", CONFIG_SERVE, false },
	{ "p2p", "rescan", "p2p-rescan", CONFIG_SERVE, false },
	{ "p2p", "super-seed", "p2p-super-seed", CONFIG_SERVE, true },
};

static const struct config_key *find_key(const char *section, const char *key)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].section, section) && !strcmp(keys[i].key, key))
			return &keys[i];
	return NULL;
}

const char *config_path(const char *opt)
{
	const char *e = getenv("HUBMIRROR_CONFIG");

	if (opt)
		return opt;
	if (e && *e)
		return e;
	return access(CONFIG_DEFAULT_PATH, F_OK) == 0 ? CONFIG_DEFAULT_PATH : NULL;
}

/* Every line said about a file once, though serve's and sync's checks both read it (config check). */
static char **said;
static size_t nsaid;

/* "hubmirror: FILE:LINE: [SECTION] KEY: WHAT", once per process (the others find it said). */
static void say(const char *path, int line, const char *section, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void say(const char *path, int line, const char *section, const char *key, const char *fmt, ...)
{
	va_list ap;
	char *what, *text;

	va_start(ap, fmt);
	what = xvasprintf(fmt, ap);
	va_end(ap);
	if (line <= 0) /* (a setting from the command line: --store) */
		text = xasprintf("--store: [%s] %s: %s", section ? section : "", key ? key : "", what);
	else if (section && key)
		text = xasprintf("%s:%d: [%s] %s: %s", path, line, section, key, what);
	else if (section || key)
		text = xasprintf(section ? "%s:%d: [%s]: %s" : "%s:%d: %s: %s", path, line, section ? section : key,
				 what);
	else
		text = xasprintf("%s:%d: %s", path, line, what);
	free(what);
	for (size_t i = 0; i < nsaid; i++)
		if (!strcmp(said[i], text)) {
			free(text);
			return;
		}
	fprintf(stderr, "hubmirror: %s\n", text);
	said = xreallocarray(said, nsaid + 1, sizeof(*said));
	said[nsaid++] = text; /* kept: the process is a command, short-lived */
}

/* The nearest of the known names (sections when section is NULL, else that section's keys) to name,
 * when it is close enough to be a slip; NULL else. */
static const char *nearest(const char *section, const char *name)
{
	const char *best = NULL;
	size_t bd = 99, len = strlen(name);

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *cand = section ? keys[i].key : keys[i].section;
		size_t d;
		if (section && strcmp(keys[i].section, section))
			continue;
		d = str_distance(name, cand);
		if (d < bd) {
			bd = d;
			best = cand;
		}
	}
	return bd <= (len >= 4 ? 2 : 1) ? best : NULL;
}

/* The section a key belongs in, when it is in another one than written; NULL else. */
static const char *home_of(const char *key)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].key, key))
			return keys[i].section;
	return NULL;
}

static bool section_known(const char *section)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].section, section))
			return true;
	return false;
}

struct load_ctx {
	struct config *c;
	const char *path;
	int line;           /* lines seen: inih gives the handler none, so it is counted by the reader */
	FILE *f;
	bool quiet;         /* config_data_dir: the commands that read the file say what is wrong */
	bool key_before;    /* the last line read set a key: an indented line continues its value */
	int bad;            /* mistakes said */
	int bad_line;       /* the last line a mistake was said of */
	int section_line;   /* where the section read last opens */
	char *bad_section;  /* the unknown section said last: its keys are not said again */
};

static void mistake(struct load_ctx *l, const char *section, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void mistake(struct load_ctx *l, const char *section, const char *key, const char *fmt, ...)
{
	va_list ap;
	char *what;

	l->bad++;
	l->bad_line = l->line;
	if (l->quiet)
		return;
	va_start(ap, fmt);
	what = xvasprintf(fmt, ap);
	va_end(ap);
	say(l->path, l->line, section, key, "%s", what);
	free(what);
}

/* inih's reader: fgets that counts lines, so the handler knows where a key stands, and says every
 * line that is neither a section, a key, a comment nor blank (inih itself reports only the first). */
static char *reader(char *str, int num, void *stream)
{
	struct load_ctx *l = stream;
	char *r = fgets(str, num, l->f);
	const char *t = r;

	if (!r)
		return r;
	l->line++;
	while (*t == ' ' || *t == '\t')
		t++;
	if (!*t || *t == '\n' || *t == '\r' || *t == ';' || *t == '#') {
		l->key_before = l->key_before && t != r; /* a blank line ends a value; a comment does not */
		return r;
	}
	if (t != r && l->key_before)
		return r; /* the value above, continued */
	if (*t == '[') {
		l->section_line = l->line;
		if (!strchr(t, ']'))
			mistake(l, NULL, NULL, "a section is written [NAME], not %.*s", (int)strcspn(t, "\r\n"), t);
		l->key_before = false;
	} else if (!strpbrk(t, "=:")) {
		mistake(l, NULL, NULL, "not a 'key = value' line or a '[section]': %.*s", (int)strcspn(t, "\r\n"), t);
		l->key_before = false;
	} else {
		l->key_before = true;
	}
	return r;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *l = user;
	struct config *c = l->c;
	char *key = xstrdup(name);
	const char *near, *home;

	for (char *p = key; *p; p++)
		if (*p == '_')
			*p = '-';
	home = home_of(key);
	if (!*section) {
		mistake(l, NULL, key, "outside a section ([serve], [hub], [s3], [sync], [store] or [p2p])%s%s%s",
			home ? ": it belongs in [" : "", home ? home : "", home ? "]" : "");
	} else if (!section_known(section)) {
		if (!l->bad_section || strcmp(l->bad_section, section)) {
			int at = l->line;
			near = nearest(NULL, section);
			l->line = l->section_line; /* said of the section's line, not its first key's */
			mistake(l, section, NULL,
				"unknown section (%s%s%sthe sections are serve, hub, s3, sync, store, p2p)",
				near ? "did you mean [" : "", near ? near : "", near ? "]? " : "");
			l->line = at;
			free(l->bad_section);
			l->bad_section = xstrdup(section);
		}
	} else if (!find_key(section, key)) {
		near = nearest(section, key);
		if (near)
			mistake(l, section, key, "unknown key (did you mean %s?)", near);
		else if (home)
			mistake(l, section, key, "unknown key in [%s]: it belongs in [%s]", section, home);
		else
			mistake(l, section, key, "unknown key (see 'hubmirror config show' for the keys)");
	} else {
		for (size_t i = 0; i < c->n; i++)
			if (!strcmp(c->v[i].section, section) && !strcmp(c->v[i].key, key)) {
				mistake(l, section, key, "set twice (line %d too)", c->v[i].line);
				free(key);
				return 1;
			}
		c->v = xreallocarray(c->v, c->n + 1, sizeof(*c->v));
		c->v[c->n].section = xstrdup(section);
		c->v[c->n].key = key;
		c->v[c->n].value = xstrdup(value);
		c->v[c->n].line = l->line;
		c->n++;
		return 1;
	}
	free(key);
	return 1; /* said: read on, so that every mistake of the file is said in one run */
}

/* Read path into c; every mistake said (unless quiet). Returns how many there were, -errno when the
 * file cannot be read. */
static int load(const char *path, struct config *c, bool quiet)
{
	struct load_ctx l = { .c = c, .path = path, .quiet = quiet };
	int r;

	l.f = fopen(path, "r");
	if (!l.f)
		return -errno;
	r = ini_parse_stream(reader, &l, handler, &l);
	fclose(l.f);
	if (r > 0 && l.bad_line != r && !l.bad) { /* (not expected: the reader says what inih refuses) */
		l.line = r;
		mistake(&l, NULL, NULL, "not a 'key = value' line or a '[section]'");
	}
	free(l.bad_section);
	return l.bad;
}

int config_load(const char *path, struct config *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	if (!path)
		return CLI_OK;
	out->path = xstrdup(path);
	r = load(path, out, false);
	if (r < 0) {
		fprintf(stderr, "hubmirror: cannot read the configuration '%s': %s\n", path, strerror(-r));
		return CLI_FAILED;
	}
	return r ? CLI_USAGE : CLI_OK;
}

void config_data_dir(void)
{
	const char *path = config_path(NULL);
	struct config c;

	if (!path)
		return;
	memset(&c, 0, sizeof(c));
	if (load(path, &c, true) == 0)
		for (size_t i = 0; i < c.n; i++)
			if (!strcmp(c.v[i].section, "serve") && !strcmp(c.v[i].key, "data") && *c.v[i].value)
				setenv("HUBMIRROR_DATA", c.v[i].value, 1);
	config_release(&c);
}

void config_release(struct config *c)
{
	for (size_t i = 0; c && i < c->n; i++) {
		free(c->v[i].section);
		free(c->v[i].key);
		free(c->v[i].value);
	}
	if (c) {
		free(c->v);
		free(c->path);
		memset(c, 0, sizeof(*c));
	}
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcmp(v, "1"))
		*out = true;
	else if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcmp(v, "0"))
		*out = false;
	else
		return -1;
	return 0;
}

int config_apply(const struct config *c, const struct cli_command *cmd, unsigned which,
		 const struct cli_flag *flags)
{
	int bad = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct config_entry *e = &c->v[i];
		const struct config_key *k = find_key(e->section, e->key);
		char *opt, *msg = NULL, *argv[4];
		const char *what;
		bool on = true;
		int r;

		if (!k || !(k->which & which))
			continue;
		if (k->boolean && parse_bool(e->value, &on)) {
			say(c->path, e->line, e->section, e->key, "takes true or false, not '%s'", e->value);
			bad++;
			continue;
		}
		if (!on)
			continue;
		opt = xasprintf("--%s", k->option);
		argv[0] = (char *)cmd->name;
		argv[1] = opt;
		argv[2] = k->boolean ? NULL : e->value;
		argv[3] = NULL;
		optind = 0;
		/* the option's own words, said as the file's line: "[sync] jobs: takes 1 to 256" */
		cli_usage_capture(&msg);
		r = cli_parse_flags_in(NULL, "", k->boolean ? 2 : 3, argv, flags);
		cli_usage_capture(NULL);
		if (r != CLI_OK) {
			what = msg ? msg : "not a value it takes";
			if (!strncmp(what, opt, strlen(opt)) && what[strlen(opt)] == ' ')
				what += strlen(opt) + 1;
			say(c->path, e->line, e->section, e->key, "%s", what);
			bad++;
		}
		free(msg);
		free(opt);
	}
	optind = 0;
	return bad ? CLI_USAGE : CLI_OK;
}

void config_each_key(const struct config *c,
		     void (*fn)(void *ud, const char *section, const char *key, const char *option, unsigned which,
				const char *value),
		     void *ud)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *value = NULL;
		for (size_t k = 0; c && k < c->n; k++)
			if (!strcmp(c->v[k].section, keys[i].section) && !strcmp(c->v[k].key, keys[i].key))
				value = c->v[k].value;
		fn(ud, keys[i].section, keys[i].key, keys[i].option, keys[i].which, value);
	}
}

/* The store's settings one entry at a time (NULL when the file does not set it). */
static const struct config_entry *store_entry(const struct config *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].section, "store") && !strcmp(c->v[i].key, key))
			return &c->v[i];
	return NULL;
}

struct creds_ctx {
	const char *profile;
	struct config_s3 *out;
	bool seen;                  /* the profile's section is in the file */
};

static int creds_handler(void *user, const char *section, const char *name, const char *value)
{
	struct creds_ctx *k = user;
	char **to = NULL;

	if (strcmp(section, k->profile))
		return 1;
	k->seen = true;
	if (!strcmp(name, "aws_access_key_id"))
		to = &k->out->access_key;
	else if (!strcmp(name, "aws_secret_access_key"))
		to = &k->out->secret_key;
	else if (!strcmp(name, "aws_session_token"))
		to = &k->out->session_token;
	if (to) {
		free(*to);
		*to = xstrdup(value);
	}
	return 1; /* other keys (region, output...) are the AWS CLI's: not ours to refuse */
}

/* The keys from the credentials file e names; returns the mistakes said. */
static int s3_keys_file(const struct config *c, const struct config_entry *e, struct config_s3 *out)
{
	const char *env = getenv("AWS_PROFILE");
	struct creds_ctx k = { .profile = env && *env ? env : "default", .out = out };
	FILE *f = fopen(e->value, "r");
	int r;

	if (!f) {
		say(c->path, e->line, "store", "credentials-file", "'%s': %s", e->value, strerror(errno));
		return 1;
	}
	r = ini_parse_file(f, creds_handler, &k);
	fclose(f);
	if (r) {
		say(c->path, e->line, "store", "credentials-file", "'%s': line %d is not 'key = value' nor '[profile]'",
		    e->value, r);
		return 1;
	}
	if (!k.seen || !out->access_key || !out->secret_key || !*out->access_key || !*out->secret_key) {
		say(c->path, e->line, "store", "credentials-file", "'%s': %s[%s] with aws_access_key_id and "
		    "aws_secret_access_key", e->value, k.seen ? "its profile lacks a key: write " : "no profile ",
		    k.profile);
		return 1;
	}
	out->keys_from = xstrdup(e->value);
	out->keys_line = e->line;
	return 0;
}

/* The keys from the environment; returns the mistakes said. */
static int s3_keys_env(const struct config *c, const struct config_entry *url, struct config_s3 *out)
{
	const char *a = getenv("AWS_ACCESS_KEY_ID"), *s = getenv("AWS_SECRET_ACCESS_KEY");
	const char *t = getenv("AWS_SESSION_TOKEN");

	if (!a || !*a || !s || !*s) {
		say(c->path, url->line, "store", "url", "no keys to the bucket: set AWS_ACCESS_KEY_ID and "
		    "AWS_SECRET_ACCESS_KEY, or name a file of them in [store] credentials-file");
		return 1;
	}
	out->access_key = xstrdup(a);
	out->secret_key = xstrdup(s);
	out->session_token = t && *t ? xstrdup(t) : NULL;
	out->keys_from = xstrdup("the environment (AWS_ACCESS_KEY_ID)");
	return 0;
}

int config_s3(const struct config *c, struct config_s3 *out)
{
	const struct config_entry *url = store_entry(c, "url"), *ep = store_entry(c, "s3-endpoint");
	const struct config_entry *region = store_entry(c, "region"), *creds = store_entry(c, "credentials-file");
	const char *why = NULL;
	int bad = 0;

	memset(out, 0, sizeof(*out));
	if (!url) {
		const struct config_entry *stray = ep ? ep : region ? region : creds;
		if (stray)
			say(c->path, stray->line, "store", stray->key,
			    "says where a bucket is, and [store] url names none");
		return stray ? -1 : 0;
	}
	out->url = xstrdup(url->value);
	out->url_line = url->line;
	if (store_s3_url_parse(url->value, &out->bucket, &out->prefix, &why)) {
		say(c->path, url->line, "store", "url", "'%s': %s", url->value, why);
		bad++;
	}
	if (ep && strncmp(ep->value, "http://", 7) && strncmp(ep->value, "https://", 8)) {
		say(c->path, ep->line, "store", "s3-endpoint", "'%s' is not a URL: write it with its scheme "
		    "(https://%s)", ep->value, ep->value);
		bad++;
	} else if (ep) {
		out->endpoint = xstrdup(ep->value);
		out->endpoint_line = ep->line;
	}
	out->region = region ? xstrdup(region->value) : NULL;
	bad += creds ? s3_keys_file(c, creds, out) : s3_keys_env(c, url, out);
	if (bad) {
		config_s3_release(out);
		return -1;
	}
	return 1;
}

/* [store] cache-size, in bytes (0: not set); -1 after saying what is wrong. */
static int64_t store_cache_size(const struct config *c)
{
	const struct config_entry *e = store_entry(c, "cache-size");
	int64_t n = 0;

	if (e && (cli_parse_size(e->value, &n) || n <= 0)) {
		say(c->path, e->line, "store", "cache-size", "'%s' is not a size (bytes, or with K, M, G, T)",
		    e->value);
		return -1;
	}
	return n;
}

/* --store URL (or HUBMIRROR_STORE, which it sets for the commands this one starts: serve's sync) in c
 * as if the file said [store] url = URL, in place of what it says. */
static void store_override(struct config *c, const char *url)
{
	setenv("HUBMIRROR_STORE", url, 1);
	if (!c->path)
		c->path = xstrdup("--store");
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].section, "store") && !strcmp(c->v[i].key, "url")) {
			free(c->v[i].value);
			c->v[i].value = xstrdup(url);
			c->v[i].line = 0;
			return;
		}
	c->v = xreallocarray(c->v, c->n + 1, sizeof(*c->v));
	c->v[c->n++] = (struct config_entry){ xstrdup("store"), xstrdup("url"), xstrdup(url), 0 };
}

int config_store(int argc, char **argv)
{
	const char *path = config_path(config_option(argc, argv, "config"));
	const char *url = config_option(argc, argv, "store"), *env = getenv("HUBMIRROR_STORE");
	struct config c;
	struct config_s3 s3;
	int64_t cache;
	int r = CLI_OK, k;

	if (!url && env && *env)
		url = env;
	if (!path && !url)
		return CLI_OK;
	memset(&c, 0, sizeof(c));
	if (path && load(path, &c, true) != 0) {
		config_release(&c);
		return CLI_OK; /* (the command that reads the file says what is wrong with it) */
	}
	if (url)
		store_override(&c, url);
	k = config_s3(&c, &s3);
	cache = store_cache_size(&c);
	if (k < 0 || cache < 0) {
		r = CLI_FAILED;
	} else if (k == 1) {
		struct store_s3_config sc = { .endpoint = s3.endpoint, .bucket = s3.bucket, .prefix = s3.prefix,
					      .region = s3.region, .access_key = s3.access_key,
					      .secret_key = s3.secret_key, .session_token = s3.session_token };
		store_bucket_configure(&sc, cache);
	}
	if (k == 1)
		config_s3_release(&s3);
	config_release(&c);
	return r;
}

static void wipe(char **p)
{
	if (*p)
		memset(*p, 0, strlen(*p));
	free(*p);
	*p = NULL;
}

void config_s3_release(struct config_s3 *s)
{
	free(s->url);
	free(s->bucket);
	free(s->prefix);
	free(s->endpoint);
	free(s->region);
	free(s->keys_from);
	wipe(&s->access_key);
	wipe(&s->secret_key);
	wipe(&s->session_token);
	memset(s, 0, sizeof(*s));
}
