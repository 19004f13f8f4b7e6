/*
 * test-p2p-tracker-swarm.c - who stays in the in-memory tracker's swarms: stopped and expired peers
 * leave (lazily, and in the sweep) and the counts follow them, the limits refuse new entries only,
 * who holds a swarm besides one peer, one address cannot fill a swarm, the sum of what peers say they uploaded
 * saturates, and many swarms grow and shrink under churn. Answers are checked with p2p-announce.h's strict bencode
 * reader.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "p2p/tracker.h"
#include "test.h"
#include "p2p-announce.h"

/* ---- leaving: stopped, expired ---- */

TEST(stopped_removes_and_counts)
{
	struct p2p_tracker *t = p2p_tracker_new(NULL);
	char (*list)[64] = xcalloc(MAXP, 64);
	struct p2p_tracker_announce a;
	struct p2p_tracker_stats st;
	unsigned char h[20];
	size_t s, l;
	struct buf b;
	int n;

	buf_init(&b);
	memset(h, 7, 20);
	CHECK_INT(join(t, 7, "10.1.0.1", 1000, 0, 5, &b), 0);   /* seeder */
	CHECK_INT(join(t, 7, "10.1.0.2", 1000, 0, 5, &b), 0);   /* seeder */
	CHECK_INT(join(t, 7, "10.1.0.3", 1000, 99, 5, &b), 0);  /* leecher */
	CHECK_INT(join(t, 8, "10.1.0.3", 1000, 99, 5, &b), 0);  /* same client, other torrent */
	p2p_tracker_swarm(t, h, &s, &l);
	CHECK_INT(s, 2);
	CHECK_INT(l, 1);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 2);
	CHECK_INT(st.peers, 4);
	CHECK_INT(st.seeders, 2);
	CHECK_INT(st.announces, 4);

	/* The leecher completes: counted as a seeder from now on. */
	a = ann(7, "10.1.0.3", 1000, 0);
	a.event = P2P_TRACKER_EVENT_COMPLETED;
	CHECK_INT(announce(t, &a, "10.1.0.3", 6, &b), 0);
	p2p_tracker_swarm(t, h, &s, &l);
	CHECK_INT(s, 3);
	CHECK_INT(l, 0);

	/* Stopped: gone, and no peers in the reply. */
	CHECK_INT(leave(t, 7, "10.1.0.1", 1000, 0, 7, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei2e10:incompletei0e8:intervali120e12:min intervali60e5:peers0:e"));
	CHECK_INT(join(t, 7, "10.1.0.2", 1000, 0, 8, &b), 0);
	n = peers_of(&b, list, MAXP);
	CHECK_INT(n, 1);
	CHECK(listed(list, n, "10.1.0.3:1000"));
	/* A stopped from the same host but another port removes nothing. */
	CHECK_INT(leave(t, 7, "10.1.0.2", 1001, 0, 9, &b), 0);
	p2p_tracker_swarm(t, h, &s, &l);
	CHECK_INT(s, 2);
	/* Everyone leaves: the swarm is forgotten. */
	CHECK_INT(leave(t, 7, "10.1.0.2", 1000, 0, 9, &b), 0);
	CHECK_INT(leave(t, 7, "10.1.0.3", 1000, 0, 9, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei0e10:incompletei0e8:intervali120e12:min intervali60e5:peers0:e"));
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 1);
	CHECK_INT(st.peers, 1);
	CHECK_INT(st.seeders, 0);
	/* What peers say they uploaded: summed over live peers, updated, dropped when they leave. */
	a = ann(8, "10.1.0.3", 1000, 99);
	a.uploaded = 100;
	CHECK_INT(announce(t, &a, "10.1.0.3", 9, &b), 0);
	a = ann(8, "10.1.0.4", 1000, 99);
	a.uploaded = 50;
	CHECK_INT(announce(t, &a, "10.1.0.4", 9, &b), 0);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peer_uploaded, 150);
	a = ann(8, "10.1.0.3", 1000, 99);
	a.uploaded = 400;
	CHECK_INT(announce(t, &a, "10.1.0.3", 10, &b), 0);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peer_uploaded, 450);
	CHECK_INT(leave(t, 8, "10.1.0.4", 1000, 99, 10, &b), 0);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peer_uploaded, 400);
	p2p_tracker_expire(t, 10 + 2 * 120);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peer_uploaded, 0);
	CHECK_INT(st.torrents, 0);
	/* Stopped for a swarm nobody knows: an empty answer, nothing created. */
	CHECK_INT(leave(t, 9, "10.1.0.9", 1000, 0, 9, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei0e10:incompletei0e8:intervali120e12:min intervali60e5:peers0:e"));
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 0);
	free(list);
	buf_release(&b);
	p2p_tracker_free(&t);
}

TEST(expiry_after_two_intervals)
{
	struct p2p_tracker_config cfg = { .interval = 10 };
	struct p2p_tracker *t = p2p_tracker_new(&cfg);
	char (*list)[64] = xcalloc(MAXP, 64);
	struct p2p_tracker_stats st;
	struct buf b;
	int n;

	buf_init(&b);
	CHECK_INT(join(t, 1, "10.4.0.1", 1, 1, 100, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei0e10:incompletei1e8:intervali10e12:min intervali5e5:peers0:e"));
	CHECK_INT(join(t, 1, "10.4.0.2", 1, 1, 105, &b), 0);
	CHECK_INT(peers_of(&b, list, MAXP), 1);
	/* 19 s after its announce peer 1 is alive; at 20 s (2 * interval) it is gone (lazy expiry). */
	CHECK_INT(join(t, 1, "10.4.0.2", 1, 1, 119, &b), 0);
	CHECK_INT(peers_of(&b, list, MAXP), 1);
	CHECK_INT(join(t, 1, "10.4.0.2", 1, 1, 120, &b), 0);
	CHECK_INT(peers_of(&b, list, MAXP), 0);
	CHECK(BODY_IS(&b, "d8:completei0e10:incompletei1e8:intervali10e12:min intervali5e5:peers0:e"));
	/* A re-announce extends a peer's life. */
	CHECK_INT(join(t, 1, "10.4.0.1", 1, 1, 125, &b), 0);
	CHECK_INT(join(t, 1, "10.4.0.1", 1, 1, 135, &b), 0);
	CHECK_INT(join(t, 1, "10.4.0.3", 1, 1, 144, &b), 0);
	n = peers_of(&b, list, MAXP);
	CHECK_INT(n, 1); /* 10.4.0.2 (last seen 120) expired at 140; 10.4.0.1 (135) lives */
	CHECK(listed(list, n, "10.4.0.1:1"));

	/* The sweep: swarms nobody touches go too. */
	CHECK_INT(join(t, 2, "10.4.0.9", 1, 0, 150, &b), 0);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 2);
	CHECK_INT(st.peers, 3);
	p2p_tracker_expire(t, 154);  /* 10.4.0.1 expires at 155, 10.4.0.3 at 164, 10.4.0.9 at 170 */
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 3);
	p2p_tracker_expire(t, 155);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 2);
	CHECK_INT(st.torrents, 2);
	p2p_tracker_expire(t, 169);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 1);
	CHECK_INT(st.torrents, 1);
	CHECK_INT(st.seeders, 1);
	p2p_tracker_expire(t, 170);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 0);
	CHECK_INT(st.torrents, 0);
	CHECK_INT(st.seeders, 0);
	free(list);
	buf_release(&b);
	p2p_tracker_free(&t);
}

/* Whether anyone but the mirror's own seed holds a swarm (the seeder keeps a torrent that is no
 * head while its swarm is held): live peers other than one peer id, expired ones not counted even
 * before a sweep. */
TEST(swarm_others_skips_one_peer_and_the_expired)
{
	struct p2p_tracker_config cfg = { .interval = 10 };
	struct p2p_tracker *t = p2p_tracker_new(&cfg);
	struct p2p_tracker_announce self = ann(3, "10.5.0.1", 7000, 0);
	unsigned char h[20], none[20];
	struct buf b;

	buf_init(&b);
	memset(h, 3, 20);
	memset(none, 4, 20);
	CHECK_INT(p2p_tracker_swarm_others(t, h, self.peer_id, 100), 0);
	CHECK_INT(announce(t, &self, "10.5.0.1", 100, &b), 0);
	CHECK_INT(p2p_tracker_swarm_others(t, h, self.peer_id, 100), 0); /* the seed alone */
	CHECK_INT(join(t, 3, "10.5.0.2", 1, 0, 105, &b), 0);
	CHECK_INT(join(t, 3, "10.5.0.3", 1, 50, 110, &b), 0);
	CHECK_INT(p2p_tracker_swarm_others(t, h, self.peer_id, 110), 2);
	CHECK_INT(p2p_tracker_swarm_others(t, none, self.peer_id, 110), 0);
	/* 10.5.0.2 expires at 125, 10.5.0.3 at 130: no sweep ran, the count knows */
	CHECK_INT(p2p_tracker_swarm_others(t, h, self.peer_id, 125), 1);
	CHECK_INT(p2p_tracker_swarm_others(t, h, self.peer_id, 130), 0);
	/* a stopped announce: gone at once */
	CHECK_INT(join(t, 3, "10.5.0.4", 1, 0, 131, &b), 0);
	CHECK_INT(p2p_tracker_swarm_others(t, h, self.peer_id, 131), 1);
	CHECK_INT(leave(t, 3, "10.5.0.4", 1, 0, 132, &b), 0);
	CHECK_INT(p2p_tracker_swarm_others(t, h, self.peer_id, 132), 0);
	buf_release(&b);
	p2p_tracker_free(&t);
}

/* ---- the limits ---- */

TEST(limits_refuse_new_entries_only)
{
	struct p2p_tracker_config cfg = { .interval = 10, .max_torrents = 2, .max_peers = 3, .max_total_peers = 5 };
	struct p2p_tracker *t = p2p_tracker_new(&cfg);
	struct p2p_tracker_stats st;
	struct buf b;

	buf_init(&b);
	CHECK_INT(join(t, 1, "10.5.0.1", 1, 1, 0, &b), 0);
	CHECK_INT(join(t, 2, "10.5.0.1", 1, 1, 0, &b), 0);
	/* A third info-hash is refused, with a failure body and nothing recorded. */
	CHECK_INT(join(t, 3, "10.5.0.1", 1, 1, 0, &b), -ENOSPC);
	CHECK(is_failure(&b));
	CHECK(BODY_IS(&b, "d14:failure reason34:tracker is full: too many torrentse"));
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 2);
	CHECK_INT(st.peers, 2);
	CHECK_INT(st.announces, 3);
	/* Swarm 1 fills at 3 peers; the 4th is refused, the known ones keep working. */
	CHECK_INT(join(t, 1, "10.5.0.2", 1, 1, 1, &b), 0);
	CHECK_INT(join(t, 1, "10.5.0.3", 1, 1, 1, &b), 0);
	CHECK_INT(join(t, 1, "10.5.0.4", 1, 1, 1, &b), -ENOSPC);
	CHECK(BODY_IS(&b, "d14:failure reason46:swarm is full: too many peers for this torrente"));
	CHECK_INT(join(t, 1, "10.5.0.1", 1, 0, 2, &b), 0);
	CHECK(!is_failure(&b));
	/* Room again once someone leaves. */
	CHECK_INT(leave(t, 1, "10.5.0.3", 1, 1, 2, &b), 0);
	CHECK_INT(join(t, 1, "10.5.0.4", 1, 1, 2, &b), 0);
	/* The total: 1 + 3 in swarm 1... add to swarm 2 until 5 peers in all. */
	CHECK_INT(join(t, 2, "10.5.0.2", 1, 1, 3, &b), 0);
	CHECK_INT(join(t, 2, "10.5.0.3", 1, 1, 3, &b), -ENOSPC);
	CHECK(BODY_IS(&b, "d14:failure reason31:tracker is full: too many peerse"));
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 5);
	/* Expired peers make room without waiting for the sweep: everyone last seen at 0..3 is gone at
	 * 23 (2 * interval), though nothing touched their swarms. */
	CHECK_INT(join(t, 3, "10.5.0.1", 1, 1, 21, &b), -ENOSPC);
	CHECK_INT(join(t, 3, "10.5.0.1", 1, 1, 23, &b), 0);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 1);
	CHECK_INT(st.peers, 1);
	buf_release(&b);
	p2p_tracker_free(&t);
}

/* An announce flood from one address (5000 ports) holds a handful of places in the swarm: the others
 * still get in and are in the answers; a new port from the flooder replaces its longest-silent one. */
TEST(one_address_cannot_fill_a_swarm)
{
	struct p2p_tracker_config cfg = { .max_peers = 100 };
	struct p2p_tracker *t = p2p_tracker_new(&cfg);
	char (*list)[64] = xcalloc(MAXP, 64);
	struct p2p_tracker_stats st;
	struct buf b;
	int n, flooder = 0;

	buf_init(&b);
	CHECK_INT(join(t, 7, "10.9.0.1", 6881, 1, 0, &b), 0);
	for (unsigned port = 1; port <= 5000; port++)
		CHECK_INT(join(t, 7, "10.6.6.6", port, 1, (int64_t)port / 100, &b), 0);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 9); /* the honest peer and 8 of the flooder's ports */
	/* the newest ports are the ones kept */
	CHECK_INT(join(t, 7, "10.9.0.2", 6881, 1, 60, &b), 0);
	n = peers_of(&b, list, MAXP);
	CHECK_INT(n, 9);
	CHECK(listed(list, n, "10.9.0.1:6881"));
	CHECK(listed(list, n, "10.6.6.6:5000"));
	CHECK(!listed(list, n, "10.6.6.6:4000"));
	for (int k = 0; k < n; k++)
		flooder += !strncmp(list[k], "10.6.6.6:", 9);
	CHECK_INT(flooder, 8);
	/* a swarm that is full of distinct addresses still refuses newcomers, as before */
	for (int k = 3; k <= 100; k++) {
		char ip[32];
		snprintf(ip, sizeof(ip), "10.9.1.%d", k);
		join(t, 7, ip, 6881, 1, 61, &b);
	}
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peers, 100);
	CHECK_INT(join(t, 7, "10.9.2.1", 6881, 1, 61, &b), -ENOSPC);
	free(list);
	buf_release(&b);
	p2p_tracker_free(&t);
}

/* uploaded is whatever a peer says, up to INT64_MAX: the sum saturates instead of wrapping negative. */
TEST(uploaded_sum_saturates)
{
	struct p2p_tracker *t = p2p_tracker_new(NULL);
	struct p2p_tracker_announce a;
	struct p2p_tracker_stats st;
	struct buf b;

	buf_init(&b);
	a = ann(9, "10.8.0.1", 1, 1);
	a.uploaded = INT64_MAX;
	CHECK_INT(announce(t, &a, "10.8.0.1", 0, &b), 0);
	a = ann(9, "10.8.0.2", 1, 1);
	a.uploaded = INT64_MAX;
	CHECK_INT(announce(t, &a, "10.8.0.2", 0, &b), 0);
	CHECK_INT(announce(t, &a, "10.8.0.2", 1, &b), 0); /* a refresh with the same count */
	p2p_tracker_stats(t, &st);
	CHECK(st.peer_uploaded == INT64_MAX);
	/* exact again once the big ones are gone */
	a.uploaded = 5;
	CHECK_INT(announce(t, &a, "10.8.0.2", 2, &b), 0);
	CHECK_INT(leave(t, 9, "10.8.0.1", 1, 1, 2, &b), 0);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.peer_uploaded, 5);
	buf_release(&b);
	p2p_tracker_free(&t);
}

/* ---- churn ---- */

TEST(many_swarms_grow_and_shrink)
{
	/* Exercise table growth, backward-shift deletion and peer-array shrinking under churn. */
	struct p2p_tracker_config cfg = { .interval = 100 };
	struct p2p_tracker *t = p2p_tracker_new(&cfg);
	struct p2p_tracker_announce a;
	struct p2p_tracker_stats st;
	char ip[32];
	struct buf b;
	size_t s, l;

	buf_init(&b);
	for (int k = 0; k < 3000; k++) {
		snprintf(ip, sizeof(ip), "10.6.%d.%d", k / 200, k % 200 + 1);
		a = ann(0, ip, 6881, k % 2);
		memcpy(a.info_hash, &k, sizeof(k));
		CHECK_INT(announce(t, &a, ip, 0, &b), 0);
		a.info_hash[19] = 1;
		CHECK_INT(announce(t, &a, ip, 0, &b), 0);
	}
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 6000);
	CHECK_INT(st.peers, 6000);
	/* Stop every other swarm, and all but one peer of a big swarm. */
	for (int k = 0; k < 3000; k += 2) {
		snprintf(ip, sizeof(ip), "10.6.%d.%d", k / 200, k % 200 + 1);
		a = ann(0, ip, 6881, 0);
		memcpy(a.info_hash, &k, sizeof(k));
		a.event = P2P_TRACKER_EVENT_STOPPED;
		CHECK_INT(announce(t, &a, ip, 1, &b), 0);
	}
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 4500);
	for (int k = 1; k < 3000; k += 2) {
		snprintf(ip, sizeof(ip), "10.6.%d.%d", k / 200, k % 200 + 1);
		a = ann(0, ip, 6881, 1);
		memcpy(a.info_hash, &k, sizeof(k));
		p2p_tracker_swarm(t, a.info_hash, &s, &l);
		CHECK_INT(s, 0);
		CHECK_INT(l, 1);
	}
	for (int k = 0; k < 500; k++) {
		snprintf(ip, sizeof(ip), "10.7.%d.%d", k / 200, k % 200 + 1);
		CHECK_INT(join(t, 0x77, ip, 6881, 1, 1, &b), 0);
	}
	for (int k = 1; k < 500; k++) {
		snprintf(ip, sizeof(ip), "10.7.%d.%d", k / 200, k % 200 + 1);
		CHECK_INT(leave(t, 0x77, ip, 6881, 1, 1, &b), 0);
	}
	a = ann(0x77, "10.7.0.1", 6881, 1);
	p2p_tracker_swarm(t, a.info_hash, &s, &l);
	CHECK_INT(l, 1);
	CHECK_INT(join(t, 0x77, "10.7.0.1", 6881, 1, 1, &b), 0);
	CHECK(BODY_IS(&b, "d8:completei0e10:incompletei1e8:intervali100e12:min intervali50e5:peers0:e"));
	p2p_tracker_expire(t, 1000);
	p2p_tracker_stats(t, &st);
	CHECK_INT(st.torrents, 0);
	CHECK_INT(st.peers, 0);
	buf_release(&b);
	p2p_tracker_free(&t);
}

int main(void)
{
	RUN(stopped_removes_and_counts);
	RUN(expiry_after_two_intervals);
	RUN(swarm_others_skips_one_peer_and_the_expired);
	RUN(limits_refuse_new_entries_only);
	RUN(one_address_cannot_fill_a_swarm);
	RUN(uploaded_sum_saturates);
	RUN(many_swarms_grow_and_shrink);
	return test_done();
}
