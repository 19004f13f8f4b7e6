/*
 * test-p2p-session.c - the libtorrent shim starts a real session with the data-center settings
 * (no DHT, UPnP or NAT-PMP; many connections per IP), listens on loopback, and shuts down cleanly;
 * a SIGBUS that comes before libtorrent's own handler is in place waits for it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "p2p/p2p.h"
#include "test.h"

TEST(session_starts_with_datacenter_settings)
{
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0", .enable_lsd = false };
	struct p2p_session *s = NULL;
	struct p2p_session_status st;
	char *err = NULL;
	int r;

	r = p2p_session_new(&cfg, &s, &err);
	if (r)
		printf("#   p2p_session_new: %s\n", err ? err : "?");
	CHECK_INT(r, 0);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(p2p_session_status(s, &st), 0);
	CHECK(st.listen_port > 0);
	CHECK(!st.dht);
	CHECK(!st.upnp);
	CHECK(!st.natpmp);
	CHECK(!st.lsd);
	CHECK(st.multiple_connections_per_ip);
	p2p_session_free(&s);
	CHECK(s == NULL);
	p2p_session_free(&s); /* NULL-safe */
	free(err);
}

TEST(session_reports_listen_failure)
{
	/* 192.0.2.1 (TEST-NET-1) is not an address of this host: binding it must fail with a message. */
	struct p2p_session_config cfg = { .listen_interfaces = "192.0.2.1:0" };
	struct p2p_session *s = NULL;
	char *err = NULL;

	CHECK_INT(p2p_session_new(&cfg, &s, &err), HM_ERR_TORRENT);
	CHECK(s == NULL);
	CHECK(err != NULL && *err);
	free(err);
}

TEST(version)
{
	CHECK(p2p_version() != NULL && p2p_version()[0] == '2');
}

#if !defined(__SANITIZE_ADDRESS__)
/* Plays libtorrent's try_signal: a handler that jumps back into the faulting thread's scope. */
static _Thread_local sigjmp_buf *volatile late_jmp;
static void late_handler(int signo, siginfo_t *si, void *ctx)
{
	(void)si; (void)ctx;
	if (late_jmp)
		siglongjmp(*late_jmp, signo);
	signal(signo, SIG_DFL);
	raise(signo);
}

static void *install_late(void *arg)
{
	struct timespec pause = {0, 200 * 1000 * 1000};
	struct sigaction sa;

	(void)arg;
	nanosleep(&pause, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = late_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGBUS, &sa, NULL);
	return NULL;
}

#endif

TEST(sigbus_waits_for_libtorrents_handler)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("#   skipped: the sanitizer owns SIGBUS, so the session leaves it alone\n");
#else
	struct p2p_session_config cfg = { .listen_interfaces = "127.0.0.1:0" };
	struct p2p_session *s = NULL;
	char tmpl[] = "/tmp/hm-sigbus-XXXXXX", *dir = test_tmpdir(tmpl), path[512];
	sigjmp_buf jb;
	volatile int got = 0;
	pthread_t th;
	int fd;
	char *map;

	/* The session puts its stand-in in place of the default action. */
	CHECK_INT(p2p_session_new(&cfg, &s, NULL), 0);
	p2p_session_free(&s);
	/* A page past the end of a file: touching it raises SIGBUS, as libtorrent's mmap does on a
	 * file cut short. The "real" handler comes 200 ms later, from another thread. */
	snprintf(path, sizeof path, "%s/short", dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	CHECK(fd >= 0);
	CHECK_INT(ftruncate(fd, 0), 0);
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(map != MAP_FAILED);
	CHECK_INT(pthread_create(&th, NULL, install_late, NULL), 0);
	if (map != MAP_FAILED) {
		int signo = sigsetjmp(jb, 1);
		if (signo == 0) {
			late_jmp = &jb;
			got = *(volatile char *)map;
			got = -1; /* not reached: the read faults */
		} else {
			got = signo;
		}
		late_jmp = NULL;
		munmap(map, 4096);
	}
	pthread_join(th, NULL);
	CHECK_INT(got, SIGBUS);
	signal(SIGBUS, SIG_DFL);
	close(fd);
	test_rmtree(dir);
#endif
}

int main(void)
{
	RUN(session_starts_with_datacenter_settings);
	RUN(session_reports_listen_failure);
	RUN(version);
	RUN(sigbus_waits_for_libtorrents_handler);
	return test_done();
}
