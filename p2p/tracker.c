/*
 * tracker.c - the in-memory BitTorrent tracker (see tracker.h).
 *
 * Layout: swarms (struct swarm) live in an open-addressing hash table keyed by info-hash (linear
 * probing, load <= 1/2, backward-shift deletion so there are no tombstones) and in a dense array used
 * for sweeps. Each swarm keeps its peers in an array (swap-remove) plus its own open-addressing index
 * from (ip, port) to array position, so an announce costs O(1) expected plus O(numwant) for the reply.
 * Both tables hash with SipHash-1-3 under a key drawn from getrandom(): info-hashes and ports come
 * from clients, who must not be able to pick colliding keys and turn lookups linear.
 *
 * Expiry is lazy: each swarm remembers sweep_at, a lower bound of the earliest expiry among its peers
 * (a re-announce only moves a peer's expiry later, so the bound stays valid). A swarm is swept, O(its
 * peers), only once now reaches sweep_at; with clients announcing every interval and expiry at
 * 2 * interval, that is about once per interval per swarm.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "tracker.h"
#include "base/bug.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/xmalloc.h"

#define DEFAULT_INTERVAL 120
#define DEFAULT_MAX_TORRENTS 100000
#define DEFAULT_MAX_PEERS 100000
#define DEFAULT_MAX_TOTAL_PEERS 1000000
#define DEFAULT_MAX_PER_ADDRESS 8
#define MIN_TABLE 16     /* swarm table slots, a power of two */
#define MIN_PEERS 4      /* peer array capacity, a power of two; its index has twice as many slots */

struct peer {
	int64_t last_seen;
	int64_t uploaded;           /* as its last announce said */
	unsigned char addr[16];     /* IPv4 in the first 4 bytes, the rest zero */
	unsigned char peer_id[20];
	uint16_t port;              /* host order */
	uint8_t v6;
	uint8_t seeder;
};

struct swarm {
	unsigned char info_hash[20];
	uint64_t hash;              /* of info_hash, so table moves need no rehash */
	size_t pos;                 /* in tracker.list */
	struct peer *peers;
	size_t npeers, cap;         /* cap: a power of two >= MIN_PEERS */
	uint32_t *index;            /* 2 * cap slots: peer position + 1, 0 = empty */
	size_t nseeders;
	int64_t sweep_at;           /* no peer expires before this */
};

struct p2p_tracker {
	int interval;
	int64_t ttl;                /* 2 * interval */
	size_t max_torrents, max_peers, max_total_peers, max_per_address;
	struct swarm **slots;     /* nslots (a power of two), NULL = empty */
	size_t nslots;
	struct swarm **list;      /* dense, nswarms entries */
	size_t nswarms, list_cap;
	size_t npeers, nseeders;
	/* Sum of the live peers' uploaded, in 128 bits: each is up to INT64_MAX as the peer says, and a
	 * million of them cannot overflow it; reported saturated at INT64_MAX. */
	__extension__ unsigned __int128 peer_uploaded;
	uint64_t announces;
	uint64_t key[2];            /* SipHash key */
	uint64_t rng[4];            /* xoshiro256** state */
	bool swept;                 /* a full sweep ran at last_sweep */
	int64_t last_sweep;
};

/* ---- hashing and randomness ---- */

static uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND do { \
	v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32); \
	v2 += v3; v3 = rotl(v3, 16); v3 ^= v2; \
	v0 += v3; v3 = rotl(v3, 21); v3 ^= v0; \
	v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32); \
	} while (0)

/* SipHash-1-3 of in[0..len) under key k. */
static uint64_t siphash(const uint64_t k[2], const unsigned char *in, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ k[0], v1 = 0x646f72616e646f6dULL ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ k[0], v3 = 0x7465646279746573ULL ^ k[1];
	uint64_t m, b = (uint64_t)len << 56;
	size_t i, j, end = len & ~(size_t)7;

	for (i = 0; i < end; i += 8) {
		m = 0;
		for (j = 0; j < 8; j++)
			m |= (uint64_t)in[i + j] << (8 * j);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	for (j = 0; end + j < len; j++)
		b |= (uint64_t)in[end + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* xoshiro256** */
static uint64_t rng_next(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

/* Uniform enough in [0, n) for n < 2^32 (Lemire's multiply-shift; the bias is below n / 2^32). */
static size_t rng_below(struct p2p_tracker *t, size_t n)
{
	return (size_t)(((rng_next(t->rng) >> 32) * (uint64_t)n) >> 32);
}

static void seed(struct p2p_tracker *t)
{
	uint64_t s[3], x;
	struct timespec ts;

	if (getrandom(s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		/* No entropy yet (early boot): still unpredictable enough to spread a LAN's hashes. */
		clock_gettime(CLOCK_REALTIME, &ts);
		x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 16) ^
		    (uint64_t)(uintptr_t)t;
		s[0] = splitmix64(&x);
		s[1] = splitmix64(&x);
		s[2] = splitmix64(&x);
	}
	t->key[0] = s[0];
	t->key[1] = s[1];
	x = s[2];
	for (int i = 0; i < 4; i++)
		t->rng[i] = splitmix64(&x); /* never all zero in practice: splitmix64 is a bijection of a counter */
}

/* ---- time ---- */

/* When a peer last seen at last_seen expires (saturating). */
static int64_t expiry(const struct p2p_tracker *t, int64_t last_seen)
{
	return last_seen > INT64_MAX - t->ttl ? INT64_MAX : last_seen + t->ttl;
}

/* ---- peers of one swarm ---- */

static uint64_t peer_hash(const struct p2p_tracker *t, const struct peer *p)
{
	unsigned char k[19];

	memcpy(k, p->addr, 16);
	k[16] = (unsigned char)(p->port >> 8);
	k[17] = (unsigned char)p->port;
	k[18] = p->v6;
	return siphash(t->key, k, sizeof(k));
}

static bool peer_same(const struct peer *a, const struct peer *b)
{
	return a->port == b->port && a->v6 == b->v6 && !memcmp(a->addr, b->addr, 16);
}

static size_t index_mask(const struct swarm *sw)
{
	return sw->cap * 2 - 1;
}

/* The index slot holding key, or the empty slot where it would go. */
static size_t index_find(const struct p2p_tracker *t, const struct swarm *sw, const struct peer *key)
{
	size_t mask = index_mask(sw), i = peer_hash(t, key) & mask;
	uint32_t v;

	while ((v = sw->index[i]) && !peer_same(&sw->peers[v - 1], key))
		i = (i + 1) & mask;
	return i;
}

/* Empty slot i, moving later entries of the same probe run back so lookups never meet a hole. */
static void index_delete(const struct p2p_tracker *t, struct swarm *sw, size_t i)
{
	size_t mask = index_mask(sw), j = i, k;

	for (;;) {
		j = (j + 1) & mask;
		if (!sw->index[j])
			break;
		k = peer_hash(t, &sw->peers[sw->index[j] - 1]) & mask;
		/* Leave slot j alone if its home lies cyclically in (i, j]: moving it would hide it. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		sw->index[i] = sw->index[j];
		i = j;
	}
	sw->index[i] = 0;
}

/* Resize the peer array to cap entries (>= npeers) and rebuild the index. */
static void peers_resize(const struct p2p_tracker *t, struct swarm *sw, size_t cap)
{
	sw->peers = xreallocarray(sw->peers, cap, sizeof(*sw->peers));
	sw->cap = cap;
	free(sw->index);
	sw->index = xcalloc(cap * 2, sizeof(*sw->index));
	for (size_t n = 0; n < sw->npeers; n++)
		sw->index[index_find(t, sw, &sw->peers[n])] = (uint32_t)(n + 1);
}

static void peer_add(struct p2p_tracker *t, struct swarm *sw, const struct peer *p)
{
	if (sw->npeers == sw->cap)
		peers_resize(t, sw, sw->cap * 2);
	sw->peers[sw->npeers] = *p;
	sw->index[index_find(t, sw, p)] = (uint32_t)(sw->npeers + 1);
	sw->npeers++;
	t->npeers++;
	t->peer_uploaded += (uint64_t)p->uploaded;
	if (p->seeder) {
		sw->nseeders++;
		t->nseeders++;
	}
	if (expiry(t, p->last_seen) < sw->sweep_at)
		sw->sweep_at = expiry(t, p->last_seen);
}

/* Remove the peer at position i; the last peer takes its place. */
static void peer_remove(struct p2p_tracker *t, struct swarm *sw, size_t i)
{
	size_t last = sw->npeers - 1;

	BUG_ON(i >= sw->npeers || !t->npeers);
	BUG_ON(sw->peers[i].seeder && (!sw->nseeders || !t->nseeders));
	if (sw->peers[i].seeder) {
		sw->nseeders--;
		t->nseeders--;
	}
	t->peer_uploaded -= (uint64_t)sw->peers[i].uploaded;
	index_delete(t, sw, index_find(t, sw, &sw->peers[i]));
	if (i != last) {
		sw->peers[i] = sw->peers[last];
		sw->index[index_find(t, sw, &sw->peers[i])] = (uint32_t)(i + 1); /* finds last's slot */
	}
	sw->npeers--;
	t->npeers--;
	if (sw->cap > MIN_PEERS && sw->npeers <= sw->cap / 4)
		peers_resize(t, sw, sw->cap / 2);
}

/* Drop the swarm's expired peers if any can be due (see sweep_at). */
static void swarm_sweep(struct p2p_tracker *t, struct swarm *sw, int64_t now)
{
	int64_t next = INT64_MAX;

	if (now < sw->sweep_at)
		return;
	/* Backwards: swap-remove brings in a peer already looked at. */
	for (size_t i = sw->npeers; i-- > 0;) {
		int64_t e = expiry(t, sw->peers[i].last_seen);

		if (now >= e)
			peer_remove(t, sw, i);
		else if (e < next)
			next = e;
	}
	sw->sweep_at = next;
}

/* ---- the swarm table ---- */

static uint64_t info_hash_hash(const struct p2p_tracker *t, const unsigned char ih[20])
{
	return siphash(t->key, ih, 20);
}

/* The slot holding info-hash ih (hashing to h), or the empty slot where it would go. */
static size_t table_find(const struct p2p_tracker *t, const unsigned char ih[20], uint64_t h)
{
	size_t mask = t->nslots - 1, i = h & mask;

	while (t->slots[i] && memcmp(t->slots[i]->info_hash, ih, 20))
		i = (i + 1) & mask;
	return i;
}

static void table_delete(struct p2p_tracker *t, size_t i)
{
	size_t mask = t->nslots - 1, j = i, k;

	for (;;) {
		j = (j + 1) & mask;
		if (!t->slots[j])
			break;
		k = t->slots[j]->hash & mask;
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	t->slots[i] = NULL;
}

static void table_resize(struct p2p_tracker *t, size_t nslots)
{
	free(t->slots);
	t->slots = xcalloc(nslots, sizeof(*t->slots));
	t->nslots = nslots;
	for (size_t n = 0; n < t->nswarms; n++)
		t->slots[table_find(t, t->list[n]->info_hash, t->list[n]->hash)] = t->list[n];
}

static struct swarm *swarm_add(struct p2p_tracker *t, const unsigned char ih[20], uint64_t h)
{
	struct swarm *sw = xcalloc(1, sizeof(*sw));

	if ((t->nswarms + 1) * 2 > t->nslots)
		table_resize(t, t->nslots * 2);
	if (t->nswarms == t->list_cap) {
		t->list_cap = t->list_cap ? t->list_cap * 2 : MIN_TABLE;
		t->list = xreallocarray(t->list, t->list_cap, sizeof(*t->list));
	}
	memcpy(sw->info_hash, ih, 20);
	sw->hash = h;
	sw->pos = t->nswarms;
	sw->sweep_at = INT64_MAX;
	peers_resize(t, sw, MIN_PEERS);
	t->list[t->nswarms++] = sw;
	t->slots[table_find(t, ih, h)] = sw;
	return sw;
}

static void swarm_free(struct swarm *sw)
{
	free(sw->peers);
	free(sw->index);
	free(sw);
}

/* Forget the swarm (its peers must be gone already: the counters are not touched). */
static void swarm_remove(struct p2p_tracker *t, struct swarm *sw)
{
	table_delete(t, table_find(t, sw->info_hash, sw->hash));
	t->list[sw->pos] = t->list[t->nswarms - 1];
	t->list[sw->pos]->pos = sw->pos;
	t->nswarms--;
	swarm_free(sw);
	if (t->nslots > MIN_TABLE && t->nswarms * 8 < t->nslots)
		table_resize(t, t->nslots / 2);
}

static struct swarm *swarm_get(const struct p2p_tracker *t, const unsigned char ih[20])
{
	return t->slots[table_find(t, ih, info_hash_hash(t, ih))];
}

/* ---- lifecycle ---- */

struct p2p_tracker *p2p_tracker_new(const struct p2p_tracker_config *cfg)
{
	struct p2p_tracker *t = xcalloc(1, sizeof(*t));

	t->interval = cfg && cfg->interval > 0 ? cfg->interval : DEFAULT_INTERVAL;
	t->ttl = 2 * (int64_t)t->interval;
	t->max_torrents = cfg && cfg->max_torrents ? cfg->max_torrents : DEFAULT_MAX_TORRENTS;
	t->max_peers = cfg && cfg->max_peers ? cfg->max_peers : DEFAULT_MAX_PEERS;
	t->max_total_peers = cfg && cfg->max_total_peers ? cfg->max_total_peers : DEFAULT_MAX_TOTAL_PEERS;
	t->max_per_address = cfg && cfg->max_per_address ? cfg->max_per_address : DEFAULT_MAX_PER_ADDRESS;
	if (t->max_peers > UINT32_MAX / 4)
		t->max_peers = UINT32_MAX / 4; /* the index stores positions in 32 bits */
	t->nslots = MIN_TABLE;
	t->slots = xcalloc(t->nslots, sizeof(*t->slots));
	seed(t);
	return t;
}

void p2p_tracker_free(struct p2p_tracker **tp)
{
	struct p2p_tracker *t = tp ? *tp : NULL;

	if (!t)
		return;
	for (size_t n = 0; n < t->nswarms; n++)
		swarm_free(t->list[n]);
	free(t->list);
	free(t->slots);
	free(t);
	*tp = NULL;
}

void p2p_tracker_expire(struct p2p_tracker *t, int64_t now)
{
	/* Backwards: swarm_remove() swaps the last swarm, already swept, into the hole. */
	for (size_t n = t->nswarms; n-- > 0;) {
		struct swarm *sw = t->list[n];

		swarm_sweep(t, sw, now);
		if (!sw->npeers)
			swarm_remove(t, sw);
	}
	t->swept = true;
	t->last_sweep = now;
}

/* A limit is reached: expired peers may be what fills it, so sweep everything, but at most once per
 * second of now so that a flood of refused announces cannot make every announce O(all peers). */
static void sweep_when_full(struct p2p_tracker *t, int64_t now)
{
	if (!t->swept || t->last_sweep != now)
		p2p_tracker_expire(t, now);
}

/* (the announce parser is tracker-announce.c) */

/* ---- announce ---- */

void p2p_tracker_failure(struct buf *out, const char *reason)
{
	buf_addf(out, "d14:failure reason%zu:", strlen(reason));
	buf_adds(out, reason);
	buf_addch(out, 'e');
}

/* The peer's address from the connection; false unless IPv4 or IPv6. */
static bool peer_from(const struct sockaddr *sa, struct peer *p)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memset(p, 0, sizeof(*p));
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		memcpy(p->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family != AF_INET6)
		return false;
	memcpy(p->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	if (!memcmp(p->addr, mapped, 12)) {
		/* A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d: they belong in "peers". */
		memmove(p->addr, p->addr + 12, 4);
		memset(p->addr + 4, 0, 12);
	} else {
		p->v6 = 1;
	}
	return true;
}

/* Choose up to want peers of sw at random, never position self (SIZE_MAX: none), into sel in random
 * order. Returns how many. */
static size_t pick_peers(struct p2p_tracker *t, const struct swarm *sw, size_t self, size_t want, uint32_t *sel)
{
	size_t n = sw->npeers, cand = n - (self < n ? 1 : 0), k = 0;

	if (want >= cand) {
		/* Everyone: shuffle so no peer is always first in line. */
		for (size_t i = 0; i < n; i++)
			if (i != self)
				sel[k++] = (uint32_t)i;
		for (size_t i = k; i > 1; i--) {
			size_t j = rng_below(t, i);
			uint32_t x = sel[i - 1];

			sel[i - 1] = sel[j];
			sel[j] = x;
		}
		return k;
	}
	if (want * 2 >= cand) {
		/* Dense (cand <= 2 * P2P_TRACKER_MAX_NUMWANT): partial Fisher-Yates over the candidates. */
		uint32_t all[2 * P2P_TRACKER_MAX_NUMWANT + 1];

		for (size_t i = 0; i < n; i++)
			if (i != self)
				all[k++] = (uint32_t)i;
		for (k = 0; k < want; k++) {
			size_t j = k + rng_below(t, cand - k);
			uint32_t x = all[j];

			all[j] = all[k];
			all[k] = x;
			sel[k] = x;
		}
		return k;
	}
	/* Sparse: draw with rejection; fewer than half are taken, so under two draws per peer on average. */
	{
		unsigned char *taken = xcalloc(n / 8 + 1, 1);

		if (self < n)
			taken[self / 8] |= (unsigned char)(1u << (self % 8));
		while (k < want) {
			size_t i = rng_below(t, n);

			if (taken[i / 8] & (1u << (i % 8)))
				continue;
			taken[i / 8] |= (unsigned char)(1u << (i % 8));
			sel[k++] = (uint32_t)i;
		}
		free(taken);
	}
	return k;
}

static void write_response(struct p2p_tracker *t, const struct swarm *sw, size_t self,
			   const struct p2p_tracker_announce *a, bool with_peers, struct buf *out)
{
	size_t seeders = sw ? sw->nseeders : 0, leechers = sw ? sw->npeers - sw->nseeders : 0;
	size_t want = a->numwant < 0 ? P2P_TRACKER_DEFAULT_NUMWANT : (size_t)a->numwant, n = 0, n4 = 0, n6 = 0;
	uint32_t sel[P2P_TRACKER_MAX_NUMWANT];

	if (want > P2P_TRACKER_MAX_NUMWANT)
		want = P2P_TRACKER_MAX_NUMWANT;
	if (sw && with_peers)
		n = pick_peers(t, sw, self, want, sel);
	buf_addf(out, "d8:completei%zue10:incompletei%zue8:intervali%de12:min intervali%de5:peers",
		 seeders, leechers, t->interval, t->interval / 2 > 0 ? t->interval / 2 : 1);
	if (!a->compact) {
		buf_addch(out, 'l');
		for (size_t i = 0; i < n; i++) {
			const struct peer *p = &sw->peers[sel[i]];
			char ip[INET6_ADDRSTRLEN];

			inet_ntop(p->v6 ? AF_INET6 : AF_INET, p->addr, ip, sizeof(ip));
			buf_addf(out, "d2:ip%zu:%s", strlen(ip), ip);
			if (!a->no_peer_id) {
				buf_adds(out, "7:peer id20:");
				buf_add(out, p->peer_id, 20);
			}
			buf_addf(out, "4:porti%ue", (unsigned)p->port);
			buf_addch(out, 'e');
		}
		buf_adds(out, "ee");
		return;
	}
	for (size_t i = 0; i < n; i++)
		*(sw->peers[sel[i]].v6 ? &n6 : &n4) += 1;
	buf_addf(out, "%zu:", n4 * 6);
	for (size_t i = 0; i < n; i++) {
		const struct peer *p = &sw->peers[sel[i]];
		unsigned char port[2] = { (unsigned char)(p->port >> 8), (unsigned char)p->port };

		if (p->v6)
			continue;
		buf_add(out, p->addr, 4);
		buf_add(out, port, 2);
	}
	if (n6) {
		buf_addf(out, "6:peers6%zu:", n6 * 18);
		for (size_t i = 0; i < n; i++) {
			const struct peer *p = &sw->peers[sel[i]];
			unsigned char port[2] = { (unsigned char)(p->port >> 8), (unsigned char)p->port };

			if (!p->v6)
				continue;
			buf_add(out, p->addr, 16);
			buf_add(out, port, 2);
		}
	}
	buf_addch(out, 'e');
}

/* If key's address already has max_per_address peers in sw, remove the one of them seen longest
 * ago and return true (key then takes its place, within every limit). O(peers of the swarm), for new
 * peers only. */
static bool make_room_for(struct p2p_tracker *t, struct swarm *sw, const struct peer *key)
{
	size_t same = 0, oldest = SIZE_MAX;

	for (size_t i = 0; i < sw->npeers; i++) {
		const struct peer *p = &sw->peers[i];
		if (p->v6 != key->v6 || memcmp(p->addr, key->addr, 16))
			continue;
		same++;
		if (oldest == SIZE_MAX || p->last_seen < sw->peers[oldest].last_seen)
			oldest = i;
	}
	if (same < t->max_per_address)
		return false;
	peer_remove(t, sw, oldest);
	return true;
}

int p2p_tracker_announce(struct p2p_tracker *t, const struct p2p_tracker_announce *a, const struct sockaddr *remote,
		     int64_t now, struct buf *out)
{
	struct swarm *sw;
	struct peer key;
	uint32_t v;
	int r = 0;

	t->announces++;
	if (!peer_from(remote, &key)) {
		p2p_tracker_failure(out, "unsupported address family");
		return -EAFNOSUPPORT;
	}
	if (!a->port) {
		p2p_tracker_failure(out, "invalid port");
		return -EINVAL;
	}
	key.port = a->port;
	key.last_seen = now;
	key.seeder = a->left == 0;
	key.uploaded = a->uploaded;
	memcpy(key.peer_id, a->peer_id, 20);

	sw = swarm_get(t, a->info_hash);
	if (sw)
		swarm_sweep(t, sw, now);

	if (a->event == P2P_TRACKER_EVENT_STOPPED) {
		if (sw) {
			v = sw->index[index_find(t, sw, &key)];
			if (v)
				peer_remove(t, sw, v - 1);
		}
		write_response(t, sw, SIZE_MAX, a, false, out);
		goto out;
	}

	if (sw) {
		v = sw->index[index_find(t, sw, &key)];
		if (v) {
			struct peer *p = &sw->peers[v - 1];

			/* Known peer: refresh it; limits do not apply. */
			if (p->seeder && !key.seeder) {
				sw->nseeders--;
				t->nseeders--;
			} else if (!p->seeder && key.seeder) {
				sw->nseeders++;
				t->nseeders++;
			}
			p->seeder = key.seeder;
			t->peer_uploaded -= (uint64_t)p->uploaded;
			t->peer_uploaded += (uint64_t)key.uploaded;
			p->uploaded = key.uploaded;
			p->last_seen = now; /* only later: sweep_at stays a lower bound */
			memcpy(p->peer_id, key.peer_id, 20);
			write_response(t, sw, v - 1, a, true, out);
			goto out;
		}
	}

	/* A new peer, maybe in a new swarm. One address holds at most max_per_address places in a swarm:
	 * a new port from an address that has them all takes the place of its longest-silent one (a
	 * restarted client comes back on a new port), so a flood from one address can neither fill the
	 * swarm nor crowd the others out of the answers. */
	if (sw && make_room_for(t, sw, &key))
		goto answer;
	if (t->npeers >= t->max_total_peers || (!sw && t->nswarms >= t->max_torrents))
		sweep_when_full(t, now);
	sw = swarm_get(t, a->info_hash); /* the sweep may have dropped it */
	if (t->npeers >= t->max_total_peers) {
		p2p_tracker_failure(out, "tracker is full: too many peers");
		r = -ENOSPC;
		goto out;
	}
	if (!sw && t->nswarms >= t->max_torrents) {
		p2p_tracker_failure(out, "tracker is full: too many torrents");
		r = -ENOSPC;
		goto out;
	}
	if (sw && sw->npeers >= t->max_peers) {
		p2p_tracker_failure(out, "swarm is full: too many peers for this torrent");
		r = -ENOSPC;
		goto out;
	}
	if (!sw)
		sw = swarm_add(t, a->info_hash, info_hash_hash(t, a->info_hash));
answer:
	peer_add(t, sw, &key);
	write_response(t, sw, sw->npeers - 1, a, true, out);
out:
	if (sw && !sw->npeers)
		swarm_remove(t, sw);
	return r;
}

void p2p_tracker_stats(const struct p2p_tracker *t, struct p2p_tracker_stats *out)
{
	out->torrents = t->nswarms;
	out->peers = t->npeers;
	out->seeders = t->nseeders;
	out->peer_uploaded = t->peer_uploaded > INT64_MAX ? INT64_MAX : (int64_t)t->peer_uploaded;
	out->announces = t->announces;
}

void p2p_tracker_swarm(const struct p2p_tracker *t, const unsigned char info_hash[20], size_t *seeders,
		       size_t *leechers)
{
	const struct swarm *sw = swarm_get(t, info_hash);

	*seeders = sw ? sw->nseeders : 0;
	*leechers = sw ? sw->npeers - sw->nseeders : 0;
}

size_t p2p_tracker_swarm_others(const struct p2p_tracker *t, const unsigned char info_hash[20],
				const unsigned char peer_id[20], int64_t now)
{
	const struct swarm *sw = swarm_get(t, info_hash);
	size_t n = 0;

	for (size_t i = 0; sw && i < sw->npeers; i++)
		n += expiry(t, sw->peers[i].last_seen) > now && memcmp(sw->peers[i].peer_id, peer_id, 20) != 0;
	return n;
}
