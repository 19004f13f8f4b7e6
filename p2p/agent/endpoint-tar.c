/*
 * endpoint-tar.c - a registry mirror's tar layer at the agent's local hub endpoint (endpoint.c has the
 * whole story; docs/agent.md, "The registry mirror"): the layer is the file between its header and
 * zeros, sent as the file's pieces verify; its digest is checked once the cache holds the file whole,
 * before it goes when it does already, after it (on the threadpool) when it was streamed first.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "hub/http/httpd.h"
#include "hub/hub.h"
#include "hub/oci.h"
#include "p2p/p2p.h"
#include "endpoint-int.h"

/* Is the file at path of s the content digest ("sha256:...") names (a raw layer's digest)? */
bool agent_ep_raw_layer_is(const struct agent_snap *s, const char *path, const char *digest)
{
	for (size_t i = 0; i < s->nknown; i++)
		if (!strcmp(s->known[i].path, path))
			return !strncmp(digest, "sha256:", 7) && !strcmp(s->known[i].sha256, digest + 7);
	return false;
}

/* On a worker: wait until every byte of the file is verified in the cache (4 MiB at a time, each
 * step with its own wait), open it, and check the layer's digest (once: oci.c remembers it). */
static void tar_whole(void *job)
{
	struct agent_ep *e = job;
	struct p2p_session *ses = e->a->ses;
	const int64_t step = 4 << 20;
	int64_t done = 0;
	char *path = NULL;
	const char *why = NULL;
	int have = 1, waited = 0;

	p2p_session_want_range(ses, e->btih, e->index, 0, e->size, 0);
	while (done < e->size && waited < READ_WAIT_S * 20 && !atomic_load(&e->a->quit)) {
		int64_t n = e->size - done < step ? e->size - done : step;
		have = p2p_session_have_range(ses, e->btih, e->index, done, n);
		if (have == 1) {
			done += n;
			waited = 0;
		} else if (have < 0 && have != HM_ERR_NOT_FOUND) {
			break;
		} else {
			p2p_session_wait_range(ses, e->btih, e->index, done, n, 50);
			if (++waited % 20 == 0)
				p2p_session_want_range(ses, e->btih, e->index, done, e->size - done, 0);
		}
	}
	if (done == e->size && (e->size == 0 || !p2p_session_file_path(ses, e->btih, e->index, &path)))
		e->fd = open(path ? path : "/dev/null", O_RDONLY | O_CLOEXEC);
	if (e->fd >= 0 && agent_oci_tar_check(e->a, e->oci_name, e->oci_ref, &e->layer, path ? path : "/dev/null",
					       e->size, &why)) {
		close(e->fd);
		e->fd = -1;
		e->why = xstrdup(why);
	}
	if (e->fd < 0 && !e->why)
		e->why = xstrdup(done < e->size ? "no peer and no mirror sent the file's bytes in time"
				 : "the file is not readable in the cache");
	free(path);
}

/* A streamed layer's digest, checked once its file is whole in the cache, off the loop (one at a time;
 * a GET meanwhile checks it itself): remembered when it matches, so that the next GET sends at once;
 * else said in the log, and the next GET refuses it (tar_whole). */
struct tar_check_job {
	uv_work_t w;
	struct agent *a;
	char *name, *digest, btih[41];
	int index;
	int64_t size;
	const char *why;
	bool done;
};

static void tar_check_work(uv_work_t *w)
{
	struct tar_check_job *j = w->data;
	struct agent_oci_layer l;
	char *path = NULL;

	if (atomic_load(&j->a->quit) || agent_oci_layer_find(j->a, j->name, j->digest, &l))
		return;
	if (!(l.header && l.checked_size == j->size) &&
	    !p2p_session_file_path(j->a->ses, j->btih, j->index, &path))
		j->done = !agent_oci_tar_check(j->a, j->name, j->digest, &l, path, j->size, &j->why);
	agent_oci_layer_release(&l);
	free(path);
}

static void tar_check_done(uv_work_t *w, int status)
{
	struct tar_check_job *j = w->data;

	(void)status;
	if (j->done)
		log_info("agent", "registry mirror: %s@%s checked (header, file and zeros)", j->name, j->digest);
	else if (j->why && !atomic_load(&j->a->quit))
		log_warn("agent", "registry mirror: %s@%s, streamed before its check: %s", j->name, j->digest, j->why);
	j->a->oci_checking = false;
	free(j->name);
	free(j->digest);
	free(j);
}

void agent_ep_tar_check_later(struct agent_ep *e)
{
	struct tar_check_job *j;

	if (e->a->oci_checking || atomic_load(&e->a->quit) ||
	    p2p_session_have_range(e->a->ses, e->btih, e->index, 0, e->size) != 1)
		return;
	j = xcalloc(1, sizeof(*j));
	j->a = e->a;
	j->name = xstrdup(e->oci_name);
	j->digest = xstrdup(e->oci_ref);
	memcpy(j->btih, e->btih, sizeof(j->btih));
	j->index = e->index;
	j->size = e->size;
	j->w.data = j;
	e->a->oci_checking = true;
	uv_queue_work(&e->a->loop, &j->w, tar_check_work, tar_check_done);
}

/* The layer's range: its header's part at once, then the file's as its pieces verify (the gate; e->off
 * and e->len are the file's part), then the zeros. */
static void tar_send(void *job, struct httpd_req *r)
{
	struct agent_ep *e = job;
	int fd = agent_ep_body_fd(e, r, 502);

	if (fd < 0)
		return;
	httpd_respond_file_framed_gated(r, e->ranged ? 206 : 200, "application/octet-stream",
					e->layer.header + e->sp.h0, (size_t)(e->sp.h1 - e->sp.h0), fd, e->sp.f0,
					e->sp.f1 - e->sp.f0, e->sp.zeros, agent_ep_gate, agent_ep_gate_release, e);
}

/* On the loop: the layer's header (the one checked before, else made again), the range of the whole
 * layer, then (not for HEAD) its bytes. A layer checked before, or whose file the cache lacks yet,
 * goes as the file's pieces verify (agent_ep_first_bytes, then the gate): every file byte has passed its
 * piece's hash, the header is hub/oci.c's, and the client checks the digest of the whole (the agent
 * too, after it: agent_ep_tar_check_later); one not checked yet whose file the cache holds whole is checked
 * first (tar_whole), and refused when it is not the manifest's digest. A range with none of the
 * file's bytes goes at once. */
void agent_ep_start_tar(struct agent_ep *e, struct httpd_req *r)
{
	bool checked = e->layer.header && e->layer.checked_size == e->size;
	int64_t total, want, b = 0;
	int rr;

	if (!checked && e->layer.header) {
		free(e->layer.header);
		e->layer.header = NULL;
	}
	if (!e->layer.header && hub_oci_tar_header(e->fpath, e->size, &e->layer.header, &e->layer.header_len)) {
		agent_ep_fail(r, 502, "the layer's tar header cannot be made for this file's name");
		agent_ep_free(e);
		return;
	}
	total = (int64_t)e->layer.header_len + e->size + hub_oci_tar_tail(e->size);
	json_object_set_new(e->headers, "Accept-Ranges", json_string("bytes")); /* once, the mirror's or not */
	agent_ep_set_headers(r, e->headers, false);
	rr = httpd_parse_range(e->range, total, &e->off, &b);
	if (rr < 0) {
		httpd_add_headerf(r, "Content-Range", "bytes */%" PRId64, total);
		agent_ep_fail(r, 416, "range not satisfiable");
		agent_ep_free(e);
		return;
	}
	e->len = rr > 0 ? b - e->off + 1 : total;
	if (rr == 0)
		e->off = 0;
	else
		httpd_add_headerf(r, "Content-Range", "bytes %" PRId64 "-%" PRId64 "/%" PRId64, e->off, b, total);
	e->ranged = rr > 0;
	want = e->len;
	hub_oci_tar_span((int64_t)e->layer.header_len, e->size, e->off, e->off + e->len, &e->sp);
	e->off = e->sp.f0; /* from here on, the file's part (agent_ep_first_bytes, the gate) */
	e->len = e->sp.f1 - e->sp.f0;
	if (httpd_etag_matches(e->inm, json_string_value(json_object_get(e->headers, "ETag")))) {
		httpd_respond_str(r, 304, NULL, "");
	} else if (!strcmp(e->method, "HEAD")) {
		/* the headers of the answer, Content-Length included; no body */
		httpd_respond_file_framed(r, rr ? 206 : 200, "application/octet-stream", NULL, 0, -1, 0, 0, want);
	} else if (e->len == 0) { /* the header's part and zeros only */
		httpd_respond_file_framed(r, rr ? 206 : 200, "application/octet-stream", e->layer.header + e->sp.h0,
					  (size_t)(e->sp.h1 - e->sp.h0), -1, 0, 0, e->sp.zeros);
	} else {
		p2p_session_touch(e->a->ses, e->btih, e->index, e->off, e->len); /* read now: not evicted under it */
		if (!checked && p2p_session_have_range(e->a->ses, e->btih, e->index, 0, e->size) == 1) {
			httpd_defer(r, tar_whole, tar_send, e);
		} else {
			e->tar_unchecked = !checked; /* checked after it (agent_ep_tar_check_later) */
			httpd_defer(r, agent_ep_first_bytes, tar_send, e);
		}
		return;
	}
	agent_ep_free(e);
}

/* On the loop, with the snapshot in the session: find the file, take the range, wait for its start. */
