/*
 * http-int.h - what the files of the upstream client (http.c, http-url.c, http-blocking.c) share;
 * nothing outside hub/ includes it.
 */
#ifndef HM_HUB_HTTP_INT_H
#define HM_HUB_HTTP_INT_H

#include <curl/curl.h>

/* scheme://host:port of url (default ports filled in), or NULL when it does not parse as http(s). */
char *http__url_origin(const char *url);

/* Resolve location against base. Returns a new URL or NULL. */
char *http__url_resolve(const char *base, const char *location);

/* For logs: the URL without its query string (signed CDN URLs carry credentials there). */
char *http__url_for_log(const char *url);

/* The CAs an operator set up for hubmirror's own clients (http.c). */
void http__trust_cas(CURL *e);

#endif
