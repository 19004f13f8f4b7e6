/*
 * httpd.c - HTTP/1.1 server on libuv + http-parser (see httpd.h for the contract).
 *
 * A connection is one of:
 *   READING  poll(readable): bytes go through http-parser; when a request is complete the parser is
 *            paused (later pipelined bytes stay in the buffer) and the handler chain answers it. A
 *            body a handler claimed (httpd-body.c) goes to its sink as it comes, read BODY_CHUNK at
 *            a time, its progress bounded by a body timer instead of the header timer.
 *   WRITING  the response goes out with send()/sendfile() until EAGAIN, then poll(writable).
 *            Nothing is read meanwhile, so a client pipelining 10,000 requests is throttled by TCP.
 *   DEFERRED the handler gave the answer to httpd_defer: a job computes it on libuv's threadpool.
 *            Nothing is read or written and no timer runs until its done callback answers on the
 *            loop (then WRITING as usual); if the connection closes meanwhile, the job is detached
 *            from it and its done callback gets no request.
 *   LINGER   after refusing a request it did not read to the end (too large, malformed): our side
 *            is shut down and what the client still sends is read and dropped for a short while,
 *            because closing with unread bytes sends a reset that can destroy the answer in flight.
 * After a response, keep-alive connections parse what is already buffered before reading again (in
 * a loop, not by recursion: thousands of pipelined requests may be buffered). A connection that
 * goes idle gives back its buffers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>

#include "base/buf.h"
#include "base/bug.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "httpd-int.h"

static void conn_on_poll(uv_poll_t *p, int status, int events);

/* Watch the socket for events; a no-op when that is already so, which saves an epoll_ctl per
 * sendfile chunk of a big answer. */
static void conn_watch(struct conn *c, int events)
{
	if (events)
		events |= c->tls_want; /* TLS may wait for the other direction (a handshake, a key update) */
	if (c->watching == events)
		return;
	if (events)
		uv_poll_start(&c->poll, events, conn_on_poll);
	else
		uv_poll_stop(&c->poll);
	c->watching = events;
}

/* A reading connection watches for bytes, and for room to send a "100 Continue" it still owes. */
static void conn_watch_reading(struct conn *c)
{
	conn_watch(c, UV_READABLE | (c->cont_pending ? UV_WRITABLE : 0));
}
static void conn_process(struct conn *c);

/* (responses: httpd-respond.c) */

/* ---- connection lifecycle ---------------------------------------------------------------------- */

static void req_reset(struct httpd_req *r)
{
	BUG_ON(r->sink_held); /* a claimed body's sink was taken or abandoned when its request ended */
	r->claimed = false;
	r->sink_full = false;
	r->route = NULL;
	for (size_t i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	r->nheaders = 0;
	r->last_was_value = false;
	r->header_bytes = 0;
	buf_reset(&r->url);
	free(r->path);
	r->path = NULL;
	r->query = NULL;
	buf_reset(&r->body);
	buf_reset(&r->resp_head);
	r->answered = false;
	r->refuse = 0;
	r->refuse_why = NULL;
	r->body_refused = 0;
	r->body_refused_why[0] = '\0';
	r->early = false;
	r->status = 0;
	r->method[0] = '\0';
}

static void set_timer(struct conn *c, enum conn_timer kind);
static void conn_write(struct conn *c);

/* The answer's file is sent or abandoned: close it and let its gate go. */
static void file_done(struct conn *c)
{
	if (c->file_fd >= 0)
		close(c->file_fd);
	c->file_fd = -1;
	if (c->gate_release)
		c->gate_release(c->gate_ud);
	c->gate = NULL;
	c->gate_release = NULL;
	c->gate_ud = NULL;
	free(c->tls_buf); /* a TLS body's slice buffer: not kept between answers */
	c->tls_buf = NULL;
	free(c->parts);
	c->parts = NULL;
	c->nparts = c->part_at = 0;
	free(c->part_mem);
	c->part_mem = NULL;
}

/* A big buffer of c's (TRIM_AFTER or more: a 900 KB body, a streamed body's read buffer) is about to
 * be freed. It came from the heap among thousands of connections' small blocks, which pin its pages
 * once it is freed: malloc_trim gives them back before the next answer (t0420: 2,000 idle connections
 * after fifty such bodies held 17-53 KiB each instead of 3). */
static void conn_note_big(struct conn *c)
{
	if (c->out.cap >= TRIM_AFTER || c->req.url.cap >= TRIM_AFTER || c->req.body.cap >= TRIM_AFTER ||
	    c->req.resp_head.cap >= TRIM_AFTER || (c->rbuf && c->rcap >= TRIM_AFTER))
		c->h->trim_pending = true;
}

static void conn_handle_closed(uv_handle_t *handle)
{
	struct conn *c = handle->data;

	if (--c->closing_handles)
		return;
	req_reset(&c->req);
	buf_release(&c->req.url);
	buf_release(&c->req.body);
	buf_release(&c->req.resp_head);
	buf_release(&c->out);
	free(c->rbuf);
	free(c);
}

void httpd__conn_close(struct conn *c)
{
	struct httpd *h = c->h;

	if (c->state == C_CLOSING)
		return;
	c->state = C_CLOSING;
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	h->stats.connections_open--;
	conn_note_big(c); /* (here: the server may be gone by the time its handles closed) */
	if (h->draining && !h->conns && h->drained) {
		void (*done)(void *) = h->drained;
		h->drained = NULL; /* once */
		done(h->drained_ud);
	}
	if (c->job) {
		c->job->c = NULL; /* its done callback gets no request */
		c->job = NULL;
	}
	httpd__body_abandon(c); /* closed mid-body */
	file_done(c);
	uv_poll_stop(&c->poll);
	uv_timer_stop(&c->timer);
	httpd__tls_close(c);
	close(c->fd);
	c->closing_handles = 2;
	uv_close((uv_handle_t *)&c->poll, conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

/* Bytes the client sent that we have not read yet (0 when unknown). */
static int conn_unread(struct conn *c)
{
	int n = 0;

	return ioctl(c->fd, FIONREAD, &n) == 0 && n > 0 ? n : 0;
}

static void conn_read(struct conn *c);

/* An idle or header timer is due while bytes from the client wait in our receive buffer. libuv runs
 * due timers after each turn's I/O callbacks, before it polls again; when a turn takes long
 * (thousands of connections, a CPU shared with other work, a 1 MiB body read 128 KiB per turn), a
 * timer can fire although the client sent everything in time: it is we who did not read it, and
 * closing then would reset a legitimate client (the bytes are unread). So read first: for a header
 * timer, all that is there, and close only if the request is still incomplete; for an idle timer,
 * the bytes start a request, which gets its own header timer. True when the connection lives on. */
#define CATCH_UP_FULL ((uint64_t)64 << 10) /* a catch-up that read this much was held back by us */

static bool conn_catch_up(struct conn *c)
{
	uint64_t answered = c->h->stats.requests_total, got0;

	if (c->state != C_READING || (c->timer_kind != T_IDLE && c->timer_kind != T_HEADER) ||
	    !conn_unread(c))
		return false;
	if (c->timer_kind == T_IDLE) {
		conn_read(c);
		return c->state != C_CLOSING;
	}
	/* Bounded, in case a client streams faster than we parse: a request is at most a 1 MiB body
	 * and its headers, and the limits refuse more (414/431/413 end the loop). */
	got0 = c->bytes_in;
	for (int i = 0; i < 64 && c->state == C_READING && c->h->stats.requests_total == answered &&
			!c->body_streaming && conn_unread(c) > 0; i++)
		conn_read(c);
	if (c->state == C_CLOSING)
		return false;
	if (c->state != C_READING || c->h->stats.requests_total != answered || c->body_streaming)
		return true; /* (a claimed body's progress has its own timer now) */
	/* Still short, but what was waiting filled our receive window: the rest of a big request sent in
	 * time sits in the client's send buffer because a busy server had not read (2,000 connections
	 * under ASan: t0420). Such a client is pushing at full speed, not trickling: another header
	 * timeout for it. Bounded, each one needing a full window's worth: a request is at most ~1 MiB. */
	if (c->bytes_in - got0 >= CATCH_UP_FULL) {
		set_timer(c, T_HEADER);
		return true;
	}
	return false;
}

static void set_timer_ms(struct conn *c, enum conn_timer kind, uint64_t ms);

/* A claimed body's timer is not restarted by each read (a uv_timer_start per recv, thousands a second,
 * costs): it is set for the whole body_timeout_ms, and when it fires it looks at when the last byte
 * came (c->body_at) and sets itself again for the rest. Bytes the client sent that we did not read yet
 * (a busy loop) are read first, as conn_catch_up does for a head. True when the connection goes on. */
static bool body_timer_early(struct conn *c)
{
	uint64_t limit = c->h->cfg.body_timeout_ms, at = c->body_at, quiet = uv_now(c->h->loop) - at;

	if (quiet < limit) {
		set_timer_ms(c, T_BODY, limit - quiet);
		return true;
	}
	if (c->state != C_READING || !conn_unread(c))
		return false;
	conn_read(c);
	/* only bytes of the body count: a trickle of chunk-size lines is no progress */
	return c->state != C_CLOSING && (!c->body_streaming || c->body_at != at);
}

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	enum conn_timer kind = c->timer_kind;
	double after = (double)(uv_hrtime() - c->timer_set_ns) / 1e9;
	int unread;

	if (kind == T_GATE) { /* a gated body: ask again (the gate decides when to give up) */
		conn_write(c);
		return;
	}
	if (kind == T_BODY && body_timer_early(c))
		return;
	unread = conn_unread(c);

	if (conn_catch_up(c)) {
		log_debug("httpd", "%s: %s timeout after %.2f s with %d bytes unread: read them, the "
			  "connection goes on", c->peer, timer_names[kind], after, unread);
		return;
	}
	if (c->state == C_CLOSING)
		return; /* reading met the client's close */
	log_debug("httpd", "%s: %s timeout after %.2f s (%s): closing with %d bytes unread", c->peer,
		  timer_names[kind], after, c->in_request ? "in a request" : "between requests",
		  conn_unread(c));
	httpd__conn_close(c);
}

static void set_timer_ms(struct conn *c, enum conn_timer kind, uint64_t ms)
{
	c->timer_kind = kind;
	c->timer_set_ns = uv_hrtime();
	uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void set_timer(struct conn *c, enum conn_timer kind)
{
	const struct httpd_config *cfg = &c->h->cfg;
	unsigned ms = kind == T_IDLE ? cfg->idle_timeout_ms : kind == T_HEADER ? cfg->header_timeout_ms :
		      kind == T_WRITE ? cfg->write_timeout_ms : kind == T_GATE ? GATE_RETRY_MS :
		      kind == T_BODY ? cfg->body_timeout_ms : LINGER_MS;

	set_timer_ms(c, kind, ms);
}

static void log_access(struct conn *c)
{
	struct httpd_req *r = &c->req;
	char when[64];
	time_t now = time(NULL);
	struct tm tm;
	const char *path = r->path ? r->path : "-", *rest = NULL;
	int keep = 0;

	if (!c->h->cfg.access_log)
		return;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%d/%b/%Y:%H:%M:%S +0000", &tm);
	/* Common log format, then the time taken. The query string is left out: signed URLs and
	 * similar carry credentials there; so is a path segment cfg.log_redact names (a capability). */
	for (const char *const *p = c->h->cfg.log_redact; p && *p; p++)
		if (!strncmp(path, *p, strlen(*p))) {
			keep = (int)strlen(*p);
			rest = strchr(path + keep, '/');
			break;
		}
	fprintf(c->h->cfg.access_log, "%s - - [%s] \"%s %.*s%s%s%s HTTP/1.1\" %d %llu %.3f\n", c->peer, when,
		r->method[0] ? r->method : "-", keep ? keep : (int)strlen(path), path, keep ? "REDACTED" : "",
		keep && rest ? rest : "", r->query ? "?..." : "", r->status,
		(unsigned long long)c->sent_this_response, (double)(uv_hrtime() - r->start_ns) / 1e9);
	fflush(c->h->cfg.access_log);
}

/* The pieces of a spliced body (httpd_respond_spliced), as conn_flush sends a file. */
static int flush_parts(struct conn *c)
{
	for (size_t burst = 0; c->part_at < c->nparts;) {
		const struct httpd_part *p = &c->parts[c->part_at];
		uint64_t left = p->len - c->part_sent;
		off_t off = (off_t)(p->off + c->part_sent);
		ssize_t n = 0;
		if (left && p->file)
			n = httpd__sendfile(c, c->file_fd, &off, left > FILE_CHUNK ? FILE_CHUNK : (size_t)left);
		else if (left)
			n = httpd__send(c, c->part_mem + p->off + c->part_sent, (size_t)left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		if (n == 0 && left)
			return -1; /* the file shrank under us: cannot keep the promised length */
		c->part_sent += (uint64_t)n;
		c->sent_this_response += (uint64_t)n;
		c->h->stats.bytes_sent += (uint64_t)n;
		burst += (size_t)n;
		if (c->part_sent == p->len) {
			c->part_at++;
			c->part_sent = 0;
		}
		if (c->part_at < c->nparts && burst >= FILE_BURST)
			return 0; /* yield to other connections; the poll says when to go on */
	}
	return 1;
}

/* Write as much as the socket takes. Returns 1 when everything is out, 0 when it would block,
 * 2 when a gated body waits for its bytes, -1 on a dead connection. */
static int conn_flush(struct conn *c)
{
	if (c->cont_pending) { /* the rest of a "100 Continue" goes before the answer */
		int k = httpd__continue_flush(c);
		if (k <= 0)
			return k;
	}
	while (c->out_off < c->out.len) {
		ssize_t n = httpd__send(c, c->out.data + c->out_off, c->out.len - c->out_off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		c->out_off += (size_t)n;
		c->sent_this_response += (uint64_t)n;
		c->h->stats.bytes_sent += (uint64_t)n;
	}
	if (c->part_at < c->nparts) {
		int k = flush_parts(c);
		if (k != 1)
			return k;
	}
	for (size_t burst = 0; c->file_left > 0; ) {
		off_t off = (off_t)c->file_off;
		size_t want = c->file_left > FILE_CHUNK ? FILE_CHUNK : (size_t)c->file_left;
		ssize_t n;
		if (c->gate) {
			int64_t ready = c->gate(c->gate_ud, c->file_off, (int64_t)want);
			if (ready < 0)
				return -1; /* the bytes will not come: the client must not take a short body */
			if (ready == 0)
				return 2;
			if ((size_t)ready < want)
				want = (size_t)ready;
		}
		n = httpd__sendfile(c, c->file_fd, &off, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		if (n == 0)
			return -1; /* the file shrank under us: cannot keep the promised length */
		c->file_off += n;
		c->file_left -= n;
		c->sent_this_response += (uint64_t)n;
		c->h->stats.bytes_sent += (uint64_t)n;
		burst += (size_t)n;
		if (c->file_left > 0 && burst >= FILE_BURST)
			return 0; /* yield to other connections; the poll says when to go on */
	}
	while (c->zeros_left > 0) { /* a framed file's tail (httpd_respond_file_framed) */
		static const char zeros[16384];
		size_t want = c->zeros_left > (int64_t)sizeof(zeros) ? sizeof(zeros) : (size_t)c->zeros_left;
		ssize_t n = httpd__send(c, zeros, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		c->zeros_left -= n;
		c->sent_this_response += (uint64_t)n;
		c->h->stats.bytes_sent += (uint64_t)n;
	}
	return 1;
}

/* Shut our side and drop what the client still sends (see C_LINGER), then close. */
static void conn_linger(struct conn *c)
{
	shutdown(c->fd, SHUT_WR);
	c->state = C_LINGER;
	free(c->rbuf);
	c->rbuf = NULL;
	c->rlen = c->roff = 0;
	set_timer(c, T_LINGER);
	conn_watch(c, UV_READABLE);
}

static void conn_drain(struct conn *c)
{
	char sink[READ_CHUNK];

	for (;;) {
		ssize_t n = recv(c->fd, sink, sizeof(sink), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0 || (c->lingered += (size_t)n) > LINGER_MAX) {
			httpd__conn_close(c); /* the client closed too, or it has had its chance */
			return;
		}
	}
}

static void conn_finish_response(struct conn *c)
{
	if (c->corked) {
		int zero = 0;
		setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero)); /* push the tail now */
		c->corked = false;
	}
	if (c->h->observer)
		c->h->observer(c->h->observer_ud, c->req.route ? c->req.route : "other", c->req.status,
			       c->sent_this_response);
	log_access(c);
	file_done(c);
	if (c->close_after || c->h->draining) {
		if (c->linger)
			conn_linger(c);
		else
			httpd__conn_close(c);
		return;
	}
	req_reset(&c->req);
	c->in_request = false;
	c->header_timer_on = false;
	c->state = C_READING;
	c->sent_this_response = 0;
	http_parser_pause(&c->parser, 0);
	if (!c->processing) {
		conn_process(c); /* pipelined bytes already buffered */
		if (c->state == C_READING && httpd__tls_pending(c))
			conn_read(c); /* ... or held by TLS, which the poll will not announce */
	}
}

static void conn_write(struct conn *c)
{
	int r = conn_flush(c);

	if (r < 0) {
		httpd__conn_close(c);
		return;
	}
	if (r == 0) {
		conn_watch(c, UV_WRITABLE);
		set_timer(c, T_WRITE);
		return;
	}
	if (r == 2) {
		conn_watch(c, 0);
		set_timer(c, T_GATE);
		return;
	}
	conn_finish_response(c);
}

/* The request is answered: return what building a big answer took, and send it (httpd-int.h). */
void httpd__send_answer(struct conn *c)
{
	/* an answer goes out once, after its request was read (READING) or its job finished (DEFERRED) */
	BUG_ON(!c->req.answered);
	BUG_ON(c->state != C_READING && c->state != C_DEFERRED);
	if (c->h->trim_pending) {
		c->h->trim_pending = false;
		malloc_trim(0);
	}
	c->state = C_WRITING;
	conn_write(c);
}

static void dispatch(struct conn *c)
{
	struct httpd *h = c->h;
	struct httpd_req *r = &c->req;

	BUG_ON(c->state != C_READING); /* a request is handled only from a reading connection */
	h->stats.requests_total++;
	if (r->path[0] != '/') { /* (split when the head was read: httpd-request.c) */
		httpd_respond_str(r, 400, "text/plain", "bad request target\n");
	} else {
		for (size_t i = 0; i < h->nhandlers && !r->answered && !c->job; i++)
			if (h->handlers[i].fn(h->handlers[i].ud, r) != HTTPD_PASS && !r->answered && !c->job)
				httpd_respond_str(r, 500, "text/plain", "handler gave no answer\n");
		if (!r->answered && !c->job)
			httpd_respond_str(r, 404, "text/plain", "not found\n");
	}
	httpd__body_abandon(c); /* a claimed body no handler took */
	uv_timer_stop(&c->timer);
	if (c->job) {
		/* answered later (httpd-defer.c: job_after); pipelined bytes wait, in the socket or in rbuf */
		c->state = C_DEFERRED;
		conn_watch(c, 0);
		return;
	}
	httpd__send_answer(c);
}

static void reply_error_and_close(struct conn *c, int status, const char *msg)
{
	c->req.keep_alive = false;
	c->linger = true;
	httpd__body_abandon(c); /* refused mid-body (a broken chunk) */
	if (!c->req.path)
		c->req.path = xstrdup("-");
	httpd_respond(&c->req, status, "text/plain", msg, strlen(msg));
	c->state = C_WRITING;
	conn_write(c);
}

/* Between requests with nothing buffered: give back what the last request grew (a 1 MiB body, a
 * large JSON answer), so that an idle keep-alive connection stays small. */
static void conn_trim(struct conn *c)
{
	conn_note_big(c);
	buf_release(&c->out);
	c->out_off = 0;
	buf_release(&c->req.url);
	buf_release(&c->req.body);
	buf_release(&c->req.resp_head);
}

/* Parse what is buffered; answer complete requests, then wait for more bytes. A response that goes
 * out at once comes back here through the loop (conn_finish_response sees c->processing). */
static void conn_process(struct conn *c)
{
	size_t n;
	enum http_errno e;

	c->processing = true;
	while (c->state == C_READING) {
		if (c->roff < c->rlen) {
			const char *bad =
				c->scan.done ? NULL : httpd__head_scan(&c->scan, c->rbuf + c->roff, c->rlen - c->roff);
			if (bad) {
				char *m = xasprintf("malformed request: %s\n", bad);
				reply_error_and_close(c, 400, m);
				free(m);
				continue;
			}
			n = http_parser_execute(&c->parser, &httpd__parser_settings, c->rbuf + c->roff,
						c->rlen - c->roff);
			c->roff += n;
			if (c->cont_pending && httpd__continue_flush(c) < 0) { /* the head asked for one */
				httpd__conn_close(c);
				break;
			}
			e = HTTP_PARSER_ERRNO(&c->parser);
			if (e == HPE_PAUSED) {
				memset(&c->scan, 0, sizeof(c->scan)); /* what follows is the next request's head */
				dispatch(c);
				continue;
			}
			if (e != HPE_OK && c->req.early) {
				/* refused before its body or cut off in it (httpd_body_refuse, HTTPD_SINK_STOP):
				 * the handlers answer now, on what was read, and the connection closes after,
				 * lingering so that a client still sending reads the answer */
				c->req.keep_alive = false;
				c->linger = true;
				c->body_streaming = false;
				dispatch(c);
				continue;
			}
			if (e != HPE_OK) {
				if (c->req.refuse == 414)
					reply_error_and_close(c, 414, "request target too long\n");
				else if (c->req.refuse == 431)
					reply_error_and_close(c, 431, "request headers too large\n");
				else if (c->req.refuse == 413)
					reply_error_and_close(c, 413, "request body too large\n");
				else if (c->req.refuse == 505)
					reply_error_and_close(c, 505, "HTTP/1.0 and HTTP/1.1 only\n");
				else if (c->req.refuse_why) {
					char *m = xasprintf("malformed request: %s\n", c->req.refuse_why);
					reply_error_and_close(c, 400, m);
					free(m);
				}
				else
					reply_error_and_close(c, 400, "malformed request\n");
				continue;
			}
		}
		/* Everything buffered is parsed: release the buffer while idle (not while a body streams
		 * through it: the next read fills it again). */
		if (c->roff >= c->rlen) {
			c->rlen = c->roff = 0;
			if (!c->body_streaming) {
				if (c->rcap >= TRIM_AFTER)
					c->h->trim_pending = true; /* (a streamed body's: conn_note_big) */
				free(c->rbuf);
				c->rbuf = NULL;
			}
		}
		if (!c->in_request) {
			conn_trim(c);
			set_timer(c, T_IDLE);
		} else if (c->body_streaming) {
			/* the body's progress, not the whole request, is bounded now (body_timer_early) */
			if (c->timer_kind != T_BODY || !uv_is_active((uv_handle_t *)&c->timer))
				set_timer(c, T_BODY);
		} else if (!c->header_timer_on) {
			/* From the first byte of the request: a client trickling bytes does not extend it. */
			c->header_timer_on = true;
			set_timer(c, T_HEADER);
		}
		conn_watch_reading(c);
		break;
	}
	c->processing = false;
}

static void conn_read(struct conn *c)
{
	/* A few chunks per wakeup while a request is still arriving: with thousands of busy connections
	 * a loop turn takes a while, and one chunk per turn would stretch a 1 MiB upload past the header
	 * timeout. Once a chunk completed a request, the loop's other connections come first. */
	int d = httpd__tls_detect(c);

	if (d == -EAGAIN)
		return;
	if (d < 0) {
		httpd__conn_close(c);
		return;
	}
	if (c->cont_pending) { /* the poll woke us writable for it */
		if (httpd__continue_flush(c) < 0) {
			httpd__conn_close(c);
			return;
		}
		conn_watch_reading(c); /* writable no more once it is out */
	}
	for (int burst = 0; burst < READ_BURST && c->state == C_READING; burst++) {
		uint64_t answered = c->h->stats.requests_total;
		/* a claimed body streams in big reads (a 2 GiB upload in 8,000 of them, not 130,000); the
		 * buffer goes once it is read out after the body (conn_process) */
		size_t want = c->body_streaming ? BODY_CHUNK : READ_CHUNK, room;
		ssize_t n;

		if (!c->rbuf) {
			c->rbuf = xmalloc(want);
			c->rcap = want;
			c->rlen = c->roff = 0;
		} else if (c->rcap < want) {
			c->rbuf = xrealloc(c->rbuf, want);
			c->rcap = want;
		}
		room = c->rcap - c->rlen;
		n = httpd__recv(c, c->rbuf + c->rlen, room);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
				if (c->ssl)
					conn_watch_reading(c); /* and what TLS waits for */
				return;
			}
			httpd__conn_close(c);
			return;
		}
		if (n == 0) {
			httpd__conn_close(c);
			return;
		}
		c->in_request = true; /* the header timeout starts with the first byte */
		c->rlen += (size_t)n;
		c->bytes_in += (uint64_t)n;
		conn_process(c);
		/* Compact: keep unparsed bytes at the front so the next recv has room. */
		if (c->state != C_CLOSING && c->rbuf && c->roff > 0 && c->roff < c->rlen) {
			memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
			c->rlen -= c->roff;
			c->roff = 0;
		} else if (c->state != C_CLOSING && c->rbuf && c->roff == c->rlen) {
			c->rlen = c->roff = 0;
		}
		if (httpd__tls_pending(c)) {
			burst--; /* TLS holds more (the rest of one record) that the poll will not announce */
			continue;
		}
		if ((size_t)n < room || c->h->stats.requests_total != answered)
			return; /* drained, or served: the poll says when to go on */
	}
}

static void conn_on_poll(uv_poll_t *p, int status, int events)
{
	struct conn *c = p->data;

	if (status < 0) {
		httpd__conn_close(c);
		return;
	}
	/* Besides its own direction, a state watches only what TLS waits for: any event goes on. */
	if (c->state == C_WRITING && (events & (UV_WRITABLE | UV_READABLE)))
		conn_write(c);
	else if (c->state == C_READING && (events & (UV_READABLE | UV_WRITABLE)))
		conn_read(c);
	else if (c->state == C_LINGER && (events & UV_READABLE))
		conn_drain(c);
}

static void tmp_tcp_closed(uv_handle_t *h)
{
	free(h);
}

void httpd__on_connection(uv_stream_t *server, int status)
{
	struct httpd *h = server->data;
	uv_stream_t *tmp;
	uv_os_fd_t tfd;
	int fd, one = 1;

	if (status < 0)
		return;
	/* libuv has accepted the socket already; take it over as a plain fd (a uv_tcp_t would own the
	 * writes, and sendfile needs them), and let the uv_tcp_t close its own copy. */
	if (h->is_unix) {
		tmp = xcalloc(1, sizeof(uv_pipe_t));
		uv_pipe_init(h->loop, (uv_pipe_t *)tmp, 0);
	} else {
		tmp = xcalloc(1, sizeof(uv_tcp_t));
		uv_tcp_init(h->loop, (uv_tcp_t *)tmp);
	}
	if (uv_accept(server, tmp) || uv_fileno((uv_handle_t *)tmp, &tfd) ||
	    (fd = fcntl(tfd, F_DUPFD_CLOEXEC, 3)) < 0) {
		uv_close((uv_handle_t *)tmp, tmp_tcp_closed);
		return;
	}
	uv_close((uv_handle_t *)tmp, tmp_tcp_closed);
	if (!h->is_unix)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	httpd_adopt(h, fd);
}

int httpd_adopt(struct httpd *h, int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct conn *c;

	memset(&ss, 0, sizeof(ss));
	getpeername(fd, (struct sockaddr *)&ss, &sl);
	if (h->stats.connections_open >= h->cfg.max_connections) {
		/* over the limit: a short answer the client can act on, never a silent drop */
		static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
					   "Content-Type: text/plain\r\nContent-Length: 31\r\nConnection: close\r\n\r\n"
					   "too many connections, try again\n";
		ssize_t ignored = send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		(void)ignored;
		h->stats.connections_refused++;
		close(fd);
		return -EBUSY;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c = xcalloc(1, sizeof(*c));
	c->h = h;
	c->fd = fd;
	c->file_fd = -1;
	c->state = C_READING;
	buf_init(&c->req.url);
	buf_init(&c->req.body);
	buf_init(&c->req.resp_head);
	buf_init(&c->out);
	c->req.c = c;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->peer, sizeof(c->peer));
	else if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->peer, sizeof(c->peer));
	else
		snprintf(c->peer, sizeof(c->peer), "-");
	{
		struct sockaddr_storage ls;
		socklen_t ll = sizeof(ls);
		snprintf(c->local, sizeof(c->local), "-");
		if (getsockname(fd, (struct sockaddr *)&ls, &ll) == 0) {
			if (ls.ss_family == AF_INET)
				inet_ntop(AF_INET, &((struct sockaddr_in *)&ls)->sin_addr, c->local, sizeof(c->local));
			else if (ls.ss_family == AF_INET6)
				inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ls)->sin6_addr, c->local,
					  sizeof(c->local));
		}
	}
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	uv_poll_init_socket(h->loop, &c->poll, fd);
	c->poll.data = c;
	uv_timer_init(h->loop, &c->timer);
	c->timer.data = c;
	c->next = h->conns;
	if (h->conns)
		h->conns->prev = c;
	h->conns = c;
	h->stats.connections_open++;
	h->stats.connections_total++;
	set_timer(c, T_IDLE);
	conn_watch(c, UV_READABLE);
	return 0;
}
