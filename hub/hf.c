/*
 * hf.c - the Hugging Face Hub's URL grammar (see hf.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hf.h"
#include "hub.h"
#include "http/http.h"
#include "http/httpd.h"

static char *decoded(const char *s)
{
	return httpd_unescape(s, strlen(s), false);
}

char *hf_api_url(const char *base, bool dataset, const char *name, const char *what)
{
	return xasprintf("%s/api/%s/%s/%s", base, dataset ? "datasets" : "models", name, what);
}

char *hf_list_url(const char *base, bool dataset, const char *key, const char *value, int limit)
{
	char *v = hub_url_escape(value, false), *url;

	url = xasprintf("%s/api/%s?%s=%s&limit=%d", base, dataset ? "datasets" : "models", key, v, limit);
	free(v);
	return url;
}

char *hf_rev_segment(const char *rev)
{
	/* "refs" raw would begin refs/pr/N to the reader (hf_take_revision): its 'r' encoded, it is one */
	if (!strcmp(rev, "refs"))
		return xstrdup("%72efs");
	return hub_url_escape(rev, false);
}

char *hf_resolve_url(const char *base, bool dataset, const char *name, const char *rev, const char *path)
{
	char *r = hf_rev_segment(rev), *p = hub_url_escape(path, true), *url;

	url = xasprintf("%s/%s%s/resolve/%s/%s", base, dataset ? "datasets/" : "", name, r, p);
	free(r);
	free(p);
	return url;
}

void hf_path_split(struct hf_path *p, const char *path)
{
	char *s;

	p->copy = xstrdup(path[0] == '/' ? path + 1 : path);
	p->v = xcalloc(strlen(p->copy) + 2, sizeof(*p->v));
	p->n = 0;
	for (s = p->copy;;) {
		char *slash = strchr(s, '/');
		p->v[p->n++] = s;
		if (!slash)
			break;
		*slash = '\0';
		s = slash + 1;
	}
}

void hf_path_release(struct hf_path *p)
{
	free(p->v);
	free(p->copy);
	p->v = NULL;
	p->copy = NULL;
	p->n = 0;
}

char *hf_take_revision(char *const *v, size_t n, size_t i, size_t *used)
{
	char *rev, *out;

	*used = 0;
	if (i >= n)
		return NULL;
	if (!strcmp(v[i], "refs")) {
		if (i + 2 >= n || (strcmp(v[i + 1], "pr") && strcmp(v[i + 1], "convert")))
			return NULL;
		rev = decoded(v[i + 2]);
		if (!rev || !*rev || strchr(rev, '/')) {
			free(rev);
			return NULL;
		}
		*used = 3;
		out = xasprintf("refs/%s/%s", v[i + 1], rev);
		free(rev);
		return out;
	}
	rev = decoded(v[i]);
	if (rev)
		*used = 1;
	return rev;
}

char *hf_join_decoded(char *const *v, size_t n, size_t from)
{
	struct buf b;

	buf_init(&b);
	for (size_t i = from; i < n; i++) {
		char *d = decoded(v[i]);
		if (!d) {
			buf_release(&b);
			return NULL;
		}
		buf_addf(&b, "%s%s", i > from ? "/" : "", d);
		free(d);
	}
	return buf_detach(&b, NULL);
}

int hf_parse_file_url(char *const *v, size_t n, const char *verb, const char **type, char **org, char **name,
		      char **rev, char **path)
{
	size_t base = 0, used;
	const char *t = "model";
	char *o, *nm, *r, *p, *full;
	bool bad;

	if (n > 0 && !strcmp(v[0], "datasets")) {
		t = "dataset";
		base = 1;
	}
	if (n < base + 5 || strcmp(v[base + 2], verb))
		return -1;
	r = hf_take_revision(v, n, base + 3, &used);
	if (!r)
		return -1;
	if (base + 3 + used >= n) {
		free(r);
		return -1; /* no file */
	}
	o = decoded(v[base]);
	nm = decoded(v[base + 1]);
	p = hf_join_decoded(v, n, base + 3 + used);
	full = o && nm ? xasprintf("%s/%s", o, nm) : NULL;
	/* what the mirror's routes would take: a name of the Hub's rules (no '@' or '/' a caller that
	 * writes a spec of it would misread), a revision of its rules, a safe path */
	bad = !full || !p || hub_check_name(HUB_HF, full) || hub_check_revision(r) || path_check_str(p);
	free(full);
	if (bad) {
		free(o);
		free(nm);
		free(p);
		free(r);
		return -1;
	}
	*type = t;
	*org = o;
	*name = nm;
	*rev = r;
	*path = p;
	return 0;
}

/* REPO at v[i]: ORG/NAME, or NAME alone when v[i + 1] is one of keywords (or there is none); returns
 * the segments it took (*name malloc'd, as sent) or 0 when it is no name hub_check_name takes. */
static size_t take_repo(const struct hf_path *s, size_t i, const char *const *keywords, char **name)
{
	bool two = i + 1 < s->n;
	char *nm;

	if (two)
		for (const char *const *k = keywords; *k; k++)
			if (!strcmp(s->v[i + 1], *k))
				two = false;
	if (i >= s->n)
		return 0;
	nm = two ? xasprintf("%s/%s", s->v[i], s->v[i + 1]) : xstrdup(s->v[i]);
	if (hub_check_name(HUB_HF, nm)) {
		free(nm);
		return 0;
	}
	*name = nm;
	return two ? 2 : 1;
}

static const char *const api_keywords[] = {
	"revision",        "tree",    "paths-info", "refs",   "commits", "treesize", "xet-read-token",
	"xet-write-token", "resolve", "preupload",  "commit", "branch",  "tag",      NULL};
static const char *const file_keywords[] = { "resolve", "raw", NULL };

static bool is(const char *a, const char *b)
{
	return !strcmp(a, b);
}

/* The action at s->v[i] of the repository's API path (p->name set). */
static void api_action(const struct hf_path *s, size_t i, const char *method, struct hf_route_path *p)
{
	const char *a = i < s->n ? s->v[i] : NULL;
	bool post = is(method, "POST");
	size_t used;

	p->label = !a || is(a, "revision") ? "hf_info"
		   : is(a, "tree")         ? "hf_tree"
		   : is(a, "paths-info")   ? "hf_paths_info"
		   : is(a, "refs")         ? "hf_refs"
		   : is(a, "commits")      ? "hf_commits"
		   : is(a, "treesize")     ? "hf_treesize"
					   : "hf_api";
	p->route = HF_ROUTE_NOT_FOUND;
	p->why = "bad revision or path";
	if (!a) {
		p->route = HF_ROUTE_INFO;
	} else if (is(a, "revision") && i + 1 < s->n) {
		p->rev = hf_join_decoded(s->v, s->n, i + 1); /* everything after: refs/pr/1 raw or encoded */
		p->route = p->rev ? HF_ROUTE_INFO : HF_ROUTE_BAD;
	} else if (is(a, "tree") && (p->rev = hf_take_revision(s->v, s->n, i + 1, &used))) {
		p->sub = hf_join_decoded(s->v, s->n, i + 1 + used);
		p->route = i + 1 + used < s->n && !p->sub ? HF_ROUTE_BAD : HF_ROUTE_TREE;
		p->why = "bad path";
	} else if (is(a, "paths-info") && i + 1 < s->n && post) {
		p->rev = hf_join_decoded(s->v, s->n, i + 1);
		p->route = p->rev ? HF_ROUTE_PATHS_INFO : HF_ROUTE_BAD;
	} else if (is(a, "refs") && i + 1 == s->n) {
		p->route = HF_ROUTE_REFS;
	} else if (is(a, "commits") && (p->rev = hf_take_revision(s->v, s->n, i + 1, &used))) {
		p->route = HF_ROUTE_COMMITS;
	} else if (is(a, "treesize") && (p->rev = hf_take_revision(s->v, s->n, i + 1, &used))) {
		if (i + 1 + used < s->n) {
			p->sub = hf_join_decoded(s->v, s->n, i + 1 + used);
			p->why = "bad path";
		}
		p->route =
			i + 1 + used < s->n && (!p->sub || path_check_str(p->sub)) ? HF_ROUTE_BAD : HF_ROUTE_TREESIZE;
	} else if ((((is(a, "preupload") || is(a, "commit")) && post) ||
		    ((is(a, "branch") || is(a, "tag")) && (post || is(method, "DELETE")))) &&
		   i + 1 < s->n && (p->rev = hf_join_decoded(s->v, s->n, i + 1))) {
		p->route = HF_ROUTE_WRITE;
		p->verb = is(a, "preupload") ? "preupload"
			  : is(a, "commit")  ? "commit"
			  : is(a, "branch")  ? "branch"
					     : "tag";
	} else if (is(a, "xet-read-token")) {
		p->rev = hf_take_revision(s->v, s->n, i + 1, &used);   /* NULL: the default branch */
		p->route = HF_ROUTE_XET_READ;
	} else if (is(a, "xet-write-token")) {
		p->route = HF_ROUTE_XET_WRITE;
	}
}

/* api/{models|datasets}[/REPO[/...]] */
static int parse_api(const struct hf_path *s, const char *method, struct hf_route_path *p)
{
	size_t used;

	if (is(s->v[1], "models"))
		p->type = "model";
	else if (is(s->v[1], "datasets"))
		p->type = "dataset";
	else
		return -1;
	if (s->n == 2) {
		if (!is(method, "GET") && !is(method, "HEAD"))
			return -1;
		p->route = HF_ROUTE_LIST;
		p->label = "hf_list";
		return 0;
	}
	used = take_repo(s, 2, api_keywords, &p->name);
	if (!used) {
		p->route = HF_ROUTE_NO_REPO;
		p->label = "hf_api";
		return 0;
	}
	api_action(s, 2 + used, method, p);
	return 0;
}

/* [datasets/]REPO/{resolve|raw}/REV/PATH */
static int parse_file(const struct hf_path *s, struct hf_route_path *p)
{
	size_t i = 0, used;

	p->type = "model";
	if (is(s->v[0], "datasets")) {
		p->type = "dataset";
		i = 1;
	} else if (is(s->v[0], "spaces") || is(s->v[0], "api")) {
		return -1;
	}
	used = take_repo(s, i, file_keywords, &p->name);
	if (!used)
		return -1;
	i += used;
	if (i >= s->n || (!is(s->v[i], "resolve") && !is(s->v[i], "raw"))) {
		FREE_AND_NULL(&p->name);
		return -1;
	}
	p->verb = is(s->v[i], "raw") ? "raw" : "resolve";
	p->label = is(s->v[i], "raw") ? "hf_raw" : "hf_resolve";
	p->rev = hf_take_revision(s->v, s->n, i + 1, &used);
	if (p->rev && i + 1 + used < s->n)
		p->sub = hf_join_decoded(s->v, s->n, i + 1 + used);
	p->route = p->rev && p->sub ? HF_ROUTE_FILE : HF_ROUTE_BAD;
	p->why = "bad revision or path";
	return 0;
}

int hf_parse_path(const char *path, const char *method, struct hf_route_path *p)
{
	struct hf_path s;
	struct hf_route_path q = { .route = HF_ROUTE_NOT_FOUND };
	int r = -1;

	hf_path_split(&s, path);
	if (s.n >= 2 && is(s.v[0], "api"))
		r = parse_api(&s, method, &q);
	else if (s.n >= 4 && (is(method, "GET") || is(method, "HEAD")))
		r = parse_file(&s, &q);
	hf_path_release(&s);
	if (r)
		hf_route_path_release(&q);
	else
		*p = q;
	return r;
}

void hf_route_path_release(struct hf_route_path *p)
{
	FREE_AND_NULL(&p->name);
	FREE_AND_NULL(&p->rev);
	FREE_AND_NULL(&p->sub);
}
