/*
 * s3.c - the S3 API's grammar and AWS Signature Version 4 on the server's side (s3.h,
 * docs/protocols/s3.md).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/buf.h"
#include "base/hex.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "hub/http/httpd.h"
#include "s3.h"

/* ---- buckets and keys ---- */

static const struct {
	const char *bucket, *hub, *type;
} buckets[] = {
	{ "hf", "hf", "model" },
	{ "hf-datasets", "hf", "dataset" },
	{ "ms", "ms", "model" },
	{ "ms-datasets", "ms", "dataset" },
};

int s3_bucket(const char *bucket, const char **hub, const char **type)
{
	for (size_t i = 0; bucket && i < sizeof(buckets) / sizeof(buckets[0]); i++)
		if (!strcmp(bucket, buckets[i].bucket)) {
			*hub = buckets[i].hub;
			*type = buckets[i].type;
			return 0;
		}
	return -1;
}

const char *s3_bucket_name(const char *hub, const char *type)
{
	for (size_t i = 0; i < sizeof(buckets) / sizeof(buckets[0]); i++)
		if (!strcmp(hub, buckets[i].hub) && !strcmp(type, buckets[i].type))
			return buckets[i].bucket;
	return NULL;
}

int s3_path_parse(const char *raw_path, char **bucket, char **key)
{
	const char *b, *slash;

	*bucket = *key = NULL;
	if (!raw_path || raw_path[0] != '/')
		return -1;
	b = raw_path + 1;
	if (!*b)
		return 0;
	slash = strchr(b, '/');
	*bucket = httpd_unescape(b, slash ? (size_t)(slash - b) : strlen(b), false);
	if (!*bucket)
		return -1;
	if (slash && slash[1]) {
		*key = httpd_unescape(slash + 1, strlen(slash + 1), false);
		if (!*key) {
			free(*bucket);
			*bucket = NULL;
			return -1;
		}
	}
	return 0;
}

/* '%2F' and '%25' (either case) back to '/' and '%'; any other '%' stays as it is. */
static char *rev_decode(const char *s, size_t n)
{
	char *out = xmalloc(n + 1), *o = out;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && s[i + 1] == '2' &&
		    (s[i + 2] == 'F' || s[i + 2] == 'f' || s[i + 2] == '5')) {
			*o++ = s[i + 2] == '5' ? '%' : '/';
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

int s3_key_parse(const char *key, struct s3_key *k)
{
	const char *a = key ? strchr(key, '/') : NULL, *b = a ? strchr(a + 1, '/') : NULL,
		   *c = b ? strchr(b + 1, '/') : NULL;

	memset(k, 0, sizeof(*k));
	if (!c || a == key || b == a + 1 || c == b + 1)
		return -1;
	k->name = xstrndup(key, (size_t)(b - key));
	k->rev = rev_decode(b + 1, (size_t)(c - b - 1));
	k->path = xstrdup(c + 1);
	return 0;
}

void s3_key_release(struct s3_key *k)
{
	free(k->name);
	free(k->rev);
	free(k->path);
	memset(k, 0, sizeof(*k));
}

char *s3_rev_segment(const char *rev)
{
	struct buf b;

	buf_init(&b);
	for (const char *p = rev; *p; p++) {
		if (*p == '%')
			buf_adds(&b, "%25");
		else if (*p == '/')
			buf_adds(&b, "%2F");
		else
			buf_addch(&b, *p);
	}
	return buf_detach(&b, NULL);
}

bool s3_signed(const char *authz, const char *raw_query)
{
	return (authz && (!strncmp(authz, "AWS4-HMAC-SHA256 ", 17) || !strncmp(authz, "AWS ", 4))) ||
	       s3_query_has(raw_query, "X-Amz-Credential");
}

const char *s3_under_prefix(const char *path)
{
	return !strcmp(path, "/s3") ? "" : !strncmp(path, "/s3/", 4) ? path + 3 : NULL;
}

bool s3_host_bucket(const char *host, const char *domain, char **bucket)
{
	size_t hl, dl;

	*bucket = NULL;
	if (!domain || !host)
		return false;
	hl = strcspn(host, ":");
	dl = strlen(domain);
	if (hl == dl && !strncasecmp(host, domain, dl))
		return true;
	if (hl > dl + 1 && host[hl - dl - 1] == '.' && !strncasecmp(host + hl - dl, domain, dl)) {
		*bucket = xstrndup(host, hl - dl - 1);
		for (char *p = *bucket; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		return true;
	}
	return false;
}

/* ---- queries ---- */

/* The parameter name's raw value in q (its start and length; *n = -1 for one without '='), or NULL.
 * Names are compared decoded, as the canonical request has them (SigV4 signs "%70refix=a" as
 * "prefix=a": the mirror reads it as prefix too). */
static const char *query_find(const char *q, const char *name, long *n)
{
	for (const char *p = q; p && *p;) {
		size_t len = strcspn(p, "&"), kl = strcspn(p, "=&");
		char *k = httpd_unescape(p, kl, true);
		bool match = k && !strcmp(k, name);

		free(k);
		if (match) {
			*n = kl == len ? -1 : (long)(len - kl - 1);
			return kl == len ? p + kl : p + kl + 1;
		}
		p += len;
		if (*p)
			p++;
	}
	return NULL;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Does the query name a parameter twice (decoded)? The canonical request sorts the parameters, so the
 * order of two of one name is not signed, and the first is the one the mirror reads. */
static bool query_twice(const char *q)
{
	char **v = NULL;
	size_t n = 0;
	bool twice = false;

	for (const char *p = q; p && *p;) {
		size_t len = strcspn(p, "&");
		if (len) {
			v = xreallocarray(v, n + 1, sizeof(*v));
			v[n] = httpd_unescape(p, strcspn(p, "=&"), true);
			if (!v[n])
				v[n] = xstrdup(""); /* does not decode: the signature's check refuses it */
			n++;
		}
		p += len;
		if (*p)
			p++;
	}
	if (n)
		qsort(v, n, sizeof(*v), str_cmp);
	for (size_t i = 0; i < n; i++) {
		twice = twice || (i + 1 < n && !strcmp(v[i], v[i + 1]));
		free(v[i]);
	}
	free(v);
	return twice;
}

bool s3_query_has(const char *raw_query, const char *name)
{
	long n;

	return query_find(raw_query, name, &n) != NULL;
}

char *s3_query_get(const char *raw_query, const char *name)
{
	long n;
	const char *v = query_find(raw_query, name, &n);

	if (!v)
		return NULL;
	return n < 0 ? xstrdup("") : httpd_unescape(v, (size_t)n, true);
}

/* ---- answers ---- */

void s3_xml_add(struct buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': buf_adds(b, "&amp;"); break;
		case '<': buf_adds(b, "&lt;"); break;
		case '>': buf_adds(b, "&gt;"); break;
		case '"': buf_adds(b, "&quot;"); break;
		case '\'': buf_adds(b, "&apos;"); break;
		default: buf_addch(b, *s);
		}
	}
}

char *s3_error_xml(const char *code, const char *message, const char *resource, const char *request_id)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>");
	s3_xml_add(&b, code);
	buf_adds(&b, "</Code><Message>");
	s3_xml_add(&b, message);
	buf_adds(&b, "</Message>");
	if (resource) {
		buf_adds(&b, "<Resource>");
		s3_xml_add(&b, resource);
		buf_adds(&b, "</Resource>");
	}
	buf_adds(&b, "<RequestId>");
	s3_xml_add(&b, request_id ? request_id : "");
	buf_adds(&b, "</RequestId></Error>\n");
	return buf_detach(&b, NULL);
}

void s3_etag(const char *sha256, char out[80])
{
	snprintf(out, 80, "\"%.64s-1\"", sha256);
}

void s3_http_date(int64_t t, char out[30])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 30, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

void s3_iso_date(int64_t t, char out[25])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 25, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

int64_t s3_parse_http_date(const char *s)
{
	static const char *const forms[] = { "%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
					     "%a %b %e %H:%M:%S %Y" };
	struct tm tm;

	for (size_t i = 0; s && i < sizeof(forms) / sizeof(forms[0]); i++) {
		const char *end;
		memset(&tm, 0, sizeof(tm));
		end = strptime(s, forms[i], &tm);
		if (end && !*end)
			return (int64_t)timegm(&tm);
	}
	return -1;
}

/* ---- AWS Signature Version 4 ---- */

/* Copy n bytes of s into out (cap bytes) when they fit and are all of allowed (NULL: any printable);
 * returns 0 or -1. */
static int take_field(char *out, size_t cap, const char *s, size_t n, const char *allowed)
{
	if (n == 0 || n >= cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		if ((allowed && !strchr(allowed, s[i])) || (unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

#define HEXL "0123456789abcdef"
#define DIGITS "0123456789"

/* Credential=AKID/DATE/REGION/SERVICE/aws4_request */
static int take_credential(struct s3_sig *s, const char *c, size_t n)
{
	const char *p[5];
	size_t k = 0;

	p[k++] = c;
	for (size_t i = 0; i < n && k < 5; i++)
		if (c[i] == '/')
			p[k++] = c + i + 1;
	if (k != 5 || (size_t)(c + n - p[4]) != strlen("aws4_request") || strncmp(p[4], "aws4_request", 12))
		return -1;
	if (take_field(s->access_key, sizeof(s->access_key), p[0], (size_t)(p[1] - p[0] - 1), NULL) ||
	    take_field(s->scope_date, sizeof(s->scope_date), p[1], (size_t)(p[2] - p[1] - 1), DIGITS) ||
	    strlen(s->scope_date) != 8 ||
	    take_field(s->region, sizeof(s->region), p[2], (size_t)(p[3] - p[2] - 1), NULL) ||
	    take_field(s->service, sizeof(s->service), p[3], (size_t)(p[4] - p[3] - 1), NULL))
		return -1;
	return 0;
}

static int take_signed_headers(struct s3_sig *s, const char *h, size_t n)
{
	if (n == 0 || n > 2048 || strspn(h, "abcdefghijklmnopqrstuvwxyz0123456789-;") < n)
		return -1;
	s->signed_headers = xstrndup(h, n);
	return 0;
}

/* Is "host" one of the signed headers? */
static bool signs_host(const char *h)
{
	for (const char *p = h; p && *p;) {
		size_t n = strcspn(p, ";");
		if (n == 4 && !strncmp(p, "host", 4))
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

static int parse_header_auth(const char *authz, struct s3_sig *s, const char **why)
{
	const char *p = authz + strlen("AWS4-HMAC-SHA256");
	bool cred = false, sh = false, sig = false;

	while (*p) {
		size_t n;
		p += strspn(p, " ,");
		n = strcspn(p, ", ");
		if (!n)
			break;
		if (!strncmp(p, "Credential=", 11)) {
			cred = !take_credential(s, p + 11, n - 11);
		} else if (!strncmp(p, "SignedHeaders=", 14)) {
			free(s->signed_headers);
			s->signed_headers = NULL;
			sh = !take_signed_headers(s, p + 14, n - 14);
		} else if (!strncmp(p, "Signature=", 10)) {
			sig = !take_field(s->signature, sizeof(s->signature), p + 10, n - 10, HEXL) &&
			      strlen(s->signature) == 64;
		}
		p += n;
	}
	if (!cred || !sh || !sig) {
		*why = !cred ? "the Authorization header's Credential is malformed"
			     : !sh ? "the Authorization header's SignedHeaders is malformed"
				   : "the Authorization header's Signature is malformed";
		return -1;
	}
	return 0;
}

static int parse_presigned(const char *q, struct s3_sig *s, const char **why)
{
	char *alg = s3_query_get(q, "X-Amz-Algorithm"), *cred = s3_query_get(q, "X-Amz-Credential"),
	     *sh = s3_query_get(q, "X-Amz-SignedHeaders"), *sig = s3_query_get(q, "X-Amz-Signature"),
	     *date = s3_query_get(q, "X-Amz-Date"), *exp = s3_query_get(q, "X-Amz-Expires"), *end = NULL;
	int r = -1;

	*why = "a presigned URL needs X-Amz-Algorithm=AWS4-HMAC-SHA256, X-Amz-Credential, X-Amz-Date, "
	       "X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature";
	if (!alg || strcmp(alg, "AWS4-HMAC-SHA256") || !cred || !sh || !sig || !date || !exp)
		goto out;
	s->expires = strtoll(exp, &end, 10);
	if (!*exp || *end || s->expires < 1 || s->expires > 604800) {
		*why = "X-Amz-Expires must be a number of seconds from 1 to 604800";
		goto out;
	}
	if (take_credential(s, cred, strlen(cred)) || take_signed_headers(s, sh, strlen(sh)) ||
	    take_field(s->signature, sizeof(s->signature), sig, strlen(sig), HEXL) || strlen(s->signature) != 64 ||
	    take_field(s->amz_date, sizeof(s->amz_date), date, strlen(date), DIGITS "TZ"))
		goto out;
	s->presigned = true;
	r = 0;
out:
	free(alg);
	free(cred);
	free(sh);
	free(sig);
	free(date);
	free(exp);
	return r;
}

int s3_sig_parse(const char *authz, const char *raw_query, const char *amz_date_header, struct s3_sig *out,
		 const char **why)
{
	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (authz && *authz) {
		if (strncmp(authz, "AWS4-HMAC-SHA256 ", 17)) {
			*why = "only AWS Signature Version 4 (AWS4-HMAC-SHA256) is taken";
			return -1;
		}
		if (parse_header_auth(authz, out, why))
			goto bad;
		if (!amz_date_header || take_field(out->amz_date, sizeof(out->amz_date), amz_date_header,
						   strlen(amz_date_header), DIGITS "TZ")) {
			*why = "a signed request needs an X-Amz-Date header";
			goto bad;
		}
	} else if (s3_query_has(raw_query, "X-Amz-Signature") || s3_query_has(raw_query, "X-Amz-Credential")) {
		if (parse_presigned(raw_query, out, why))
			goto bad;
	} else {
		return 1;
	}
	if (s3_amz_time(out->amz_date) < 0 || strncmp(out->amz_date, out->scope_date, 8)) {
		*why = "X-Amz-Date is not a date of the credential's scope (YYYYMMDDTHHMMSSZ)";
		goto bad;
	}
	if (query_twice(raw_query)) {
		/* its order is not signed (found by tests/fuzz/fuzz-s3) */
		*why = "a signed request's query names a parameter twice";
		goto bad;
	}
	if (!signs_host(out->signed_headers)) {
		/* as AWS asks: with --s3-domain the Host names the bucket, and what names the object is
		 * signed (found by tests/fuzz/fuzz-s3) */
		*why = "the signed headers must include host";
		goto bad;
	}
	return 0;
bad:
	s3_sig_release(out);
	return -1;
}

void s3_sig_release(struct s3_sig *s)
{
	free(s->signed_headers);
	s->signed_headers = NULL;
}

int64_t s3_amz_time(const char *d)
{
	struct tm tm;
	const char *end;

	if (!d || strlen(d) != 16)
		return -1;
	memset(&tm, 0, sizeof(tm));
	end = strptime(d, "%Y%m%dT%H%M%SZ", &tm);
	return end && !*end ? (int64_t)timegm(&tm) : -1;
}

/* SigV4's encoding of a query name or value: every byte but A-Z a-z 0-9 - _ . ~ as %XX. */
static void add_uri_encoded(struct buf *b, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    strchr("-_.~", *p))
			buf_addch(b, (char)*p);
		else
			buf_addf(b, "%%%02X", *p);
	}
}

struct qpair {
	char *k, *v;
};

static int qpair_cmp(const void *a, const void *b)
{
	const struct qpair *x = a, *y = b;
	int c = strcmp(x->k, y->k);

	return c ? c : strcmp(x->v, y->v);
}

/* The canonical query: every parameter but X-Amz-Signature, decoded, encoded again, sorted. */
static int canonical_query(struct buf *out, const char *q)
{
	struct qpair *v = NULL;
	size_t n = 0;
	int r = 0;

	for (const char *p = q; p && *p;) {
		size_t len = strcspn(p, "&"), kl = strcspn(p, "=&");
		char *k = httpd_unescape(p, kl, true),
		     *val = kl < len ? httpd_unescape(p + kl + 1, len - kl - 1, true) : xstrdup("");
		if (!k || !val) {
			free(k);
			free(val);
			r = -1;
			break;
		}
		if (len && strcmp(k, "X-Amz-Signature")) {
			struct buf ek, ev;
			buf_init(&ek);
			buf_init(&ev);
			add_uri_encoded(&ek, k);
			add_uri_encoded(&ev, val);
			v = xreallocarray(v, n + 1, sizeof(*v));
			v[n].k = buf_detach(&ek, NULL);
			v[n++].v = buf_detach(&ev, NULL);
		}
		free(k);
		free(val);
		p += len;
		if (*p)
			p++;
	}
	if (!r) {
		if (n)
			qsort(v, n, sizeof(*v), qpair_cmp);
		for (size_t i = 0; i < n; i++)
			buf_addf(out, "%s%s=%s", i ? "&" : "", v[i].k, v[i].v);
	}
	for (size_t i = 0; i < n; i++) {
		free(v[i].k);
		free(v[i].v);
	}
	free(v);
	return r;
}

/* A header's value as SigV4 canonicalises it: trimmed, each run of spaces one space. */
static void add_trimmed(struct buf *b, const char *v)
{
	bool space = false, any = false;

	for (; v && *v; v++) {
		if (*v == ' ' || *v == '\t') {
			space = any;
			continue;
		}
		if (space)
			buf_addch(b, ' ');
		space = false;
		any = true;
		buf_addch(b, *v);
	}
}

/* out = HMAC-SHA256(key, msg); out may be key */
static void hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned char md[32];
	unsigned int n = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), md, &n);
	memcpy(out, md, 32);
	OPENSSL_cleanse(md, sizeof(md));
}

int s3_sig_expected(const struct s3_sig *s, const char *secret, const char *method, const char *raw_path,
		    const char *raw_query, const char *(*header)(void *ud, const char *name), void *ud,
		    const char *payload_hash, char out[65])
{
	static const char empty_sha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	struct buf cr, sts;
	unsigned char md[32], k[32];
	char hexmd[65], *key0;
	char **names;

	buf_init(&cr);
	buf_addf(&cr, "%s\n%s\n", method, raw_path);
	if (canonical_query(&cr, raw_query)) {
		buf_release(&cr);
		return -1;
	}
	buf_addch(&cr, '\n');
	names = str_split(s->signed_headers, ";", NULL);
	for (char **p = names; *p; p++) {
		if (!**p)
			continue;
		buf_addf(&cr, "%s:", *p);
		add_trimmed(&cr, header(ud, *p));
		buf_addch(&cr, '\n');
	}
	str_split_free(names);
	buf_addf(&cr, "\n%s\n%s", s->signed_headers,
		 s->presigned   ? "UNSIGNED-PAYLOAD"
		 : payload_hash ? payload_hash
				: empty_sha256);
	EVP_Digest(cr.data, cr.len, md, NULL, EVP_sha256(), NULL);
	hex_encode(md, 32, hexmd);
	buf_release(&cr);

	buf_init(&sts);
	buf_addf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", s->amz_date, s->scope_date, s->region,
		 s->service, hexmd);
	key0 = xasprintf("AWS4%s", secret);
	hmac(key0, strlen(key0), s->scope_date, k);
	OPENSSL_cleanse(key0, strlen(key0));
	free(key0);
	hmac(k, 32, s->region, k);
	hmac(k, 32, s->service, k);
	hmac(k, 32, "aws4_request", k);
	hmac(k, 32, sts.data, md);
	OPENSSL_cleanse(k, sizeof(k));
	buf_release(&sts);
	hex_encode(md, 32, out);
	return 0;
}
