/*
 * test-mirror-tracker.c - the in-memory tracker: announce queries are parsed strictly, responses are
 * valid bencode with the right counts and peers (compact IPv4, BEP 7 IPv6, or BEP 3 dicts), a peer
 * never gets itself, stopped and expired peers leave, and the limits refuse new entries only.
 * Responses are decoded with a small strict bencode reader that lives here, for checking only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/xmalloc.h"
#include "p2p/tracker.h"
#include "test.h"

/* ---- a strict bencode reader (test only) ---- */

struct bval {
	char type;            /* 'i', 's', 'l', 'd' */
	long long i;
	const char *s;        /* string bytes (borrowed from the body) */
	size_t n;             /* string length */
	struct bval *items;   /* list items; dict: key, value, key, value... */
	size_t count;
};

static void bfree(struct bval *v)
{
	for (size_t k = 0; k < v->count; k++)
		bfree(&v->items[k]);
	free(v->items);
	v->items = NULL;
	v->count = 0;
}

/* Decode one value from p (before end); returns the byte after it, or NULL if malformed (no leading
 * zeros, no "-0", dict keys strictly sorted). */
static const char *bdecode(const char *p, const char *end, struct bval *v, int depth)
{
	memset(v, 0, sizeof(*v));
	if (p >= end || depth > 32)
		return NULL;
	if (*p == 'i') {
		const char *q = ++p;
		bool neg = q < end && *q == '-';

		if (neg)
			q++;
		if (q >= end || *q < '0' || *q > '9' || (*q == '0' && q + 1 < end && q[1] != 'e') || (neg && *q == '0'))
			return NULL;
		for (; q < end && *q >= '0' && *q <= '9'; q++)
			v->i = v->i * 10 + (*q - '0');
		if (q >= end || *q != 'e')
			return NULL;
		v->i = neg ? -v->i : v->i;
		v->type = 'i';
		return q + 1;
	}
	if (*p >= '0' && *p <= '9') {
		size_t n = 0;

		if (*p == '0' && p + 1 < end && p[1] != ':')
			return NULL;
		for (; p < end && *p >= '0' && *p <= '9'; p++)
			n = n * 10 + (size_t)(*p - '0');
		if (p >= end || *p != ':' || (size_t)(end - p - 1) < n)
			return NULL;
		v->type = 's';
		v->s = p + 1;
		v->n = n;
		return p + 1 + n;
	}
	if (*p == 'l' || *p == 'd') {
		v->type = *p++;
		while (p < end && *p != 'e') {
			struct bval item;

			p = bdecode(p, end, &item, depth + 1);
			if (!p) {
				bfree(v);
				return NULL;
			}
			if (v->type == 'd' && v->count % 2 == 0) {
				const struct bval *prev = v->count ? &v->items[v->count - 2] : NULL;
				size_t m;

				if (item.type != 's') {
					bfree(&item);
					bfree(v);
					return NULL;
				}
				m = prev && prev->n < item.n ? prev->n : item.n;
				if (prev && (memcmp(prev->s, item.s, m) > 0 || (!memcmp(prev->s, item.s, m) && prev->n >= item.n))) {
					bfree(v);
					return NULL; /* keys out of order or repeated */
				}
			}
			v->items = xreallocarray(v->items, v->count + 1, sizeof(*v->items));
			v->items[v->count++] = item;
		}
		if (p >= end || (v->type == 'd' && v->count % 2)) {
			bfree(v);
			return NULL;
		}
		return p + 1;
	}
	return NULL;
}

/* Decode the whole body into v; false unless it is exactly one valid value. */
static bool bdecode_all(const struct buf *b, struct bval *v)
{
	const char *end = b->data + b->len, *p = bdecode(b->data, end, v, 0);

	if (p != end) {
		if (p)
			bfree(v);
		return false;
	}
	return true;
}

static const struct bval *bget(const struct bval *d, const char *key)
{
	if (!d || d->type != 'd')
		return NULL;
	for (size_t k = 0; k + 1 < d->count; k += 2)
		if (d->items[k].n == strlen(key) && !memcmp(d->items[k].s, key, d->items[k].n))
			return &d->items[k + 1];
	return NULL;
}

static long long bint(const struct bval *d, const char *key)
{
	const struct bval *v = bget(d, key);

	return v && v->type == 'i' ? v->i : -12345;
}

/* ---- helpers ---- */

static void sockaddr_of(const char *ip, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(9999); /* the connection's port: never the peer's */
		if (inet_pton(AF_INET6, ip, &s6->sin6_addr) != 1)
			abort();
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(9999);
		if (inet_pton(AF_INET, ip, &s4->sin_addr) != 1)
			abort();
	}
}

static void peer_id_of(const char *ip, unsigned port, unsigned char id[20])
{
	char tmp[64];
	unsigned sum = 0;

	for (const char *c = ip; *c; c++)
		sum = sum * 31 + (unsigned char)*c;
	snprintf(tmp, sizeof(tmp), "-HM0001-%05u%07u", port, sum % 10000000);
	memcpy(id, tmp, 20);
}

static struct p2p_tracker_announce ann(unsigned char hash, const char *ip, unsigned port, int64_t left)
{
	struct p2p_tracker_announce a;

	memset(&a, 0, sizeof(a));
	memset(a.info_hash, hash, 20);
	peer_id_of(ip, port, a.peer_id);
	a.port = (uint16_t)port;
	a.left = left;
	a.numwant = -1;
	a.compact = true;
	return a;
}

/* Announce a from ip into a fresh body in out. */
static int announce(struct p2p_tracker *t, const struct p2p_tracker_announce *a, const char *ip, int64_t now, struct buf *out)
{
	struct sockaddr_storage ss;

	sockaddr_of(ip, &ss);
	buf_reset(out);
	return p2p_tracker_announce(t, a, (const struct sockaddr *)&ss, now, out);
}

/* Simple announce: started, numwant default, compact. */
static int join(struct p2p_tracker *t, unsigned char hash, const char *ip, unsigned port, int64_t left, int64_t now,
		struct buf *out)
{
	struct p2p_tracker_announce a = ann(hash, ip, port, left);

	return announce(t, &a, ip, now, out);
}

/* A peer's stopped announce (otherwise as join). */
static int leave(struct p2p_tracker *t, unsigned char hash, const char *ip, unsigned port, int64_t left, int64_t now,
		 struct buf *out)
{
	struct p2p_tracker_announce a = ann(hash, ip, port, left);

	a.event = P2P_TRACKER_EVENT_STOPPED;
	return announce(t, &a, ip, now, out);
}

#define MAXP 512

/* The peers of a compact or dict response as "ip:port" / "[ip6]:port" text. Returns the count, or -1
 * if the body is not a valid success response. */
static int peers_of(const struct buf *body, char (*out)[64], int max)
{
	struct bval d;
	const struct bval *p, *p6;
	int n = 0;

	if (!bdecode_all(body, &d))
		return -1;
	p = bget(&d, "peers");
	p6 = bget(&d, "peers6");
	if (!p || bget(&d, "failure reason") || bint(&d, "complete") < 0 || bint(&d, "incomplete") < 0 ||
	    bint(&d, "interval") <= 0 || bint(&d, "min interval") <= 0) {
		bfree(&d);
		return -1;
	}
	if (p->type == 's') {
		const unsigned char *s = (const unsigned char *)p->s;

		if (p->n % 6)
			n = -1;
		for (size_t k = 0; n >= 0 && k < p->n; k += 6) {
			if (n < max)
				snprintf(out[n], 64, "%u.%u.%u.%u:%u", s[k], s[k + 1], s[k + 2], s[k + 3],
					 (unsigned)(s[k + 4] << 8 | s[k + 5]));
			n++;
		}
		if (p6 && (p6->type != 's' || p6->n % 18 || !p6->n))
			n = -1; /* peers6 only when there is something in it */
		for (size_t k = 0; n >= 0 && p6 && k < p6->n; k += 18) {
			const unsigned char *e = (const unsigned char *)p6->s + k;
			char ip[INET6_ADDRSTRLEN];

			inet_ntop(AF_INET6, e, ip, sizeof(ip));
			if (n < max)
				snprintf(out[n], 64, "[%s]:%u", ip, (unsigned)(e[16] << 8 | e[17]));
			n++;
		}
	} else if (p->type == 'l' && !p6) {
		for (size_t k = 0; n >= 0 && k < p->count; k++) {
			const struct bval *ip = bget(&p->items[k], "ip");
			long long port = bint(&p->items[k], "port");
			char text[INET6_ADDRSTRLEN + 1];

			if (!ip || ip->type != 's' || ip->n >= sizeof(text) || port < 1 || port > 65535) {
				n = -1;
				break;
			}
			memcpy(text, ip->s, ip->n);
			text[ip->n] = '\0';
			if (n < max)
				snprintf(out[n], 64, strchr(text, ':') ? "[%s]:%lld" : "%s:%lld", text, port);
			n++;
		}
	} else {
		n = -1;
	}
	bfree(&d);
	return n;
}

static bool listed(char (*list)[64], int n, const char *peer)
{
	for (int k = 0; k < n; k++)
		if (!strcmp(list[k], peer))
			return true;
	return false;
}

static bool distinct(char (*list)[64], int n)
{
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			if (!strcmp(list[a], list[b]))
				return false;
	return true;
}

static bool body_is(const struct buf *b, const char *want, size_t n)
{
	return b->len == n && !memcmp(b->data, want, n);
}
#define BODY_IS(b, lit) body_is((b), (lit), sizeof(lit) - 1)

static bool is_failure(const struct buf *b)
{
	struct bval d;
	const struct bval *r;
	bool ok;

	if (!bdecode_all(b, &d))
		return false;
	r = bget(&d, "failure reason");
	ok = r && r->type == 's' && r->n > 0 && d.count == 2;
	bfree(&d);
	return ok;
}

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
		snprintf(q, sizeof(q), "peer_id=abcdefghij0123456789&info_hash=%s&left=0&port=65535%s", HASH_PCT, evs[k].ev);
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
	CHECK_INT(parse("info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=1&left=5&numwant=99999999999999999999999"
			"&compact=1&port=2&&", &a, &why), 0);
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
		{ "", "missing info_hash" },
		{ "peer_id=abcdefghij0123456789&port=1&left=0", "missing info_hash" },
		{ "info_hash=%12%34&peer_id=abcdefghij0123456789&port=1&left=0", "info_hash is not 20 bytes" },
		{ "info_hash=" HASH_PCT "x&peer_id=abcdefghij0123456789&port=1&left=0", "info_hash is not 20 bytes" },
		{ "info_hash&peer_id=abcdefghij0123456789&port=1&left=0", "info_hash is not 20 bytes" },
		{ "info_hash=" HASH_PCT "&port=1&left=0", "missing peer_id" },
		{ "info_hash=" HASH_PCT "&peer_id=short&port=1&left=0", "peer_id is not 20 bytes" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&left=0", "missing port" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=0&left=0", "invalid port" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=65536&left=0", "invalid port" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=-1&left=0", "invalid port" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=68x1&left=0", "invalid port" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=&left=0", "invalid port" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881", "missing left" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=-1", "invalid left" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=99999999999999999999", "invalid left" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&uploaded=1e3", "invalid uploaded" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&downloaded=", "invalid downloaded" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&event=begun", "invalid event" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&numwant=-1", "invalid numwant" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&compact=yes", "invalid compact" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=6881&left=0&no_peer_id=2", "invalid no_peer_id" },
		{ "info_hash=%1%23" HASH_PCT "&peer_id=abcdefghij0123456789&port=1&left=0", "bad percent-encoding in a parameter value" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=1&left=%", "bad percent-encoding in a parameter value" },
		{ "info_hash=" HASH_PCT "&peer_id=abcdefghij0123456789&port=1&left=0&%zz=1", "bad percent-encoding in a parameter name" },
		{ "&&&==&=&x", "missing info_hash" },
		{ "\xff\xfe\x01garbage=%%%", "missing info_hash" },
		{ "x%%%=1&info_hash=" HASH_PCT, "bad percent-encoding in a parameter name" },
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
	CHECK(BODY_IS(&b, "d8:completei1e10:incompletei1e8:intervali120e12:min intervali60e5:peers6:\x0a\x00\x00\x01\x1a\xe1" "e"));
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
	RUN(parse_binary_hash_and_options);
	RUN(parse_defaults_and_events);
	RUN(parse_refuses_bad_queries);
	RUN(failure_body);
	RUN(responses_byte_for_byte);
	RUN(never_yourself_and_same_host_other_port);
	RUN(stopped_removes_and_counts);
	RUN(ipv6_peers_in_peers6);
	RUN(numwant_caps);
	RUN(expiry_after_two_intervals);
	RUN(limits_refuse_new_entries_only);
	RUN(one_address_cannot_fill_a_swarm);
	RUN(uploaded_sum_saturates);
	RUN(big_swarm_gives_fifty_distinct);
	RUN(many_swarms_grow_and_shrink);
	return test_done();
}
