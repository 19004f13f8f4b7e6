/*
 * store-s3-check.c - the S3 client (store/s3.h) against a real S3 store, for t0861-store-s3.sh (a
 * Ceph RADOS Gateway started by tests/integration/helpers/cephrgw.py). TAP on stdout.
 *
 *   store-s3-check ENDPOINT BUCKET PREFIX     (keys: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
 *
 * A 64 MiB object put by multipart upload in 8 MiB parts from writes of odd sizes, its stat, ranges
 * read back byte for byte (the whole, a part's boundary, the tail, a range past the end refused),
 * nine ranges read at once on a libuv loop (and one cancelled by its end), the object copied on the
 * server, small objects listed
 * page by page and deleted, an upload left unfinished by a process that died found, aborted and
 * gone, an abort that leaves nothing, a wrong secret named; and with RGW_PID (the helper's) and
 * RGW_GATEWAY_FILE, the gateway stopped under an upload and a stat and started again: both go on
 * once it is back, the object whole.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "store/s3.h"
#include "test.h"

#define BIG ((size_t)64 << 20)
#define PART ((size_t)8 << 20)

static struct store_s3_config cfg;
static struct store_s3 *s3;
static unsigned char *big;

/* A sink that compares what arrives with big from its offset on. */
struct cmp {
	size_t at;
	size_t got;
	bool same;
};

static int cmp_sink(void *ud, const void *data, size_t n)
{
	struct cmp *c = ud;

	if (c->at + c->got + n > BIG || memcmp(big + c->at + c->got, data, n))
		c->same = false;
	c->got += n;
	return 0;
}

static bool range_is(int64_t off, int64_t len, size_t want)
{
	struct cmp c = { .at = (size_t)off, .same = true };
	int r = store_s3_get(s3, "big/object", off, len, cmp_sink, &c);

	if (r)
		printf("# get %" PRId64 "+%" PRId64 ": %s (%s)\n", off, len, err_str(r), store_s3_errmsg(s3));
	return !r && c.same && c.got == want;
}

struct lread {
	struct cmp c;               /* first: cmp_sink takes the read as its cmp */
	int result;
	int called;
};

static void lread_done(void *ud, int result)
{
	struct lread *r = ud;

	r->result = result;
	r->called++;
}

/* Nine reads at once on a libuv loop (store_s3_loop): eight ranges of the big object byte for byte,
 * one of a key that is not there; then one cancelled by the loop's end. */
static void loop_reads(void)
{
	uv_loop_t loop;
	struct store_s3_loop *l;
	struct lread rd[9], late = { .result = 1 };
	int called = 0;

	CHECK_INT(uv_loop_init(&loop), 0);
	CHECK_INT(store_s3_loop_new(s3, &loop, &l), 0);
	for (int i = 0; i < 9; i++) {
		rd[i] = (struct lread){ .c = { .at = (size_t)i * (7 << 20) + (size_t)i, .same = true }, .result = 1 };
		CHECK_INT(store_s3_loop_get(l, i < 8 ? "big/object" : "big/absent", (int64_t)rd[i].c.at, 3 << 20,
					    cmp_sink, lread_done, &rd[i]), 0);
	}
	CHECK_INT(store_s3_loop_get(l, "big/object", 0, 0, cmp_sink, lread_done, &late), -EINVAL);
	CHECK_INT((int)store_s3_loop_active(l), 9);
	for (int i = 0; i < 9; i++)
		called += rd[i].called;
	CHECK_INT(called, 0); /* never from inside the call that starts it */
	while (store_s3_loop_active(l))
		uv_run(&loop, UV_RUN_ONCE);
	for (int i = 0; i < 8; i++) {
		CHECK_INT(rd[i].called, 1);
		CHECK_INT(rd[i].result, 0);
		CHECK(rd[i].c.same && rd[i].c.got == (size_t)3 << 20);
	}
	CHECK_INT(rd[8].called, 1);
	CHECK_INT(rd[8].result, HM_ERR_NOT_FOUND);
	CHECK_INT(store_s3_loop_get(l, "big/object", 0, 100, cmp_sink, lread_done, &late), 0);
	store_s3_loop_free(&l);
	CHECK(l == NULL);
	CHECK_INT(late.called, 1);
	CHECK_INT(late.result, -ECANCELED);
	uv_run(&loop, UV_RUN_DEFAULT); /* the handles' close callbacks */
	CHECK_INT(uv_loop_close(&loop), 0);
}

/* The 64 MiB object copied on the server, read back byte for byte; an absent source. */
static void copies(void)
{
	struct store_s3_stat st;
	struct cmp c = { .same = true };
	int r = store_s3_copy(s3, "big/object", "big/copy");

	if (r)
		printf("# copy: %s\n", store_s3_errmsg(s3));
	CHECK_INT(r, 0);
	CHECK_INT(store_s3_head(s3, "big/copy", &st), 0);
	CHECK(st.size == (int64_t)BIG);
	CHECK_INT(store_s3_get(s3, "big/copy", 0, -1, cmp_sink, &c), 0);
	CHECK(c.same && c.got == BIG);
	CHECK_INT(store_s3_delete(s3, "big/copy"), 0);
	CHECK_INT(store_s3_copy(s3, "big/absent", "big/copy"), HM_ERR_NOT_FOUND);
	CHECK_INT(store_s3_head(s3, "big/copy", &st), HM_ERR_NOT_FOUND);
}

TEST(multipart_put_and_ranges)
{
	struct store_s3_upload *u;
	struct store_s3_stat st;
	struct cmp c = { .same = true };
	uint64_t x = 0x9e3779b97f4a7c15ull;

	big = xmalloc(BIG);
	for (size_t i = 0; i < BIG; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		big[i] = (unsigned char)x;
	}
	CHECK_INT(store_s3_upload_begin(s3, "big/object", &u), 0);
	for (size_t off = 0, step = 1000003; off < BIG; off += step)
		CHECK_INT(store_s3_upload_write(u, big + off, off + step > BIG ? BIG - off : step), 0);
	CHECK(store_s3_upload_id(u) != NULL); /* more than one part's bytes: a multipart upload */
	CHECK_INT(store_s3_head(s3, "big/object", &st), HM_ERR_NOT_FOUND); /* not visible before commit */
	CHECK_INT(store_s3_upload_commit(&u), 0);
	CHECK(u == NULL);
	CHECK_INT(store_s3_head(s3, "big/object", &st), 0);
	CHECK(st.size == (int64_t)BIG);
	CHECK(strlen(st.etag) > 2 && !strcmp(st.etag + strlen(st.etag) - 2, "-8")); /* 8 parts */
	CHECK(st.mtime > 0);
	CHECK_INT(store_s3_get(s3, "big/object", 0, -1, cmp_sink, &c), 0);
	CHECK(c.same && c.got == BIG);
	CHECK(range_is(0, 1, 1));
	CHECK(range_is((int64_t)PART - 3, 7, 7));                    /* across parts 1 and 2 */
	CHECK(range_is((int64_t)(3 * PART + 12345), (int64_t)(2 * PART), 2 * PART));
	CHECK(range_is((int64_t)BIG - 100, -1, 100));                 /* the tail, open-ended */
	CHECK_INT(store_s3_get(s3, "big/object", (int64_t)BIG + 10, 5, cmp_sink, &c), HM_ERR_HTTP);
	CHECK_STR(store_s3_errcode(s3), "InvalidRange");
	CHECK_INT(store_s3_get(s3, "big/absent", 0, -1, cmp_sink, &c), HM_ERR_NOT_FOUND);
	CHECK_STR(store_s3_errcode(s3), "NoSuchKey");
	loop_reads();
	copies();
	CHECK_INT(store_s3_delete(s3, "big/object"), 0);
	CHECK_INT(store_s3_head(s3, "big/object", &st), HM_ERR_NOT_FOUND);
	free(big);
}

struct seen {
	char keys[16][64];
	int n;
	int64_t size;
	char id[256];
};

static int collect(void *ud, const struct store_s3_entry *e)
{
	struct seen *sn = ud;

	if (sn->n < 16)
		snprintf(sn->keys[sn->n], sizeof(sn->keys[0]), "%s", e->key);
	sn->n++;
	sn->size += e->size;
	if (e->upload_id)
		snprintf(sn->id, sizeof(sn->id), "%s", e->upload_id);
	return 0;
}

TEST(small_list_delete)
{
	static const char *const keys[] = { "list/a", "list/b b", "list/c+%", "list/d/e", "list/f" };
	struct seen sn = { 0 };
	char body[32];

	for (int i = 0; i < 5; i++) {
		snprintf(body, sizeof(body), "body %d", i);
		CHECK_INT(store_s3_put(s3, keys[i], body, strlen(body)), 0);
	}
	CHECK_INT(store_s3_put(s3, "other", "x", 1), 0);
	CHECK_INT(store_s3_list(s3, "list/", collect, &sn), 0); /* pages of 2: three pages */
	CHECK_INT(sn.n, 5);
	for (int i = 0; i < 5 && i < sn.n; i++)
		CHECK_STR(sn.keys[i], keys[i]);
	CHECK(sn.size == 5 * 6);
	for (int i = 0; i < 5; i++)
		CHECK_INT(store_s3_delete(s3, keys[i]), 0);
	CHECK_INT(store_s3_delete(s3, "other"), 0);
	memset(&sn, 0, sizeof(sn));
	CHECK_INT(store_s3_list(s3, "", collect, &sn), 0);
	CHECK_INT(sn.n, 0);
}

/* A writer that dies mid-object (its parts sent, its upload never completed nor aborted). */
static void die_mid_upload(void)
{
	pid_t pid = fork();
	int status = -1;

	if (pid == 0) {
		struct store_s3 *mine;
		struct store_s3_upload *u;
		const char *why;
		unsigned char *part = xcalloc(1, PART + 1000);
		if (store_s3_new(&cfg, &mine, &why) || store_s3_upload_begin(mine, "crash/object", &u) ||
		    store_s3_upload_write(u, part, PART + 1000))
			_exit(1);
		_exit(store_s3_upload_id(u) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(unfinished_uploads)
{
	struct seen sn = { 0 };
	struct store_s3_stat st;
	struct store_s3_upload *u;
	unsigned char *part = xcalloc(1, PART * 2);

	die_mid_upload();
	CHECK_INT(store_s3_uploads(s3, "", collect, &sn), 0);
	CHECK_INT(sn.n, 1);
	CHECK_STR(sn.keys[0], "crash/object");
	CHECK(sn.size == -1 && sn.id[0]);
	CHECK_INT(store_s3_head(s3, "crash/object", &st), HM_ERR_NOT_FOUND);
	CHECK_INT(store_s3_upload_drop(s3, "crash/object", sn.id), 0);
	memset(&sn, 0, sizeof(sn));
	CHECK_INT(store_s3_uploads(s3, "", collect, &sn), 0);
	CHECK_INT(sn.n, 0);
	/* an upload aborted by its writer leaves nothing either */
	CHECK_INT(store_s3_upload_begin(s3, "abort/object", &u), 0);
	CHECK_INT(store_s3_upload_write(u, part, PART * 2), 0);
	CHECK(store_s3_upload_id(u) != NULL);
	store_s3_upload_abort(&u);
	CHECK(u == NULL);
	CHECK_INT(store_s3_uploads(s3, "", collect, &sn), 0);
	CHECK_INT(sn.n, 0);
	CHECK_INT(store_s3_head(s3, "abort/object", &st), HM_ERR_NOT_FOUND);
	free(part);
}

TEST(wrong_secret)
{
	struct store_s3_config bad = cfg;
	struct store_s3 *b;
	struct seen sn = { 0 };
	const char *why;

	bad.secret_key = "not-the-secret";
	CHECK_INT(store_s3_new(&bad, &b, &why), 0);
	CHECK_INT(store_s3_list(b, "", collect, &sn), HM_ERR_AUTH);
	CHECK_STR(store_s3_errcode(b), "SignatureDoesNotMatch");
	CHECK(!strstr(store_s3_errmsg(b), "not-the-secret"));
	store_s3_free(&b);
}

/* The helper's word on its gateway (RGW_GATEWAY_FILE): "down" or "up", within 60 s. */
static bool gateway_is(const char *file, const char *want)
{
	for (int i = 0; i < 600; i++) {
		char got[16] = "";
		FILE *f = fopen(file, "r");
		if (f) {
			if (!fgets(got, sizeof(got), f))
				got[0] = '\0';
			fclose(f);
		}
		if (!strncmp(got, want, strlen(want)))
			return true;
		usleep(100000);
	}
	return false;
}

/* The gateway stopped under a writer and a reader, and started again 2 s later (by the helper,
 * RGW_PID): the parts in flight and those written while it is away are sent again until it is
 * back, the object completes whole, and a stat made while it was away waits for it too. */
TEST(gateway_restart)
{
	const char *pid_s = getenv("RGW_PID"), *state = getenv("RGW_GATEWAY_FILE");
	size_t n = 3 * PART + 1000;
	unsigned char *data;
	struct store_s3_upload *u;
	struct store_s3_stat st;
	struct cmp c = { .same = true };
	pid_t helper, child;
	int status = -1;

	if (!pid_s || !state) {
		printf("# RGW_PID and RGW_GATEWAY_FILE not set: the gateway is not restarted\n");
		return;
	}
	helper = (pid_t)atoi(pid_s);
	big = data = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)(i * 7 + i / 4096);
	CHECK_INT(store_s3_upload_begin(s3, "restart/object", &u), 0);
	CHECK_INT(store_s3_upload_write(u, data, PART + 10), 0); /* one part on its way */
	unlink(state);
	CHECK_INT(kill(helper, SIGUSR1), 0);
	CHECK(gateway_is(state, "down"));
	child = fork();
	if (child == 0) {
		sleep(2);
		unlink(state);
		_exit(kill(helper, SIGUSR2) ? 1 : 0);
	}
	CHECK_INT(store_s3_head(s3, "restart/object", &st), HM_ERR_NOT_FOUND); /* an answer, once it is back */
	CHECK_INT(store_s3_upload_write(u, data + PART + 10, n - PART - 10), 0);
	CHECK_INT(store_s3_upload_commit(&u), 0);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(gateway_is(state, "up"));
	CHECK_INT(store_s3_head(s3, "restart/object", &st), 0);
	CHECK(st.size == (int64_t)n);
	CHECK_INT(store_s3_get(s3, "restart/object", 0, -1, cmp_sink, &c), 0);
	CHECK(c.same && c.got == n);
	CHECK_INT(store_s3_delete(s3, "restart/object"), 0);
	free(data);
	big = NULL;
}

int main(int argc, char **argv)
{
	const char *why = NULL;

	if (argc != 4) {
		fprintf(stderr, "usage: store-s3-check ENDPOINT BUCKET PREFIX\n");
		return 2;
	}
	cfg.endpoint = argv[1];
	cfg.bucket = argv[2];
	cfg.prefix = argv[3];
	cfg.access_key = getenv("AWS_ACCESS_KEY_ID");
	cfg.secret_key = getenv("AWS_SECRET_ACCESS_KEY");
	cfg.part_size = PART;
	cfg.page = 2;
	if (store_s3_new(&cfg, &s3, &why)) {
		fprintf(stderr, "store-s3-check: %s\n", why);
		return 2;
	}
	RUN(multipart_put_and_ranges);
	RUN(small_list_delete);
	RUN(unfinished_uploads);
	RUN(wrong_secret);
	RUN(gateway_restart);
	store_s3_free(&s3);
	return test_done();
}
