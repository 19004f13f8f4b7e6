/*
 * http-url.c - URLs for the upstream client (http.h): escaping a path segment, the next page of a Link
 * header, and, for http.c, a URL's origin, a redirect's target, and a URL fit for a log.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "http-int.h"
#include "http.h"

char *hub_url_escape(const char *s, bool keep_slash)
{
	static const char hexd[] = "0123456789ABCDEF";
	struct buf b;

	buf_init(&b);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' || (keep_slash && *p == '/')) {
			buf_addch(&b, (char)*p);
		} else {
			char e[3] = { '%', hexd[*p >> 4], hexd[*p & 15] };
			buf_add(&b, e, 3);
		}
	}
	return buf_detach(&b, NULL);
}

char *hub_link_next(const char *link)
{
	const char *p = link;

	/* Link: <url>; rel="next", <url2>; rel="prev" */
	while (p && *p) {
		const char *lt = strchr(p, '<'), *gt, *end;
		if (!lt || !(gt = strchr(lt, '>')))
			return NULL;
		end = strchr(gt, ',');
		if (!end)
			end = gt + strlen(gt);
		for (const char *q = gt; q + 3 <= end; q++) {
			if (!strncasecmp(q, "rel", 3)) {
				const char *v = q + 3;
				while (v < end && (*v == ' ' || *v == '='))
					v++;
				if (*v == '"')
					v++;
				if (end - v >= 4 && !strncasecmp(v, "next", 4) &&
				    (v + 4 == end || v[4] == '"' || v[4] == ' ' || v[4] == ';'))
					return xstrndup(lt + 1, (size_t)(gt - lt - 1));
			}
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

/* scheme://host:port of url (default ports filled in), or NULL when it does not parse as http(s). */
char *http__url_origin(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;

	if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
	    !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
	    !curl_url_get(u, CURLUPART_HOST, &host, 0) &&
	    !curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) &&
	    (!strcmp(scheme, "http") || !strcmp(scheme, "https")))
		out = xasprintf("%s://%s:%s", scheme, host, port);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return out;
}

/* Resolve location against base. Returns a new URL or NULL. */
char *http__url_resolve(const char *base, const char *location)
{
	CURLU *u = curl_url();
	char *full = NULL, *out = NULL;

	if (u && !curl_url_set(u, CURLUPART_URL, base, 0) &&
	    !curl_url_set(u, CURLUPART_URL, location, CURLU_NON_SUPPORT_SCHEME) &&
	    !curl_url_get(u, CURLUPART_URL, &full, 0))
		out = xstrdup(full);
	curl_free(full);
	curl_url_cleanup(u);
	return out;
}

/* For logs: the URL without its query string (signed CDN URLs carry credentials there). */
char *http__url_for_log(const char *url)
{
	const char *q = strchr(url, '?');
	return q ? xstrndup(url, (size_t)(q - url)) : xstrdup(url);
}
