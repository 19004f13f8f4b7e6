/*
 * test-store-s3.c - what the S3 client (store/s3.h) decides without a network: the store's URL
 * (s3://BUCKET[/PREFIX]) and the configuration it refuses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/s3.h"
#include "test.h"

static void url_ok(const char *url, const char *bucket, const char *prefix)
{
	char *b = NULL, *p = NULL;
	const char *why = NULL;

	CHECK_INT(store_s3_url_parse(url, &b, &p, &why), 0);
	CHECK_STR(b, bucket);
	CHECK_STR(p, prefix);
	free(b);
	free(p);
}

static void url_bad(const char *url)
{
	char *b = NULL, *p = NULL;
	const char *why = NULL;

	CHECK_INT(store_s3_url_parse(url, &b, &p, &why), -EINVAL);
	CHECK(why && *why);
	CHECK(!b && !p);
}

TEST(urls)
{
	url_ok("s3://models", "models", "");
	url_ok("s3://models/", "models", "");
	url_ok("s3://my.models-1/hubmirror", "my.models-1", "hubmirror");
	url_ok("s3://models/a/b/", "models", "a/b");
	url_bad(NULL);
	url_bad("models");
	url_bad("https://models/x");
	url_bad("s3://");
	url_bad("s3://ab");
	url_bad("s3://Models");
	url_bad("s3://models_x");
	url_bad("s3://models/a//b");
	url_bad("s3://models/../x");
	url_bad("s3://models/a/../x");
}

TEST(config_refused)
{
	struct store_s3_config c = { .bucket = "models", .access_key = "AK", .secret_key = "SK" };
	struct store_s3 *s = NULL;
	const char *why = NULL;

	CHECK_INT(store_s3_new(&c, &s, &why), 0);
	CHECK(s != NULL);
	store_s3_free(&s);
	CHECK(s == NULL);
	store_s3_free(&s);
	c.secret_key = "";
	CHECK_INT(store_s3_new(&c, &s, &why), -EINVAL);
	c.secret_key = "SK";
	c.endpoint = "ftp://x";
	CHECK_INT(store_s3_new(&c, &s, &why), -EINVAL);
	c.endpoint = "http://127.0.0.1:9000/";
	c.part_size = 1 << 20;
	CHECK_INT(store_s3_new(&c, &s, &why), -EINVAL);
	CHECK(s == NULL);
}

int main(void)
{
	RUN(urls);
	RUN(config_refused);
	return test_done();
}
