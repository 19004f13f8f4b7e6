/*
 * cmd-githook.c - `hubmirror git-hook`: git's pre-receive hook during a push into a local repository
 * (mirror/gitpush.h; docs/uploads.md). serve runs git's receive-pack with this as its hook and tells
 * it, in the environment, the data directory, the repository, the pusher, the namespace's quota and
 * its tokens file with its --auth (HUBMIRROR_TOKENS, HUBMIRROR_AUTH: which Git LFS objects a repo may
 * name without their upload is the access layer's rule, mirror_access_may_name); git gives the ref updates on the
 * standard input and its quarantine in GIT_OBJECT_DIRECTORY and company. What it writes on the standard error the
 * pusher reads ("remote: ..."); exit 1 refuses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "mirror/data.h"
#include "mirror/gitpush.h"
#include "mirror/serve/access.h"

static const char *env_or_empty(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "";
}

/* The quarantine's variables, as git set them for its hook, for the git runs that read the push. */
static char **quarantine_env(void)
{
	static const char *const names[] = { "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
					     "GIT_QUARANTINE_PATH" };
	char **env = xcalloc(4, sizeof(*env));
	size_t n = 0;

	for (size_t i = 0; i < 3; i++)
		if (getenv(names[i]))
			env[n++] = xasprintf("%s=%s", names[i], getenv(names[i]));
	return env;
}

static bool may_name(void *ud, struct catalog *c, const char *sha256, int64_t repo_id)
{
	return mirror_access_may_name(ud, c, sha256, repo_id);
}

/* serve's tokens file, read again (*a NULL without one). It is the file serve reads on SIGHUP: one the
 * operator edited since gives its new rules here first. */
static int load_tokens(struct mirror_access **a)
{
	const char *path = getenv("HUBMIRROR_TOKENS"), *mode = env_or_empty("HUBMIRROR_AUTH");
	char *err = NULL;
	int r;

	*a = NULL;
	if (!path || !*path)
		return 0;
	r = mirror_access_load(path, !strcmp(mode, "all") ? ACCESS_ALL : !strcmp(mode, "open") ? ACCESS_OPEN
											  : ACCESS_LISTED, a, &err);
	if (r)
		fprintf(stderr, "hubmirror: push refused: the mirror's tokens file: %s\n", err ? err : err_str(r));
	free(err);
	return r;
}

static int hook_run(struct mirror_data *d, const char *updates)
{
	struct catalog_repo repo = { 0 };
	char **env = quarantine_env(), *report = NULL, *err = NULL, *gitdir = realpath(env_or_empty("GIT_DIR"), NULL);
	struct mirror_access *access = NULL;
	int tokens = load_tokens(&access);
	struct mirror_git_push p = { .gitdir = gitdir, .git_env = (const char *const *)env, .updates = updates,
				     .who = env_or_empty("HUBMIRROR_WHO"),
				     .quota = strtoll(env_or_empty("HUBMIRROR_QUOTA"), NULL, 10), .may_name = may_name,
				     .may_name_ud = access };
	int r = CLI_FAILED;

	if (!*env_or_empty("HUBMIRROR_QUOTA"))
		p.quota = -1;
	if (!gitdir) {
		fprintf(stderr, "hubmirror: git-hook: run by git only (GIT_DIR is not set)\n");
	} else if (tokens) {
		/* said */
	} else if (catalog_repo_get(d->catalog, "hf", env_or_empty("HUBMIRROR_TYPE"), env_or_empty("HUBMIRROR_REPO"),
				    &repo) || !repo.local) {
		fprintf(stderr, "hubmirror: no local repository %s here\n", env_or_empty("HUBMIRROR_REPO"));
	} else if (mirror_git_receive(d, &repo, &p, &report, &err)) {
		fprintf(stderr, "hubmirror: push refused: %s\n", err ? err : "?");
	} else {
		FILE *f = fopen(env_or_empty("HUBMIRROR_REPORT"), "w");
		if (f) {
			fputs(report, f);
			fclose(f);
		}
		r = CLI_OK;
	}
	catalog_repo_release(&repo);
	mirror_access_free(&access);
	for (size_t i = 0; env[i]; i++)
		free(env[i]);
	free(env);
	free(gitdir);
	free(report);
	free(err);
	return r;
}

int cmd_git_hook(int argc, char **argv)
{
	struct mirror_data *d = NULL;
	struct buf in = { 0 };
	char chunk[4096];
	size_t n;
	int r;

	const struct cli_flag flags[] = { CLI_END };

	if (cli_parse_flags_only(cli_find("git-hook"), argc, argv, flags))
		return CLI_USAGE;
	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0 && in.len < (1u << 20))
		buf_add(&in, chunk, n);
	buf_add(&in, "", 1);
	if (cli_open_data(env_or_empty("HUBMIRROR_DATA"), &d)) {
		buf_release(&in);
		return CLI_FAILED;
	}
	r = hook_run(d, in.data);
	mirror_data_free(&d);
	buf_release(&in);
	return r;
}
