/*
 * http-blocking.c - the blocking calls of the upstream client (http.h: hub_http_get_blocking,
 * hub_http_call_blocking), for the CLI and workers off any loop: one curl easy handle each, the same
 * CAs as the loop's requests.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/xmalloc.h"
#include "hubmirror-config.h"
#include "http-int.h"
#include "http.h"

struct sink {
	struct buf b;
	size_t max;
	bool too_big;
};

static size_t sink_write(char *data, size_t size, size_t n, void *ud)
{
	struct sink *s = ud;

	if (s->b.len + size * n > s->max) {
		s->too_big = true;
		return 0;
	}
	buf_add(&s->b, data, size * n);
	return size * n;
}

int hub_http_get_blocking(const char *url, const char *token, size_t max, char **body, size_t *len, long *status,
			  char **errmsg)
{
	struct hub_http_call c = { .url = url, .token = token, .max = max };

	return hub_http_call_blocking(&c, body, len, status, errmsg);
}

/* libcurl's header callback for hub_http_call: one "Name: value" line at a time (a new status line
 * after an interim answer starts over, which the caller sees as headers seen twice). */
static size_t header_line(char *data, size_t size, size_t n, void *ud)
{
	const struct hub_http_call *c = ud;
	size_t len = size * n;
	char *line = xstrndup(data, len), *colon = strchr(line, ':'), *v, *end;

	if (colon) {
		*colon = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		for (end = v + strlen(v); end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '); end--)
			;
		*end = '\0';
		c->on_header(c->ud, line, v);
	}
	free(line);
	return len;
}

/* libcurl's progress callback for hub_http_call: non-zero ends the transfer (c->cancel set). */
static int cancelled(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	const struct hub_http_call *c = ud;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return atomic_load(c->cancel) ? 1 : 0;
}

int hub_http_call_blocking(const struct hub_http_call *c, char **body, size_t *len, long *status, char **errmsg)
{
	CURL *e = curl_easy_init();
	struct sink s = { .max = c->max };
	char err[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdr = NULL;
	CURLcode cc;
	int r = 0;

	if (!e)
		return HM_ERR_CURL;
	buf_init(&s.b);
	if (c->token && *c->token) {
		/* no redirects are followed here, so the token reaches this URL's host only */
		char *a = xasprintf("Authorization: Bearer %s", c->token);
		hdr = curl_slist_append(hdr, a);
		free(a);
	}
	if (c->body) {
		char *ct = xasprintf("Content-Type: %s", c->body_type ? c->body_type : "application/json");
		hdr = curl_slist_append(hdr, ct);
		free(ct);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(c->body_len ? c->body_len : strlen(c->body)));
	}
	for (const char *const *h = c->headers; h && *h; h++)
		hdr = curl_slist_append(hdr, *h);
	if (c->method && !strcmp(c->method, "HEAD"))
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	else if (c->method)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method);
	if (c->on_header) {
		curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_line);
		curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
	}
	if (hdr)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
	if (c->unix_socket)
		curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
	curl_easy_setopt(e, CURLOPT_URL, c->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	http__trust_cas(e);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms > 0 ? c->connect_timeout_ms : 10000L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, c->timeout_s > 0 ? c->timeout_s : 120L);
	if (c->stall_s > 0) {
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, c->stall_s);
	}
	if (c->cancel) {
		curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, cancelled);
		curl_easy_setopt(e, CURLOPT_XFERINFODATA, c);
		curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	}
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_USERAGENT, "hubmirror/" HUBMIRROR_VERSION);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, err);
	cc = curl_easy_perform(e);
	if (s.too_big) {
		r = -EFBIG;
	} else if (cc == CURLE_COULDNT_CONNECT && c->unix_socket) {
		r = -ECONNREFUSED;
		if (errmsg)
			*errmsg = xstrdup(err[0] ? err : curl_easy_strerror(cc));
	} else if (cc != CURLE_OK) {
		r = HM_ERR_CURL;
		if (errmsg)
			*errmsg = xstrdup(err[0] ? err : curl_easy_strerror(cc));
	} else {
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
		*len = s.b.len;
		*body = buf_detach(&s.b, NULL);
	}
	buf_release(&s.b);
	curl_easy_cleanup(e);
	curl_slist_free_all(hdr);
	return r;
}
