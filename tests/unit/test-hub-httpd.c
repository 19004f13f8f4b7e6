/*
 * test-hub-httpd.c - the HTTP server's parsers that decide what leaves the server: Range (which bytes
 * of a blob; several explicit ones, as Xet asks a xorb's), percent-decoding (which path a route
 * sees); and answers deferred to the threadpool (httpd_defer), gated and spliced bodies, driven
 * over socketpairs the server adopts, with a worker held until the test lets it go: so every ordering
 * below is decided by the test, never by a clock. The rest of the server is driven over sockets by
 * the integration tests and by tests/fuzz/fuzz-http.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "hub/http/httpd.h"
#include "hub/http/httpd-int.h"
#include "test.h"

static int range(const char *h, int64_t size, int64_t *a, int64_t *b)
{
	*a = *b = -7;
	return httpd_parse_range(h, size, a, b);
}

TEST(range_forms)
{
	int64_t a, b;

	CHECK_INT(range("bytes=0-99", 1000, &a, &b), 1);
	CHECK(a == 0 && b == 99);
	CHECK_INT(range("bytes=900-", 1000, &a, &b), 1);          /* open end */
	CHECK(a == 900 && b == 999);
	CHECK_INT(range("bytes=-100", 1000, &a, &b), 1);          /* the last 100 */
	CHECK(a == 900 && b == 999);
	CHECK_INT(range("bytes=-5000", 1000, &a, &b), 1);         /* more than there is: all of it */
	CHECK(a == 0 && b == 999);
	CHECK_INT(range("bytes=10-5000", 1000, &a, &b), 1);       /* the end is cut to the size */
	CHECK(a == 10 && b == 999);
	CHECK_INT(range("BYTES=0-0", 1000, &a, &b), 1);           /* the unit in any case */
	CHECK(a == 0 && b == 0);
}

TEST(range_refusals)
{
	int64_t a, b;

	CHECK_INT(range(NULL, 1000, &a, &b), 0);                  /* absent: the whole body */
	CHECK_INT(range("items=0-1", 1000, &a, &b), 0);           /* another unit */
	CHECK_INT(range("bytes=0-1,5-9", 1000, &a, &b), 0);       /* several ranges: the whole body */
	CHECK_INT(range("bytes=5-1", 1000, &a, &b), 0);           /* backwards */
	CHECK_INT(range("bytes=x-1", 1000, &a, &b), 0);
	CHECK_INT(range("bytes=-0", 1000, &a, &b), 0);
	CHECK_INT(range("bytes=1-2x", 1000, &a, &b), 0);
	CHECK(a == -7 && b == -7);                                /* written only on 1 */
	CHECK_INT(range("bytes=1000-", 1000, &a, &b), -1);        /* starts past the end: 416 */
	CHECK_INT(range("bytes=-1", 0, &a, &b), -1);
	CHECK_INT(range("bytes=99999999999999999999-", 1000, &a, &b), -1); /* saturates, still past */
}

/* httpd_parse_ranges into a fresh array of 4 pairs (filled with 7s first: what it must not touch). */
static uint64_t rs[4][2];

static int ranges(const char *h, uint64_t size, uint64_t max_total, size_t max)
{
	memset(rs, 7, sizeof(rs));
	return httpd_parse_ranges(h, size, max_total, rs, max);
}

static int ranges_untouched(void)
{
	uint64_t want[4][2];

	memset(want, 7, sizeof(want));
	return !memcmp(rs, want, sizeof(rs));
}

TEST(ranges_forms)
{
	CHECK_INT(ranges("bytes=0-99", 1000, UINT64_MAX, 4), 1);
	CHECK(rs[0][0] == 0 && rs[0][1] == 99);
	CHECK_INT(ranges("bytes=0-9,20-29, 5-5", 1000, UINT64_MAX, 4), 3);   /* kept in order, overlaps too */
	CHECK(rs[0][0] == 0 && rs[0][1] == 9 && rs[1][0] == 20 && rs[1][1] == 29 && rs[2][0] == 5 && rs[2][1] == 5);
	CHECK(rs[3][0] != 0 && rs[3][1] != 0);                               /* past the count: untouched */
	CHECK_INT(ranges("BYTES=999-999", 1000, UINT64_MAX, 4), 1);          /* the unit in any case, the last byte */
	CHECK(rs[0][0] == 999 && rs[0][1] == 999);
	CHECK_INT(ranges("bytes=0-3,4-7", UINT64_MAX, 8, 4), 2);             /* exactly max_total */
	CHECK_INT(ranges("bytes=1-2,3-4,5-6,7-8", 1000, UINT64_MAX, 4), 4); /* exactly max */
	CHECK_INT(ranges("bytes=0-18446744073709551614", UINT64_MAX, UINT64_MAX, 4), 1); /* the largest */
	CHECK(rs[0][1] == UINT64_MAX - 1);
}

TEST(ranges_refusals)
{
	CHECK_INT(ranges(NULL, 1000, UINT64_MAX, 4), -1);                    /* absent */
	CHECK_INT(ranges("", 1000, UINT64_MAX, 4), -1);
	CHECK_INT(ranges("bytes=", 1000, UINT64_MAX, 4), -1);
	CHECK_INT(ranges("items=0-1", 1000, UINT64_MAX, 4), -1);             /* another unit */
	CHECK_INT(ranges("bytes=5-", 1000, UINT64_MAX, 4), -1);              /* open */
	CHECK_INT(ranges("bytes=-5", 1000, UINT64_MAX, 4), -1);              /* suffix */
	CHECK_INT(ranges("bytes=5-1", 1000, UINT64_MAX, 4), -1);             /* backwards */
	CHECK_INT(ranges("bytes=0-1000", 1000, UINT64_MAX, 4), -1);          /* past the end */
	CHECK_INT(ranges("bytes=0-1,1000-1000", 1000, UINT64_MAX, 4), -1);   /* the second past the end */
	CHECK_INT(ranges("bytes=0-1,", 1000, UINT64_MAX, 4), -1);            /* an empty one */
	CHECK_INT(ranges("bytes=0-1,,2-3", 1000, UINT64_MAX, 4), -1);
	CHECK_INT(ranges("bytes=0-1;2-3", 1000, UINT64_MAX, 4), -1);
	CHECK_INT(ranges("bytes=+0-1", 1000, UINT64_MAX, 4), -1);            /* strtoull's sign */
	CHECK_INT(ranges("bytes=0-+1", 1000, UINT64_MAX, 4), -1);
	CHECK_INT(ranges("bytes=0x1-2", 1000, UINT64_MAX, 4), -1);
	CHECK_INT(ranges("bytes=1-2,3-4,5-6,7-8,9-9", 1000, UINT64_MAX, 4), -1); /* more than max */
	CHECK_INT(ranges("bytes=0-3,4-8", UINT64_MAX, 8, 4), -1);            /* one byte over max_total */
	CHECK_INT(ranges("bytes=0-8", UINT64_MAX, 8, 4), -1);
	CHECK_INT(ranges("bytes=0-18446744073709551615", UINT64_MAX, UINT64_MAX, 4), -1); /* its length would wrap */
	CHECK_INT(ranges("bytes=0-18446744073709551616", UINT64_MAX, UINT64_MAX, 4), -1); /* overflows */
	CHECK_INT(ranges("bytes=18446744073709551616-1", UINT64_MAX, UINT64_MAX, 4), -1);
	CHECK_INT(ranges("bytes=0-99999999999999999999999999", UINT64_MAX, UINT64_MAX, 4), -1);
	/* lengths whose sum wraps 64 bits: each under max_total, the sum not */
	CHECK_INT(ranges("bytes=0-9223372036854775807,0-9223372036854775807", UINT64_MAX, UINT64_MAX, 4), -1);
	CHECK_INT(ranges("bytes=0-1", 0, UINT64_MAX, 4), -1);                /* an empty body */
	CHECK_INT(ranges("bytes=0-1", 1000, UINT64_MAX, 0), -1);             /* none allowed */
	CHECK(ranges_untouched());                                           /* written only on success */
}

/* The head's framing, whole and a byte at a time: NULL, or why (and where it stops). */
static const char *scan_whole(const char *s, bool *done)
{
	struct head_scan h = { 0 };
	const char *why = httpd__head_scan(&h, s, strlen(s));
	*done = h.done;
	return why;
}

static const char *scan_bytes(const char *s, bool *done)
{
	struct head_scan h = { 0 };
	const char *why = NULL;

	for (size_t i = 0; s[i] && !why; i++)
		why = httpd__head_scan(&h, s + i, 1);
	*done = h.done;
	return why;
}

TEST(head_scan)
{
	static const char *const ok[] = {
		"GET / HTTP/1.1\r\nHost: t\r\n\r\n",
		"\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n",        /* empty lines before the request line */
		"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\na\nb\r ", /* the body is not the head's */
	};
	static const char *const bad[] = {
		"GET / HTTP/1.1\nHost: t\n\n",                             /* bare LF */
		"GET / HTTP/1.1\r\nHost: t\r\nX: 1\r\n  more\r\n\r\n",     /* obsolete line folding */
		"GET / HTTP/1.1\r\nHost: t\r\nX: 1\r\n\tmore\r\n\r\n",
		"GET / HTTP/1.1\rHost: t\r\n\r\n",                         /* bare CR */
	};
	bool done;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK(scan_whole(ok[i], &done) == NULL && done);
		CHECK(scan_bytes(ok[i], &done) == NULL && done);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(scan_whole(bad[i], &done) != NULL);
		CHECK(scan_bytes(bad[i], &done) != NULL);
	}
	CHECK(scan_whole("GET / HTTP/1.1\r\nHost: t\r\n", &done) == NULL && !done); /* not over yet */
}

TEST(unescape)
{
	char *s;

	s = httpd_unescape("a%2Fb%20c+d", 11, false);
	CHECK_STR(s, "a/b c+d");
	free(s);
	s = httpd_unescape("a+b", 3, true);                        /* form encoding */
	CHECK_STR(s, "a b");
	free(s);
	s = httpd_unescape("%e6%a8%a1", 9, false);                 /* UTF-8 bytes pass through */
	CHECK_STR(s, "\xe6\xa8\xa1");
	free(s);
	CHECK(httpd_unescape("a%00b", 5, false) == NULL);          /* a NUL would cut the path */
	CHECK(httpd_unescape("%zz", 3, false) == NULL);
	CHECK(httpd_unescape("%4", 2, false) == NULL);             /* a cut escape */
	s = httpd_unescape("abcdef", 3, false);                    /* only n bytes */
	CHECK_STR(s, "abc");
	free(s);
}

TEST(if_none_match)
{
	CHECK(httpd_etag_matches("\"abc\"", "\"abc\""));
	CHECK(httpd_etag_matches("W/\"abc\"", "\"abc\""));            /* weak comparison */
	CHECK(httpd_etag_matches("\"abc\"", "W/\"abc\""));
	CHECK(httpd_etag_matches("\"x\", W/\"abc\"", "\"abc\""));      /* a list */
	CHECK(httpd_etag_matches("*", "\"abc\""));
	CHECK(!httpd_etag_matches("\"abcd\"", "\"abc\""));           /* not a substring match */
	CHECK(!httpd_etag_matches("\"xabc\"", "\"abc\""));
	CHECK(!httpd_etag_matches("abc", "\"abc\""));                /* unquoted: malformed */
	CHECK(!httpd_etag_matches(NULL, "\"abc\""));
	CHECK(!httpd_etag_matches("\"abc", "\"abc\""));             /* unterminated */
}

/* ---- httpd_defer ---- */

/* The workers block here until the test opens the gate. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static int done_with_req, done_without_req;

struct slow_job {
	char *body;
};

static void slow_work(void *ud)
{
	struct slow_job *j = ud;

	pthread_mutex_lock(&gate_mu);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	j->body = strdup("slow\n");
}

static void quick_work(void *ud)
{
	((struct slow_job *)ud)->body = strdup("quick\n");
}

static void slow_done(void *ud, struct httpd_req *r)
{
	struct slow_job *j = ud;

	if (r) {
		done_with_req++;
		httpd_respond_str(r, 200, "text/plain", j->body);
	} else {
		done_without_req++;
	}
	free(j->body);
	free(j);
}

static int handler(void *ud, struct httpd_req *r)
{
	(void)ud;
	if (!strcmp(httpd_path(r), "/slow")) {
		httpd_defer(r, slow_work, slow_done, calloc(1, sizeof(struct slow_job)));
		return 0;
	}
	if (!strcmp(httpd_path(r), "/aside")) {
		httpd_defer_aside(r, slow_work, slow_done, calloc(1, sizeof(struct slow_job)));
		return 0;
	}
	if (!strcmp(httpd_path(r), "/write")) {
		httpd_defer_write(r, slow_work, slow_done, calloc(1, sizeof(struct slow_job)));
		return 0;
	}
	if (!strcmp(httpd_path(r), "/quick")) {
		httpd_defer(r, quick_work, slow_done, calloc(1, sizeof(struct slow_job)));
		return 0;
	}
	httpd_respond_str(r, 200, "text/plain", "fast\n");
	return 0;
}

static void set_gate(bool open)
{
	pthread_mutex_lock(&gate_mu);
	gate_open = open;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

/* A client end over a socketpair whose other end the server adopts; req is sent at once. */
static int client(struct httpd *h, const char *req)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	httpd_adopt(h, sv[1]);
	if (write(sv[0], req, strlen(req)) != (ssize_t)strlen(req))
		return -1;
	return sv[0];
}

/* What fd has received so far (appended to got), without waiting. */
static void take(int fd, char *got, size_t cap)
{
	size_t n = strlen(got);
	ssize_t k;

	while (n + 1 < cap && (k = recv(fd, got + n, cap - 1 - n, MSG_DONTWAIT)) > 0)
		n += (size_t)k;
	got[n] = '\0';
}

/* Turn the loop until got holds want (or a bound of turns is spent). */
static void run_until(uv_loop_t *loop, int fd, char *got, size_t cap, const char *want)
{
	for (int i = 0; i < 100000; i++) {
		take(fd, got, cap);
		if (strstr(got, want))
			return;
		uv_run(loop, UV_RUN_NOWAIT);
		if (i > 100)
			usleep(100);
	}
}

TEST(defer_order)
{
	uv_loop_t loop;
	struct httpd *h = NULL;
	struct httpd_config cfg = { .listen = "127.0.0.1:0", .max_workers = 1, .max_waiting = 1 };
	char a[4096] = "", c[4096] = "";
	int fa, fb, fc;
	const char *slow, *fast;

	uv_loop_init(&loop);
	set_gate(false);
	CHECK_INT(httpd_new(&loop, &cfg, &h), 0);
	httpd_add_handler(h, handler, NULL);
	/* a slow request with a fast one pipelined behind it; a fast one on another connection */
	fa = client(h, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
	fb = client(h, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");  /* waits: one worker */
	fc = client(h, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
	run_until(&loop, fc, c, sizeof(c), "fast\n");
	CHECK(!strncmp(c, "HTTP/1.1 503", 12));                   /* past max_waiting */
	CHECK(strstr(c, "Retry-After: 1") != NULL);
	CHECK(strstr(c, "fast\n") != NULL);                       /* and the connection goes on */
	CHECK_INT(done_without_req, 1);
	take(fa, a, sizeof(a));
	CHECK_STR(a, "");                                         /* held: nothing, not even the fast one */
	close(fb);                                                /* gone while its job waits */
	set_gate(true);
	run_until(&loop, fa, a, sizeof(a), "fast\n");
	slow = strstr(a, "slow\n");
	fast = strstr(a, "fast\n");
	CHECK(slow && fast && slow < fast);                       /* pipelined answers in order */
	CHECK_INT(done_with_req + done_without_req, 2);
	for (int i = 0; i < 1000 && done_with_req + done_without_req < 3; i++)
		uv_run(&loop, UV_RUN_NOWAIT), usleep(100);
	CHECK_INT(done_with_req + done_without_req, 3);           /* fb's, answered into a closed socket */
	close(fa);
	close(fc);
	httpd_free(&h);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
}

/* A lane of its own (path: "/aside" or "/write"): its jobs wait for its own workers, and a main-lane
 * job is answered while they all run. */
static void lane_keeps_to_itself(const char *path, const struct httpd_config *cfg)
{
	uv_loop_t loop;
	struct httpd *h = NULL;
	char a[4096] = "", b[4096] = "", q[4096] = "", *get = xasprintf("GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	int fa, fb, fq;

	uv_loop_init(&loop);
	set_gate(false);
	done_with_req = done_without_req = 0;
	CHECK_INT(httpd_new(&loop, cfg, &h), 0);
	httpd_add_handler(h, handler, NULL);
	fa = client(h, get); /* runs, held at the gate */
	fb = client(h, get); /* waits for the lane's worker */
	fq = client(h, "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n"); /* the main lane's: not behind them */
	run_until(&loop, fq, q, sizeof(q), "quick\n");
	CHECK(strstr(q, "quick\n") != NULL);
	take(fa, a, sizeof(a));
	take(fb, b, sizeof(b));
	CHECK_STR(a, "");
	CHECK_STR(b, "");
	set_gate(true);
	run_until(&loop, fb, b, sizeof(b), "slow\n");
	run_until(&loop, fa, a, sizeof(a), "slow\n");
	CHECK(strstr(a, "slow\n") && strstr(b, "slow\n"));
	close(fa);
	close(fb);
	close(fq);
	httpd_free(&h);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
	free(get);
}

/* The aside lane (git's runs). */
TEST(defer_aside)
{
	struct httpd_config cfg = { .listen = "127.0.0.1:0", .max_workers = 1, .max_workers_aside = 1 };

	lane_keeps_to_itself("/aside", &cfg);
}

/* The write lane (uploads hashed whole, commits): a completion never holds repo info's worker. */
TEST(defer_write)
{
	struct httpd_config cfg = { .listen = "127.0.0.1:0", .max_workers = 1, .max_workers_write = 1 };

	lane_keeps_to_itself("/write", &cfg);
}

/* httpd_free while a job runs: its done callback gets no request, and nothing leaks (ASan). */
TEST(defer_shutdown)
{
	uv_loop_t loop;
	struct httpd *h = NULL;
	struct httpd_config cfg = { .listen = "127.0.0.1:0", .max_workers = 1 };
	int before = done_without_req, fa, fb;
	char a[512] = "";

	uv_loop_init(&loop);
	set_gate(false);
	CHECK_INT(httpd_new(&loop, &cfg, &h), 0);
	httpd_add_handler(h, handler, NULL);
	fa = client(h, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");  /* runs, held */
	fb = client(h, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");  /* waits */
	for (int i = 0; i < 100; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	httpd_free(&h);
	CHECK_INT(done_without_req, before + 1);                  /* the waiting one, at once */
	set_gate(true);
	uv_run(&loop, UV_RUN_DEFAULT);                            /* returns once the running one is done */
	CHECK_INT(done_without_req, before + 2);
	CHECK_INT(uv_loop_close(&loop), 0);
	take(fa, a, sizeof(a));
	CHECK_STR(a, "");
	close(fa);
	close(fb);
}

/* ---- gated bodies, and a done that defers again ---- */

static int64_t admitted;          /* bytes of the file the gate lets go (-1: give up) */
static int gate_released;

static int64_t test_gate(void *ud, int64_t off, int64_t len)
{
	(void)ud;
	if (admitted < 0)
		return -1;
	return off >= admitted ? 0 : (admitted - off < len ? admitted - off : len);
}

static void test_release(void *ud)
{
	(void)ud;
	gate_released++;
}

static void step2_work(void *ud)
{
	(void)ud;
}

static void step2_done(void *ud, struct httpd_req *r)
{
	char path[] = "/tmp/hm-test-gate-XXXXXX";
	int fd = mkstemp(path);
	char data[3000];

	(void)ud;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	CHECK(fd >= 0 && write(fd, data, sizeof(data)) == (ssize_t)sizeof(data));
	unlink(path);
	if (r)
		httpd_respond_file_gated(r, 200, "text/plain", fd, 0, sizeof(data), test_gate, test_release, NULL);
	else
		close(fd);
}

static void step1_done(void *ud, struct httpd_req *r)
{
	if (r)
		httpd_defer(r, step2_work, step2_done, ud); /* a second step off the loop */
}

static int gated_handler(void *ud, struct httpd_req *r)
{
	(void)ud;
	httpd_defer(r, step2_work, step1_done, NULL);
	return 0;
}

/* Bytes go out only as the gate admits them; a gate that gives up cuts the body short. */
TEST(gated_body)
{
	uv_loop_t loop;
	struct httpd *h = NULL;
	struct httpd_config cfg = { .listen = "127.0.0.1:0" };
	char got[8192] = "";
	const char *body;
	int fd;

	uv_loop_init(&loop);
	CHECK_INT(httpd_new(&loop, &cfg, &h), 0);
	httpd_add_handler(h, gated_handler, NULL);
	admitted = 1000;
	fd = client(h, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n");
	run_until(&loop, fd, got, sizeof(got), "\r\n\r\n");
	for (int i = 0; i < 200; i++)
		uv_run(&loop, UV_RUN_NOWAIT), usleep(100), take(fd, got, sizeof(got));
	CHECK(strstr(got, "Content-Length: 3000") != NULL);     /* the whole length is promised */
	body = strstr(got, "\r\n\r\n");
	CHECK(body && strlen(body + 4) == 1000);                 /* but only the admitted bytes came */
	admitted = 3000;
	for (int i = 0; i < 5000 && strlen(strstr(got, "\r\n\r\n") + 4) < 3000; i++)
		uv_run(&loop, UV_RUN_NOWAIT), usleep(100), take(fd, got, sizeof(got));
	body = strstr(got, "\r\n\r\n");
	CHECK(body && strlen(body + 4) == 3000);
	CHECK_INT(gate_released, 1);
	close(fd);
	/* a gate that gives up: the connection closes before the promised length */
	admitted = 500;
	got[0] = '\0';
	fd = client(h, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n");
	run_until(&loop, fd, got, sizeof(got), "\r\n\r\n");
	for (int i = 0; i < 200; i++)
		uv_run(&loop, UV_RUN_NOWAIT), usleep(100), take(fd, got, sizeof(got));
	admitted = -1;
	for (int i = 0; i < 500; i++)
		uv_run(&loop, UV_RUN_NOWAIT), usleep(100);
	take(fd, got, sizeof(got));
	body = strstr(got, "\r\n\r\n");
	CHECK(body && strlen(body + 4) == 500);
	CHECK(recv(fd, got, 1, MSG_DONTWAIT) == 0);              /* closed, short */
	CHECK_INT(gate_released, 2);
	close(fd);
	httpd_free(&h);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
}

/* A spliced body: pieces of memory and of a file, in order; HEAD says the length alone; a file piece
 * past the file's end cuts the body short (the connection closes before the promised length). */
static int splice_fd = -1;

static int spliced_handler(void *ud, struct httpd_req *r)
{
	static const struct httpd_part parts[] = {
		{ 0, 2, false }, { 2, 3, true }, { 0, 0, true }, { 2, 2, false }, { 10, 2, true }, { 4, 1, false },
	};
	static const struct httpd_part past[] = { { 0, 1, false }, { 14, 10, true } };
	bool cut = !strcmp(httpd_path(r), "/past");

	(void)ud;
	httpd_respond_spliced(r, 206, "application/octet-stream", "ABCD!", 5, dup(splice_fd), cut ? past : parts,
			      cut ? 2 : 6);
	return 0;
}

TEST(spliced_body)
{
	uv_loop_t loop;
	struct httpd *h = NULL;
	struct httpd_config cfg = { .listen = "127.0.0.1:0" };
	char path[] = "/tmp/test-httpd-splice-XXXXXX", got[8192] = "";
	const char *body;
	int fd;

	splice_fd = mkstemp(path);
	CHECK(splice_fd >= 0);
	unlink(path);
	CHECK_INT((int)write(splice_fd, "0123456789abcdef", 16), 16);
	uv_loop_init(&loop);
	CHECK_INT(httpd_new(&loop, &cfg, &h), 0);
	httpd_add_handler(h, spliced_handler, NULL);
	fd = client(h, "GET /s HTTP/1.1\r\nHost: x\r\n\r\nHEAD /s HTTP/1.1\r\nHost: x\r\n\r\n"
		    "GET /s HTTP/1.1\r\nHost: x\r\n\r\n");
	run_until(&loop, fd, got, sizeof(got), "AB234CDab!HTTP/1.1 206 Partial Content");
	for (int i = 0; i < 100000 && !strstr(strstr(got, "AB234CDab!") + 1, "AB234CDab!"); i++)
		uv_run(&loop, UV_RUN_NOWAIT), usleep(i > 100 ? 100 : 0), take(fd, got, sizeof(got));
	body = strstr(got, "\r\n\r\n");
	CHECK(body && !strncmp(body + 4, "AB234CDab!HTTP/1.1 206", 22));  /* the pieces, then HEAD's answer */
	CHECK(strstr(got, "Content-Length: 10\r\n") != NULL);
	body = body ? strstr(body + 4, "\r\n\r\n") : NULL;                  /* HEAD: no body */
	CHECK(body && !strncmp(body + 4, "HTTP/1.1 206", 12));
	body = body ? strstr(body + 4, "\r\n\r\n") : NULL;                  /* and the same again */
	CHECK(body && !strcmp(body + 4, "AB234CDab!"));
	close(fd);
	got[0] = '\0';
	fd = client(h, "GET /past HTTP/1.1\r\nHost: x\r\n\r\n");
	run_until(&loop, fd, got, sizeof(got), "\r\n\r\nAef");
	for (int i = 0; i < 500; i++)
		uv_run(&loop, UV_RUN_NOWAIT), usleep(100);
	take(fd, got, sizeof(got));
	CHECK(strstr(got, "Content-Length: 11\r\n") != NULL);
	body = strstr(got, "\r\n\r\n");
	CHECK(body && !strcmp(body + 4, "Aef"));                            /* the file's last two bytes, then closed */
	CHECK(recv(fd, got, 1, MSG_DONTWAIT) == 0);
	close(fd);
	close(splice_fd);
	httpd_free(&h);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
}

int main(void)
{
	RUN(range_forms);
	RUN(range_refusals);
	RUN(ranges_forms);
	RUN(ranges_refusals);
	RUN(unescape);
	RUN(head_scan);
	RUN(if_none_match);
	RUN(defer_order);
	RUN(defer_shutdown);
	RUN(defer_aside);
	RUN(defer_write);
	RUN(gated_body);
	RUN(spliced_body);
	return test_done();
}
