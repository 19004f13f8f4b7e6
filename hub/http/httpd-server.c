/*
 * httpd-server.c - the server as a whole (see httpd.h): listening on TCP or a unix socket, the
 * handler chain, routes and the observer, statistics, draining at shutdown and freeing. Each
 * connection's life is httpd.c's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "httpd-int.h"

static int parse_listen(const char *s, struct sockaddr_storage *ss)
{
	const char *colon = strrchr(s, ':');
	char host[128];
	int port;
	size_t hl;

	if (!colon)
		return UV_EINVAL;
	port = atoi(colon + 1);
	if (port < 0 || port > 65535)
		return UV_EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= sizeof(host))
		return UV_EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		host[hl - 1] = '\0';
		return uv_ip6_addr(host + 1, port, (struct sockaddr_in6 *)ss);
	}
	if (!*host)
		return uv_ip4_addr("0.0.0.0", port, (struct sockaddr_in *)ss);
	return uv_ip4_addr(host, port, (struct sockaddr_in *)ss);
}

static void listener_closed(uv_handle_t *handle);

static int listen_unix(struct httpd *h, const char *path, struct httpd **out)
{
	int r;

	h->is_unix = true;
	uv_pipe_init(h->loop, &h->unix_listener, 0);
	h->unix_listener.data = h;
	r = uv_pipe_bind(&h->unix_listener, path);
	if (!r)
		r = uv_listen((uv_stream_t *)&h->unix_listener, 128, httpd__on_connection);
	if (r) {
		uv_close((uv_handle_t *)&h->unix_listener, listener_closed); /* frees h */
		return r;
	}
	*out = h;
	return 0;
}

int httpd_new(uv_loop_t *loop, const struct httpd_config *cfg, struct httpd **out)
{
	struct httpd *h;
	struct sockaddr_storage ss;
	int namelen = sizeof(ss), r;

	memset(&ss, 0, sizeof(ss));
	if (!cfg->listen || !skip_prefix(cfg->listen, "unix:")) {
		r = parse_listen(cfg->listen ? cfg->listen : "127.0.0.1:8080", &ss);
		if (r)
			return r;
	}
	h = xcalloc(1, sizeof(*h));
	h->loop = loop;
	h->cfg = *cfg;
	if (!h->cfg.max_header_bytes)
		h->cfg.max_header_bytes = 16384;
	if (!h->cfg.max_body_bytes)
		h->cfg.max_body_bytes = 1 << 20;
	if (!h->cfg.header_timeout_ms)
		h->cfg.header_timeout_ms = 15000;
	if (!h->cfg.body_timeout_ms)
		h->cfg.body_timeout_ms = 60000;
	if (!h->cfg.idle_timeout_ms)
		h->cfg.idle_timeout_ms = 75000;
	if (!h->cfg.write_timeout_ms)
		h->cfg.write_timeout_ms = 120000;
	if (!h->cfg.max_connections)
		h->cfg.max_connections = 16384;
	if (!h->cfg.max_workers)
		h->cfg.max_workers = 2;
	if (!h->cfg.max_waiting)
		h->cfg.max_waiting = 256;
	if (!h->cfg.max_workers_aside)
		h->cfg.max_workers_aside = 2;
	if (!h->cfg.max_workers_write)
		h->cfg.max_workers_write = 2;
	if (cfg->trusted_proxies)
		h->trusted = str_split(cfg->trusted_proxies, ", ", NULL);
	h->cfg.trusted_proxies = NULL; /* kept split in h->trusted */
	if (cfg->listen && skip_prefix(cfg->listen, "unix:"))
		return listen_unix(h, cfg->listen + 5, out);
	uv_tcp_init(loop, &h->listener);
	h->listener.data = h;
	r = uv_tcp_bind(&h->listener, (struct sockaddr *)&ss, 0);
	if (!r)
		r = uv_listen((uv_stream_t *)&h->listener, 1024, httpd__on_connection);
	if (!r)
		r = uv_tcp_getsockname(&h->listener, (struct sockaddr *)&ss, &namelen);
	if (r) {
		uv_close((uv_handle_t *)&h->listener, listener_closed); /* frees h */
		return r;
	}
	h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	*out = h;
	return 0;
}

void httpd_add_handler(struct httpd *h, httpd_handler_fn fn, void *ud)
{
	h->handlers = xreallocarray(h->handlers, h->nhandlers + 1, sizeof(*h->handlers));
	h->handlers[h->nhandlers].fn = fn;
	h->handlers[h->nhandlers].ud = ud;
	h->nhandlers++;
}

int httpd_port(const struct httpd *h)
{
	return h->port;
}

void httpd_set_route(struct httpd_req *r, const char *route)
{
	r->route = route;
}

void httpd_set_observer(struct httpd *h, httpd_observer_fn fn, void *ud)
{
	h->observer = fn;
	h->observer_ud = ud;
}

void httpd_get_stats(const struct httpd *h, struct httpd_stats *out)
{
	*out = h->stats;
}

void httpd__destroy(struct httpd *h)
{
	for (char **t = h->trusted; t && *t; t++)
		free(*t);
	free(h->trusted);
	free(h->handlers);
	free(h);
}

/* The server's memory goes when the listener has closed and no deferred job runs any more (their
 * job_after calls need it). */
static void listener_closed(uv_handle_t *handle)
{
	struct httpd *h = handle->data;

	h->freed = true;
	if (!h->stats.deferred_running)
		httpd__destroy(h);
}

/* The drain's listener close is done: if httpd_free came meanwhile, finish what it began. */
static void listener_closed_draining(uv_handle_t *handle)
{
	struct httpd *h = handle->data;

	h->listener_gone = true;
	if (h->free_pending)
		listener_closed(handle);
}

void httpd_drain(struct httpd *h, void (*done)(void *ud), void *ud)
{
	struct conn *c, *next;

	if (h->draining || h->closing)
		return;
	h->draining = true;
	h->drained = done;
	h->drained_ud = ud;
	uv_close(h->is_unix ? (uv_handle_t *)&h->unix_listener : (uv_handle_t *)&h->listener, listener_closed_draining);
	/* idle keep-alive connections go now: nothing of theirs is in flight */
	for (c = h->conns; c; c = next) {
		next = c->next;
		if (c->state == C_READING && !c->in_request && c->rlen == c->roff)
			httpd__conn_close(c); /* the last one calls done */
	}
	if (!h->conns && h->drained) {
		h->drained = NULL;
		done(ud);
	}
}

void httpd_free(struct httpd **hp)
{
	struct httpd *h = hp ? *hp : NULL;

	if (!h)
		return;
	h->drained = NULL; /* no callback from the closes below */
	h->closing = true;
	while (h->conns)
		httpd__conn_close(h->conns); /* detaches their jobs */
	for (unsigned l = 0; l < 2; l++) {
		while (h->waiting[l]) { /* jobs not started: never run */
			struct httpd__job *j = h->waiting[l];
			h->waiting[l] = j->next;
			h->stats.deferred_waiting--;
			j->done(j->ud, NULL);
			free(j);
		}
		h->waiting_tail[l] = NULL;
	}
	if (h->listener_gone) {
		h->freed = true;
		if (!h->stats.deferred_running)
			httpd__destroy(h);
	} else if (h->draining) {
		h->free_pending = true; /* the drain's close callback finishes */
	} else {
		uv_close(h->is_unix ? (uv_handle_t *)&h->unix_listener : (uv_handle_t *)&h->listener, listener_closed);
	}
	*hp = NULL;
}
