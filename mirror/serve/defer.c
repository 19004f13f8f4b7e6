/*
 * defer.c - a route's slow part, off the loop (docs/security.md, "No request may stall the server").
 * The route checks the request on the loop (resolve, access: quick lookups), copies what the rest
 * needs into a job, and httpd_defer runs the job on a worker of libuv's threadpool with a catalog
 * connection of its own: a SQLite connection is used by one thread at a time, and the catalog runs in
 * WAL mode, so these readers run beside the loop's connection and a sync's writer. The JSON the job
 * builds is dumped and hashed (ETag) on the worker too; the loop only sends it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "routes-int.h"

/* The workers' catalog connections, defer.c's part of the routes (rt->pool): the idle ones, as many as
 * ever ran at once, at most POOL_MAX. */
#define POOL_MAX 8
struct mirror__pool {
	pthread_mutex_t mu;
	struct catalog *idle[POOL_MAX];
	size_t n;
	char *catalog_path;
};

struct mirror__pool *mirror__pool_new(struct mirror_data *d)
{
	struct mirror__pool *p = xcalloc(1, sizeof(*p));

	pthread_mutex_init(&p->mu, NULL);
	p->catalog_path = mirror_data_path(d, MIRROR_DATA_CATALOG);
	return p;
}

void mirror__pool_free(struct mirror__pool **p)
{
	if (!p || !*p)
		return;
	while ((*p)->n)
		catalog_free(&(*p)->idle[--(*p)->n]);
	pthread_mutex_destroy(&(*p)->mu);
	free((*p)->catalog_path);
	free(*p);
	*p = NULL;
}

/* A catalog connection for this worker: an idle one of the pool, or a new one. */
struct catalog *mirror__pool_take(struct mirror_routes *rt)
{
	struct mirror__pool *p = rt->pool;
	struct catalog *c = NULL;
	char *err = NULL;

	pthread_mutex_lock(&p->mu);
	if (p->n)
		c = p->idle[--p->n];
	pthread_mutex_unlock(&p->mu);
	if (!c && catalog_open(p->catalog_path, &c, &err)) {
		log_warn("serve", "a worker cannot open the catalog: %s", err ? err : "?");
		free(err);
		c = NULL;
	}
	return c;
}

/* Back to the pool (it holds as many as ever ran at once, at most POOL_MAX). */
void mirror__pool_give(struct mirror_routes *rt, struct catalog *c)
{
	struct mirror__pool *p = rt->pool;

	if (!c)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->n < POOL_MAX) {
		p->idle[p->n++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	catalog_free(&c);
}

void mirror__job_header(struct mirror__job *j, const char *name, const char *fmt, ...)
{
	va_list ap;

	j->headers = xreallocarray(j->headers, j->nheaders + 2, sizeof(*j->headers));
	j->headers[j->nheaders++] = xstrdup(name);
	va_start(ap, fmt);
	j->headers[j->nheaders++] = xvasprintf(fmt, ap);
	va_end(ap);
}

/* On a worker: build the answer with a connection of the pool, and dump it. */
static void job_work(void *ud)
{
	struct mirror__job *j = ud;
	struct catalog *cat = mirror__pool_take(j->rt);

	if (cat)
		j->build(j, cat);
	mirror__pool_give(j->rt, cat);
	if (j->fd > 0 && j->status)
		return; /* a file as it is */
	if (!j->status) {
		json_decref(j->body);
		free(j->text);
		j->text = NULL;
		j->ctype = NULL;
		j->status = 503;
		j->body = json_pack("{s:s}", "error", "catalog unavailable");
	}
	if (j->ctype)
		return; /* text as it is */
	j->text = mirror__json_dump(j->body, &j->len, j->status == 200 ? j->etag : NULL);
	j->body = NULL;
}

/* On the loop: send it, unless the client is gone. */
static void job_done(void *ud, struct httpd_req *req)
{
	struct mirror__job *j = ud;

	if (req) {
		for (size_t i = 0; i + 1 < j->nheaders; i += 2)
			httpd_add_header(req, j->headers[i], j->headers[i + 1]);
		if (j->fd > 0 && j->status && j->parts) {
			httpd_respond_spliced(req, j->status, j->ctype_own ? j->ctype_own : "application/octet-stream",
					      j->part_mem, j->part_mem_len, j->fd, j->parts, j->nparts);
			j->fd = 0;
		} else if (j->fd > 0 && j->status) {
			httpd_respond_file(req, j->status, j->ctype_own ? j->ctype_own : "application/octet-stream",
					   j->fd, j->fd_offset, j->fd_length);
			j->fd = 0;
		} else if (j->ctype)
			httpd_respond(req, j->status, j->ctype, j->text, j->len);
		else
			mirror__respond_dumped(req, j->status, j->text, j->len, j->status == 200 ? j->etag : NULL);
	}
	for (size_t i = 0; i < j->nheaders; i++)
		free(j->headers[i]);
	free(j->headers);
	free(j->text);
	free(j->ctype_own);
	free(j->parts);
	free(j->part_mem);
	if (j->fd > 0)
		close(j->fd);
	json_decref(j->body);
	j->release(j);
}

void mirror__defer(struct mirror_routes *rt, struct httpd_req *req, struct mirror__job *j)
{
	j->rt = rt;
	httpd_defer(req, job_work, job_done, j);
}

void mirror__defer_aside(struct mirror_routes *rt, struct httpd_req *req, struct mirror__job *j)
{
	j->rt = rt;
	httpd_defer_aside(req, job_work, job_done, j);
}

void mirror__defer_write(struct mirror_routes *rt, struct httpd_req *req, struct mirror__job *j)
{
	j->rt = rt;
	httpd_defer_write(req, job_work, job_done, j);
}
