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

char *hf_resolve_url(const char *base, bool dataset, const char *name, const char *rev, const char *path)
{
	char *r = hub_url_escape(rev, false), *p = hub_url_escape(path, true), *url;

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
