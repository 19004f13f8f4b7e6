/*
 * ms.c - the ModelScope API's URL grammar (see ms.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "http/http.h"
#include "http/httpd.h"
#include "hub.h"
#include "ms.h"

static const struct {
	const char *prefix, *type;
} prefixes[] = { { "/api/v1/models/", "model" }, { "/api/v1/datasets/", "dataset" } };

/* The segments of s, each percent-decoded; NULL if one does not decode. Empty segments are kept. */
static char **split(const char *s, size_t *n)
{
	char **v = NULL;

	*n = 0;
	for (;;) {
		const char *slash = strchr(s, '/');
		size_t len = slash ? (size_t)(slash - s) : strlen(s);
		char *seg = httpd_unescape(s, len, false);
		v = xreallocarray(v, *n + 1, sizeof(*v));
		v[(*n)++] = seg;
		if (!seg) {
			for (size_t i = 0; i < *n; i++)
				free(v[i]);
			free(v);
			*n = 0;
			return NULL;
		}
		if (!slash)
			return v;
		s = slash + 1;
	}
}

/* What the segments after the repository's name ask for; -1: nothing. */
static int route_of(char **v, size_t n, const char *method)
{
	bool read = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	if (n == 0)
		return read ? MS_ROUTE_INFO : -1;
	if (n == 1 && !strcmp(v[0], "revisions"))
		return MS_ROUTE_REVISIONS;
	if (n == 1 && !strcmp(v[0], "repo"))
		return MS_ROUTE_FILE;
	if (n == 2 && !strcmp(v[0], "repo") && !strcmp(v[1], "files"))
		return MS_ROUTE_FILES;
	if (n == 2 && !strcmp(v[0], "repo") && !strcmp(v[1], "tree"))
		return MS_ROUTE_TREE;
	if (n >= 2 && !strcmp(v[0], "download") && !strcmp(method, "POST"))
		return MS_ROUTE_DOWNLOADED;
	return -1;
}

static bool numeric(const char *s)
{
	return s[0] >= '1' && s[0] <= '9' && strspn(s, "0123456789") == strlen(s) && strlen(s) <= 18;
}

char *ms_api_url(const char *base, bool dataset, const char *name, const char *what)
{
	return xasprintf("%s/api/v1/%s/%s%s%s", base, dataset ? "datasets" : "models", name, what ? "/" : "",
			 what ? what : "");
}

char *ms_file_url(const char *base, bool dataset, const char *name, const char *rev, const char *path)
{
	char *r = hub_url_escape(rev, false), *p = hub_url_escape(path, true), *url;

	url = xasprintf("%s/api/v1/%s/%s/repo?%sRevision=%s&FilePath=%s", base, dataset ? "datasets" : "models", name,
			dataset ? "Source=SDK&" : "", r, p);
	free(r);
	free(p);
	return url;
}

int ms_parse_path(const char *path, const char *method, struct ms_path *p)
{
	char **v = NULL;
	size_t n = 0;
	int route, rc = -1;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes) && !v; i++)
		if (!strncmp(path, prefixes[i].prefix, strlen(prefixes[i].prefix))) {
			p->type = prefixes[i].type;
			v = split(path + strlen(prefixes[i].prefix), &n);
			if (!v)
				return -1;
		}
	if (!v)
		return -1;
	if (n >= 2 && *v[0] && *v[1] && (route = route_of(v + 2, n - 2, method)) >= 0) {
		p->route = (enum ms_route)route;
		p->name = xasprintf("%s/%s", v[0], v[1]);
		/* a name of ModelScope's rules: one that a caller writes into a spec or a URL cannot say
		 * something else there ("a/b@c" in ms:a/b@c@REV) (found by tests/fuzz/fuzz-mspath) */
		rc = hub_check_name(HUB_MS, p->name) ? -1 : 0;
	} else if (!strcmp(p->type, "dataset") && n >= 1 && numeric(v[0]) &&
		   (route = route_of(v + 1, n - 1, method)) >= 0) {
		p->route = (enum ms_route)route;
		p->id = strtoll(v[0], NULL, 10);
		rc = 0;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	if (rc) {
		free(p->name);
		memset(p, 0, sizeof(*p));
	}
	return rc;
}

void ms_path_release(struct ms_path *p)
{
	free(p->name);
	memset(p, 0, sizeof(*p));
}
