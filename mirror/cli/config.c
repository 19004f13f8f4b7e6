/*
 * config.c - the configuration file (see config.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>

#include "base/xmalloc.h"
#include "config.h"

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
	{ "store", "retention", "retention", CONFIG_SYNC, false },
	{ "store", "quota", "quota", CONFIG_SYNC, false },
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

struct load_ctx {
	struct config *c;
	int line;           /* lines seen: inih gives the handler none, so it is counted by the reader */
	FILE *f;
	char *error;        /* the first bad key */
};

/* inih's reader: fgets that counts lines, so the handler knows where a key stands. */
static char *reader(char *str, int num, void *stream)
{
	struct load_ctx *l = stream;
	char *r = fgets(str, num, l->f);

	if (r)
		l->line++;
	return r;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *l = user;
	struct config *c = l->c;
	char *key = xstrdup(name);

	for (char *p = key; *p; p++)
		if (*p == '_')
			*p = '-';
	if (!find_key(section, key)) {
		if (!l->error) /* inih reports the first bad line: keep its reason */
			l->error = *section ? xasprintf("unknown key '%s' in [%s]", name, section)
					    : xasprintf("'%s' outside a section ([serve], [hub], [sync], [store] or [p2p])", name);
		free(key);
		return 0;
	}
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].section, section) && !strcmp(c->v[i].key, key)) {
			if (!l->error)
				l->error = xasprintf("'%s' in [%s] is set twice (line %d too)", name, section, c->v[i].line);
			free(key);
			return 0;
		}
	c->v = xreallocarray(c->v, c->n + 1, sizeof(*c->v));
	c->v[c->n].section = xstrdup(section);
	c->v[c->n].key = key;
	c->v[c->n].value = xstrdup(value);
	c->v[c->n].line = l->line;
	c->n++;
	return 1;
}

int config_load(const char *path, struct config *out)
{
	struct load_ctx l = { out, 0, NULL, NULL };
	int r;

	memset(out, 0, sizeof(*out));
	if (!path)
		return CLI_OK;
	out->path = xstrdup(path);
	l.f = fopen(path, "r");
	if (!l.f) {
		fprintf(stderr, "hubmirror: cannot read the configuration '%s': %s\n", path, strerror(errno));
		return CLI_FAILED;
	}
	r = ini_parse_stream(reader, &l, handler, &l);
	fclose(l.f);
	if (r) {
		fprintf(stderr, "hubmirror: %s:%d: %s\n", path, r, l.error ? l.error : "not a 'key = value' line or '[section]'");
		free(l.error);
		return CLI_USAGE;
	}
	return CLI_OK;
}

void config_data_dir(void)
{
	const char *path = config_path(NULL);
	struct load_ctx l = { NULL, 0, NULL, NULL };
	struct config c;

	if (!path)
		return;
	memset(&c, 0, sizeof(c));
	l.c = &c;
	l.f = fopen(path, "r");
	if (!l.f)
		return;
	if (!ini_parse_stream(reader, &l, handler, &l))
		for (size_t i = 0; i < c.n; i++)
			if (!strcmp(c.v[i].section, "serve") && !strcmp(c.v[i].key, "data") && *c.v[i].value)
				setenv("HUBMIRROR_DATA", c.v[i].value, 1);
	fclose(l.f);
	free(l.error);
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
	for (size_t i = 0; i < c->n; i++) {
		const struct config_entry *e = &c->v[i];
		const struct config_key *k = find_key(e->section, e->key);
		char *opt, *where, *argv[4];
		bool on = true;
		int r;

		if (!k || !(k->which & which))
			continue;
		where = xasprintf("%s:%d: ", c->path, e->line);
		if (k->boolean && parse_bool(e->value, &on)) {
			r = cli_usage_error(NULL, "%s%s in [%s] takes true or false, not '%s'", where, e->key, e->section,
					    e->value);
			free(where);
			return r;
		}
		if (!on) {
			free(where);
			continue;
		}
		opt = xasprintf("--%s", k->option);
		argv[0] = (char *)cmd->name;
		argv[1] = opt;
		argv[2] = k->boolean ? NULL : e->value;
		argv[3] = NULL;
		optind = 0;
		/* no command: its usage would only confuse, the file and line say where */
		r = cli_parse_flags_in(NULL, where, k->boolean ? 2 : 3, argv, flags);
		if (r != CLI_OK)
			fprintf(stderr, "hubmirror: %s:%d: that is '%s' in [%s] (= %s)\n", c->path, e->line, e->key,
				e->section, e->value);
		free(opt);
		free(where);
		if (r != CLI_OK)
			return r;
	}
	optind = 0;
	return CLI_OK;
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
