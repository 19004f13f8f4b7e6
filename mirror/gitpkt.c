/*
 * gitpkt.c - the pkt-line framing of an upload-pack request, read before git sees it (gitpkt.h).
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "base/hex.h"
#include "base/xmalloc.h"
#include "gitpkt.h"

#define PKT_MAX 65520 /* git's LARGE_PACKET_MAX */

static int refuse(char **errmsg, const char *msg, size_t at)
{
	*errmsg = xasprintf("%s (at byte %zu of the request)", msg, at);
	return -1;
}

/* An object id ends the payload or is followed by a space (v0 capabilities) or a newline. */
static int oid_ok(const char *p, size_t n)
{
	size_t l = 0;

	while (l < n && p[l] != ' ' && p[l] != '\n')
		l++;
	if (l != 40 && l != 64)
		return 0;
	for (size_t i = 0; i < l; i++)
		if (hex_digit(p[i]) < 0)
			return 0;
	return 1;
}

/* Does the filter spec (to the end of the line) name sparse:oid, plainly or %-encoded (combine:)?
 * 1 yes, 0 no, -1 a spec this cannot read whole: too long for a filter, or a byte git's own reading
 * would stop at (a NUL, plain or %00, would end the string searched here too early) */
static int filter_sparse(const char *p, size_t n)
{
	char buf[512];
	size_t o = 0;

	if (n >= sizeof(buf))
		return -1;
	for (size_t i = 0; i < n; i++) {
		/* decode %XX as git's combine: filters spell their parts */
		if (p[i] == '%' && i + 2 < n && hex_digit(p[i + 1]) >= 0 && hex_digit(p[i + 2]) >= 0) {
			buf[o++] = (char)(hex_digit(p[i + 1]) * 16 + hex_digit(p[i + 2]));
			i += 2;
		} else {
			buf[o++] = p[i];
		}
		if (!buf[o - 1])
			return -1;
	}
	buf[o] = '\0';
	for (char *c = buf; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	/* (also one decoded twice: combine: inside combine:) */
	return strstr(buf, "sparse:") || strstr(buf, "sparse%3a") ? 1 : 0;
}

int mirror_git_pkt_check(const char *body, size_t len, struct gitpkt_summary *sum, char **errmsg)
{
	size_t off = 0;

	memset(sum, 0, sizeof(*sum));
	*errmsg = NULL;
	while (off < len) {
		size_t n = 0;
		const char *p;

		if (len - off < 4)
			return refuse(errmsg, "a pkt-line is cut short", off);
		for (int i = 0; i < 4; i++) {
			int v = hex_digit(body[off + i]);
			if (v < 0)
				return refuse(errmsg, "a pkt-line length is not four hex digits", off);
			n = n * 16 + (size_t)v;
		}
		if (n < 4) {
			if (n == 3)
				return refuse(errmsg, "a pkt-line of length 3", off);
			sum->flushes++; /* flush, delim, response-end */
			off += 4;
			continue;
		}
		if (n > PKT_MAX)
			return refuse(errmsg, "a pkt-line longer than git allows", off);
		if (n > len - off)
			return refuse(errmsg, "a pkt-line runs past the end of the request", off);
		p = body + off + 4;
		n -= 4;
		sum->lines++;
		if (n >= 9 && !memcmp(p, "want-ref ", 9)) {
			sum->wants++;
		} else if (n >= 5 && !memcmp(p, "want ", 5)) {
			if (!oid_ok(p + 5, n - 5))
				return refuse(errmsg, "a want line without an object id", off);
			sum->wants++;
		} else if (n >= 5 && !memcmp(p, "have ", 5)) {
			if (!oid_ok(p + 5, n - 5))
				return refuse(errmsg, "a have line without an object id", off);
			sum->haves++;
		} else if (n >= 7 && !memcmp(p, "filter ", 7)) {
			int sparse = filter_sparse(p + 7, n - 7);
			if (sparse < 0)
				return refuse(errmsg, "a filter spec too long, or with a NUL byte", off);
			if (sparse) {
				*errmsg = xstrdup("sparse:oid filters are not served by this mirror (their cost is "
						  "paths times patterns); use blob:none or blob:limit");
				return -2;
			}
			sum->filter = 1;
		}
		off += n + 4;
	}
	return 0;
}
