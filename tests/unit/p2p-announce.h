/*
 * p2p-announce.h - helpers shared by the tracker's unit tests (test-p2p-tracker*.c): a strict bencode
 * reader that checks the answers (for checking only: no leading zeros, no "-0", dict keys strictly
 * sorted), announces from made-up peers (an address, a port, a peer id made of both), an answer's
 * peers as "ip:port" text, and its failure body. Header-only (static inline), like test.h.
 */
#ifndef HM_TEST_P2P_ANNOUNCE_H
#define HM_TEST_P2P_ANNOUNCE_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "p2p/tracker.h"

/* ---- a strict bencode reader (test only) ---- */

struct bval {
	char type;            /* 'i', 's', 'l', 'd' */
	long long i;
	const char *s;        /* string bytes (borrowed from the body) */
	size_t n;             /* string length */
	struct bval *items;   /* list items; dict: key, value, key, value... */
	size_t count;
};

static inline void bfree(struct bval *v)
{
	for (size_t k = 0; k < v->count; k++)
		bfree(&v->items[k]);
	free(v->items);
	v->items = NULL;
	v->count = 0;
}

/* Decode one value from p (before end); returns the byte after it, or NULL if malformed (no leading
 * zeros, no "-0", dict keys strictly sorted). */
static inline const char *bdecode(const char *p, const char *end, struct bval *v, int depth)
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
				if (prev && (memcmp(prev->s, item.s, m) > 0 ||
					     (!memcmp(prev->s, item.s, m) && prev->n >= item.n))) {
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
static inline bool bdecode_all(const struct buf *b, struct bval *v)
{
	const char *end = b->data + b->len, *p = bdecode(b->data, end, v, 0);

	if (p != end) {
		if (p)
			bfree(v);
		return false;
	}
	return true;
}

static inline const struct bval *bget(const struct bval *d, const char *key)
{
	if (!d || d->type != 'd')
		return NULL;
	for (size_t k = 0; k + 1 < d->count; k += 2)
		if (d->items[k].n == strlen(key) && !memcmp(d->items[k].s, key, d->items[k].n))
			return &d->items[k + 1];
	return NULL;
}

static inline long long bint(const struct bval *d, const char *key)
{
	const struct bval *v = bget(d, key);

	return v && v->type == 'i' ? v->i : -12345;
}

/* ---- helpers ---- */

static inline void sockaddr_of(const char *ip, struct sockaddr_storage *ss)
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

static inline void peer_id_of(const char *ip, unsigned port, unsigned char id[20])
{
	char tmp[64];
	unsigned sum = 0;

	for (const char *c = ip; *c; c++)
		sum = sum * 31 + (unsigned char)*c;
	snprintf(tmp, sizeof(tmp), "-HM0001-%05u%07u", port, sum % 10000000);
	memcpy(id, tmp, 20);
}

static inline struct p2p_tracker_announce ann(unsigned char hash, const char *ip, unsigned port,
					      int64_t left)
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
static inline int announce(struct p2p_tracker *t, const struct p2p_tracker_announce *a, const char *ip, int64_t now,
			   struct buf *out)
{
	struct sockaddr_storage ss;

	sockaddr_of(ip, &ss);
	buf_reset(out);
	return p2p_tracker_announce(t, a, (const struct sockaddr *)&ss, now, out);
}

/* Simple announce: started, numwant default, compact. */
static inline int join(struct p2p_tracker *t, unsigned char hash, const char *ip, unsigned port, int64_t left,
		       int64_t now, struct buf *out)
{
	struct p2p_tracker_announce a = ann(hash, ip, port, left);

	return announce(t, &a, ip, now, out);
}

/* A peer's stopped announce (otherwise as join). */
static inline int leave(struct p2p_tracker *t, unsigned char hash, const char *ip, unsigned port, int64_t left,
			int64_t now, struct buf *out)
{
	struct p2p_tracker_announce a = ann(hash, ip, port, left);

	a.event = P2P_TRACKER_EVENT_STOPPED;
	return announce(t, &a, ip, now, out);
}

#define MAXP 512

/* The peers of a compact or dict response as "ip:port" / "[ip6]:port" text. Returns the count, or -1
 * if the body is not a valid success response. */
static inline int peers_of(const struct buf *body, char (*out)[64], int max)
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

static inline bool listed(char (*list)[64], int n, const char *peer)
{
	for (int k = 0; k < n; k++)
		if (!strcmp(list[k], peer))
			return true;
	return false;
}

static inline bool distinct(char (*list)[64], int n)
{
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			if (!strcmp(list[a], list[b]))
				return false;
	return true;
}

static inline bool body_is(const struct buf *b, const char *want, size_t n)
{
	return b->len == n && !memcmp(b->data, want, n);
}
#define BODY_IS(b, lit) body_is((b), (lit), sizeof(lit) - 1)

static inline bool is_failure(const struct buf *b)
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

#endif
