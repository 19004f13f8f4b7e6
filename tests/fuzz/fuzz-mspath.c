/*
 * fuzz-mspath.c - hub/ms.c, ModelScope's path grammar (ms_parse_path), the one route enumeration the
 * mirror's routes and the agent's endpoint both call. The input: a method (its first byte picks one)
 * and a raw request target, path and query. A path the grammar accepts
 *  - is under its type's prefix, and names the repository its first two segments decode to (or, for
 *    a dataset whose OWNER/NAME form names nothing, the numeric id of its first), with the route its
 *    remaining segments and the method call for, read again here;
 *  - names a repository that passes hub_check_name;
 *  - round-trips through the URL builders (ms_api_url, ms_file_url): the built URL parses to the same
 *    route, type and repository, and a file URL's query gives back the revision and path it was built
 *    with (httpd_query_get, as the routes read FilePath and Revision).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "hub/ms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *method, const char *path)
{
	fprintf(stderr, "fuzz-mspath: %s: %s '%s'\n", what, method, path);
	abort();
}

/* The route of the segments after the repository (seg[0..n) raw), as ms.h describes them; -1: none. */
static int route_of(char **seg, size_t n, const char *method)
{
	bool read = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	const char *a = n > 0 ? seg[0] : "", *b = n > 1 ? seg[1] : "";

	if (n == 0)
		return read ? MS_ROUTE_INFO : -1;
	if (n == 1 && !strcmp(a, "revisions"))
		return MS_ROUTE_REVISIONS;
	if (n == 1 && !strcmp(a, "repo"))
		return MS_ROUTE_FILE;
	if (n == 2 && !strcmp(a, "repo") && (!strcmp(b, "files") || !strcmp(b, "tree")))
		return !strcmp(b, "files") ? MS_ROUTE_FILES : MS_ROUTE_TREE;
	if (n >= 2 && !strcmp(a, "download") && !strcmp(method, "POST"))
		return MS_ROUTE_DOWNLOADED;
	return -1;
}

/* what a builder appends for a route */
static const char *what_of(enum ms_route r)
{
	switch (r) {
	case MS_ROUTE_INFO: return NULL;
	case MS_ROUTE_REVISIONS: return "revisions";
	case MS_ROUTE_FILES: return "repo/files";
	case MS_ROUTE_TREE: return "repo/tree";
	case MS_ROUTE_FILE: return "repo";
	case MS_ROUTE_DOWNLOADED: return "download/increase";
	}
	return NULL;
}

static void free_segs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void check(const char *method, const char *path, const char *query)
{
	struct ms_path p, q;
	const char *tail;
	char **seg = NULL, *url, *qs;
	size_t n = 0;
	bool dataset;
	int want_named = -1, want_id = -1;

	if (ms_parse_path(path, method, &p))
		return;
	dataset = !strcmp(p.type, "dataset");
	tail = path + strlen(dataset ? "/api/v1/datasets/" : "/api/v1/models/");
	if (strncmp(path, dataset ? "/api/v1/datasets/" : "/api/v1/models/", (size_t)(tail - path)))
		fail("accepted under another prefix", method, path);
	/* its segments, decoded, read again */
	for (const char *s = tail;;) {
		size_t len = strcspn(s, "/");
		seg = xreallocarray(seg, n + 1, sizeof(*seg));
		if (!(seg[n++] = httpd_unescape(s, len, false)))
			fail("accepted with a segment that does not decode", method, path);
		if (!s[len])
			break;
		s += len + 1;
	}
	if (n >= 2 && *seg[0] && *seg[1])
		want_named = route_of(seg + 2, n - 2, method);
	if (dataset && n >= 1 && seg[0][0] >= '1' && seg[0][0] <= '9' && strlen(seg[0]) <= 18 &&
	    strspn(seg[0], "0123456789") == strlen(seg[0]))
		want_id = route_of(seg + 1, n - 1, method);
	if (p.name) {
		char *name = xasprintf("%s/%s", seg[0], seg[1]);
		if (want_named < 0 || (int)p.route != want_named || strcmp(p.name, name) || p.id)
			fail("a repository or route that is not the path's", method, path);
		if (hub_check_name(HUB_MS, p.name))
			fail("an accepted repository name fails hub_check_name", method, path);
		free(name);
	} else {
		if (!dataset || want_named >= 0 || want_id < 0 || (int)p.route != want_id ||
		    p.id != strtoll(seg[0], NULL, 10) || p.id <= 0)
			fail("a numeric id that is not the path's, or taken where OWNER/NAME names something", method,
			     path);
	}
	free_segs(seg, n);
	/* through the builder and back */
	{
		char *id = p.name ? NULL : xasprintf("%lld", (long long)p.id);
		char *rev = httpd_query_get(query, MS_QUERY_REVISION), *fp = httpd_query_get(query, MS_QUERY_FILE);
		const char *name = p.name ? p.name : id;
		if (p.route == MS_ROUTE_FILE)
			url = ms_file_url("", dataset, name, rev ? rev : "master", fp ? fp : "a b+c%.bin");
		else
			url = ms_api_url("", dataset, name, what_of(p.route));
		qs = strchr(url, '?');
		if (qs)
			*qs++ = '\0';
		if (ms_parse_path(url, method, &q) || q.route != p.route || strcmp(q.type, p.type) || q.id != p.id ||
		    (p.name ? !q.name || strcmp(q.name, p.name) : q.name != NULL))
			fail("the builder's URL names another route or repository", method, path);
		if (p.route == MS_ROUTE_FILE) {
			char *r2 = httpd_query_get(qs, MS_QUERY_REVISION), *f2 = httpd_query_get(qs, MS_QUERY_FILE);
			if (!r2 || !f2 || strcmp(r2, rev ? rev : "master") || strcmp(f2, fp ? fp : "a b+c%.bin"))
				fail("the builder's file URL gives back another revision or path", method, path);
			free(r2);
			free(f2);
		}
		ms_path_release(&q);
		free(url);
		free(rev);
		free(fp);
		free(id);
	}
	ms_path_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS" };
	const char *method;
	char *target, *q;

	if (!size || memchr(data, '\0', size))
		return 0;
	method = methods[data[0] % 6];
	target = malloc(size);
	memcpy(target, data + 1, size - 1);
	target[size - 1] = '\0';
	q = strchr(target, '?');
	if (q)
		*q++ = '\0';
	check(method, target, q);
	free(target);
	return 0;
}
