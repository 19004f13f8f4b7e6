/*
 * cmd-config.c - `hubmirror config check|show [FILE]`: the configuration file checked as serve and
 * sync would read it, and the settings it makes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "cli.h"
#include "config.h"
#include "hub/tls.h"
#include "mirror/serve/access.h"
#include "prepare.h"

static int config_check(const char *path)
{
	struct serve_prep sp;
	struct sync_opts so;
	struct config conf;
	struct mirror_access *a = NULL;
	struct hub_tls *tls = NULL;
	char *argv[] = { "serve", "--config", (char *)path, NULL }, *err = NULL;
	int r;

	/* serve's options (and what they mean together), then sync's (and its token files) */
	if ((r = cli_serve_prepare(3, argv, &sp)) != CLI_OK)
		return r;
	r = cli_sync_prepare(0, NULL, path, &so, &conf);
	config_release(&conf);
	cli_sync_opts_release(&so);
	if (r != CLI_OK)
		goto out;
	/* the files serve would read at start */
	if (sp.cfg.tokens_file &&
	    mirror_access_load(sp.cfg.tokens_file, (enum mirror_access_mode)sp.cfg.auth_mode, &a, &err)) {
		fprintf(stderr, "hubmirror: %s: tokens: %s\n", path, err ? err : "cannot be read");
		r = CLI_FAILED;
		goto out;
	}
	if (sp.cfg.tls_cert && hub_tls_new(sp.cfg.tls_cert, sp.cfg.tls_key, &tls, &err)) {
		fprintf(stderr, "hubmirror: %s: %s\n", path, err ? err : "TLS certificate");
		r = CLI_FAILED;
		goto out;
	}
	printf("%s: ok (%zu settings)\n", path, sp.conf.n);
out:
	free(err);
	mirror_access_free(&a);
	hub_tls_free(&tls);
	config_release(&sp.conf);
	free(sp.admin_token);
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
