/*
 * gitpkt.h - the pkt-line framing of a git upload-pack request (docs/git.md), read by hubmirror
 * before git http-backend runs, so that a malformed or costly request is refused with a clear
 * answer and never reaches git.
 *
 * A request is a sequence of pkt-lines: four hex digits giving the length of the line including
 * themselves (at most 65520), then its bytes; "0000" (flush), "0001" (delim) and "0002"
 * (response-end, protocol v2) carry none. Nothing may follow the last one. The reader counts the
 * wants ("want OID", "want-ref REF") and haves, checks that each OID is 40 or 64 hex digits, and
 * refuses a "filter" it will not serve: sparse:oid (its cost is paths times patterns), also inside
 * a combine: filter, and also %-encoded.
 */
#ifndef HM_MIRROR_GITPKT_H
#define HM_MIRROR_GITPKT_H

#include <stddef.h>

struct gitpkt_summary {
	size_t lines;   /* pkt-lines with data */
	size_t flushes; /* flush, delim and response-end packets */
	size_t wants, haves;
	int filter;     /* 1 when the request asks for a filter git may serve */
};

/* Read the body (len bytes, inflated). Returns 0 (sum filled), or with *errmsg (malloc'd) for the
 * client: -1 when the request is malformed, -2 when it asks for what this mirror does not serve
 * (git's way to say so is an ERR packet, which its client prints as "remote error"). */
int mirror_git_pkt_check(const char *body, size_t len, struct gitpkt_summary *sum, char **errmsg);

#endif
