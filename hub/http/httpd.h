/*
 * httpd.h - the mirror's HTTP/1.1 server: libuv for the loop, http-parser for requests.
 *
 * Connections are plain non-blocking sockets watched with uv_poll, so that a file body goes out with
 * sendfile() straight from the page cache, a chunk at a time as the socket drains: a slow client never
 * makes the server buffer a file, and an idle keep-alive connection costs one small struct (its
 * buffers are released between requests). Requests on one connection are answered in order
 * (pipelining is safe: the server stops reading while it writes). A request over a limit is answered
 * 414, 431 or 413 and its connection closed. A body may instead stream to a handler's sink as it
 * arrives (httpd_set_body_claim), which an upload of gigabytes needs.
 *
 * Handlers form a chain (h2o-style): each gets the request and either answers it (returns 0) or passes
 * (returns HTTPD_PASS). Handlers run on the loop and must not block on anything slow: the whole server
 * waits for them. An answer that takes long to compute (a walk over 300,000 files, a search) is
 * handed to httpd_defer, which computes it on libuv's threadpool and answers on the loop afterwards.
 */
#ifndef HM_HTTPD_H
#define HM_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#define HTTPD_PASS 1

struct httpd;
struct httpd_req;
struct hub_tls;

struct httpd_config {
	const char *listen;             /* "HOST:PORT", e.g. "127.0.0.1:8080" or "[::]:8080"; or
					 * "unix:PATH", a unix socket made at PATH (which must not
					 * exist; its mode follows the umask; port 0) */
	size_t max_header_bytes;        /* request line + headers; 0: 16 KiB */
	size_t max_body_bytes;          /* 0: 1 MiB */
	unsigned header_timeout_ms;     /* from the first byte of a request to its end (trickled bytes do not
					 * extend it), or to the end of its head when its body is claimed
					 * (httpd_set_body_claim); 0: 15 s */
	unsigned body_timeout_ms;       /* a claimed body: no byte of it for this long closes the
					 * connection (each byte extends it); 0: 60 s */
	unsigned idle_timeout_ms;       /* keep-alive wait for the next request; 0: 75 s */
	unsigned write_timeout_ms;      /* no byte accepted by the client for this long; 0: 120 s */
	FILE *access_log;               /* one line per request, or NULL */
	const char *const *log_redact;  /* path prefixes ("/p2p/kseed/") whose next segment is a secret:
					 * written "REDACTED" in the access log; NULL-terminated, may be
					 * NULL. Borrowed for the server's life. (The query is never
					 * logged.) */
	size_t max_connections;         /* open at once; past it a new one gets a 503 and is closed;
					 * 0: 16384 */
	const char *trusted_proxies;    /* comma-separated peer addresses whose X-Forwarded-* headers
					 * are believed (httpd_from_trusted_proxy); NULL: none. Copied. */
	const char *spill_dir;          /* a folder for unnamed temporary files (O_TMPFILE): an answer
					 * body of 1 MiB or more goes there and out with sendfile, so a
					 * client that reads slowly pins disk, not memory; NULL: keep
					 * bodies in memory. Borrowed for the server's life. */
	unsigned max_workers;           /* deferred jobs (httpd_defer) running at once, on libuv's
					 * threadpool (UV_THREADPOOL_SIZE threads, 4 by default, for the
					 * whole process: serve sets 8); 0: 2 */
	unsigned max_waiting;           /* deferred jobs waiting for a worker; past it a request gets a
					 * 503 with Retry-After; 0: 256 */
	unsigned max_workers_aside;     /* the aside lane's (httpd_defer_aside): work that may be long
					 * and must not take the others' workers (git); 0: 2 */
	unsigned max_workers_write;     /* the write lane's (httpd_defer_write): writers' disk work
					 * (hashing an upload whole, a commit), never in front of reads
					 * nor of git; 0: 2 */
	struct hub_tls *tls;            /* a certificate (tls.h): connections that open with a TLS
					 * handshake speak HTTPS on the same port, the others plain
					 * HTTP; NULL: plain only. Borrowed; the process must ignore
					 * SIGPIPE. */
};

typedef int (*httpd_handler_fn)(void *ud, struct httpd_req *req);

/* Listen on cfg->listen. Returns 0 (and *out, owned: httpd_free) or a negative libuv/errno code. */
int httpd_new(uv_loop_t *loop, const struct httpd_config *cfg, struct httpd **out);
/* Serve a connection accepted elsewhere (a unix socket, one end of a socketpair): fd is consumed,
 * made non-blocking, and served like an accepted TCP connection (its peer shows as "-" unless it is
 * IPv4/IPv6). Returns 0, or -EBUSY past max_connections (fd answered 503 and closed). */
int httpd_adopt(struct httpd *h, int fd);
/* Append a handler to the chain. ud is borrowed. */
void httpd_add_handler(struct httpd *h, httpd_handler_fn fn, void *ud);
/* The port actually bound (useful with port 0). */
int httpd_port(const struct httpd *h);
/* Stop taking connections (the listener closes) and close the idle keep-alive ones; a request being
 * read or answered (or computed by httpd_defer) goes on and its connection closes after the answer.
 * done(ud) runs once no connection is left (at once, from this call, when none is). httpd_free
 * still ends whatever is left. For a graceful shutdown (serve on SIGTERM). */
void httpd_drain(struct httpd *h, void (*done)(void *ud), void *ud);
/* Close the listener and every connection; run the loop afterwards to finish. NULL-safe. */
void httpd_free(struct httpd **h);

/*
 * Request bodies a handler streams (an upload of gigabytes) rather than takes whole from memory. When
 * a request's head is complete, before any byte of its body, the claim function (one per server; on
 * the loop, quick) sees the request through the usual accessors (method, path, query, headers; not
 * the body) and either returns false, which leaves the body to be read into memory within
 * cfg.max_body_bytes as usual, or fills *sink and returns true: then the body's bytes (de-chunked)
 * go to sink->data as they arrive, with no max_body_bytes (the sink keeps its own limits), the handler
 * chain runs once the body has ended (httpd_body is empty), and a handler takes the sink's ud with
 * httpd_body_take. It is asked for every request with a valid target, with or without a body. A
 * claimed or small body announced with "Expect: 100-continue" gets its interim 100 answer when the
 * head is read; a body claimed by no one and over max_body_bytes gets its 413 at once.
 */
struct httpd_body_sink {
	/* n more bytes of the body. Return 0 to go on; HTTPD_SINK_STOP: the body is cut off here, the
	 * request is dispatched at once without the rest (the handler answers with the error the sink
	 * recorded) and its connection closed after the answer, lingering a moment so that a client still
	 * sending reads it; any other nonzero: the sink wants no more, the server reads and drops the rest
	 * of the body and still dispatches the request at its end (a client that is still sending reads
	 * an answer, not a reset). */
	int (*data)(void *ud, const char *p, size_t n);
	/* The request ends without a handler taking the sink (the connection closed or timed out mid-body,
	 * the request refused, no handler called httpd_body_take, the server freed): called once, frees ud. */
	void (*abandon)(void *ud);
	void *ud;                      /* the sink's state: the server's until taken or abandoned */
};
#define HTTPD_SINK_STOP 2
typedef bool (*httpd_claim_fn)(void *ud, struct httpd_req *r, struct httpd_body_sink *sink);
/* Set the claim function (NULL: none). ud is borrowed. */
void httpd_set_body_claim(struct httpd *h, httpd_claim_fn fn, void *ud);
/* In a claim function that returns false: this request's body is not wanted (who sends it may not
 * write there, or it is over a bound), with the status and words (copied, cut at 255 bytes; may be
 * NULL) a handler may answer it with. A chunked body, or one over cfg.max_body_bytes, is then never
 * read: the handler chain runs at once on the head alone (no "100 Continue" is sent: a client that
 * waits for it reads the answer instead), and the connection is closed after the answer, lingering
 * a moment so that a client still sending reads it. A smaller body is read into memory as any
 * unclaimed one. */
void httpd_body_refuse(struct httpd_req *r, int status, const char *why);
/* The status httpd_body_refuse gave r (0: none), and its words in *why (NULL when none; may be NULL). */
int httpd_body_refused(const struct httpd_req *r, const char **why);
/* In a handler: the claimed sink's ud, the handler's now (the server will not call abandon); NULL when
 * the body was not claimed or was already taken. */
void *httpd_body_take(struct httpd_req *r);

/* Name the route that answers r (a static string; for metrics). */
void httpd_set_route(struct httpd_req *r, const char *route);
/* fn runs once per completed response with its route ("other" when unnamed), status and bytes sent. */
typedef void (*httpd_observer_fn)(void *ud, const char *route, int status, uint64_t bytes);
void httpd_set_observer(struct httpd *h, httpd_observer_fn fn, void *ud);

/* Counters for /metrics and tests. */
struct httpd_stats {
	uint64_t connections_open;
	uint64_t connections_total;
	uint64_t requests_total;
	uint64_t bytes_sent;
	uint64_t connections_refused;  /* past max_connections */
	uint64_t bodies_spilled;       /* answers sent from a spill file (cfg.spill_dir) */
	uint64_t deferred_total;       /* requests answered through httpd_defer */
	uint64_t deferred_refused;     /* past cfg.max_waiting: answered 503 */
	uint64_t deferred_running;     /* jobs on the threadpool now */
	uint64_t deferred_waiting;     /* jobs waiting for a worker now */
	uint64_t tls_connections;      /* connections that spoke TLS */
	uint64_t tls_errors;           /* ... and ended on a TLS failure (handshake, bad record) */
};
void httpd_get_stats(const struct httpd *h, struct httpd_stats *out);

/* ---- the request, valid during the handler call ---- */

const char *httpd_method(const struct httpd_req *r);       /* "GET", "HEAD", ... */
bool httpd_is_tls(const struct httpd_req *r);              /* it came over TLS (https) */
const char *httpd_path(const struct httpd_req *r);         /* raw (still percent-encoded), no query */
const char *httpd_query(const struct httpd_req *r);        /* raw query without '?', or NULL */
/* Parse a Range header value (h may be NULL) against a body of size bytes: 1 with [*a, *b] set (inside
 * the body, *a <= *b), 0 for "no usable range" (absent, another unit, several ranges, malformed:
 * answer the whole body, as RFC 9110 allows), -1 for a range that starts past the end (416). *a and
 * *b are written only on 1. */
int httpd_parse_range(const char *h, int64_t size, int64_t *a, int64_t *b);

/* Parse a Range header of explicit ranges, "bytes=A-B, C-D, ..." (h may be NULL), as a Xet reconstruction
 * names a xorb's bytes: the count n (1 <= n <= max) with r[0..n) set to the inclusive pairs, each inside
 * a body of size bytes (UINT64_MAX: not known) and the lengths summing to at most max_total; or -1 (answer
 * 416) for an absent header, another unit, an open or suffix range, a backwards one, one past the end, a
 * number that overflows, more than max ranges or more than max_total bytes in all, anything malformed.
 * Overlapping ranges are kept as they came. r is written only on success. */
int httpd_parse_ranges(const char *h, uint64_t size, uint64_t max_total, uint64_t (*r)[2], size_t max);

/* Does an If-None-Match value (NULL: absent) match etag ("x" or W/"x")? "*" or a comma list of entity
 * tags, compared weakly as RFC 9110 13.1.2 wants for If-None-Match (W/ ignored on both sides). */
bool httpd_etag_matches(const char *if_none_match, const char *etag);

/* Did r come from one of cfg.trusted_proxies (by the connection's peer address)? Only then may a
 * handler believe X-Forwarded-* headers: from anyone else they are whatever the client wrote. */
bool httpd_from_trusted_proxy(const struct httpd_req *r);
/* Case-insensitive header lookup; NULL when absent. */
const char *httpd_header(const struct httpd_req *r, const char *name);
const char *httpd_body(const struct httpd_req *r, size_t *len); /* empty when claimed (httpd_set_body_claim) */
const char *httpd_peer(const struct httpd_req *r);         /* "127.0.0.1" */
const char *httpd_local(const struct httpd_req *r);        /* our own address on this connection, "-" if unknown */

/* ---- answering (exactly once per request) ---- */

/* Has the request been answered yet, or handed to httpd_defer (whose done callback answers it)? */
bool httpd_answered(const struct httpd_req *r);

/* Add a response header (copied). Call before httpd_respond*. Never use for Content-Length. */
void httpd_add_header(struct httpd_req *r, const char *name, const char *value);
void httpd_add_headerf(struct httpd_req *r, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Answer with a body from memory (copied; HEAD sends the headers only). */
void httpd_respond(struct httpd_req *r, int status, const char *content_type, const void *body, size_t len);
/* httpd_respond with a C string body (its length counted here, never by hand). */
void httpd_respond_str(struct httpd_req *r, int status, const char *content_type, const char *body);

/* Answer with length bytes of fd from offset, sent with sendfile. fd is consumed (closed when done). */
void httpd_respond_file(struct httpd_req *r, int status, const char *content_type, int fd, int64_t offset,
			int64_t length);

/* Answer with head_len bytes of head (copied), then length bytes of fd from offset (sent with sendfile; fd
 * consumed, -1 when length is 0), then zeros zero bytes: a file framed by bytes made in memory (a tar
 * entry's header before it, its padding and the archive's end after). */
void httpd_respond_file_framed(struct httpd_req *r, int status, const char *content_type, const void *head,
			       size_t head_len, int fd, int64_t offset, int64_t length, int64_t zeros);

/* One piece of a spliced body (httpd_respond_spliced): len bytes from off, in the file when file, else in
 * the memory given. */
struct httpd_part {
	uint64_t off, len;
	bool file;
};
/* Answer with a body spliced from parts[0..n) in order: pieces of mem (mem_len bytes, copied) sent with
 * send, and pieces of fd sent with sendfile (fd consumed; -1 when no part is of the file). A file's bytes
 * framed by many small pieces made in memory (a Xet xorb's chunk headers between the chunks of a stored
 * file) leave as they are read, with no copy of the file's in memory. parts is copied. */
void httpd_respond_spliced(struct httpd_req *r, int status, const char *content_type, const void *mem,
			   size_t mem_len, int fd, const struct httpd_part *parts, size_t n);

/*
 * Answer later, from work done off the loop. work(job) runs on a thread of libuv's threadpool, then
 * done(job, r) on the loop answers r; the handler returns 0 without answering. Meanwhile the
 * connection reads nothing (requests pipelined behind r wait, and are answered in order after it) and
 * no timer runs on it; the rest of the server goes on.
 *
 * work must touch neither r nor the loop nor anything of httpd: whatever it needs from the request is
 * copied into job first, and what it computes goes back in job. done runs exactly once, on the loop:
 *   - with r: answer it (httpd_add_header, httpd_respond*, as in a handler; no answer is a 500),
 *     or hand it to httpd_defer again (a next step off the loop), then free job;
 *   - with r == NULL: there is no one to answer (the connection was closed, e.g. by httpd_free), or
 *     the job never ran (past cfg.max_waiting, when r was answered 503 before done was called, at
 *     once): only free job. work may or may not have run.
 * At most cfg.max_workers jobs run at once, so a flood of slow requests takes at most that many of
 * the threadpool's threads; the others wait in order. httpd_free leaves the jobs that run to finish
 * (the loop must then run until they have: uv_run returns only after their done calls); the server's
 * memory is released after the last of them.
 */
typedef void (*httpd_work_fn)(void *job);
typedef void (*httpd_done_fn)(void *job, struct httpd_req *r);
void httpd_defer(struct httpd_req *r, httpd_work_fn work, httpd_done_fn done, void *job);
/* httpd_defer on a lane of its own, with cfg.max_workers_aside workers: long runs there (git's
 * upload-pack) wait for each other, never for or in front of the main lane's answers. */
void httpd_defer_aside(struct httpd_req *r, httpd_work_fn work, httpd_done_fn done, void *job);
/* httpd_defer on the write lane, with cfg.max_workers_write workers: what writers ask of the disk
 * (an upload hashed whole, a commit of thousands of files) waits there for other writers only. */
void httpd_defer_write(struct httpd_req *r, httpd_work_fn work, httpd_done_fn done, void *job);

/*
 * httpd_respond_file for bytes that arrive while they are sent (a file downloading from a swarm):
 * before each chunk, gate(ud, offset, len) says how many bytes from offset may go now: len or fewer,
 * 0 for "not yet" (asked again about every 10 ms; the connection waits without a write timeout), or
 * -1 to give up (the connection is closed before the promised length, so the client never takes a
 * short body for the whole). gate runs on the loop: it must be quick. release(ud) (may be NULL) is
 * called once when the body is done, abandoned or never started.
 */
typedef int64_t (*httpd_gate_fn)(void *ud, int64_t offset, int64_t len);
void httpd_respond_file_gated(struct httpd_req *r, int status, const char *content_type, int fd, int64_t offset,
			      int64_t length, httpd_gate_fn gate, void (*release)(void *ud), void *ud);
/* httpd_respond_file_framed with a gated file (as httpd_respond_file_gated: gate is asked with the file's
 * offsets; head goes at once, zeros once the file's length has gone): a tar layer sent as the file it
 * holds arrives. */
void httpd_respond_file_framed_gated(struct httpd_req *r, int status, const char *content_type, const void *head,
				     size_t head_len, int fd, int64_t offset, int64_t length, int64_t zeros,
				     httpd_gate_fn gate, void (*release)(void *ud), void *ud);

/* Decode %XX escapes (and, with plus, '+' as space) of n bytes into a new string; NULL on a bad
 * escape or when the result would hold a NUL byte. Caller frees. */
char *httpd_unescape(const char *s, size_t n, bool plus);
/* The value of the first query parameter `name` (decoded), or NULL. Caller frees. */
char *httpd_query_param(const struct httpd_req *r, const char *name);
/* The same in a raw query (without '?'; NULL: none): names and values percent-decoded, '+' a space. */
char *httpd_query_get(const char *query, const char *name);

#endif
