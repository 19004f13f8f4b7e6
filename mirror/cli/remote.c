/*
 * remote.c - what ls, search and info share: talking to a mirror's catalog API (--mirror URL or
 * $HUBMIRROR_URL) and printing repositories as a table sized to the terminal.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "cli.h"
#include "hub/http/http.h"
#include "hub/upstream.h"
#include "mirror/data.h"

const char *cli_mirror_url(const char *opt)
{
	const char *e = getenv("HUBMIRROR_URL");

	if (opt && *opt)
		return opt;
	return e && *e ? e : NULL;
}

const char *cli_mirror_token(void)
{
	const char *t = getenv("HUBMIRROR_TOKEN");

	return t && *t && hub_token_valid(t) ? t : NULL;
}

json_t *cli_mirror_get(const char *mirror, const char *path_and_query)
{
	size_t n = strlen(mirror), len = 0;
	char *url, *body = NULL, *err = NULL;
	long status = 0;
	json_t *j = NULL;
	int r;

	while (n && mirror[n - 1] == '/')
		n--;
	url = xasprintf("%.*s%s", (int)n, mirror, path_and_query);
	r = hub_http_get_blocking(url, cli_mirror_token(), 256u << 20, &body, &len, &status, &err);
	if (r) {
		fprintf(stderr, "hubmirror: cannot reach the mirror at %.*s: %s\n", (int)n, mirror,
			err ? err : err_str(r));
	} else {
		j = json_loadb(body, len, 0, NULL);
		if (status != 200) {
			const char *m = json_string_value(json_object_get(j, "error"));
			fprintf(stderr, "hubmirror: %s: %ld %s\n", url, status, m ? m : "");
			json_decref(j);
			j = NULL;
		} else if (!j) {
			fprintf(stderr, "hubmirror: %s did not answer JSON (is it a hubmirror?)\n", url);
		}
	}
	free(url);
	free(body);
	free(err);
	return j;
}

json_t *cli_mirror_call(const char *mirror, const char *method, const char *path, json_t *body, const char *tok,
			long *status)
{
	size_t n = strlen(mirror), len = 0;
	char *url, *text = body ? json_dumps(body, JSON_COMPACT) : NULL, *got = NULL, *err = NULL;
	json_t *j = NULL;
	int r;

	*status = 0;
	while (n && mirror[n - 1] == '/')
		n--;
	url = xasprintf("%.*s%s", (int)n, mirror, path);
	{
		struct hub_http_call c = { .url = url, .token = tok, .body = text, .method = method, .max = 16u << 20 };
		r = hub_http_call_blocking(&c, &got, &len, status, &err);
	}
	if (r)
		fprintf(stderr, "hubmirror: cannot reach the mirror at %.*s: %s\n", (int)n, mirror,
			err ? err : err_str(r));
	else if (!(j = json_loadb(got, len, 0, NULL)))
		fprintf(stderr, "hubmirror: %s did not answer JSON (is it a hubmirror%s?)\n", url,
			strstr(path, "/api/admin/") ? " with the admin API on" : "");
	else if (*status >= 300)
		fprintf(stderr, "hubmirror: %s %s: %ld %s\n", method, url, *status,
			json_string_value(json_object_get(j, "error")) ? json_string_value(json_object_get(j, "error"))
								       : "");
	free(url);
	free(text);
	free(got);
	free(err);
	return j;
}

/* The admin token read for a serve on this machine (cli_local_serve); the environment's wins. */
static char *local_admin_token;

static void free_local_token(void)
{
	free(local_admin_token);
	local_admin_token = NULL;
}

char *cli_local_serve(const char *dir)
{
	const char *env = getenv("HUBMIRROR_ADMIN_TOKEN");
	char *path, *url = NULL;
	json_t *o;
	const char *tf;
	long pid;

	if (getenv("HUBMIRROR_NO_SERVE_ROUTE"))
		return NULL;
	if (!dir)
		dir = mirror_data_default_dir();
	path = mirror_data_path_in(dir, MIRROR_DATA_SERVE_ADMIN);
	o = json_load_file(path, 0, NULL);
	free(path);
	tf = json_string_value(json_object_get(o, "token_file"));
	pid = (long)json_integer_value(json_object_get(o, "pid"));
	/* a file a serve left behind when it died says nothing: the serve must hold the directory now */
	if (!json_is_string(json_object_get(o, "url")) || !tf || pid <= 0 || kill((pid_t)pid, 0) < 0 ||
	    !mirror_data_serve_running(dir))
		goto out;
	if (!(env && *env) && !local_admin_token) {
		/* quietly: an account that cannot read the token works on the directory itself */
		if (access(tf, R_OK) < 0)
			goto out;
		if (cli_read_token_file(tf, "admin token file", &local_admin_token))
			goto out;
		atexit(free_local_token);
	}
	url = xstrdup(json_string_value(json_object_get(o, "url")));
out:
	json_decref(o);
	return url;
}

json_t *cli_admin_call(const char *mirror, const char *method, const char *path, json_t *body, long *status)
{
	const char *tok = getenv("HUBMIRROR_ADMIN_TOKEN");

	if ((!tok || !*tok) && local_admin_token)
		tok = local_admin_token;

	*status = 0;
	if (!tok || !*tok || !hub_token_valid(tok)) {
		fprintf(stderr, "hubmirror: set HUBMIRROR_ADMIN_TOKEN to the mirror's admin token "
			"(HUBMIRROR_ADMIN_TOKEN=$(cat admin.token))\n");
		return NULL;
	}
	return cli_mirror_call(mirror, method, path, body, tok, status);
}

static int max_int(int a, int b)
{
	return a > b ? a : b;
}

/* The table of `ls` and `search`. The SPEC column is never cut (it is what a user copies); to fit
 * the terminal (or $COLUMNS), the sync time turns relative ("3h ago") and then the revision is cut. */
void cli_print_repo_table(json_t *repos)
{
	int width = cli_term_width();
	int wspec = 4, wrev = 8, wstat = 6, wfiles = 5, wsize = 4, wwhen = 15, wage = 6, need;
	bool relative = false;
	size_t i;
	json_t *r;

	json_array_foreach(repos, i, r) {
		char buf[32];
		wspec = max_int(wspec, (int)strlen(json_string_value(json_object_get(r, "spec"))));
		wrev = max_int(wrev, (int)strlen(json_string_value(json_object_get(r, "revision"))));
		wstat = max_int(wstat, (int)strlen(json_string_value(json_object_get(r, "sync_status"))));
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(json_object_get(r, "files")));
		wfiles = max_int(wfiles, (int)strlen(buf));
		cli_human_size(json_integer_value(json_object_get(r, "size")), buf, sizeof(buf));
		wsize = max_int(wsize, (int)strlen(buf));
		cli_human_time(json_integer_value(json_object_get(r, "last_sync_at")), buf, sizeof(buf));
		wwhen = max_int(wwhen, (int)strlen(buf));
		cli_human_age(json_integer_value(json_object_get(r, "last_sync_at")), buf, sizeof(buf));
		wage = max_int(wage, (int)strlen(buf));
	}
	wrev = wrev > 40 ? 40 : wrev;
	need = wspec + 2 + wrev + 2 + wstat + 2 + wfiles + 2 + wsize + 2 + wwhen;
	if (width && need > width) {
		relative = true;
		need += wage - wwhen;
		wwhen = wage;
	}
	if (width && need > width) {
		int cut = need - width;
		int room = wrev - 6; /* "master" stays whole */
		cut = cut < room ? cut : room;
		if (cut > 0)
			wrev -= cut;
	}
	printf("%-*s  %-*s  %-*s  %*s  %*s  %s\n", wspec, "SPEC", wrev, wrev >= 8 ? "REVISION" : "REV", wstat, "STATUS",
	       wfiles, "FILES", wsize, "SIZE", relative ? "SYNCED" : "LAST SYNC (UTC)");
	json_array_foreach(repos, i, r) {
		char size[32], when[32], rev[64];
		const char *rv = json_string_value(json_object_get(r, "revision"));
		int64_t at = json_integer_value(json_object_get(r, "last_sync_at"));

		if ((int)strlen(rv) > wrev)
			snprintf(rev, sizeof(rev), "%.*s~", wrev - 1, rv);
		else
			snprintf(rev, sizeof(rev), "%s", rv);
		cli_human_size(json_integer_value(json_object_get(r, "size")), size, sizeof(size));
		if (relative)
			cli_human_age(at, when, sizeof(when));
		else
			cli_human_time(at, when, sizeof(when));
		printf("%-*s  %-*s  %-*s  %*lld  %*s  %s\n", wspec, json_string_value(json_object_get(r, "spec")), wrev,
		       rev, wstat, json_string_value(json_object_get(r, "sync_status")), wfiles,
		       (long long)json_integer_value(json_object_get(r, "files")), wsize, size, when);
	}
}
