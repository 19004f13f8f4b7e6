/*
 * fuzz-hfpath.c - hub/hf.c, the Hugging Face Hub's path grammar as the mirror's routes and the
 * agent's endpoint read a client's path (the input: a raw path, percent-encoded as sent):
 *  - hf_path_split keeps every byte: its segments joined with '/' are the path, none holds a '/';
 *  - hf_join_decoded of segments is the decoding of their raw text (or NULL for both);
 *  - hf_take_revision takes one decoded segment, or refs/pr/N and refs/convert/NAME sent raw;
 *  - a file URL hf_parse_file_url accepts names a repository, revision and path that pass the
 *    project's guards (hub_check_name, hub_check_revision, path_check), round-trips through the URL
 *    builder (hf_resolve_url, then split and parsed again: the same parts) and through a spec
 *    (hub_spec_format, hub_spec_parse: the same repository and revision);
 *  - a path hf_parse_path (the mirror router's and the agent's parser) accepts, under each method,
 *    names a repository hub_check_name takes, of the type its prefix says, and, where it names a file,
 *    a tree or a revision's info whose revision and path pass the guards, round-trips through the
 *    builders (hf_resolve_url, hf_api_url with hf_rev_segment): the built URL parses to the same route,
 *    type, repository, revision and path.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/hf.h"
#include "hub/http/http.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "fuzz-hfpath: %s: '%s'\n", what, path);
	abort();
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* v[from..n) raw, joined with '/', then decoded as one */
static char *decode_tail(char *const *v, size_t n, size_t from)
{
	struct buf b;
	char *d;

	buf_init(&b);
	for (size_t i = from; i < n; i++)
		buf_addf(&b, "%s%s", i > from ? "/" : "", v[i]);
	d = httpd_unescape(b.data ? b.data : "", b.len, false);
	buf_release(&b);
	return d;
}

static void check_revision(const struct hf_path *p, size_t i, const char *path)
{
	size_t used = 99;
	char *rev = hf_take_revision(p->v, p->n, i, &used), *want = NULL;

	if (!rev) {
		if (used)
			fail("no revision, but segments used", path);
		return;
	}
	if (used == 3) {
		char *last = httpd_unescape(p->v[i + 2], strlen(p->v[i + 2]), false);
		if (strcmp(p->v[i], "refs") || (strcmp(p->v[i + 1], "pr") && strcmp(p->v[i + 1], "convert")) || !last ||
		    !*last || strchr(last, '/'))
			fail("a three-segment revision that is not refs/pr/N or refs/convert/NAME", path);
		want = xasprintf("refs/%s/%s", p->v[i + 1], last);
		free(last);
	} else if (used == 1 && strcmp(p->v[i], "refs")) {
		want = httpd_unescape(p->v[i], strlen(p->v[i]), false);
	} else {
		fail("a revision of neither one nor three segments", path);
	}
	if (!same(rev, want))
		fail("a revision that is not its segments decoded", path);
	free(want);
	free(rev);
}

static void check_file_url(const struct hf_path *p, const char *verb, const char *path)
{
	const char *type, *type2;
	char *org, *name, *rev, *fp, *org2, *name2, *rev2, *fp2, *full, *url, *again;
	struct hf_path q;
	struct hub_spec spec, spec2;
	size_t base, used;

	if (hf_parse_file_url(p->v, p->n, verb, &type, &org, &name, &rev, &fp))
		return;
	/* the parts, read again here */
	base = !strcmp(p->v[0], "datasets");
	if (strcmp(type, base ? "dataset" : "model") || p->n < base + 5 || strcmp(p->v[base + 2], verb))
		fail("a file URL of another shape", path);
	again = hf_take_revision(p->v, p->n, base + 3, &used);
	org2 = httpd_unescape(p->v[base], strlen(p->v[base]), false);
	name2 = httpd_unescape(p->v[base + 1], strlen(p->v[base + 1]), false);
	fp2 = used ? decode_tail(p->v, p->n, base + 3 + used) : NULL;
	if (!same(again, rev) || !same(org, org2) || !same(name, name2) || !same(fp, fp2))
		fail("a file URL's parts are not its segments", path);
	free(again);
	free(org2);
	free(name2);
	free(fp2);
	/* the guards */
	full = xasprintf("%s/%s", org, name);
	if (hub_check_name(HUB_HF, full))
		fail("a file URL whose repository fails hub_check_name", path);
	if (hub_check_revision(rev))
		fail("a file URL whose revision fails hub_check_revision", path);
	if (path_check_str(fp))
		fail("a file URL whose path fails path_check", path);
	/* through the builder and back */
	url = hf_resolve_url("http://h", base, full, rev, fp);
	if (strncmp(url, "http://h/", 9))
		fail("the builder's URL", path);
	hf_path_split(&q, url + 8);
	if (hf_parse_file_url(q.v, q.n, "resolve", &type2, &org2, &name2, &rev2, &fp2))
		fail("the builder's URL of an accepted file URL does not parse", path);
	if (strcmp(type, type2) || strcmp(org, org2) || strcmp(name, name2) || strcmp(rev, rev2) || strcmp(fp, fp2))
		fail("the builder's URL names another file", path);
	free(org2), free(name2), free(rev2), free(fp2);
	hf_path_release(&q);
	free(url);
	/* through a spec and back */
	spec = (struct hub_spec){ HUB_HF, base ? HUB_DATASET : HUB_MODEL, full, rev };
	again = hub_spec_format(&spec, 1);
	if (hub_spec_parse(again, &spec2) || spec2.hub != HUB_HF || spec2.type != spec.type ||
	    strcmp(spec2.name, full) || !spec2.revision || strcmp(spec2.revision, rev))
		fail("the spec of an accepted file URL names another repository or revision", path);
	hub_spec_release(&spec2);
	free(again);
	free(full);
	free(org), free(name), free(rev), free(fp);
}

/* The URL the builders write for what p names, or NULL where the route has no builder here. */
static char *build_again(const struct hf_route_path *p)
{
	bool ds = !strcmp(p->type, "dataset");
	char *seg, *sub, *what, *url;

	if (p->route == HF_ROUTE_FILE)
		return hf_resolve_url("http://h", ds, p->name, p->rev, p->sub);
	if (p->route == HF_ROUTE_INFO && !p->rev)
		return xasprintf("http://h/api/%s/%s", ds ? "datasets" : "models", p->name);
	if (p->route != HF_ROUTE_INFO && p->route != HF_ROUTE_TREE)
		return NULL;
	seg = hf_rev_segment(p->rev);
	sub = p->sub && *p->sub ? hub_url_escape(p->sub, true) : NULL;
	what = xasprintf("%s/%s%s%s", p->route == HF_ROUTE_TREE ? "tree" : "revision", seg, sub ? "/" : "",
			 sub ? sub : "");
	url = hf_api_url("http://h", ds, p->name, what);
	free(seg);
	free(sub);
	free(what);
	return url;
}

static void check_route(const struct hf_path *s, const char *method, const char *path)
{
	struct hf_route_path p, q;
	char *url;
	bool api = s->n >= 2 && !strcmp(s->v[0], "api");

	if (hf_parse_path(path, method, &p))
		return;
	if (strcmp(p.type, (api ? !strcmp(s->v[1], "datasets") : !strcmp(s->v[0], "datasets")) ? "dataset" : "model"))
		fail("a route of another type than its prefix says", path);
	if ((p.route == HF_ROUTE_LIST || p.route == HF_ROUTE_NO_REPO) != !p.name)
		fail("a route with a repository where none was named, or none where one was", path);
	if (p.name && hub_check_name(HUB_HF, p.name))
		fail("a route whose repository fails hub_check_name", path);
	if (!api && p.route != HF_ROUTE_FILE && p.route != HF_ROUTE_BAD)
		fail("a file URL read as an API route", path);
	if (api && (p.route == HF_ROUTE_FILE || !strcmp(p.label, "hf_resolve") || !strcmp(p.label, "hf_raw")))
		fail("an API path read as a file URL", path);
	if ((p.route == HF_ROUTE_TREE || p.route == HF_ROUTE_FILE) && (!p.rev || !p.sub))
		fail("a tree or file route without its revision and path", path);
	if ((p.route == HF_ROUTE_PATHS_INFO || p.route == HF_ROUTE_WRITE || p.route == HF_ROUTE_COMMITS) && !p.rev)
		fail("a route without its revision", path);
	if (p.route == HF_ROUTE_TREESIZE && p.sub && path_check_str(p.sub))
		fail("a treesize route whose path fails path_check", path);
	/* through the builders and back, what the routes would serve */
	url = p.rev && hub_check_revision(p.rev)         ? NULL
	      : p.sub && *p.sub && path_check_str(p.sub) ? NULL
							 : build_again(&p);
	if (url) {
		if (strncmp(url, "http://h/", 9))
			fail("the builder's URL", path);
		if (hf_parse_path(url + 8, "GET", &q))
			fail("the builder's URL of an accepted route does not parse", path);
		if (q.route != p.route || strcmp(q.type, p.type) || !same(q.name, p.name) || !same(q.rev, p.rev) ||
		    (p.route != HF_ROUTE_INFO && !same(q.sub, p.sub)))
			fail("the builder's URL names another route, repository, revision or path", path);
		hf_route_path_release(&q);
		free(url);
	}
	hf_route_path_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = malloc(size + 1);
	struct hf_path p;
	struct buf b;

	memcpy(path, data, size);
	path[size] = '\0';
	if (memchr(data, '\0', size) || memchr(data, '?', size)) {
		free(path);
		return 0; /* a path as the server hands it: no NUL, the query cut off */
	}
	hf_path_split(&p, path);
	/* every byte kept */
	buf_init(&b);
	for (size_t i = 0; i < p.n; i++) {
		if (strchr(p.v[i], '/'))
			fail("a segment with a '/'", path);
		buf_addf(&b, "%s%s", i ? "/" : "", p.v[i]);
	}
	if (!p.n || strcmp(b.data ? b.data : "", path[0] == '/' ? path + 1 : path))
		fail("the segments are not the path", path);
	buf_release(&b);
	/* decoding a run of segments is decoding their text (a few starts: all of them is quadratic) */
	for (size_t k = 0; k < 6; k++) {
		size_t from = k < 4 ? k : k == 4 ? p.n / 2 : p.n;
		char *a, *d;
		if (from > p.n)
			continue;
		a = hf_join_decoded(p.v, p.n, from);
		d = decode_tail(p.v, p.n, from);
		if (!same(a, d))
			fail("hf_join_decoded is not the decoding of the segments", path);
		free(a);
		free(d);
	}
	for (size_t i = 0; i < p.n && i < 8; i++)
		check_revision(&p, i, path);
	check_file_url(&p, "resolve", path);
	check_file_url(&p, "raw", path);
	check_route(&p, "GET", path);
	check_route(&p, "POST", path);
	check_route(&p, "DELETE", path);
	hf_path_release(&p);
	free(path);
	return 0;
}
