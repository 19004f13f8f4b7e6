/*
 * httpd-request.c - what the server reads of a request: http-parser's callbacks, which fill a
 * connection's httpd_req within the configured limits (a request over them is marked to be refused
 * with 413, 414 or 431), the request target split into path and query, and the accessors handlers
 * read it through (httpd.h). httpd.c feeds the parser and answers; a claimed body goes on to
 * httpd-body.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>
#include <uv.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "httpd-int.h"

/* ---- request accessors -------------------------------------------------------------------- */

const char *httpd_method(const struct httpd_req *r) { return r->method; }
bool httpd_is_tls(const struct httpd_req *r) { return r->c->ssl != NULL; }
const char *httpd_path(const struct httpd_req *r) { return r->path; }
const char *httpd_query(const struct httpd_req *r) { return r->query; }
const char *httpd_peer(const struct httpd_req *r) { return r->c->peer; }

bool httpd_from_trusted_proxy(const struct httpd_req *r)
{
	for (char **t = r->c->h->trusted; t && *t; t++)
		if (!strcmp(*t, r->c->peer))
			return true;
	return false;
}
const char *httpd_local(const struct httpd_req *r) { return r->c->local; }
bool httpd_answered(const struct httpd_req *r) { return r->answered || r->c->job; }

const char *httpd_header(const struct httpd_req *r, const char *name)
{
	for (size_t i = 0; i < r->nheaders; i++)
		if (r->headers[i].name && !strcasecmp(r->headers[i].name, name))
			return r->headers[i].value ? r->headers[i].value : "";
	return NULL;
}

const char *httpd_body(const struct httpd_req *r, size_t *len)
{
	if (len)
		*len = r->body.len;
	return r->body.data;
}


char *httpd_query_param(const struct httpd_req *r, const char *name)
{
	return httpd_query_get(r->query, name);
}

char *httpd_query_get(const char *q, const char *name)
{
	size_t nlen = strlen(name);

	while (q && *q) {
		const char *amp = strchr(q, '&'), *end = amp ? amp : q + strlen(q);
		const char *eq = memchr(q, '=', (size_t)(end - q));
		const char *kend = eq ? eq : end;
		char *k = httpd_unescape(q, (size_t)(kend - q), true);
		bool match = k && strlen(k) == nlen && !memcmp(k, name, nlen);
		free(k);
		if (match)
			return eq ? httpd_unescape(eq + 1, (size_t)(end - eq - 1), true) : xstrdup("");
		q = amp ? amp + 1 : NULL;
	}
	return NULL;
}

/* ---- parser callbacks ---------------------------------------------------------------------- */

static int on_message_begin(http_parser *p)
{
	struct conn *c = p->data;

	c->in_request = true;
	c->req.start_ns = uv_hrtime();
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	c->req.header_bytes += n;
	if (c->req.header_bytes > c->h->cfg.max_header_bytes) {
		c->req.refuse = 414;
		return 1;
	}
	buf_add(&c->req.url, at, n);
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct httpd_req *r = &c->req;

	r->header_bytes += n;
	if (r->header_bytes > c->h->cfg.max_header_bytes) {
		r->refuse = 431;
		return 1;
	}
	if (!r->nheaders || r->last_was_value) {
		if (r->nheaders == MAX_HEADERS) {
			r->refuse = 431;
			return 1;
		}
		r->headers[r->nheaders].name = xstrndup(at, n);
		r->headers[r->nheaders].value = NULL;
		r->nheaders++;
	} else {
		struct header *hd = &r->headers[r->nheaders - 1];
		char *joined = xasprintf("%s%.*s", hd->name, (int)n, at);
		free(hd->name);
		hd->name = joined;
	}
	r->last_was_value = false;
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct httpd_req *r = &c->req;
	struct header *hd;
	char *joined;

	r->header_bytes += n;
	if (r->header_bytes > c->h->cfg.max_header_bytes) {
		r->refuse = 431;
		return 1;
	}
	hd = &r->headers[r->nheaders - 1];
	joined = xasprintf("%s%.*s", hd->value ? hd->value : "", (int)n, at);
	free(hd->value);
	hd->value = joined;
	r->last_was_value = true;
	return 0;
}

/* A header name is a token (RFC 9110 5.1, 5.6.2): no spaces (`Host : x`), separators or controls. */
static bool token_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

static int on_headers_complete(http_parser *p)
{
	struct conn *c = p->data;

	/* HTTP/1.x only: a request line without a version (HTTP/0.9) is malformed, another version
	 * is not served */
	if (p->http_major == 0) {
		c->req.refuse = 400;
		c->req.refuse_why = "a request line without an HTTP version";
		return -1;
	}
	if (p->http_major != 1) {
		c->req.refuse = 505;
		return -1;
	}
	for (size_t i = 0; i < c->req.nheaders; i++)
		if (!token_ok(c->req.headers[i].name)) {
			c->req.refuse = 400;
			c->req.refuse_why = "a header name that is not a token";
			return -1;
		}
	snprintf(c->req.method, sizeof(c->req.method), "%s", http_method_str((enum http_method)p->method));
	c->req.head = p->method == HTTP_HEAD;
	c->req.keep_alive = http_should_keep_alive(p);
	/* once, here: the claim sees the path and query, and the handlers after it */
	httpd__split_target(&c->req);
	if (!httpd__body_claim(c)) {
		bool chunked = p->flags & F_CHUNKED, big = p->content_length != ULLONG_MAX &&
							   p->content_length > c->h->cfg.max_body_bytes;
		/* at once, without the body: a client that waits for 100 gets this */
		if (c->req.body_refused && (chunked || big)) {
			c->req.early = true; /* the handlers answer, on the head alone (httpd_body_refuse) */
			return -1;
		}
		if (big) {
			c->req.refuse = 413;
			return -1;
		}
	}
	httpd__body_expect(c, p);
	/* HEAD answers carry a Content-Length but no body: tell the parser (matters for responses only,
	 * but returning 0 keeps request parsing as is). */
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	if (c->req.claimed) {
		if (httpd__body_data(c, at, n)) {
			c->req.early = true; /* the sink cut it off: answered now (HTTPD_SINK_STOP) */
			return 1;
		}
		return 0;
	}
	if (c->req.body.len + n > c->h->cfg.max_body_bytes) {
		c->req.refuse = 413;
		return 1;
	}
	buf_add(&c->req.body, at, n);
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct conn *c = p->data;

	c->body_streaming = false;
	if (c->cont_pending && !c->cont_sent)
		c->cont_pending = false; /* the whole body came without it: a 100 now would only be noise */
	/* One request at a time: stop here; the rest of the buffer waits for the response to finish. */
	http_parser_pause(p, 1);
	return 0;
}

const char *httpd__head_scan(struct head_scan *s, const char *data, size_t n)
{
	for (size_t i = 0; i < n && !s->done; i++) {
		char b = data[i];
		if (b == '\n') {
			if (!s->cr)
				return "a line ends with a bare LF (CRLF is the line end)";
			s->cr = false;
			if (s->line_len == 0 && s->lines > 0)
				s->done = true; /* the empty line: the head is over */
			else if (s->line_len > 0)
				s->lines++; /* (empty lines before the request line are skipped, as RFC 9112 allows) */
			s->line_len = 0;
			continue;
		}
		if (s->cr)
			return "a bare CR in the request head";
		if (b == '\r') {
			s->cr = true;
			continue;
		}
		if (s->line_len == 0 && s->lines > 0 && (b == ' ' || b == '\t'))
			return "a header line folded onto the one before (obsolete line folding)";
		s->line_len++;
	}
	return NULL;
}

const http_parser_settings httpd__parser_settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

/* ---- the request target -------------------------------------------------------------------- */

void httpd__split_target(struct httpd_req *r)
{
	const char *u = r->url.data;
	char *q;

	/* absolute-form (GET http://host/path): keep the path */
	if (!strncasecmp(u, "http://", 7) || !strncasecmp(u, "https://", 8)) {
		const char *s = strchr(strstr(u, "//") + 2, '/');
		u = s ? s : "/";
	}
	r->path = xstrdup(u);
	q = strchr(r->path, '?');
	if (q) {
		*q = '\0';
		r->query = q + 1;
	}
}
