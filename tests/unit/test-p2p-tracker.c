/*
 * test-p2p-tracker.c - the in-memory tracker's queries and answers: announce queries are parsed
 * strictly, responses are valid bencode with the right counts and peers (compact IPv4, BEP 7 IPv6, or
 * BEP 3 dicts), a peer never gets itself, numwant is capped, and a big swarm's answers are distinct
 * draws. Who stays in a swarm (stopped and expired peers, the limits) is test-p2p-tracker-swarm.c;
 * the bencode reader the answers are checked with is in p2p-announce.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/un.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/xmalloc.h"
#include "p2p/tracker.h"
#include "test.h"
#include "p2p-announce.h"

/* ---- parsing ---- */

static int parse(const char *q, struct p2p_tracker_announce *a, const char **why)
{
	*why = NULL;
	return p2p_tracker_parse_announce(q, strlen(q), a, why);
}

#define HASH_PCT "%124Vx%9a%bc%de%f0%01%23Eg%89%AB%CD%EF%fe%dc%ba%98"
static const unsigned char hash_raw[20] = { 0x12, '4', 'V', 'x', 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23,
					    'E', 'g', 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98 };

TEST(parse_binary_hash_and_options)
{
	struct p2p_tracker_announce a;
	const char *why;
	const char *q = "info_hash=" HASH_PCT "&peer_id=-qB4650-%41bcdefghijkl&port=6881&uploaded=10"
			"&downloaded=20&left=30&event=started&numwant=7&compact=0&no_peer_id=1&ip=6.6.6.6&key=ab%20cd"
			"&supportcrypto=1";

	memset(&a, 0xee, sizeof(a));
	CHECK_INT(parse(q, &a, &why), 0);
	CHECK(why == NULL);
	CHECK(!memcmp(a.info_hash, hash_raw, 20));
	CHECK(!memcmp(a.peer_id, "-qB4650-Abcdefghijkl", 20));
	CHECK_INT(a.port, 6881);
	CHECK_INT(a.uploaded, 10);
	CHECK_INT(a.downloaded, 20);
	CHECK_INT(a.left, 30);
	CHECK_INT(a.event, P2P_TRACKER_EVENT_STARTED);
	CHECK_INT(a.numwant, 7);
	CHECK(!a.compact);
	CHECK(a.no_peer_id);
}

TEST(parse_defaults_and_events)
{
	static const struct { const char *ev; enum p2p_tracker_event want; } evs[] = {
		{ "", P2P_TRACKER_EVENT_NONE }, { "&event=", P2P_TRACKER_EVENT_NONE },
		{ "&event=started", P2P_TRACKER_EVENT_STARTED }, { "&event=stopped", P2P_TRACKER_EVENT_STOPPED },
		{ "&event=completed", P2P_TRACKER_EVENT_COMPLETED }, { "&event=paused", P2P_TRACKER_EVENT_NONE },
	};
	struct p2p_tracker_announce a;
	const char *why;
	char q[512];

	for (size_t k = 0; k < sizeof(evs) / sizeof(evs[0]); k++) {
		snprintf(q, sizeof(q), "peer_id=abcdefghij0123456789&info_hash=%s&left=0&port=65535%s", HASH_PCT,
			 evs[k].ev);
		CHECK_INT(parse(q, &a, &why), 0);
		CHECK_INT(a.event, evs[k].want);
		CHECK_INT(a.port, 65535);
		CHECK_INT(a.left, 0);
		CHECK_INT(a.uploaded, 0);
		CHECK_INT(a.downloaded, 0);
		CHECK_INT(a.numwant, -1);
		CHECK(a.compact);
		CHECK(!a.no_peer_id);
		CHECK(!memcmp(a.peer_id, "abcdefghij0123456789", 20));
	}
	/* Huge numwant saturates (the tracker caps it anyway); compact=1 and a repeated key (last wins). */
	CHECK_INT(parse("info_hash=" HASH_PCT
			"&peer_id=abcdefghij0123456789&port=1&left=5&numwant=99999999999999999999999"
			"&compact=1&port=2&&",
			&a, &why),
		  0);
	CHECK_INT(a.numwant, INT_MAX);
	CHECK_INT(a.port, 2);
	CHECK(a.compact);
	/* len is honoured: nothing past it is read. */
	{
		const char *q2 = "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=1&left=5&port=0";

		CHECK_INT(p2p_tracker_parse_announce(q2, strlen(q2) - strlen("&port=0"), &a, &why), 0);
		CHECK_INT(a.port, 1);
	}
}

TEST(parse_refuses_bad_queries)
{
	static const char *const bad[][2] = {
		{"", "missing info_hash"},
		{"peer_id=abcdefghij0123456789&port=1&left=0", "missing info_hash"},
		{"info_hash=%12%34&peer_id=abcdefghij0123456789&port=1&left=0", "info_hash is not 20 bytes"},
		{"info_hash=" HASH_PCT "x&peer_id=abcdefghij0123456789&port=1&left=0", "info_hash is not 20 bytes"},
		{"info_hash&peer_id=abcdefghij0123456789&port=1&left=0", "info_hash is not 20 bytes"},
		{"info_hash=" HASH_PCT "&port=1&left=0", "missing peer_id"},
		{"info_hash=" HASH_PCT "&peer_id=short&port=1&left=0", "peer_id is not 20 bytes"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&left=0", "missing port"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=0&left=0", "invalid port"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=65536&left=0", "invalid port"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=-1&left=0", "invalid port"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=68x1&left=0", "invalid port"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=&left=0", "invalid port"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881", "missing left"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=-1", "invalid left"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=99999999999999999999",
		 "invalid left"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&uploaded=1e3",
		 "invalid uploaded"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&downloaded=",
		 "invalid downloaded"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&event=begun", "invalid event"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&numwant=-1", "invalid numwant"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&compact=yes", "invalid compact"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&no_peer_id=2",
		 "invalid no_peer_id"},
		{"info_hash=%1%23" HASH_PCT "&peer_id=abcdefghij0123456789&port=1&left=0",
		 "bad percent-encoding in a parameter value"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=1&left=%",
		 "bad percent-encoding in a parameter value"},
		{"info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=1&left=0&%zz=1",
		 "bad percent-encoding in a parameter name"},
		{"&&&==&=&x", "missing info_hash"},
		{"\xff\xfe\x01garbage=%%%", "missing info_hash"},
		{"x%%%=1&info_hash=" HASH_PCT, "bad percent-encoding in a parameter name"},
	};
	struct p2p_tracker_announce a, before;
	const char *why;

	memset(&before, 0x5a, sizeof(before));
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		a = before;
		CHECK_INT(parse(bad[k][0], &a, &why), HM_ERR_USAGE);
		CHECK_STR(why, bad[k][1]);
		CHECK(!memcmp(&a, &before, sizeof(a))); /* out untouched on error */
	}
	CHECK_INT(p2p_tracker_parse_announce("port=1", 6, &a, NULL), HM_ERR_USAGE); /* why may be NULL */
}

/* ---- responses ---- */

TEST(failure_body)
{
	struct buf b;

	buf_init(&b);
	p2p_tracker_failure(&b, "swarm is full");
	CHECK(BODY_IS(&b, "d14:failure reason13:swarm is fulle"));
	buf_release(&b);
}

TEST(responses_byte_for_byte)
{
	struct p2p_tracker_config cfg = { .interval = 120 };
	struct p2p_tracker *t = p2p_tracker_new(&cfg);
	struct p2p_tracker_announce a;
	struct buf b;
	size_t s, l;

	buf_init(&b);
	/* First peer: alone, so no peers. */
	CHECK_INT(join(t, 0xaa, "10.0.0.1", 6881, 100, 1000, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei0e10:incompletei1e8:intervali120e12:min intervali60e5:peers0:e"));
	/* A seeder joins and gets the leecher: 10.0.0.1:6881 = 0a 00 00 01 1a e1. */
	CHECK_INT(join(t, 0xaa, "10.0.0.2", 6882, 0, 1001, &b), 0);
	CHECK(BODY_IS(
		&b, "d8:completei1e10:incompletei1e8:intervali120e12:min intervali60e5:peers6:\x0a\x00\x00\x01\x1a\xe1"
		    "e"));
	/* The leecher re-announces, not compact: a BEP 3 dict with the seeder's peer id. */
	a = ann(0xaa, "10.0.0.1", 6881, 50);
	a.compact = false;
	CHECK_INT(announce(t, &a, "10.0.0.1", 1002, &b), 0);
	{
		unsigned char id[20];
		struct buf want;

		peer_id_of("10.0.0.2", 6882, id);
		buf_init(&want);
		buf_adds(&want, "d8:completei1e10:incompletei1e8:intervali120e12:min intervali60e"
			 "5:peersld2:ip8:10.0.0.27:peer id20:");
		buf_add(&want, id, 20);
		buf_adds(&want, "4:porti6882eeee");
		CHECK(b.len == want.len && !memcmp(b.data, want.data, b.len));
		buf_release(&want);
	}
	a.no_peer_id = true;
	CHECK_INT(announce(t, &a, "10.0.0.1", 1003, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei1e10:incompletei1e8:intervali120e12:min intervali60e"
		      "5:peersld2:ip8:10.0.0.24:porti6882eeee"));
	/* Port comes from the announce, IP from the connection: the "ip" parameter never enters. */
	p2p_tracker_swarm(t, a.info_hash, &s, &l);
	CHECK_INT(s, 1);
	CHECK_INT(l, 1);
	p2p_tracker_swarm(t, (const unsigned char *)"unknown-info-hash-xx", &s, &l);
	CHECK_INT(s, 0);
	CHECK_INT(l, 0);
	buf_release(&b);
	p2p_tracker_free(&t);
	CHECK(t == NULL);
	p2p_tracker_free(&t);
	p2p_tracker_free(NULL);
}

TEST(never_yourself_and_same_host_other_port)
{
	struct p2p_tracker *t = p2p_tracker_new(NULL);
	char (*list)[64] = xcalloc(MAXP, 64);
	char ip[32], self[64];
	struct buf b;
	int n;

	buf_init(&b);
	/* 30 peers, two per host (like several clients on 127.0.0.1 in a test). */
	for (int k = 0; k < 30; k++) {
		snprintf(ip, sizeof(ip), "192.168.1.%d", k / 2 + 1);
		CHECK_INT(join(t, 1, ip, 7000 + (unsigned)k, 10, 50, &b), 0);
		n = peers_of(&b, list, MAXP);
		CHECK_INT(n, k);
		snprintf(self, sizeof(self), "%s:%d", ip, 7000 + k);
		CHECK(!listed(list, n, self));
		CHECK(distinct(list, n));
	}
	for (int k = 0; k < 30; k++) {
		struct p2p_tracker_announce a;

		snprintf(ip, sizeof(ip), "192.168.1.%d", k / 2 + 1);
		a = ann(1, ip, 7000 + (unsigned)k, 10);
		a.numwant = 200;
		CHECK_INT(announce(t, &a, ip, 60, &b), 0);
		n = peers_of(&b, list, MAXP);
		CHECK_INT(n, 29);
		snprintf(self, sizeof(self), "%s:%d", ip, 7000 + k);
		CHECK(!listed(list, n, self));
		CHECK(distinct(list, n));
		/* The other client on the same host is a different peer. */
		snprintf(self, sizeof(self), "%s:%d", ip, 7000 + (k ^ 1));
		CHECK(listed(list, n, self));
	}
	/* Small numwant (a sparse draw) many times: still never yourself, and the order varies even
	 * when everyone is listed, so no peer is always first in line. */
	{
		char first[64] = "";
		bool varied = false;

		for (int k = 0; k < 400; k++) {
			struct p2p_tracker_announce a = ann(1, "192.168.1.1", 7000, 10);

			a.numwant = k < 300 ? k % 5 + 1 : 200;
			CHECK_INT(announce(t, &a, "192.168.1.1", 61, &b), 0);
			n = peers_of(&b, list, MAXP);
			CHECK_INT(n, a.numwant < 29 ? a.numwant : 29);
			CHECK(!listed(list, n, "192.168.1.1:7000"));
			if (k >= 300 && first[0] && strcmp(first, list[0]))
				varied = true;
			if (k >= 300)
				snprintf(first, sizeof(first), "%s", list[0]);
		}
		CHECK(varied);
	}
	free(list);
	buf_release(&b);
	p2p_tracker_free(&t);
}

TEST(ipv6_peers_in_peers6)
{
	struct p2p_tracker *t = p2p_tracker_new(NULL);
	char (*list)[64] = xcalloc(MAXP, 64);
	struct p2p_tracker_announce a;
	struct p2p_tracker_stats st;
	struct buf b;
	int n;

	buf_init(&b);
	CHECK_INT(join(t, 3, "2001:db8::1", 6881, 1, 1, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei0e10:incompletei1e8:intervali120e12:min intervali60e5:peers0:e"));
	/* A v4 client sees the v6 peer in peers6 (and an empty peers). */
	CHECK_INT(join(t, 3, "10.0.0.9", 6882, 1, 2, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei0e10:incompletei2e8:intervali120e12:min intervali60e5:peers0:6:peers618:"
		      "\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x1a\xe1" "e"));
	/* An IPv4-mapped address (dual-stack listener) is an IPv4 peer, and the same peer as plain v4. */
	CHECK_INT(join(t, 3, "::ffff:10.0.0.9", 6882, 1, 3, &b), 0);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 2);
	CHECK_INT(join(t, 3, "2001:db8::2", 6883, 1, 4, &b), 0);
	n = peers_of(&b, list, MAXP);
	CHECK_INT(n, 2);
	CHECK(listed(list, n, "10.0.0.9:6882"));
	CHECK(listed(list, n, "[2001:db8::1]:6881"));
	/* Not compact: one list with both families, v6 as text. */
	a = ann(3, "10.0.0.9", 6882, 1);
	a.compact = false;
	CHECK_INT(announce(t, &a, "10.0.0.9", 5, &b), 0);
	n = peers_of(&b, list, MAXP);
	CHECK_INT(n, 2);
	CHECK(listed(list, n, "[2001:db8::1]:6881"));
	CHECK(listed(list, n, "[2001:db8::2]:6883"));
	/* Anything else is refused with a failure body. */
	{
		struct sockaddr_un un;

		memset(&un, 0, sizeof(un));
		un.sun_family = AF_UNIX;
		buf_reset(&b);
		CHECK_INT(p2p_tracker_announce(t, &a, (const struct sockaddr *)&un, 6, &b), -EAFNOSUPPORT);
		CHECK(is_failure(&b));
	}
	free(list);
	buf_release(&b);
	p2p_tracker_free(&t);
}

TEST(numwant_caps)
{
	static const struct { int numwant; int want; } cases[] = {
		{ -1, 50 }, { 0, 0 }, { 1, 1 }, { 7, 7 }, { 150, 150 }, { 200, 200 }, { 201, 200 }, { INT_MAX, 200 },
	};
	struct p2p_tracker *t = p2p_tracker_new(NULL);
	char (*list)[64] = xcalloc(MAXP, 64);
	struct p2p_tracker_announce a;
	char ip[32];
	struct buf b;
	int n;

	buf_init(&b);
	for (int k = 0; k < 300; k++) {
		snprintf(ip, sizeof(ip), "10.2.%d.%d", k / 200, k % 200 + 1);
		CHECK_INT(join(t, 5, ip, 6881, 1, 10, &b), 0);
	}
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		a = ann(5, "10.2.0.1", 6881, 1);
		a.numwant = cases[k].numwant;
		CHECK_INT(announce(t, &a, "10.2.0.1", 11, &b), 0);
		n = peers_of(&b, list, MAXP);
		CHECK_INT(n, cases[k].want);
		CHECK(distinct(list, n));
		CHECK(!listed(list, n, "10.2.0.1:6881"));
		a.compact = false;
		CHECK_INT(announce(t, &a, "10.2.0.1", 11, &b), 0);
		CHECK_INT(peers_of(&b, list, MAXP), cases[k].want);
	}
	/* Small swarms: numwant larger than the swarm, and between half of it and all of it. */
	for (int k = 0; k < 10; k++) {
		snprintf(ip, sizeof(ip), "10.3.0.%d", k + 1);
		CHECK_INT(join(t, 6, ip, 6881, 1, 10, &b), 0);
	}
	for (int want = 0; want <= 12; want++) {
		a = ann(6, "10.3.0.1", 6881, 1);
		a.numwant = want;
		CHECK_INT(announce(t, &a, "10.3.0.1", 11, &b), 0);
		n = peers_of(&b, list, MAXP);
		CHECK_INT(n, want < 9 ? want : 9);
		CHECK(distinct(list, n));
		CHECK(!listed(list, n, "10.3.0.1:6881"));
	}
	free(list);
	buf_release(&b);
	p2p_tracker_free(&t);
}

TEST(big_swarm_gives_fifty_distinct)
{
	struct p2p_tracker *t = p2p_tracker_new(NULL);
	char (*list)[64] = xcalloc(MAXP, 64);
	char (*first)[64] = xcalloc(MAXP, 64);
	struct p2p_tracker_stats st;
	char ip[32];
	struct buf b;
	int n, same = 0;

	buf_init(&b);
	for (int k = 0; k < 2000; k++) {
		snprintf(ip, sizeof(ip), "10.%d.%d.%d", 10 + k / 62500, k / 250 % 250, k % 250 + 1);
		CHECK_INT(join(t, 0x42, ip, 6881, k % 3 ? 1 : 0, 1, &b), 0);
	}
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 2000);
	CHECK_INT(st.seeders, 667);
	CHECK_INT(join(t, 0x42, "10.10.0.1", 6881, 0, 2, &b), 0);
	n = peers_of(&b, first, MAXP);
	CHECK_INT(n, 50);
	CHECK(distinct(first, n));
	CHECK(!listed(first, n, "10.10.0.1:6881"));
	{
		struct bval d;

		CHECK(bdecode_all(&b, &d));
		CHECK_INT(bint(&d, "complete"), 667);
		CHECK_INT(bint(&d, "incomplete"), 1333);
		bfree(&d);
	}
	/* Every listed peer is one of ours, and a second answer is a different draw. */
	for (int k = 0; k < n; k++) {
		unsigned o1, o2, o3, o4, port;

		CHECK(sscanf(first[k], "%u.%u.%u.%u:%u", &o1, &o2, &o3, &o4, &port) == 5);
		CHECK(o1 == 10 && o2 == 10 && o3 < 8 && o4 >= 1 && o4 <= 250 && port == 6881);
	}
	CHECK_INT(join(t, 0x42, "10.10.0.1", 6881, 0, 2, &b), 0);
	n = peers_of(&b, list, MAXP);
	CHECK_INT(n, 50);
	for (int k = 0; k < n; k++)
		same += listed(first, 50, list[k]);
	CHECK(same < 50);
	free(first);
	free(list);
	buf_release(&b);
	p2p_tracker_free(&t);
}

int main(void)
{
	RUN(parse_binary_hash_and_options);
	RUN(parse_defaults_and_events);
	RUN(parse_refuses_bad_queries);
	RUN(failure_body);
	RUN(responses_byte_for_byte);
	RUN(never_yourself_and_same_host_other_port);
	RUN(ipv6_peers_in_peers6);
	RUN(numwant_caps);
	RUN(big_swarm_gives_fifty_distinct);
	return test_done();
}
