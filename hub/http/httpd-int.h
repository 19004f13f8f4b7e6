/*
 * httpd-int.h - the HTTP server's private types, shared by httpd.c (connections, answers),
 * httpd-request.c (reading a request), httpd-body.c (bodies streamed to a handler's sink) and
 * httpd-tls.c (TLS on a connection). Not for use outside hub/httpd*.c.
 */
#ifndef HM_HTTPD_INT_H
#define HM_HTTPD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <http_parser.h>
#include <openssl/ssl.h>
#include <uv.h>

#include "base/buf.h"
#include "httpd.h"

#define READ_CHUNK 16384
#define TRIM_AFTER ((size_t)128 << 10) /* a buffer this big, released, has malloc_trim run after it */
#define BODY_CHUNK (256 << 10) /* the read buffer while a claimed body streams: few syscalls a GiB */
#define MAX_HEADERS 100
#define FILE_CHUNK (4 << 20)   /* bytes per sendfile call */
#define FILE_BURST (16 << 20)  /* bytes per wakeup, so one fast client cannot hog the loop */
#define READ_BURST 8           /* chunks read per wakeup at most */
#define LINGER_MS 2000         /* how long a refused client may go on sending before we close */
#define LINGER_MAX (4 << 20)   /* ... and how much of it we read */

struct handler {
	httpd_handler_fn fn;
	void *ud;
};

/* A deferred answer (httpd_defer): waiting in h's list, then on the threadpool. */
struct httpd__job {
	uv_work_t work;
	struct httpd *h;
	struct conn *c;                /* whom to answer; NULL once the connection is gone */
	httpd_work_fn fn;
	httpd_done_fn done;
	void *ud;
	unsigned lane;                 /* 0 main, 1 aside, 2 write: whose workers it takes */
	struct httpd__job *next;              /* in the waiting list */
};

struct httpd {
	uv_loop_t *loop;
	uv_tcp_t listener;
	uv_pipe_t unix_listener;       /* instead of listener, for a "unix:PATH" listen */
	bool is_unix;
	struct httpd_config cfg;
	struct handler *handlers;
	size_t nhandlers;
	struct conn *conns;            /* all open connections, for shutdown */
	struct httpd_stats stats;
	int port;
	bool closing;
	bool draining;                 /* httpd_drain: answers in flight finish, nothing new comes */
	bool listener_gone;            /* the listener closed for the drain (its callback ran) */
	bool free_pending;             /* httpd_free came while the drain's listener close ran */
	void (*drained)(void *ud);     /* called once no connection is left */
	void *drained_ud;
	httpd_observer_fn observer;
	void *observer_ud;
	httpd_claim_fn claim;          /* httpd_set_body_claim, or NULL */
	void *claim_ud;
	time_t date_at;                /* the second `date` was formatted for */
	char date[40];
	char **trusted;                /* cfg.trusted_proxies, split; NULL-terminated */
	bool trim_pending;             /* a big answer was spilled, or a connection let go of a big buffer
					* (TRIM_AFTER): malloc_trim before the next answer gives the memory back */
	struct httpd__job *waiting[3], *waiting_tail[3]; /* deferred jobs not started yet, in order, by lane */
	unsigned running[3];           /* ... and running, by lane */
	bool freed;                    /* httpd_free is done but for the jobs still running */
};

struct header {
	char *name;
	char *value;
};

struct httpd_req {
	struct conn *c;
	char method[16];
	bool head;
	struct buf url;                /* raw request target */
	char *path;                    /* raw path (points into a copy) */
	char *query;
	struct header headers[MAX_HEADERS];
	size_t nheaders;
	bool last_was_value;
	size_t header_bytes;
	struct buf body;
	struct httpd_body_sink sink;   /* a claimed body's (httpd-body.c) */
	bool claimed;                  /* the body goes to sink, not to body */
	bool sink_held;                /* sink.ud is still the server's: neither taken nor abandoned */
	bool sink_full;                /* sink.data wanted no more: the rest of the body is dropped */
	int body_refused;              /* httpd_body_refuse's status, 0: none */
	char body_refused_why[256];    /* ... and its words ("" for none) */
	bool early;                    /* answered without the rest of its body (refused before it or cut
					* off in it): dispatched at once, its connection closed after */
	bool keep_alive;
	int refuse;                    /* 414, 431 or 413 once a limit is passed, 400 or 505 for a
	                                * malformed head (refuse_why); 0 otherwise */
	const char *refuse_why;        /* static text, or NULL */
	/* response */
	int status;
	struct buf resp_head;          /* extra headers added by the handler */
	bool answered;
	uint64_t start_ns;
	const char *route;             /* static name set by the handler that answered, or NULL */
};

enum conn_state { C_READING, C_WRITING, C_DEFERRED, C_LINGER, C_CLOSING };
/* What the connection's one timer stands for. */
enum conn_timer { T_IDLE, T_HEADER, T_WRITE, T_LINGER, T_GATE, T_BODY };
#define GATE_RETRY_MS 10       /* how soon a gated body asks again for bytes that were not ready */
static const char *const timer_names[] = { "idle", "header", "write", "linger", "gate", "body" };

/* The framing of a request head, read byte by byte as it arrives and before http_parser sees it
 * (httpd__head_scan): http_parser takes a bare LF as a line end and obsolete line folding as a header
 * value that goes on, which other parsers (a proxy in front) read otherwise. */
struct head_scan {
	bool done;                     /* the head's empty line was seen: the body follows, unscanned */
	bool cr;                       /* the last byte was CR */
	size_t line_len;               /* bytes of the current line so far */
	size_t lines;                  /* lines ended (the request line is the first) */
};

struct conn {
	struct httpd *h;
	uv_os_sock_t fd;
	uv_poll_t poll;
	uv_timer_t timer;
	enum conn_timer timer_kind;     /* what the running timer stands for */
	uint64_t timer_set_ns;         /* when it was started (uv_hrtime) */
	int closing_handles;
	enum conn_state state;
	http_parser parser;
	char *rbuf;                    /* NULL while idle */
	size_t rcap;                   /* its size: READ_CHUNK, or BODY_CHUNK since a claimed body streamed */
	size_t rlen, roff;             /* bytes in rbuf, bytes already parsed */
	uint64_t bytes_in;             /* read from the client, in all (a catch-up's progress) */
	struct httpd_req req;
	struct head_scan scan;         /* the framing of the request head being read */
	bool in_request;               /* a request has started (header timeout applies) */
	bool header_timer_on;          /* its timer runs: it is not restarted by each byte */
	bool body_streaming;           /* a claimed body is being read: T_BODY bounds its progress */
	uint64_t body_at;              /* the loop's time (ms) when the last byte of it came */
	bool cont_pending;             /* "100 Continue" is owed to the client ... */
	size_t cont_sent;              /* ... and this much of it went out */
	bool processing;               /* inside conn_process: a response done at once continues there */
	bool linger;                   /* the request was refused before it was read to the end */
	size_t lingered;               /* bytes dropped in C_LINGER */
	/* outgoing */
	struct buf out;                /* status line + headers (+ memory body) */
	size_t out_off;
	int file_fd;
	int64_t file_off, file_left;
	int64_t zeros_left;            /* zero bytes owed after the file (httpd_respond_file_framed) */
	struct httpd_part *parts;      /* a spliced body (httpd_respond_spliced): its pieces, or NULL */
	size_t nparts, part_at;        /* ... how many, the one going out */
	uint64_t part_sent;            /* ... and how much of it went */
	char *part_mem;                /* the memory its memory pieces are in */
	httpd_gate_fn gate;            /* a gated file body (httpd_respond_file_gated), or NULL */
	void (*gate_release)(void *ud);
	void *gate_ud;
	bool close_after;
	uint64_t sent_this_response;
	char peer[64];
	char local[64];         /* our address on this connection (getsockname) */
	struct conn *prev, *next;
	int watching;                  /* the uv_poll events in force (conn_watch) */
	bool corked;                   /* TCP_CORK is set for a big file answer */
	struct httpd__job *job;               /* in C_DEFERRED: the job that will answer */
	/* TLS (httpd-tls.c), when the server has a certificate and the client's first byte was a TLS
	 * handshake's */
	bool tls_checked;              /* the first byte was looked at */
	SSL *ssl;                      /* NULL: plain HTTP */
	int tls_want;                  /* UV_READABLE / UV_WRITABLE the last TLS call waits for, besides
					* the direction the state reads or writes */
	bool tls_dead;                 /* a fatal TLS error: no close_notify */
	char *tls_buf;                 /* a file body's bytes on their way through SSL_write */
	int64_t tls_buf_off;           /* the file offset of tls_buf[0] */
	size_t tls_buf_len;            /* bytes in tls_buf */
};

/* ---- reading a request (httpd-request.c) ---- */

/* http-parser's callbacks: they fill c->req (p->data is the connection c) */
extern const http_parser_settings httpd__parser_settings;
/* r->url split into r->path (absolute-form reduced to its path) and r->query */
void httpd__split_target(struct httpd_req *r);
/* Scan n more bytes of a request head (stops at its end). Returns NULL, or what is wrong with its
 * framing: a bare LF or CR, or a line folded onto the one before (obsolete line folding). */
const char *httpd__head_scan(struct head_scan *s, const char *data, size_t n);

/* ---- bodies streamed to a handler's sink (httpd-body.c) ---- */

/* At the end of a valid head: ask the server's claim function. True when c's body goes to a sink. */
bool httpd__body_claim(struct conn *c);
/* n bytes of a claimed body: to the sink unless it is full. Nonzero when the sink stopped the request
 * (HTTPD_SINK_STOP): it is to be answered now. */
int httpd__body_data(struct conn *c, const char *at, size_t n);
/* The request ends and no handler took its sink: abandon it (once; a no-op otherwise). */
void httpd__body_abandon(struct conn *c);
/* A head accepted with a body to come: owe "100 Continue" if it asked for one (HTTP/1.1 only). */
void httpd__body_expect(struct conn *c, const http_parser *p);
/* Send what is owed of "100 Continue": 1 when nothing is (any more), 0 when the socket is full, -1
 * when the connection is dead. */
int httpd__continue_flush(struct conn *c);

/* ---- between httpd.c (connections), httpd-server.c and httpd-defer.c ---- */

/* The request on c is answered: send it (httpd.c). */
void httpd__send_answer(struct conn *c);
/* A listener has a connection waiting: accept it (httpd.c). */
void httpd__on_connection(uv_stream_t *server, int status);
/* Close c now, whatever it was doing (httpd.c). */
void httpd__conn_close(struct conn *c);
/* Free h once nothing of it runs any more (httpd-server.c). */
void httpd__destroy(struct httpd *h);

/* ---- TLS on a connection (httpd-tls.c) ---- */

/* Before the first read when the server has TLS: a connection whose first byte opens a TLS
 * handshake gets c->ssl. Returns 0 (decided), -EAGAIN (no byte yet) or -1 (closed or failed). */
int httpd__tls_detect(struct conn *c);
/* recv / send / sendfile through TLS when c->ssl, else plain; same returns (-1 with errno EAGAIN when
 * the socket or the TLS engine waits: then c->tls_want names what TLS waits for, if anything). */
ssize_t httpd__recv(struct conn *c, void *buf, size_t n);
ssize_t httpd__send(struct conn *c, const void *buf, size_t n);
ssize_t httpd__sendfile(struct conn *c, int fd, off_t *off, size_t n);
/* Decrypted bytes TLS holds that the socket will not announce. */
bool httpd__tls_pending(const struct conn *c);
/* Say goodbye (close_notify, best effort) and free c's TLS state. */
void httpd__tls_close(struct conn *c);

#endif
