/*
 * tracker-announce.c - reading a BEP 3 announce's query string (p2p_tracker_parse_announce, tracker.h),
 * apart from the tracker's tables: the part that takes bytes from the network, and the part the fuzzer
 * drives (tests/fuzz/fuzz-announce.c).
 *
 * Each parameter we use is named once, in the table below; every other parameter (ip, key, trackerid,
 * supportcrypto, ...) is skipped unread: a peer's address is the connection's, never what it says.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "base/hex.h"
#include "tracker.h"

enum key { K_INFO_HASH, K_PEER_ID, K_PORT, K_UPLOADED, K_DOWNLOADED, K_LEFT, K_EVENT, K_NUMWANT, K_COMPACT,
	   K_NO_PEER_ID, K_COUNT };

static const struct {
	const char *name;
	const char *invalid;    /* the refusal for a value that does not parse */
	bool required;
} keys[K_COUNT] = {
	[K_INFO_HASH] = { "info_hash", "info_hash is not 20 bytes", true },
	[K_PEER_ID] = { "peer_id", "peer_id is not 20 bytes", true },
	[K_PORT] = { "port", "invalid port", true },
	[K_UPLOADED] = { "uploaded", "invalid uploaded", false },
	[K_DOWNLOADED] = { "downloaded", "invalid downloaded", false },
	[K_LEFT] = { "left", "invalid left", true },
	[K_EVENT] = { "event", "invalid event", false },
	[K_NUMWANT] = { "numwant", "invalid numwant", false },
	[K_COMPACT] = { "compact", "invalid compact", false },
	[K_NO_PEER_ID] = { "no_peer_id", "invalid no_peer_id", false },
};

/* The refusal for a required parameter that is missing, in the table's order. */
static const char *const missing[K_COUNT] = {
	[K_INFO_HASH] = "missing info_hash", [K_PEER_ID] = "missing peer_id", [K_PORT] = "missing port",
	[K_LEFT] = "missing left",
};

/* Percent-decode s[0..n) into out, writing at most cap bytes. Returns the full decoded length (which
 * may exceed cap: the rest is dropped), or -1 on a malformed escape. */
static long pct_decode(const char *s, size_t n, unsigned char *out, size_t cap)
{
	size_t i = 0, len = 0;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			int hi, lo;

			if (n - i < 3 || (hi = hex_digit(s[i + 1])) < 0 || (lo = hex_digit(s[i + 2])) < 0)
				return -1;
			c = (unsigned char)(hi << 4 | lo);
			i += 3;
		} else {
			i++;
		}
		if (len < cap)
			out[len] = c;
		len++;
	}
	return (long)len;
}

/* A non-negative decimal integer filling all of s[0..n) (n > 0), into *out. With saturate, values
 * past INT64_MAX become INT64_MAX instead of an error. */
static bool parse_uint(const unsigned char *s, size_t n, bool saturate, int64_t *out)
{
	int64_t v = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (INT64_MAX - (s[i] - '0')) / 10) {
			if (!saturate)
				return false;
			v = INT64_MAX;
			continue;
		}
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

static bool is(const unsigned char *s, long n, const char *word)
{
	return (size_t)n == strlen(word) && !memcmp(s, word, (size_t)n);
}

static int key_of(const unsigned char *s, long n)
{
	for (int k = 0; k < K_COUNT; k++)
		if (is(s, n, keys[k].name))
			return k;
	return -1;
}

/* Take value val[0..vn) of parameter k into *a. Returns false when it does not parse. */
static bool take(struct p2p_tracker_announce *a, int k, const unsigned char *val, long vn)
{
	int64_t num;

	switch (k) {
	case K_INFO_HASH:
	case K_PEER_ID:
		if (vn != 20)
			return false;
		memcpy(k == K_INFO_HASH ? a->info_hash : a->peer_id, val, 20);
		return true;
	case K_PORT:
		if (!parse_uint(val, (size_t)vn, false, &num) || num < 1 || num > 65535)
			return false;
		a->port = (uint16_t)num;
		return true;
	case K_UPLOADED:
		return parse_uint(val, (size_t)vn, false, &a->uploaded);
	case K_DOWNLOADED:
		return parse_uint(val, (size_t)vn, false, &a->downloaded);
	case K_LEFT:
		return parse_uint(val, (size_t)vn, false, &a->left);
	case K_EVENT:
		if (vn == 0 || is(val, vn, "paused"))
			a->event = P2P_TRACKER_EVENT_NONE;
		else if (is(val, vn, "started"))
			a->event = P2P_TRACKER_EVENT_STARTED;
		else if (is(val, vn, "stopped"))
			a->event = P2P_TRACKER_EVENT_STOPPED;
		else if (is(val, vn, "completed"))
			a->event = P2P_TRACKER_EVENT_COMPLETED;
		else
			return false;
		return true;
	case K_NUMWANT:
		if (!parse_uint(val, (size_t)vn, true, &num))
			return false;
		a->numwant = num > INT_MAX ? INT_MAX : (int)num;
		return true;
	case K_COMPACT:
	case K_NO_PEER_ID:
		if (!is(val, vn, "1") && !is(val, vn, "0"))
			return false;
		*(k == K_COMPACT ? &a->compact : &a->no_peer_id) = is(val, vn, "1");
		return true;
	}
	return false;
}

int p2p_tracker_parse_announce(const char *query, size_t len, struct p2p_tracker_announce *out, const char **errmsg)
{
	struct p2p_tracker_announce a;
	const char *reason = NULL;
	unsigned seen = 0;
	size_t pos = 0;

	memset(&a, 0, sizeof(a));
	a.numwant = -1;
	a.compact = true;
	while (pos < len && !reason) {
		const char *p = query + pos, *amp = memchr(p, '&', len - pos), *eq;
		size_t plen = amp ? (size_t)(amp - p) : len - pos, klen;
		unsigned char key[16], val[32];
		long kn, vn;
		int k;

		pos += plen + 1;
		if (!plen)
			continue;
		eq = memchr(p, '=', plen);
		klen = eq ? (size_t)(eq - p) : plen;
		kn = pct_decode(p, klen, key, sizeof(key));
		if (kn < 0) {
			reason = "bad percent-encoding in a parameter name";
			break;
		}
		if ((size_t)kn > sizeof(key) || (k = key_of(key, kn)) < 0)
			continue; /* not one we use */
		vn = eq ? pct_decode(eq + 1, plen - klen - 1, val, sizeof(val)) : 0;
		if (vn < 0) {
			reason = "bad percent-encoding in a parameter value";
			break;
		}
		if ((size_t)vn > sizeof(val) && k != K_INFO_HASH && k != K_PEER_ID) {
			reason = "parameter value too long";
			break;
		}
		if (!take(&a, k, val, vn))
			reason = keys[k].invalid;
		seen |= 1u << k;
	}
	for (int k = 0; !reason && k < K_COUNT; k++)
		if (keys[k].required && !(seen & (1u << k)))
			reason = missing[k];
	if (reason) {
		if (errmsg)
			*errmsg = reason;
		return HM_ERR_USAGE;
	}
	*out = a;
	return 0;
}
