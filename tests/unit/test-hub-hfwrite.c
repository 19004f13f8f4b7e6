/*
 * test-hub-hfwrite.c - the Hub API's write side as clients send it (hub/hfwrite.h): a commit's NDJSON
 * lines as huggingface_hub writes them, and what is refused; a Git LFS batch request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hfwrite.h"
#include "test.h"

static int parse(const char *line, struct hf_commit_line *l)
{
	char *why = NULL;
	int r = hf_commit_line_parse(line, strlen(line), l, &why);

	CHECK(r ? why != NULL : why == NULL);
	free(why);
	return r;
}

TEST(commit_lines_as_clients_send_them)
{
	struct hf_commit_line l;

	CHECK_INT(parse("{\"key\": \"header\", \"value\": {\"summary\": \"\", \"description\": \"d\"}}\n", &l), 0);
	CHECK_INT(l.key, HF_COMMIT_HEADER);
	CHECK_STR(l.summary, "Upload files");
	CHECK_STR(l.description, "d");
	CHECK_STR(l.parent, "");
	hf_commit_line_release(&l);
	CHECK_INT(parse("{\"key\":\"file\",\"value\":{\"content\":\"eyJhIjogMX0K\",\"path\":\"config.json\","
			"\"encoding\":\"base64\"}}", &l), 0);
	CHECK_INT(l.key, HF_COMMIT_FILE);
	CHECK_STR(l.path, "config.json");
	CHECK_INT(l.content_len, 9);
	CHECK(!memcmp(l.content, "{\"a\": 1}\n", 9));
	hf_commit_line_release(&l);
	CHECK_INT(parse("{\"key\":\"file\",\"value\":{\"content\":\"QQ==\",\"path\":\"a\"}}", &l), 0);
	CHECK_INT(l.content_len, 1);
	hf_commit_line_release(&l);
	CHECK_INT(parse("{\"key\":\"lfsFile\",\"value\":{\"path\":\"w.bin\",\"algo\":\"sha256\",\"oid\":"
			"\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}}", &l), 0);
	CHECK_INT(l.key, HF_COMMIT_LFS_FILE);
	CHECK_INT(l.size, -1);
	CHECK_STR(l.xet_hash, "");
	hf_commit_line_release(&l);
	/* by the Xet hash of a file a shard made (routes-xet-write.c maps it to its sha256) */
	CHECK_INT(parse("{\"key\":\"lfsFile\",\"value\":{\"path\":\"w.bin\",\"size\":7,\"xetHash\":"
			"\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}}", &l), 0);
	CHECK_STR(l.xet_hash, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
	CHECK_STR(l.oid, "");
	CHECK_INT(l.size, 7);
	hf_commit_line_release(&l);
	CHECK_INT(parse("{\"key\":\"deletedFolder\",\"value\":{\"path\":\"logs//\"}}", &l), 0);
	CHECK_STR(l.path, "logs");
	hf_commit_line_release(&l);
}

TEST(commit_lines_refused)
{
	struct hf_commit_line l;

	/* base64 strictly: EVP_DecodeBlock alone would skip the spaces and count them as bytes */
	CHECK_INT(parse("{\"key\":\"file\",\"value\":{\"content\":\"QQ==    \",\"path\":\"a\"}}", &l), -EINVAL);
	CHECK_INT(parse("{\"key\":\"file\",\"value\":{\"content\":\"Q=Q=\",\"path\":\"a\"}}", &l), -EINVAL);
	CHECK_INT(
		parse("{\"key\":\"file\",\"value\":{\"content\":\"QQ==\",\"path\":\"a\",\"encoding\":\"utf-8\"}}", &l),
		-EINVAL);
	CHECK_INT(parse("{\"key\":\"header\",\"value\":{\"parentCommit\":\"main\"}}", &l), -EINVAL);
	CHECK_INT(parse("{\"key\":\"lfsFile\",\"value\":{\"path\":\"w\",\"oid\":\"ABC\"}}", &l), -EINVAL);
	CHECK_INT(parse("{\"key\":\"lfsFile\",\"value\":{\"path\":\"w\",\"algo\":\"sha1\",\"oid\":"
			"\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}}", &l), -EINVAL);
	CHECK_INT(parse("{\"key\":\"lfsFile\",\"value\":{\"path\":\"w\",\"xetHash\":\"9F86\"}}", &l), -EINVAL);
	CHECK_INT(parse("{\"key\":\"lfsFile\",\"value\":{\"path\":\"w\",\"algo\":\"sha256\",\"xetHash\":"
			"\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}}", &l), -EINVAL);
	CHECK_INT(parse("{\"key\":\"deletedFile\",\"value\":{}}", &l), -EINVAL);
	CHECK_INT(parse("{\"key\":\"copyFile\",\"value\":{\"path\":\"a\"}}", &l), -EINVAL);
	CHECK_INT(parse("[1, 2]", &l), -EINVAL);
	CHECK(l.path == NULL && l.content == NULL);
}

TEST(lfs_batch_requests)
{
	struct hf_lfs_batch b;
	const char *why = NULL;
	const char *ok = "{\"operation\":\"upload\",\"transfers\":[\"basic\",\"multipart\"],\"objects\":["
			 "{\"oid\":\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\",\"size\":4},"
			 "{\"oid\":\"nope\",\"size\":4},{\"size\":1}],\"hash_algo\":\"sha256\"}";

	CHECK_INT(hf_lfs_batch_parse(ok, strlen(ok), 10, &b, &why), 0);
	CHECK_STR(b.operation, "upload");
	CHECK(b.multipart);
	CHECK_INT(b.nobjects, 3);
	CHECK(b.objects[0].ok && b.objects[0].size == 4);
	CHECK(!b.objects[1].ok);
	CHECK_STR(b.objects[1].oid, "nope");
	CHECK(!b.objects[2].ok);
	CHECK_STR(b.objects[2].oid, "");
	hf_lfs_batch_release(&b);
	CHECK_INT(hf_lfs_batch_parse(ok, strlen(ok), 2, &b, &why), -E2BIG);
	{
		const char *none = "{\"objects\":[]}", *twice = "{\"operation\":\"upload\",\"operation\":\"download\","
								   "\"objects\":[]}";
		CHECK_INT(hf_lfs_batch_parse(none, strlen(none), 2, &b, &why), -EINVAL);
		CHECK_INT(hf_lfs_batch_parse(twice, strlen(twice), 2, &b, &why), -EINVAL); /* (a key twice) */
	}
}

int main(void)
{
	RUN(commit_lines_as_clients_send_them);
	RUN(commit_lines_refused);
	RUN(lfs_batch_requests);
	return test_done();
}
