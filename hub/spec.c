/*
 * spec.c - parsing and formatting repository specs (hf:org/name@rev and friends).
 *
 * A name that passes these checks is safe to use as two path components and in URLs without
 * escaping, which is what later code relies on.
 */
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "http/httpd.h"
#include "hub.h"

static int check_part(const char *p, size_t n)
{
	if (n == 0 || n > 96)
		return HM_ERR_BAD_SPEC;
	if (p[0] == '.' || p[0] == '-' || p[n - 1] == '.' || p[n - 1] == '-')
		return HM_ERR_BAD_SPEC;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '_' || c == '.' || c == '-';
		if (!ok)
			return HM_ERR_BAD_SPEC;
		if (i && (c == '.' || c == '-') && p[i - 1] == c)
			return HM_ERR_BAD_SPEC; /* ".." and "--" */
	}
	return 0;
}

int hub_check_name(enum hub_kind k, const char *name)
{
	const char *slash = strchr(name, '/');

	if (!slash)
		return k == HUB_HF ? check_part(name, strlen(name)) : HM_ERR_BAD_SPEC;
	if (strchr(slash + 1, '/'))
		return HM_ERR_BAD_SPEC;
	if (check_part(name, (size_t)(slash - name)) || check_part(slash + 1, strlen(slash + 1)))
		return HM_ERR_BAD_SPEC;
	return 0;
}

int hub_check_revision(const char *rev)
{
	size_t n = strnlen(rev, 256);

	if (n == 0 || n > 255 || rev[0] == '/' || rev[n - 1] == '/' || strstr(rev, "..") ||
	    strstr(rev, "//"))
		return HM_ERR_BAD_SPEC;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)rev[i];
		if (c <= 0x20 || c == 0x7f || c == '\\' || c == '?' || c == '#' || c == '%')
			return HM_ERR_BAD_SPEC;
	}
	return 0;
}

/* A repository's page on a hub, as people paste it (https://huggingface.co/ORG/NAME[/tree/REV/...],
 * .../datasets/ORG/NAME, https://modelscope.cn/models/ORG/NAME/...): the spec it names, malloc'd, or
 * NULL when s is no such URL. */
static char *spec_of_url(const char *s)
{
	static const struct { const char *host; bool ms; } hosts[] = {
		{ "huggingface.co/", false }, { "www.huggingface.co/", false }, { "hf.co/", false },
		{ "modelscope.cn/", true }, { "www.modelscope.cn/", true },
	};
	const char *p = skip_prefix(s, "https://") ? skip_prefix(s, "https://") : skip_prefix(s, "http://");
	char *path = NULL, *seg[6] = { 0 }, *save = NULL, *t, *out = NULL;
	size_t n = 0, i = 0;
	bool ms = false, dataset = false;

	if (!p)
		return NULL;
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		if (!strncmp(p, hosts[i].host, strlen(hosts[i].host)))
			break;
	if (i == sizeof(hosts) / sizeof(hosts[0]))
		return NULL;
	ms = hosts[i].ms;
	path = xstrndup(p + strlen(hosts[i].host), strcspn(p + strlen(hosts[i].host), "?#"));
	for (t = strtok_r(path, "/", &save); t && n < 6; t = strtok_r(NULL, "/", &save))
		seg[n++] = t;
	i = 0;
	if (n > 0 && !strcmp(seg[0], "datasets")) {
		dataset = true;
		i = 1;
	} else if (n > 0 && !strcmp(seg[0], "models")) {
		i = 1;
	} else if (ms || (n > 0 && !strcmp(seg[0], "spaces"))) {
		goto done; /* ModelScope's pages say models/ or datasets/; Spaces are not mirrored */
	}
	if (n < i + 2)
		goto done;
	if (!ms && n >= i + 4 && !strcmp(seg[i + 2], "tree")) {
		char *rev = httpd_unescape(seg[i + 3], strlen(seg[i + 3]), false); /* refs%2Fpr%2F1 */
		out = rev ? xasprintf("hf:%s%s/%s@%s", dataset ? "datasets/" : "", seg[i], seg[i + 1], rev) : NULL;
		free(rev);
	} else {
		out = xasprintf("%s:%s%s/%s", ms ? "ms" : "hf", dataset ? "datasets/" : "", seg[i], seg[i + 1]);
	}
done:
	free(path);
	return out;
}

int hub_spec_parse(const char *s, struct hub_spec *out)
{
	struct hub_spec spec = { 0 };
	const char *rest, *at;
	char *name = NULL, *from_url = spec_of_url(s);

	if (from_url) {
		int r = hub_spec_parse(from_url, out);
		free(from_url);
		return r;
	}
	if ((rest = skip_prefix(s, "hf:")))
		spec.hub = HUB_HF;
	else if ((rest = skip_prefix(s, "ms:")))
		spec.hub = HUB_MS;
	else
		return HM_ERR_BAD_SPEC;
	spec.type = HUB_MODEL;
	if ((at = skip_prefix(rest, "datasets/"))) {
		spec.type = HUB_DATASET;
		rest = at;
	} else if ((at = skip_prefix(rest, "models/"))) {
		rest = at;
	}
	at = strchr(rest, '@');
	name = at ? xstrndup(rest, (size_t)(at - rest)) : xstrdup(rest);
	if (hub_check_name(spec.hub, name) || (at && hub_check_revision(at + 1))) {
		free(name);
		return HM_ERR_BAD_SPEC;
	}
	spec.name = name;
	spec.revision = at ? xstrdup(at + 1) : NULL;
	*out = spec;
	return 0;
}

void hub_spec_release(struct hub_spec *spec)
{
	if (!spec)
		return;
	FREE_AND_NULL(&spec->name);
	FREE_AND_NULL(&spec->revision);
}

char *hub_spec_format(const struct hub_spec *spec, int with_rev)
{
	/* A model whose owner is called "models" or "datasets" keeps an explicit "models/": without it
	 * the owner would read as the type prefix (found by tests/fuzz/fuzz-spec). */
	bool ambiguous = spec->type == HUB_MODEL &&
			 (skip_prefix(spec->name, "models/") || skip_prefix(spec->name, "datasets/"));

	return xasprintf("%s:%s%s%s%s", hub_kind_name(spec->hub),
			 spec->type == HUB_DATASET ? "datasets/" : ambiguous ? "models/" : "", spec->name,
			 with_rev && spec->revision ? "@" : "", with_rev && spec->revision ? spec->revision : "");
}

const char *hub_kind_name(enum hub_kind k)
{
	return k == HUB_MS ? "ms" : "hf";
}

const char *hub_type_name(enum hub_repo_type t)
{
	return t == HUB_DATASET ? "dataset" : "model";
}

int hub_kind_parse(const char *s, enum hub_kind *out)
{
	if (!strcmp(s, "hf"))
		*out = HUB_HF;
	else if (!strcmp(s, "ms"))
		*out = HUB_MS;
	else
		return HM_ERR_BAD_SPEC;
	return 0;
}

int hub_type_parse(const char *s, enum hub_repo_type *out)
{
	if (!strcmp(s, "model"))
		*out = HUB_MODEL;
	else if (!strcmp(s, "dataset"))
		*out = HUB_DATASET;
	else
		return HM_ERR_BAD_SPEC;
	return 0;
}

const char *hub_default_revision(enum hub_kind k)
{
	return k == HUB_MS ? "master" : "main";
}
