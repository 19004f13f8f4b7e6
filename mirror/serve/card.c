/*
 * card.c - cards as HTML with cmark-gfm (see card.h).
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cmark-gfm.h>
#include <cmark-gfm-core-extensions.h>

#include "base/buf.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "card.h"
#include "hub/http/http.h"
#include "hub/http/httpd.h"

/* Where the front matter ends ("---" lines around YAML at the very start), or 0 without one. */
static size_t front_matter_end(const char *md, size_t len)
{
	const char *p;

	if (len < 4 || memcmp(md, "---", 3) || (md[3] != '\n' && md[3] != '\r'))
		return 0;
	for (p = md + 3; p && (size_t)(p - md) < len; p = memchr(p + 1, '\n', len - (size_t)(p - md) - 1)) {
		const char *line = p + 1;
		size_t left = len - (size_t)(line - md);
		if (left >= 3 && !memcmp(line, "---", 3) && (left == 3 || line[3] == '\n' || line[3] == '\r'))
			return (size_t)(line - md) + (left == 3 ? 3 : 4);
		if ((size_t)(p - md) + 1 >= len)
			break;
	}
	return 0;
}

static bool has_scheme(const char *u)
{
	const char *p = u;

	if (skip_prefix(u, "//"))
		return true;
	if (!isalpha((unsigned char)*p))
		return false;
	while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	return *p == ':';
}

/* The repository path a relative URL names (from the card at the root), or NULL when it leaves the
 * repository or is not a path ("#anchor", "", a URL with a scheme). */
static char *repo_path(const char *url)
{
	size_t n = strcspn(url, "?#");
	char *raw, *dec, *out;
	struct buf b;
	const char *seg;

	if (!n || has_scheme(url))
		return NULL;
	raw = xstrndup(url, n);
	dec = httpd_unescape(raw, strlen(raw), false);
	free(raw);
	if (!dec)
		return NULL;
	/* resolve "." and ".." against the root; a ".." above it leaves the repository */
	buf_init(&b);
	for (seg = dec; *seg; ) {
		size_t l = strcspn(seg, "/");
		if (l == 2 && skip_prefix(seg, "..")) {
			char *slash;
			if (!b.len) {
				buf_release(&b);
				free(dec);
				return NULL;
			}
			slash = memrchr(b.data, '/', b.len);
			b.len = slash ? (size_t)(slash - b.data) : 0;
			b.data[b.len] = '\0';
		} else if (l && !(l == 1 && seg[0] == '.')) {
			if (b.len)
				buf_addch(&b, '/');
			buf_add(&b, seg, l);
		}
		seg += l;
		while (*seg == '/')
			seg++;
	}
	free(dec);
	out = buf_detach(&b, NULL);
	if (!out || !*out || path_check_str(out)) {
		free(out);
		return NULL;
	}
	return out;
}

/* An image outside the repository: a link to it, its alt text the link's text. */
static void image_to_link(cmark_node *img)
{
	cmark_node *link = cmark_node_new(CMARK_NODE_LINK), *child;

	cmark_node_set_url(link, cmark_node_get_url(img));
	if (!cmark_node_first_child(img)) {
		cmark_node *t = cmark_node_new(CMARK_NODE_TEXT);
		cmark_node_set_literal(t, "(image)");
		cmark_node_append_child(link, t);
	}
	while ((child = cmark_node_first_child(img))) {
		cmark_node_unlink(child);
		cmark_node_append_child(link, child);
	}
	cmark_node_replace(img, link);
	cmark_node_free(img);
}

char *mirror_card_html(const char *md, size_t len, const char *file_url)
{
	static const char *const exts[] = { "table", "strikethrough", "autolink", "tagfilter" };
	size_t skip = front_matter_end(md, len), nimg = 0, cap = 0;
	cmark_parser *p;
	cmark_node *doc, *node, **imgs = NULL;
	cmark_iter *it;
	cmark_event_type ev;
	char *html, *out;

	cmark_gfm_core_extensions_ensure_registered();
	p = cmark_parser_new(CMARK_OPT_DEFAULT);
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		cmark_syntax_extension *e = cmark_find_syntax_extension(exts[i]);
		if (e)
			cmark_parser_attach_syntax_extension(p, e);
	}
	cmark_parser_feed(p, md + skip, len - skip);
	doc = cmark_parser_finish(p);
	it = cmark_iter_new(doc);
	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		cmark_node_type t;
		const char *url;
		char *path;

		node = cmark_iter_get_node(it);
		t = cmark_node_get_type(node);
		if (ev != CMARK_EVENT_ENTER || (t != CMARK_NODE_IMAGE && t != CMARK_NODE_LINK))
			continue;
		url = cmark_node_get_url(node);
		if (!url || !*url || *url == '#')
			continue;
		if ((path = repo_path(url))) {
			char *esc = hub_url_escape(path, true), *full = xasprintf("%s%s", file_url, esc);
			cmark_node_set_url(node, full);
			free(full);
			free(esc);
			free(path);
		} else if (t == CMARK_NODE_IMAGE) {
			if (nimg == cap) {
				cap = cap ? cap * 2 : 8;
				imgs = xreallocarray(imgs, cap, sizeof(*imgs));
			}
			imgs[nimg++] = node; /* changed after the walk */
		}
	}
	cmark_iter_free(it);
	for (size_t i = 0; i < nimg; i++)
		image_to_link(imgs[i]);
	free(imgs);
	html = cmark_render_html(doc, CMARK_OPT_DEFAULT, cmark_parser_get_syntax_extensions(p));
	out = xstrdup(html ? html : "");
	free(html);
	cmark_node_free(doc);
	cmark_parser_free(p);
	return out;
}
