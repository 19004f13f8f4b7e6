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
#include "hub/http.h"
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
		fprintf(stderr, "hubmirror: cannot reach the mirror at %.*s: %s\n", (int)n, mirror, err ? err : err_str(r));
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
		fprintf(stderr, "hubmirror: cannot reach the mirror at %.*s: %s\n", (int)n, mirror, err ? err : err_str(r));
	else if (!(j = json_loadb(got, len, 0, NULL)))
		fprintf(stderr, "hubmirror: %s did not answer JSON (is it a hubmirror%s?)\n", url,
			strstr(path, "/api/admin/") ? " with the admin API on" : "");
	else if (*status >= 300)
		fprintf(stderr, "hubmirror: %s %s: %ld %s\n", method, url, *status,
			json_string_value(json_object_get(j, "error")) ? json_string_value(json_object_get(j, "error")) : "");
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

void cli_print_repo_table(json_t *repos)
{
	int width = cli_term_width();
	size_t wspec = 4, i;
	json_t *r;
	int wmax;

	json_array_foreach(repos, i, r) {
		size_t w = strlen(json_string_value(json_object_get(r, "spec")));
		if (w > wspec)
			wspec = w;
	}
	/* On a terminal, the spec column gives way so a row fits on one line (the rest is 60 columns). */
	wmax = width ? width - 60 : 0;
	if (wmax > 0 && wspec > (size_t)wmax)
		wspec = (size_t)(wmax > 12 ? wmax : 12);
	printf("%-*s  %-12s  %-8s  %7s  %10s  %s\n", (int)wspec, "SPEC", "REVISION", "STATUS", "FILES", "SIZE",
	       "LAST SYNC (UTC)");
	json_array_foreach(repos, i, r) {
		char size[32], when[32], spec[512];
		const char *s = json_string_value(json_object_get(r, "spec"));
		size_t sl = strlen(s);
		if (sl > wspec && wspec > 3)
			snprintf(spec, sizeof(spec), "%.*s...", (int)(wspec - 3), s);
		else
			snprintf(spec, sizeof(spec), "%s", s);
		cli_human_size(json_integer_value(json_object_get(r, "size")), size, sizeof(size));
		cli_human_time(json_integer_value(json_object_get(r, "last_sync_at")), when, sizeof(when));
		printf("%-*s  %-12.12s  %-8s  %7lld  %10s  %s\n", (int)wspec, spec,
		       json_string_value(json_object_get(r, "revision")), json_string_value(json_object_get(r, "sync_status")),
		       (long long)json_integer_value(json_object_get(r, "files")), size, when);
	}
}
