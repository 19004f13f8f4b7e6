/*
 * test-p2p-session.c - the libtorrent shim starts a real session with the data-center settings
 * (no DHT, UPnP or NAT-PMP; many connections per IP), listens on loopback, and shuts down cleanly.
 */
#include <stdlib.h>

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

int main(void)
{
	RUN(session_starts_with_datacenter_settings);
	RUN(session_reports_listen_failure);
	RUN(version);
	return test_done();
}
