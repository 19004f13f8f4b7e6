/*
 * p2p-files.h - helpers shared by the p2p unit tests that move real files between sessions: a clock,
 * files of seeded pseudo-random bytes, libtorrent sessions on loopback whose events a libuv loop
 * drains, and adding a torrent to one. Header-only (static), like test.h; include after <fcntl.h>, <uv.h>, test.h and
 * base/path.h, base/xmalloc.h, p2p/p2p.h.
 */
#ifndef HM_TEST_P2P_FILES_H
#define HM_TEST_P2P_FILES_H

static double now_s(void)
{
	return (double)uv_hrtime() / 1e9;
}

/* Write len pseudo-random bytes (seeded) to dir/rel, creating folders; returns the path (caller frees). */
static char *make_file(const char *dir, const char *rel, size_t len, unsigned seed)
{
	char *path = xasprintf("%s/%s", dir, rel);
	char *parent = xstrdup(path);
	unsigned char *d = xmalloc(len ? len : 1);
	int fd;

	*strrchr(parent, '/') = '\0';
	if (path_mkdirs(parent, 0755)) {
		printf("Bail out! mkdir %s\n", parent);
		exit(1);
	}
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		d[i] = (unsigned char)(seed >> 16);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, d, len) != (ssize_t)len) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
	close(fd);
	free(d);
	free(parent);
	return path;
}

static inline void p2p_test_wake(void *ud)
{
	uv_async_send(ud); /* libtorrent's thread: nothing else */
}

/*
 * A session listening on loopback (lan_tuning as an agent would have it, the local peer class capped
 * at local_upload_limit bytes/s, 0: not), its port in *port, its events waking async on loop, which
 * runs on_async with async->data = ud (the test drains there). Returns 0, or the error after printing it.
 */
static inline int p2p_test_session(uv_loop_t *loop, const char *name, int64_t local_upload_limit, bool lan,
				   struct p2p_session **s, int *port, uv_async_t *async, uv_async_cb on_async, void *ud)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0",
					  .local_upload_limit = local_upload_limit,
					  .lan_tuning = lan };
	struct p2p_session_status st;
	char *err = NULL;
	int r = p2p_session_new(&cfg, s, &err);

	if (r) {
		printf("#   session %s: %s\n", name, err ? err : "?");
		free(err);
		return r;
	}
	CHECK_INT(p2p_session_status(*s, &st), 0);
	*port = st.listen_port;
	CHECK(*port > 0);
	uv_async_init(loop, async, on_async);
	async->data = ud;
	p2p_session_set_wakeup(*s, p2p_test_wake, async);
	return 0;
}

/* Run loop until done(arg) or seconds pass; returns done's last answer. */
static inline int p2p_test_run_until(uv_loop_t *loop, int (*done)(void *), void *arg, double seconds)
{
	double end = now_s() + seconds;

	while (!done(arg)) {
		if (now_s() > end)
			return 0;
		uv_run(loop, UV_RUN_ONCE);
	}
	return 1;
}

/* Add torrent t to s, its files in dir (seed: in seed mode); 0, or an error said as a TAP comment. */
static inline int p2p_test_add(struct p2p_session *s, const struct p2p_torrent *t, const char *dir, bool seed)
{
	struct p2p_add a = { .torrent = t->data, .len = t->len, .save_path = dir, .seed_mode = seed };
	char *err = NULL;
	int r = p2p_session_add(s, &a, NULL, &err);

	if (r)
		printf("#   add: %s\n", err ? err : "?");
	free(err);
	return r;
}

#endif
