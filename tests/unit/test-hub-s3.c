/*
 * test-hub-s3.c - the S3 grammar (hub/s3.h): paths, buckets, keys, queries, dates, and AWS Signature
 * Version 4 checked against the examples AWS publishes for S3 (a GET with a signed header, and a
 * presigned URL), which a wrong canonical request, key derivation or encoding cannot reproduce.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/xmalloc.h"
#include "hub/s3.h"
#include "test.h"

static const char *const aws_secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

struct hdrs {
	const char *const *kv; /* name, value, ..., NULL */
};

static const char *get_header(void *ud, const char *name)
{
	struct hdrs *h = ud;

	for (size_t i = 0; h->kv[i]; i += 2)
		if (!strcasecmp(h->kv[i], name))
			return h->kv[i + 1];
	return NULL;
}

TEST(paths_buckets_keys)
{
	char *b, *k;
	const char *hub, *type;
	struct s3_key key;

	CHECK_INT(s3_path_parse("/", &b, &k), 0);
	CHECK(!b && !k);
	CHECK_INT(s3_path_parse("/hf-datasets/", &b, &k), 0);
	CHECK_STR(b, "hf-datasets");
	CHECK(!k);
	free(b);
	CHECK_INT(s3_path_parse("/hf/Qwen/Q%20x/refs%252Fpr%252F1/a%2Bb.json", &b, &k), 0);
	CHECK_STR(b, "hf");
	CHECK_STR(k, "Qwen/Q x/refs%2Fpr%2F1/a+b.json");
	CHECK_INT(s3_key_parse(k, &key), 0);
	CHECK_STR(key.name, "Qwen/Q x");
	CHECK_STR(key.rev, "refs/pr/1");
	CHECK_STR(key.path, "a+b.json");
	s3_key_release(&key);
	free(b);
	free(k);
	CHECK_INT(s3_path_parse("/hf/a%00b", &b, &k), -1);
	CHECK_INT(s3_path_parse("hf", &b, &k), -1);

	CHECK_INT(s3_key_parse("Qwen/X/main/", &key), 0);
	CHECK_STR(key.path, "");
	s3_key_release(&key);
	CHECK_INT(s3_key_parse("Qwen/X/main", &key), -1);
	CHECK_INT(s3_key_parse("Qwen//main/x", &key), -1);
	CHECK_INT(s3_key_parse("/X/main/x", &key), -1);
	CHECK_INT(s3_key_parse("Qwen/X//x", &key), -1);
	{
		char *seg = s3_rev_segment("refs/pr/1%");
		CHECK_STR(seg, "refs%2Fpr%2F1%25");
		free(seg);
	}

	CHECK_INT(s3_bucket("ms-datasets", &hub, &type), 0);
	CHECK_STR(hub, "ms");
	CHECK_STR(type, "dataset");
	CHECK_INT(s3_bucket("hf-spaces", &hub, &type), -1);
	CHECK_STR(s3_bucket_name("hf", "model"), "hf");
}

TEST(queries_and_dates)
{
	char *v, d[30], iso[25];

	CHECK(s3_query_has("list-type=2&location&prefix=a", "location"));
	CHECK(!s3_query_has("list-type=2&locations", "location"));
	v = s3_query_get("prefix=Qwen%2FX%2F&delimiter=%2F", "prefix");
	CHECK_STR(v, "Qwen/X/");
	free(v);
	v = s3_query_get("location&x=1", "location");
	CHECK_STR(v, "");
	free(v);
	CHECK(!s3_query_get("a=1", "b"));
	s3_http_date(1369353600, d);
	CHECK_STR(d, "Fri, 24 May 2013 00:00:00 GMT");
	s3_iso_date(1369353600, iso);
	CHECK_STR(iso, "2013-05-24T00:00:00.000Z");
	CHECK_INT(s3_parse_http_date("Fri, 24 May 2013 00:00:00 GMT"), 1369353600);
	CHECK_INT(s3_parse_http_date("Friday, 24-May-13 00:00:00 GMT"), 1369353600);
	CHECK_INT(s3_parse_http_date("yesterday"), -1);
	CHECK_INT(s3_amz_time("20130524T000000Z"), 1369353600);
	CHECK_INT(s3_amz_time("20130524T000000"), -1);
	/* an ETag in a multipart object's shape, never an MD5's */
	{
		char etag[80];
		s3_etag("2e8fee90afb8d255a457aa4d8ef05aa5315f32f233cd8024b5d46c463da4b6fe", etag);
		CHECK_STR(etag, "\"2e8fee90afb8d255a457aa4d8ef05aa5315f32f233cd8024b5d46c463da4b6fe-1\"");
	}
}

/* AWS's example: GET /test.txt with a Range, signed in the Authorization header. */
TEST(sigv4_header_example)
{
	static const char *const kv[] = { "Host", "examplebucket.s3.amazonaws.com", "Range", "bytes=0-9",
					  "x-amz-content-sha256",
					  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
					  "x-amz-date", "20130524T000000Z", NULL };
	struct hdrs h = { kv };
	const char *authz = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
			    "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
			    "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
	struct s3_sig s;
	const char *why;
	char sig[65];

	CHECK_INT(s3_sig_parse(authz, NULL, "20130524T000000Z", &s, &why), 0);
	CHECK_STR(s.access_key, "AKIAIOSFODNN7EXAMPLE");
	CHECK_STR(s.region, "us-east-1");
	CHECK_STR(s.service, "s3");
	CHECK(!s.presigned);
	CHECK_INT(s3_sig_expected(&s, aws_secret, "GET", "/test.txt", NULL, get_header, &h,
				  get_header(&h, "x-amz-content-sha256"), sig),
		  0);
	CHECK_STR(sig, s.signature);
	/* one byte of the secret, the path, a signed header or the method changes it */
	CHECK_INT(s3_sig_expected(&s, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz", "GET", "/test.txt", NULL, get_header,
				  &h, kv[5], sig),
		  0);
	CHECK(strcmp(sig, s.signature));
	CHECK_INT(s3_sig_expected(&s, aws_secret, "GET", "/test.tx", NULL, get_header, &h, kv[5], sig), 0);
	CHECK(strcmp(sig, s.signature));
	CHECK_INT(s3_sig_expected(&s, aws_secret, "HEAD", "/test.txt", NULL, get_header, &h, kv[5], sig), 0);
	CHECK(strcmp(sig, s.signature));
	{
		static const char *const kv2[] = { "Host", "examplebucket.s3.amazonaws.com", "Range", "bytes=0-10",
						   "x-amz-date", "20130524T000000Z", NULL };
		struct hdrs h2 = { kv2 };
		CHECK_INT(s3_sig_expected(&s, aws_secret, "GET", "/test.txt", NULL, get_header, &h2, kv[5], sig), 0);
		CHECK(strcmp(sig, s.signature));
	}
	s3_sig_release(&s);

	/* what the parser refuses, and what is no signature at all */
	CHECK_INT(s3_sig_parse("AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=", NULL, NULL, &s, &why), -1);
	CHECK(why != NULL);
	CHECK_INT(s3_sig_parse("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
			       "SignedHeaders=host,Signature=f0e8", NULL, "20130524T000000Z", &s, &why), -1);
	CHECK_INT(s3_sig_parse(authz, NULL, NULL, &s, &why), -1);          /* no X-Amz-Date */
	CHECK_INT(s3_sig_parse(authz, NULL, "20130525T000000Z", &s, &why), -1); /* not the scope's day */
	CHECK_INT(s3_sig_parse(NULL, "list-type=2", NULL, &s, &why), 1);
	CHECK_INT(s3_sig_parse("", NULL, NULL, &s, &why), 1);
}

/* AWS's example of a presigned URL for GET /test.txt, valid for 86400 s. */
TEST(sigv4_presigned_example)
{
	static const char *const kv[] = { "Host", "examplebucket.s3.amazonaws.com", NULL };
	struct hdrs h = { kv };
	const char *q = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%"
			"2Fs3%2Faws4_request"
			"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
			"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
	struct s3_sig s;
	const char *why;
	char sig[65], *q2;

	CHECK_INT(s3_sig_parse(NULL, q, NULL, &s, &why), 0);
	CHECK(s.presigned);
	CHECK_INT(s.expires, 86400);
	CHECK_STR(s.amz_date, "20130524T000000Z");
	CHECK_INT(s3_sig_expected(&s, aws_secret, "GET", "/test.txt", q, get_header, &h, NULL, sig), 0);
	CHECK_STR(sig, s.signature);
	/* a parameter added after signing changes what is signed */
	q2 = xasprintf("%s&x-id=GetObject", q);
	CHECK_INT(s3_sig_expected(&s, aws_secret, "GET", "/test.txt", q2, get_header, &h, NULL, sig), 0);
	CHECK(strcmp(sig, s.signature));
	free(q2);
	s3_sig_release(&s);
	CHECK_INT(s3_sig_parse(NULL, "X-Amz-Signature=00&X-Amz-Expires=99999999", NULL, &s, &why), -1);
}

/* Found by tests/fuzz/fuzz-s3: a signature whose signed headers leave out host left the Host header
 * free, and with --s3-domain the Host names the bucket: a presigned URL for hf.DOMAIN/KEY read
 * hf-datasets.DOMAIN/KEY as well. AWS asks for host among the signed headers; so does the mirror. */
TEST(host_must_be_signed)
{
	struct s3_sig s;
	const char *why = NULL;

	const char *cred = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,";
	const char *sig = ",Signature=f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8f0e8";
	char *a;

	CHECK_INT(s3_sig_parse(NULL, "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524"
				     "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
				     "&X-Amz-SignedHeaders=x-amz-date&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835"
				     "f995330da4c265957d157751f604d404", NULL, &s, &why), -1);
	CHECK_STR(why, "the signed headers must include host");
	a = xasprintf("%sSignedHeaders=hostx;x-amz-date%s", cred, sig);
	CHECK_INT(s3_sig_parse(a, NULL, "20130524T000000Z", &s, &why), -1);
	CHECK_STR(why, "the signed headers must include host");
	free(a);
	a = xasprintf("%sSignedHeaders=a;host;x-amz-date%s", cred, sig);
	CHECK_INT(s3_sig_parse(a, NULL, "20130524T000000Z", &s, &why), 0);
	s3_sig_release(&s);
	free(a);
}

/* Found by tests/fuzz/fuzz-s3: the canonical request decodes the query's names and sorts the
 * parameters, so "%70refix=a" is signed as prefix=a, and the order of two parameters of one name is
 * not signed at all; the mirror read the raw names and the first of two. Now it reads what is
 * signed: names decoded, and a signed request that names a parameter twice is refused. */
TEST(query_means_what_is_signed)
{
	static const char *const kv[] = { "Host", "examplebucket.s3.amazonaws.com", NULL };
	struct hdrs h = { kv };
	const char *base = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2F"
			   "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-SignedHeaders=host"
			   "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
	char *q, *v, a[65], b[65];
	struct s3_sig s;
	const char *why = NULL;

	v = s3_query_get("list-type=2&%70refix=acme%2F", "prefix");
	CHECK_STR(v, "acme/");
	free(v);
	CHECK(s3_query_has("%6Cocation", "location"));
	/* two orders, one signature: refused */
	q = xasprintf("%s&X-Amz-Expires=60&X-Amz-Expires=604800", base);
	CHECK_INT(s3_sig_parse(NULL, q, NULL, &s, &why), -1);
	CHECK_STR(why, "a signed request's query names a parameter twice");
	free(q);
	q = xasprintf("%s&X-Amz-Expires=60&prefix=a&%%70refix=b", base);
	CHECK_INT(s3_sig_parse(NULL, q, NULL, &s, &why), -1);
	free(q);
	/* the canonical request does not see the order: what made the two readings one signature */
	q = xasprintf("%s&X-Amz-Expires=60", base);
	CHECK_INT(s3_sig_parse(NULL, q, NULL, &s, &why), 0);
	CHECK_INT(s3_sig_expected(&s, aws_secret, "GET", "/test.txt", "prefix=a&prefix=b", get_header, &h, NULL, a), 0);
	CHECK_INT(s3_sig_expected(&s, aws_secret, "GET", "/test.txt", "prefix=b&prefix=a", get_header, &h, NULL, b), 0);
	CHECK_STR(a, b);
	s3_sig_release(&s);
	free(q);
}

int main(void)
{
	RUN(paths_buckets_keys);
	RUN(queries_and_dates);
	RUN(sigv4_header_example);
	RUN(sigv4_presigned_example);
	RUN(host_must_be_signed);
	RUN(query_means_what_is_signed);
	return test_done();
}
