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
	CHECK_INT(s3_sig_expected(&s, aws_secret, "GET", "/test.txt", NULL, get_header, &h, get_header(&h, "x-amz-content-sha256"), sig), 0);
	CHECK_STR(sig, s.signature);
	/* one byte of the secret, the path, a signed header or the method changes it */
	CHECK_INT(s3_sig_expected(&s, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz", "GET", "/test.txt", NULL, get_header, &h, kv[5], sig), 0);
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
	const char *q = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
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

int main(void)
{
	RUN(paths_buckets_keys);
	RUN(queries_and_dates);
	RUN(sigv4_header_example);
	RUN(sigv4_presigned_example);
	return test_done();
}
