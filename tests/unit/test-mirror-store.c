/*
 * test-mirror-store.c - the content-addressed store: only verified content becomes a blob, partial
 * files resume, duplicates are stored once, and names from outside cannot steer paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "hub/xet/xet.h"
#include "store/store-xet.h"
#include "store/store.h"
#include "test.h"

static char dir[] = "/tmp/hm-test-store-XXXXXX";
static struct store *store;

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
	struct store_expect ex = { sha, oid, (int64_t)len };
	struct store_writer *w = NULL;
	char *path, *back;

	sha256_hex(content, len, sha);
	git_oid_hex(content, len, oid);
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK(!store_has(store, sha, -1));
	CHECK_INT(store_writer_write(w, content, 10), 0);
	CHECK_INT(store_writer_write(w, content + 10, len - 10), 0);
	CHECK_INT(store_writer_commit(&w, got), 0);
	CHECK(w == NULL);
	CHECK_STR(got, sha);
	CHECK(store_has(store, sha, (int64_t)len));
	CHECK(!store_has(store, sha, (int64_t)len + 1));
	path = store_blob_path(store, sha);
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
		CHECK_INT(store_git_oid(store, sha, oid2, &size), 0);
		CHECK_STR(oid2, oid);
		CHECK_INT(size, (int64_t)len);
		CHECK_INT(store_git_oid(store,
					       "0000000000000000000000000000000000000000000000000000000000000000", oid2,
					       &size),
			  -ENOENT);
	}
}

/* store_read: a range of a stored content, all of it or an error; none of one the store lacks, nor
 * past a content's end; its errors in words. store_size: its size. */
TEST(a_range_is_read_whole_or_not_at_all)
{
	const char *content = "0123456789abcdefghij";
	size_t len = strlen(content);
	char sha[65], buf[32], *err = NULL;
	struct store_expect ex = { sha, NULL, (int64_t)len };
	struct store_writer *w = NULL;

	sha256_hex(content, len, sha);
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_write(w, content, len), 0);
	CHECK_INT(store_writer_commit(&w, NULL), 0);
	memset(buf, 0, sizeof(buf));
	CHECK_INT(store_read(store, sha, 0, buf, len, &err), 0);
	CHECK(!memcmp(buf, content, len));
	CHECK_INT(store_read(store, sha, 13, buf, 7, &err), 0);
	CHECK(!memcmp(buf, "defghij", 7));
	CHECK(err == NULL);
	CHECK_INT(store_read(store, sha, 15, buf, 6, &err), HM_ERR_SIZE_MISMATCH);
	CHECK(err && strstr(err, sha));
	FREE_AND_NULL(&err);
	CHECK_INT(store_read(store, "0000000000000000000000000000000000000000000000000000000000000000", 0, buf, 1,
			     &err),
		  -ENOENT);
	CHECK_INT(store_read(store, "../etc/passwd", 0, buf, 1, NULL), -EINVAL);
	CHECK_INT(store_read(store, sha, -1, buf, 1, NULL), -EINVAL);
	free(err);
	/* store_size: the size alone */
	{
		int64_t size = -1;
		CHECK_INT(store_size(store, sha, &size), 0);
		CHECK_INT(size, (int64_t)len);
		size = -7;
		CHECK_INT(store_size(store, "0000000000000000000000000000000000000000000000000000000000000000",
				     &size),
			  -ENOENT);
		CHECK_INT(store_size(store, "../etc/passwd", &size), -EINVAL);
		CHECK_INT(size, -7);
	}
}

/* store_slurp: a small content whole, NUL after it; none bigger than the caller's max, none the store
 * lacks; a copy on disk that is not the content (damaged after it was stored) is an error naming it,
 * its bytes never given. */
TEST(a_small_content_is_read_whole_and_checked)
{
	const char *content = "{\"architectures\": [\"X\"]}\n";
	size_t len = strlen(content), n = 7;
	char sha[65], *buf = NULL, *err = NULL, *path;
	struct store_expect ex = { sha, NULL, (int64_t)len };
	struct store_writer *w = NULL;
	FILE *f;

	sha256_hex(content, len, sha);
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_write(w, content, len), 0);
	CHECK_INT(store_writer_commit(&w, NULL), 0);
	CHECK_INT(store_slurp(store, sha, len, false, &buf, &n, &err), 0);
	CHECK_INT(n, len);
	CHECK(buf && !memcmp(buf, content, len) && buf[len] == '\0');
	CHECK(err == NULL);
	FREE_AND_NULL(&buf);
	CHECK_INT(store_slurp(store, sha, len, true, &buf, &n, NULL), 0);   /* (no bucket: local_only reads it) */
	FREE_AND_NULL(&buf);
	CHECK_INT(store_slurp(store, sha, len - 1, false, &buf, &n, &err), -EFBIG);
	CHECK(buf == NULL && n == 0 && err && strstr(err, sha));
	FREE_AND_NULL(&err);
	CHECK_INT(store_slurp(store, "0000000000000000000000000000000000000000000000000000000000000000", 64, false,
			      &buf, &n, NULL),
		  -ENOENT);
	CHECK_INT(store_slurp(store, "../etc/passwd", 64, false, &buf, &n, NULL), -EINVAL);
	/* the same size, other bytes */
	path = store_cache_path(store, sha);
	CHECK(chmod(path, 0644) == 0);
	f = fopen(path, "r+");
	CHECK(f && fputc('[', f) != EOF && fclose(f) == 0);
	CHECK_INT(store_slurp(store, sha, len, false, &buf, &n, &err), HM_ERR_HASH_MISMATCH);
	CHECK(buf == NULL && err && strstr(err, sha) && strstr(err, "damaged"));
	free(err);
	unlink(path);
	free(path);
}

TEST(mismatch_never_enters_the_store)
{
	const char *good = "good bytes", *bad = "evil bytes";
	char sha[65], oid[41];
	struct store_expect ex = { sha, NULL, 10 };
	struct store_writer *w = NULL;
	int before = count_files("blobs");

	sha256_hex(good, 10, sha);
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_write(w, bad, 10), 0);
	CHECK_INT(store_writer_commit(&w, NULL), HM_ERR_HASH_MISMATCH);
	CHECK(!store_has(store, sha, -1));
	CHECK_INT(count_files("blobs"), before);
	CHECK_INT(count_files("tmp"), 0);

	/* Right sha256 would pass, but the git oid is checked too. */
	git_oid_hex(bad, 10, oid);
	ex.git_oid = oid;
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_write(w, good, 10), 0);
	CHECK_INT(store_writer_commit(&w, NULL), HM_ERR_HASH_MISMATCH);
	CHECK(!store_has(store, sha, -1));

	/* More bytes than promised is refused at write time. */
	ex.git_oid = NULL;
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_write(w, "0123456789x", 11), HM_ERR_SIZE_MISMATCH);
	store_writer_abort(&w, false);
	CHECK(w == NULL);
	CHECK_INT(count_files("tmp"), 0);
}

TEST(short_content_is_kept_and_resumed)
{
	char *big = xmalloc(300000);
	char sha[65];
	struct store_expect ex = { sha, NULL, 300000 };
	struct store_writer *w = NULL, *w2 = NULL;

	for (int i = 0; i < 300000; i++)
		big[i] = (char)(i * 7 + i / 1000);
	sha256_hex(big, 300000, sha);
	CHECK_INT(store_writer_new(store, &ex, true, &w), 0);
	CHECK_INT(store_writer_offset(w), 0);
	CHECK_INT(store_writer_write(w, big, 120000), 0);
	/* A second writer for the same content is refused while the first holds it. */
	CHECK_INT(store_writer_new(store, &ex, true, &w2), -EBUSY);
	/* Connection dropped: commit sees a short file, keeps it for resume. */
	CHECK_INT(store_writer_commit(&w, NULL), HM_ERR_SIZE_MISMATCH);
	CHECK_INT(count_files("tmp"), 1);
	CHECK(!store_has(store, sha, -1));

	CHECK_INT(store_writer_new(store, &ex, true, &w), 0);
	CHECK_INT(store_writer_offset(w), 120000);
	CHECK_INT(store_writer_write(w, big + 120000, 300000 - 120000), 0);
	CHECK_INT(store_writer_commit(&w, NULL), 0);
	CHECK(store_has(store, sha, 300000));
	CHECK_INT(count_files("tmp"), 0);

	/* A writer that does not resume starts from zero even if a partial file exists. */
	CHECK_INT(store_writer_new(store, &ex, true, &w), 0);
	CHECK_INT(store_writer_write(w, big, 1000), 0);
	store_writer_abort(&w, true);
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_offset(w), 0);
	store_writer_abort(&w, false);
	free(big);
}

TEST(same_content_is_stored_once)
{
	const char *c = "shared tokenizer";
	char sha[65];
	struct store_expect ex = { sha, NULL, 16 };
	struct store_writer *w = NULL;
	int before;

	sha256_hex(c, 16, sha);
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_write(w, c, 16), 0);
	CHECK_INT(store_writer_commit(&w, NULL), 0);
	before = count_files("blobs");
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_write(w, c, 16), 0);
	CHECK_INT(store_writer_commit(&w, NULL), 0);
	CHECK_INT(count_files("blobs"), before);
	CHECK_INT(count_files("tmp"), 0);
}

/* A writer that opened the shared partial file by its name and got its lock only after the writer
 * before published it must not write the blob: it finds another file under the name. */
TEST(a_late_writer_never_writes_a_published_blob)
{
	const char *c = "published once, and read-only", *junk = "JUNK JUNK JUNK JUNK JUNK JUNK";
	size_t n = strlen(c);
	char sha[65], *part, *blob, *back;
	struct store_expect ex = { sha, NULL, (int64_t)n };
	struct store_writer *w = NULL, *w2 = NULL;
	struct stat st;
	size_t got;
	int fd;

	sha256_hex(c, n, sha);
	part = store_part_path(store, sha);
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	fd = open(part, O_RDWR); /* what a careless writer would hold */
	CHECK(fd >= 0);
	CHECK_INT(store_writer_new(store, &ex, true, &w2), -EBUSY); /* one writer per content */
	CHECK_INT(store_writer_write(w, c, n), 0);
	CHECK_INT(store_writer_commit(&w, NULL), 0);
	blob = store_blob_path(store, sha);
	CHECK(stat(blob, &st) == 0 && (st.st_mode & 0777) == 0400);
	/* the next writer gets a new partial file, never the published one */
	CHECK_INT(store_writer_new(store, &ex, false, &w2), 0);
	CHECK_INT(store_writer_write(w2, junk, n), 0);
	CHECK_INT(store_writer_commit(&w2, NULL), HM_ERR_HASH_MISMATCH);
	back = read_file(blob, &got);
	CHECK(got == n && !memcmp(back, c, n));
	free(back);
	if (fd >= 0)
		close(fd);
	free(part);
	free(blob);
}

/* Users' uploads: a private writer takes no lock another writer of the content needs. */
TEST(a_private_writer_holds_no_one_up)
{
	const char *c = "an upload of the same content";
	size_t n = strlen(c);
	char sha[65];
	struct store_expect ex = { sha, NULL, (int64_t)n };
	struct store_writer *up = NULL, *sync = NULL;

	sha256_hex(c, n, sha);
	CHECK_INT(store_writer_new_private(store, &ex, &up), 0);
	CHECK_INT(store_writer_write(up, c, 3), 0);
	CHECK_INT(store_writer_new(store, &ex, true, &sync), 0);
	CHECK_INT(store_writer_write(sync, c, n), 0);
	CHECK_INT(store_writer_commit(&sync, NULL), 0);
	CHECK(store_has(store, sha, (int64_t)n));
	CHECK_INT(store_writer_write(up, c + 3, n - 3), 0);
	CHECK_INT(store_writer_commit(&up, NULL), 0); /* (replaces it with its own verified copy) */
	CHECK_INT(count_files("tmp"), 0);
	CHECK_INT(store_writer_new_private(store, &ex, &up), 0);
	store_writer_abort(&up, true); /* a private partial file is never kept for a resume */
	CHECK_INT(count_files("tmp"), 0);
}

static void put_part(const char *oid, const char *id, int64_t off, const void *d, size_t n)
{
	int fd = store_parts_open(store, oid, id);

	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(pwrite(fd, d, n, off) == (ssize_t)n);
		close(fd);
	}
}

/* An upload in parts gets its Xet identity as the writer leaves one: computed in the completion's read,
 * beside the blob (docs/protocols/xet.md). */
TEST(parts_leave_an_identity)
{
	size_t n = 300000, half = 150000;
	unsigned char *c = xmalloc(n);
	char sha[65], want[XET_HEX_LEN + 1], got[XET_HEX_LEN + 1] = "", *path;
	struct store_expect ex = { sha, NULL, (int64_t)n };
	struct xet_identity *id = xet_identity_new();
	struct stat st;
	int missing = -1;

	for (size_t i = 0; i < n; i++) /* (not all alike: several chunks) */
		c[i] = (unsigned char)((i * 2654435761u) >> 13);
	sha256_hex((const char *)c, n, sha);
	xet_identity_update(id, c, n);
	xet_identity_finish(id);
	xet_hash_hex(xet_identity_file_hash(id), want);
	put_part(sha, "cccccccccccccccc", 0, (const char *)c, half);
	put_part(sha, "cccccccccccccccc", half, (const char *)c + half, n - half);
	CHECK_INT(store_parts_done(store, sha, "cccccccccccccccc", 1), 0);
	CHECK_INT(store_parts_done(store, sha, "cccccccccccccccc", 2), 0);
	CHECK_INT(store_parts_commit(store, &ex, "cccccccccccccccc", 2, &missing), 0);
	path = store_xet_path(store, sha);
	CHECK(path && stat(path, &st) == 0 && st.st_size > 0);
	CHECK_INT(store_xet_file_hash(store, sha, got), 0);
	CHECK(!strcmp(got, want));
	free(path);
	xet_identity_free(&id);
	free(c);
}

TEST(parts_are_an_upload_of_their_own)
{
	/* small parts here: the store knows no chunk size, the caller places each part */
	const char *c = "first part|second part";
	size_t n = strlen(c);
	char sha[65], *blob;
	struct store_expect ex = { sha, NULL, (int64_t)n };
	int missing = -1, fd;

	sha256_hex(c, n, sha);
	put_part(sha, "aaaaaaaaaaaaaaaa", 0, c, 11);
	CHECK_INT(store_parts_done(store, sha, "aaaaaaaaaaaaaaaa", 1), 0);
	/* another upload's completion finds no parts of its own */
	CHECK_INT(store_parts_commit(store, &ex, "bbbbbbbbbbbbbbbb", 2, &missing), -ENOENT);
	/* a part missing: named, nothing changed */
	CHECK_INT(store_parts_commit(store, &ex, "aaaaaaaaaaaaaaaa", 2, &missing), HM_ERR_SIZE_MISMATCH);
	CHECK_INT(missing, 2);
	/* a part still being written: 409's -EBUSY, nothing changed */
	fd = store_parts_open(store, sha, "aaaaaaaaaaaaaaaa");
	CHECK(fd >= 0);
	CHECK(pwrite(fd, c + 11, n - 11, 11) == (ssize_t)(n - 11));
	CHECK_INT(store_parts_done(store, sha, "aaaaaaaaaaaaaaaa", 2), 0);
	CHECK_INT(store_parts_commit(store, &ex, "aaaaaaaaaaaaaaaa", 2, &missing), -EBUSY);
	CHECK(!store_has(store, sha, -1));
	close(fd);
	CHECK_INT(store_parts_commit(store, &ex, "aaaaaaaaaaaaaaaa", 2, &missing), 0);
	CHECK(store_has(store, sha, (int64_t)n));
	CHECK_INT(count_files("tmp"), 0);
	/* a part sent after the completion goes to a new file, never the blob; dropped with the upload */
	blob = store_blob_path(store, sha);
	put_part(sha, "aaaaaaaaaaaaaaaa", 0, "XXXXXXXXXXX", 11);
	{
		size_t got;
		char *back = read_file(blob, &got);
		CHECK(got == n && !memcmp(back, c, n));
		free(back);
	}
	store_parts_drop(store, sha, "aaaaaaaaaaaaaaaa");
	CHECK_INT(count_files("tmp"), 0);
	free(blob);
	CHECK_INT(store_parts_open(store, sha, "../../x"), -EINVAL);
}

static int want_answer;
static int wanted(void *ud, const char *sha256)
{
	(void)ud;
	(void)sha256;
	return want_answer;
}

TEST(reap_puts_back_what_a_writer_claimed)
{
	const char *c = "reap me, or not";
	size_t n = strlen(c);
	char sha[65];
	struct store_expect ex = { sha, NULL, (int64_t)n };
	struct store_writer *w = NULL;
	size_t back = 0;

	sha256_hex(c, n, sha);
	CHECK_INT(store_writer_new(store, &ex, false, &w), 0);
	CHECK_INT(store_writer_write(w, c, n), 0);
	CHECK_INT(store_writer_commit(&w, NULL), 0);
	want_answer = 1;
	CHECK_INT(store_reap(store, sha, wanted, NULL), 1);
	CHECK(store_has(store, sha, (int64_t)n));
	CHECK_INT(count_files("trash"), 0);
	want_answer = 0;
	CHECK_INT(store_reap(store, sha, wanted, NULL), 0);
	CHECK(!store_has(store, sha, -1));
	CHECK_INT(store_reap(store, sha, wanted, NULL), -ENOENT);
	CHECK_INT(store_trash_sweep(store, wanted, NULL, &back), 0);
	CHECK_INT(back, 0);
}

TEST(hostile_names_are_refused)
{
	struct store_expect ex = { "../../../../etc/passwd", NULL, 1 };
	struct store_writer *w = NULL;

	CHECK_INT(store_writer_new(store, &ex, false, &w), -EINVAL);
	CHECK(w == NULL);
	CHECK(store_blob_path(store, "../x") == NULL);
	CHECK(store_blob_path(store, "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855") ==
	      NULL);
	CHECK(!store_has(store, "..", -1));
	ex.sha256 = NULL;
	CHECK_INT(store_writer_new(store, &ex, false, &w), -EINVAL); /* nothing to verify against */
}

int main(void)
{
	int r;

	if (store_open(test_tmpdir(dir), &store))
		return 1;
	RUN(verified_content_becomes_a_blob);
	RUN(a_range_is_read_whole_or_not_at_all);
	RUN(a_small_content_is_read_whole_and_checked);
	RUN(mismatch_never_enters_the_store);
	RUN(short_content_is_kept_and_resumed);
	RUN(same_content_is_stored_once);
	RUN(a_late_writer_never_writes_a_published_blob);
	RUN(a_private_writer_holds_no_one_up);
	RUN(parts_are_an_upload_of_their_own);
	RUN(parts_leave_an_identity);
	RUN(reap_puts_back_what_a_writer_claimed);
	RUN(hostile_names_are_refused);
	store_free(&store);
	r = test_done();
	if (test_rmtree(dir))
		r = 1;
	return r;
}
