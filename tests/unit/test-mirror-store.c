/*
 * test-mirror-store.c - the content-addressed store: only verified content becomes a blob, partial
 * files resume, duplicates are stored once, and names from outside cannot steer paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "mirror/store.h"
#include "test.h"

static char dir[] = "/tmp/hm-test-store-XXXXXX";
static struct mirror_store *store;

static void sha256_hex(const void *d, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned int len;

	EVP_Digest(d, n, md, &len, EVP_sha256(), NULL);
	hex_encode(md, 32, out);
}

static void git_oid_hex(const void *d, size_t n, char out[41])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[20];
	unsigned int len;
	char hdr[32];
	int h = snprintf(hdr, sizeof(hdr), "blob %zu", n);

	EVP_DigestInit_ex(ctx, EVP_sha1(), NULL);
	EVP_DigestUpdate(ctx, hdr, (size_t)h + 1);
	EVP_DigestUpdate(ctx, d, n);
	EVP_DigestFinal_ex(ctx, md, &len);
	EVP_MD_CTX_free(ctx);
	hex_encode(md, 20, out);
}

static int count_files(const char *sub)
{
	char *cmd = xasprintf("find %s/%s -type f | wc -l", dir, sub);
	FILE *p = popen(cmd, "r");
	int n = -1;

	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	free(cmd);
	return n;
}

static char *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b = xmalloc(1 << 20);

	*n = f ? fread(b, 1, 1 << 20, f) : 0;
	if (f)
		fclose(f);
	return b;
}

TEST(verified_content_becomes_a_blob)
{
	const char *content = "{\"architectures\": [\"LlamaForCausalLM\"]}\n";
	size_t len = strlen(content), n;
	char sha[65], oid[41], got[65];
	struct mirror_store_expect ex = { sha, oid, (int64_t)len };
	struct mirror_store_writer *w = NULL;
	char *path, *back;

	sha256_hex(content, len, sha);
	git_oid_hex(content, len, oid);
	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), 0);
	CHECK(!mirror_store_has(store, sha, -1));
	CHECK_INT(mirror_store_writer_write(w, content, 10), 0);
	CHECK_INT(mirror_store_writer_write(w, content + 10, len - 10), 0);
	CHECK_INT(mirror_store_writer_commit(&w, got), 0);
	CHECK(w == NULL);
	CHECK_STR(got, sha);
	CHECK(mirror_store_has(store, sha, (int64_t)len));
	CHECK(!mirror_store_has(store, sha, (int64_t)len + 1));
	path = mirror_store_blob_path(store, sha);
	back = read_file(path, &n);
	CHECK_INT(n, len);
	CHECK(!memcmp(back, content, len));
	CHECK_INT(count_files("tmp"), 0);
	free(back);
	free(path);
	{
		/* the git blob id of a stored blob, as another hub names the same content */
		char oid2[41];
		int64_t size = -1;
		CHECK_INT(mirror_store_git_oid(store, sha, oid2, &size), 0);
		CHECK_STR(oid2, oid);
		CHECK_INT(size, (int64_t)len);
		CHECK_INT(mirror_store_git_oid(store, "0000000000000000000000000000000000000000000000000000000000000000", oid2,
					       &size), -ENOENT);
	}
}

TEST(mismatch_never_enters_the_store)
{
	const char *good = "good bytes", *bad = "evil bytes";
	char sha[65], oid[41];
	struct mirror_store_expect ex = { sha, NULL, 10 };
	struct mirror_store_writer *w = NULL;
	int before = count_files("blobs");

	sha256_hex(good, 10, sha);
	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(mirror_store_writer_write(w, bad, 10), 0);
	CHECK_INT(mirror_store_writer_commit(&w, NULL), HM_ERR_HASH_MISMATCH);
	CHECK(!mirror_store_has(store, sha, -1));
	CHECK_INT(count_files("blobs"), before);
	CHECK_INT(count_files("tmp"), 0);

	/* Right sha256 would pass, but the git oid is checked too. */
	git_oid_hex(bad, 10, oid);
	ex.git_oid = oid;
	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(mirror_store_writer_write(w, good, 10), 0);
	CHECK_INT(mirror_store_writer_commit(&w, NULL), HM_ERR_HASH_MISMATCH);
	CHECK(!mirror_store_has(store, sha, -1));

	/* More bytes than promised is refused at write time. */
	ex.git_oid = NULL;
	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(mirror_store_writer_write(w, "0123456789x", 11), HM_ERR_SIZE_MISMATCH);
	mirror_store_writer_abort(&w, false);
	CHECK(w == NULL);
	CHECK_INT(count_files("tmp"), 0);
}

TEST(short_content_is_kept_and_resumed)
{
	char *big = xmalloc(300000);
	char sha[65];
	struct mirror_store_expect ex = { sha, NULL, 300000 };
	struct mirror_store_writer *w = NULL, *w2 = NULL;

	for (int i = 0; i < 300000; i++)
		big[i] = (char)(i * 7 + i / 1000);
	sha256_hex(big, 300000, sha);
	CHECK_INT(mirror_store_writer_new(store, &ex, true, &w), 0);
	CHECK_INT(mirror_store_writer_offset(w), 0);
	CHECK_INT(mirror_store_writer_write(w, big, 120000), 0);
	/* A second writer for the same content is refused while the first holds it. */
	CHECK_INT(mirror_store_writer_new(store, &ex, true, &w2), -EBUSY);
	/* Connection dropped: commit sees a short file, keeps it for resume. */
	CHECK_INT(mirror_store_writer_commit(&w, NULL), HM_ERR_SIZE_MISMATCH);
	CHECK_INT(count_files("tmp"), 1);
	CHECK(!mirror_store_has(store, sha, -1));

	CHECK_INT(mirror_store_writer_new(store, &ex, true, &w), 0);
	CHECK_INT(mirror_store_writer_offset(w), 120000);
	CHECK_INT(mirror_store_writer_write(w, big + 120000, 300000 - 120000), 0);
	CHECK_INT(mirror_store_writer_commit(&w, NULL), 0);
	CHECK(mirror_store_has(store, sha, 300000));
	CHECK_INT(count_files("tmp"), 0);

	/* A writer that does not resume starts from zero even if a partial file exists. */
	CHECK_INT(mirror_store_writer_new(store, &ex, true, &w), 0);
	CHECK_INT(mirror_store_writer_write(w, big, 1000), 0);
	mirror_store_writer_abort(&w, true);
	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(mirror_store_writer_offset(w), 0);
	mirror_store_writer_abort(&w, false);
	free(big);
}

TEST(same_content_is_stored_once)
{
	const char *c = "shared tokenizer";
	char sha[65];
	struct mirror_store_expect ex = { sha, NULL, 16 };
	struct mirror_store_writer *w = NULL;
	int before;

	sha256_hex(c, 16, sha);
	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(mirror_store_writer_write(w, c, 16), 0);
	CHECK_INT(mirror_store_writer_commit(&w, NULL), 0);
	before = count_files("blobs");
	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(mirror_store_writer_write(w, c, 16), 0);
	CHECK_INT(mirror_store_writer_commit(&w, NULL), 0);
	CHECK_INT(count_files("blobs"), before);
	CHECK_INT(count_files("tmp"), 0);
}

TEST(hostile_names_are_refused)
{
	struct mirror_store_expect ex = { "../../../../etc/passwd", NULL, 1 };
	struct mirror_store_writer *w = NULL;

	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), -EINVAL);
	CHECK(w == NULL);
	CHECK(mirror_store_blob_path(store, "../x") == NULL);
	CHECK(mirror_store_blob_path(store, "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855") == NULL);
	CHECK(!mirror_store_has(store, "..", -1));
	ex.sha256 = NULL;
	CHECK_INT(mirror_store_writer_new(store, &ex, false, &w), -EINVAL); /* nothing to verify against */
}

int main(void)
{
	int r;

	if (mirror_store_open(test_tmpdir(dir), &store))
		return 1;
	RUN(verified_content_becomes_a_blob);
	RUN(mismatch_never_enters_the_store);
	RUN(short_content_is_kept_and_resumed);
	RUN(same_content_is_stored_once);
	RUN(hostile_names_are_refused);
	mirror_store_free(&store);
	r = test_done();
	if (test_rmtree(dir))
		r = 1;
	return r;
}
