/*
 * fuzz-announce.c - tracker announces as a peer sends them (the raw query string): parsing never
 * reads out of bounds, and what parses is recorded and answered with a well-formed body whose
 * counters stay within their limits, however the values are chosen (huge counts, one address).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "p2p/tracker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct p2p_tracker *t;
	static int64_t now;
	struct p2p_tracker_announce a;
	struct p2p_tracker_stats st;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const char *why = NULL;
	struct buf out;
	char *q;

	if (!t) {
		struct p2p_tracker_config cfg = { .max_peers = 64, .max_total_peers = 256, .max_torrents = 16 };
		t = p2p_tracker_new(&cfg);
	}
	/* a copy without a terminator: the parser must stay inside len */
	q = malloc(size ? size : 1);
	memcpy(q, data, size);
	if (p2p_tracker_parse_announce(q, size, &a, &why)) {
		if (!why)
			abort();
		free(q);
		return 0;
	}
	sin.sin_addr.s_addr = htonl(0x0a000000u | (uint32_t)(size & 0xff));
	buf_init(&out);
	p2p_tracker_announce(t, &a, (const struct sockaddr *)&sin, now++ / 16, &out);
	if (out.len < 2 || out.data[0] != 'd' || out.data[out.len - 1] != 'e')
		abort();
	p2p_tracker_stats(t, &st);
	if (st.peer_uploaded < 0 || st.peers > 256 || st.torrents > 16)
		abort();
	buf_release(&out);
	free(q);
	return 0;
}
