/*
 * fuzz-s3.c - hub/s3.c, an S3 request as the mirror reads it: its path, bucket and key, its query, the
 * S3 host name, and AWS Signature Version 4 in both forms (an Authorization header, a presigned URL's
 * X-Amz-* query). The input is a request's head as a client sends it (request line, headers); the
 * seeds are requests botocore signed. For every request the parser takes as signed:
 *  - its fields are well-formed (a credential scope of a date, a 64-hex signature, lowercase signed
 *    header names, the date inside the scope, an expiry of 1 s to 7 days for a presigned URL);
 *  - the signature s3_sig_expected computes equals the one this harness computes from its own
 *    canonical request (written here from AWS's description: the raw path, the query decoded,
 *    encoded again and sorted, the signed headers trimmed), with a secret of the access key's;
 *  - signed with that, the request verifies, and so does its canonical form (the query as the
 *    canonical request has it, the Authorization header rewritten), which must mean the same to the
 *    mirror: the same method, bucket, key, query parameters the routes read, host and signature fields;
 *  - a change of any one byte of the signed request either fails verification or leaves what the
 *    mirror reads unchanged: whatever names the object, the listing or the key is signed.
 * Set FUZZ_S3_SHOW to see each request's verdict.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/buf.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "hub/http/httpd.h"
#include "hub/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADERS 48
#define DOMAIN "s3.hm.test" /* serve --s3-domain, as t0850-s3 runs it */
#define MUTATIONS 24

struct req {
	char *method, *path, *query; /* query NULL: no '?' */
	char *name[MAX_HEADERS], *value[MAX_HEADERS];
	size_t nh;
};

static void req_release(struct req *r)
{
	free(r->method);
	free(r->path);
	free(r->query);
	for (size_t i = 0; i < r->nh; i++) {
		free(r->name[i]);
		free(r->value[i]);
	}
	memset(r, 0, sizeof(*r));
}

/* "METHOD TARGET VERSION" and "Name: value" lines (CRLF or LF), up to a blank line. */
static int req_parse(const char *s, struct req *r)
{
	const char *eol = strchr(s, '\n'), *sp1, *sp2, *q;

	memset(r, 0, sizeof(*r));
	if (!eol || !(sp1 = memchr(s, ' ', (size_t)(eol - s))) ||
	    !(sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1))))
		return -1;
	if (sp1 == s || sp1[1] != '/')
		return -1;
	r->method = xstrndup(s, (size_t)(sp1 - s));
	q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
	r->path = xstrndup(sp1 + 1, (size_t)((q ? q : sp2) - sp1 - 1));
	if (q)
		r->query = xstrndup(q + 1, (size_t)(sp2 - q - 1));
	for (s = eol + 1; *s && r->nh < MAX_HEADERS; s = eol + 1) {
		const char *colon, *v, *end;
		eol = strchr(s, '\n');
		if (!eol)
			eol = s + strlen(s);
		end = eol > s && eol[-1] == '\r' ? eol - 1 : eol;
		if (end == s)
			break;
		colon = memchr(s, ':', (size_t)(end - s));
		if (!colon || colon == s) {
			req_release(r);
			return -1;
		}
		for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
			;
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		r->name[r->nh] = xstrndup(s, (size_t)(colon - s));
		r->value[r->nh++] = xstrndup(v, (size_t)(end - v));
		if (!*eol)
			break;
	}
	return 0;
}

static char *req_text(const struct req *r)
{
	struct buf b;

	buf_init(&b);
	buf_addf(&b, "%s %s%s%s HTTP/1.1\r\n", r->method, r->path, r->query ? "?" : "", r->query ? r->query : "");
	for (size_t i = 0; i < r->nh; i++)
		buf_addf(&b, "%s: %s\r\n", r->name[i], r->value[i]);
	buf_adds(&b, "\r\n");
	return buf_detach(&b, NULL);
}

/* httpd_header's way: the first of that name, any case */
static const char *header(void *ud, const char *name)
{
	const struct req *r = ud;

	for (size_t i = 0; i < r->nh; i++)
		if (!strcasecmp(r->name[i], name))
			return r->value[i];
	return NULL;
}

static void set_header(struct req *r, const char *name, char *value)
{
	for (size_t i = 0; i < r->nh; i++)
		if (!strcasecmp(r->name[i], name)) {
			free(r->value[i]);
			r->value[i] = value;
			return;
		}
	free(value);
}

/* The secret of an access key: t0850-s3's keys (the seeds verify as botocore signed them), else one
 * of its own, so that a changed key id is a changed secret, as on the mirror. */
static char *secret_of(const char *key)
{
	static const char *const known[] = { "AKIAREADER0000000001", "reader/Secret+Key0000000000000000000001",
					     "AKIAOTHER00000000002", "other/Secret+Key00000000000000000000002", NULL };

	for (size_t i = 0; known[i]; i += 2)
		if (!strcmp(key, known[i]))
			return xstrdup(known[i + 1]);
	return xasprintf("fuzz-secret/%s", key);
}

/* ---- the harness's own Signature Version 4 ---- */

static void uri_encode(struct buf *b, const char *s)
{
	static const char hexu[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
			     *p == '-' || *p == '_' || *p == '.' || *p == '~';
		if (plain)
			buf_addch(b, (char)*p);
		else
			buf_addf(b, "%%%c%c", hexu[*p >> 4], hexu[*p & 15]);
	}
}

/* by name, then value (botocore sorts its (name, value) pairs; a name that is the start of another
 * sorts first, whatever byte follows it) */
static int pair_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t kx = strcspn(x, "="), ky = strcspn(y, "=");
	int c = memcmp(x, y, kx < ky ? kx : ky);

	if (!c && kx != ky)
		return kx < ky ? -1 : 1;
	return c ? c : strcmp(x + kx, y + ky);
}

/* Every parameter but X-Amz-Signature as NAME=VALUE, each decoded and encoded again, sorted bytewise
 * (pair_cmp); NULL when one does not decode. */
static char *ref_query(const char *q)
{
	char **v = NULL, *out;
	size_t n = 0;
	struct buf b;
	bool bad = false;

	for (const char *p = q; p && *p && !bad;) {
		size_t len = strcspn(p, "&"), kl = strcspn(p, "=&");
		char *k = httpd_unescape(p, kl, true);
		char *val = kl < len ? httpd_unescape(p + kl + 1, len - kl - 1, true) : xstrdup("");
		bad = !k || !val;
		if (!bad && len && strcmp(k, "X-Amz-Signature")) {
			buf_init(&b);
			uri_encode(&b, k);
			buf_addch(&b, '=');
			uri_encode(&b, val);
			v = xreallocarray(v, n + 1, sizeof(*v));
			v[n++] = buf_detach(&b, NULL);
		}
		free(k);
		free(val);
		p += len;
		if (*p)
			p++;
	}
	if (n)
		qsort(v, n, sizeof(*v), pair_cmp);
	buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		buf_addf(&b, "%s%s", i ? "&" : "", v[i]);
		free(v[i]);
	}
	free(v);
	out = buf_detach(&b, NULL);
	if (bad) {
		free(out);
		out = NULL;
	}
	return out;
}

static void hmac(const unsigned char *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned int n = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &n);
}

/* The canonical request and the signature over it; -1 when the query does not decode. */
static int ref_sign(const struct req *r, const struct s3_sig *s, const char *secret, char **canon, char sig[65])
{
	static const char empty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	char *cq = ref_query(r->query), *key0, hexmd[65];
	const char *payload = header((void *)r, "x-amz-content-sha256");
	unsigned char md[32], k[32];
	struct buf b, sts;

	if (!cq)
		return -1;
	buf_init(&b);
	buf_addf(&b, "%s\n%s\n%s\n", r->method, r->path, cq);
	free(cq);
	for (const char *h = s->signed_headers; *h;) {
		size_t n = strcspn(h, ";");
		char *name = xstrndup(h, n);
		const char *v = header((void *)r, name);
		if (n) {
			/* trimmed, each run of blanks one space */
			buf_addf(&b, "%s:", name);
			for (bool gap = false, any = false; v && *v; v++) {
				if (*v == ' ' || *v == '\t') {
					gap = any;
					continue;
				}
				if (gap)
					buf_addch(&b, ' ');
				gap = false;
				any = true;
				buf_addch(&b, *v);
			}
			buf_addch(&b, '\n');
		}
		free(name);
		h += n;
		if (*h)
			h++;
	}
	buf_addf(&b, "\n%s\n%s", s->signed_headers, s->presigned ? "UNSIGNED-PAYLOAD" : payload ? payload : empty);
	EVP_Digest(b.data, b.len, md, NULL, EVP_sha256(), NULL);
	hex_encode(md, 32, hexmd);
	buf_init(&sts);
	buf_addf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", s->amz_date, s->scope_date, s->region,
		 s->service, hexmd);
	key0 = xasprintf("AWS4%s", secret);
	hmac((const unsigned char *)key0, strlen(key0), s->scope_date, k);
	hmac(k, 32, s->region, k);
	hmac(k, 32, s->service, k);
	hmac(k, 32, "aws4_request", k);
	hmac(k, 32, sts.data, md);
	hex_encode(md, 32, sig);
	free(key0);
	buf_release(&sts);
	*canon = buf_detach(&b, NULL);
	return 0;
}

/* ---- what the mirror reads ---- */

static int parse_sig(const struct req *r, struct s3_sig *s, const char **why)
{
	return s3_sig_parse(header((void *)r, "Authorization"), r->query, header((void *)r, "X-Amz-Date"), s, why);
}

/* Does the request carry a signature that verifies with its key's secret? */
static bool verifies(const struct req *r)
{
	struct s3_sig s;
	const char *why;
	char expect[65], *secret;
	bool ok;

	if (parse_sig(r, &s, &why))
		return false;
	secret = secret_of(s.access_key);
	ok = !s3_sig_expected(&s, secret, r->method, r->path, r->query, header, (void *)r,
			      header((void *)r, "x-amz-content-sha256"), expect) &&
	     !memcmp(expect, s.signature, 64);
	free(secret);
	s3_sig_release(&s);
	return ok;
}

/* The query parameters the routes read (routes-s3.c, routes-s3-list.c) */
static const char *const params[] = { "location", "acl", "policy", "versioning", "versions", "uploads", "lifecycle",
				      "cors", "tagging", "website", "logging", "notification", "replication",
				      "encryption", "object-lock", "uploadId", "list-type", "prefix", "delimiter",
				      "max-keys", "continuation-token", "start-after", "marker", "encoding-type",
				      "fetch-owner", NULL };

/* Everything the mirror decides a signed request by, as one string: the route's method, the bucket
 * and key it reads (from the S3 host name, the /s3 prefix or the root), each parameter the routes
 * ask for, the key id and the signature's times. */
static char *view(const struct req *r)
{
	struct buf b;
	struct s3_sig s;
	const char *why, *rest;
	char *hbucket = NULL, *path, *bucket = NULL, *key = NULL;
	bool host = s3_host_bucket(header((void *)r, "Host"), DOMAIN, &hbucket);

	buf_init(&b);
	if (parse_sig(r, &s, &why))
		abort();
	buf_addf(&b, "%s\n%s %s %s %s %s %lld %d\n", r->method, s.access_key, s.amz_date, s.scope_date, s.region,
		 s.service, (long long)s.expires, s.presigned);
	s3_sig_release(&s);
	if (host)
		path = hbucket ? xasprintf("/%s%s", hbucket, r->path) : xstrdup(r->path);
	else if ((rest = s3_under_prefix(r->path)))
		path = xasprintf("%s", *rest ? rest : "/");
	else
		path = xstrdup(r->path);
	buf_addf(&b, "host %d\n", host);
	if (s3_path_parse(path, &bucket, &key))
		buf_adds(&b, "bad path\n");
	else
		buf_addf(&b, "bucket %s\nkey %s\n", bucket ? bucket : "-", key ? key : "-");
	for (const char *const *p = params; *p; p++) {
		char *v = s3_query_get(r->query, *p);
		buf_addf(&b, "%s %d=%s\n", *p, s3_query_has(r->query, *p), v ? v : "(none)");
		free(v);
	}
	free(hbucket);
	free(path);
	free(bucket);
	free(key);
	return buf_detach(&b, NULL);
}

static void check_fields(const struct s3_sig *s, const struct req *r)
{
	if (!*s->access_key || strlen(s->scope_date) != 8 || strspn(s->scope_date, "0123456789") != 8 ||
	    strlen(s->signature) != 64 || !hex_is_lower(s->signature, 64) || !*s->region || !*s->service ||
	    !s->signed_headers || !*s->signed_headers ||
	    strspn(s->signed_headers, "abcdefghijklmnopqrstuvwxyz0123456789-;") != strlen(s->signed_headers) ||
	    s3_amz_time(s->amz_date) < 0 || strncmp(s->amz_date, s->scope_date, 8))
		abort();
	if (s->presigned ? (s->expires < 1 || s->expires > 604800 || header((void *)r, "Authorization"))
			 : s->expires != 0)
		abort();
	for (const char *p = s->access_key; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			abort();
}

/* r with its signature replaced by sig: in the Authorization header written anew, or as the value of
 * the query's first X-Amz-Signature (the one the parser reads). */
static void resign(struct req *r, const struct s3_sig *s, const char *sig)
{
	if (!s->presigned) {
		set_header(r, "Authorization", xasprintf("AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
							 "SignedHeaders=%s, Signature=%s", s->access_key, s->scope_date,
							 s->region, s->service, s->signed_headers, sig));
	} else {
		const char *q = r->query, *p = q;
		while (p && strncmp(p, "X-Amz-Signature=", 16)) {
			p = strchr(p, '&');
			if (p)
				p++;
		}
		if (p) {
			size_t at = (size_t)(p - q) + 16, len = strcspn(q + at, "&");
			char *nq = xasprintf("%.*s%s%s", (int)at, q, sig, q + at + len);
			free(r->query);
			r->query = nq;
		}
	}
}

static void show(const char *what, const struct req *r)
{
	char *t;

	if (!getenv("FUZZ_S3_SHOW"))
		return;
	t = req_text(r);
	fprintf(stderr, "--- %s:\n%s", what, t);
	free(t);
}

static void fail(const char *what, const struct req *a, const struct req *b, const char *va, const char *vb)
{
	char *ta = req_text(a), *tb = b ? req_text(b) : NULL;

	fprintf(stderr, "fuzz-s3: %s\n--- request:\n%s--- other:\n%s--- its view:\n%s--- other's:\n%s", what, ta,
		tb ? tb : "-", va ? va : "-", vb ? vb : "-");
	abort();
}

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* One byte of a's text changed: what the mirror reads is the same, or it does not verify. */
static void mutate_once(const struct req *a, const char *va)
{
	static const char repl[] = "%&=/;:, \t+.-_~?0123456789abcdefABCDEFXYZ";
	char *t = req_text(a), *vb;
	size_t len = strlen(t), pos = (size_t)(next() % len);
	struct req b;
	uint64_t how = next() % 4;

	if (how == 0)
		t[pos] = repl[next() % (sizeof(repl) - 1)];
	else if (how == 1)
		t[pos] ^= 0x20; /* case */
	else if (how == 2)
		t[pos] ^= (char)(1 << (next() % 7));
	else
		memmove(t + pos, t + pos + 1, len - pos); /* a byte less */
	if (memchr(t, '\0', len - (how == 3)) || req_parse(t, &b)) {
		free(t);
		return;
	}
	if (verifies(&b)) {
		vb = view(&b);
		if (strcmp(va, vb))
			fail("a changed byte that still verifies changes what the mirror reads", a, &b, va, vb);
		free(vb);
	}
	req_release(&b);
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *secret = NULL, *canon = NULL, *va = NULL, *vc = NULL, *cq;
	char ref[65], lib[65];
	struct req r, c;
	struct s3_sig s, s2;
	const char *why = NULL;
	int pr, le, re;

	memcpy(text, data, size);
	text[size] = '\0';
	if (memchr(data, '\0', size) || req_parse(text, &r)) {
		free(text);
		return 0;
	}
	pr = parse_sig(&r, &s, &why);
	if (pr != 0) {
		/* refused with a reason, or anonymous: no Authorization and no presigned query */
		const char *authz = header(&r, "Authorization");
		bool signs = (authz && *authz) || s3_query_has(r.query, "X-Amz-Signature") ||
			     s3_query_has(r.query, "X-Amz-Credential");
		if ((pr == -1 && (!why || !*why)) || (pr == 1 && signs) || (pr != -1 && pr != 1))
			abort();
		show(pr == 1 ? "anonymous" : why, &r);
		goto out;
	}
	check_fields(&s, &r);
	secret = secret_of(s.access_key);
	le = s3_sig_expected(&s, secret, r.method, r.path, r.query, header, &r, header(&r, "x-amz-content-sha256"),
			     lib);
	re = ref_sign(&r, &s, secret, &canon, ref);
	if (le != re || (!le && strcmp(lib, ref)))
		fail("s3_sig_expected and the harness's own canonical request disagree", &r, NULL, canon, NULL);
	show(le                          ? "a query that does not decode"
	     : !strcmp(ref, s.signature) ? "signed, verifies"
					 : "signed, not verified",
	     &r);
	if (le)
		goto out;
	/* signed with the right secret, it verifies */
	resign(&r, &s, ref);
	if (!verifies(&r))
		fail("a request signed with its key's secret does not verify", &r, NULL, canon, NULL);
	if (parse_sig(&r, &s2, &why))
		abort();
	if (strcmp(s.access_key, s2.access_key) || strcmp(s.amz_date, s2.amz_date) || strcmp(s.region, s2.region) ||
	    strcmp(s.signed_headers, s2.signed_headers) || strcmp(s2.signature, ref) || s.expires != s2.expires)
		fail("the signature's fields change when only the signature does", &r, NULL, NULL, NULL);
	s3_sig_release(&s2);
	va = view(&r);
	/* its canonical form: the same request to the mirror, under the same signature */
	cq = ref_query(r.query);
	c = (struct req){ xstrdup(r.method), xstrdup(r.path), NULL, { 0 }, { 0 }, r.nh };
	c.query = s.presigned ? xasprintf("%s%sX-Amz-Signature=%s", cq, *cq ? "&" : "", ref) : *cq ? xstrdup(cq) : NULL;
	free(cq);
	for (size_t i = 0; i < r.nh; i++) {
		c.name[i] = xstrdup(r.name[i]);
		c.value[i] = xstrdup(r.value[i]);
	}
	if (!verifies(&c))
		fail("the canonical form of a signed request does not verify", &r, &c, NULL, NULL);
	vc = view(&c);
	if (strcmp(va, vc))
		fail("a signed request and its canonical form mean different things", &r, &c, va, vc);
	req_release(&c);
	/* one byte changed, anywhere */
	rng = 0x9e3779b97f4a7c15ULL ^ size;
	for (size_t i = 0; i < size; i++)
		rng = (rng ^ data[i]) * 0x100000001b3ULL;
	rng |= 1;
	for (int i = 0; i < MUTATIONS; i++)
		mutate_once(&r, va);
out:
	if (!pr)
		s3_sig_release(&s);
	free(canon);
	free(secret);
	free(va);
	free(vc);
	req_release(&r);
	free(text);
	return 0;
}
