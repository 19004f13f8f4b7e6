/*
 * test-hub-oci.c - a file as an OCI tar layer (hub/oci.h): the header is a ustar header of the file's
 * path, size, mode 0644, owner 0 and mtime 0, the same every time; a pax record only for what ustar
 * cannot hold (a long name, a size past 8 GiB, a non-ASCII name as its bytes); the tail pads to the
 * block and ends the archive; the digest is the sha256 of header, file and tail, the file read from disk
 * or through a reader (by ranges) alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/hex.h"
#include "hub/oci.h"
#include "test.h"

/* The octal field at off of width n in a ustar header. */
static long long field(const unsigned char *h, size_t off, size_t n)
{
	char b[16];

	memcpy(b, h + off, n);
	b[n] = '\0';
	return strtoll(b, NULL, 8);
}

TEST(a_short_name_is_one_ustar_block)
{
	unsigned char *h = NULL, *h2 = NULL;
	size_t n = 0, n2 = 0;
	unsigned sum = 0;

	CHECK_INT(hub_oci_tar_header("sub/notes.txt", 12345, &h, &n), 0);
	CHECK_INT((int)n, 512);
	CHECK_STR((char *)h, "sub/notes.txt");
	CHECK(field(h, 100, 8) == 0644);            /* mode */
	CHECK(field(h, 108, 8) == 0 && field(h, 116, 8) == 0); /* uid, gid */
	CHECK(field(h, 124, 12) == 12345);          /* size */
	CHECK(field(h, 136, 12) == 0);              /* mtime */
	CHECK(h[156] == '0');                       /* a regular file */
	CHECK(!memcmp(h + 257, "ustar", 5));
	CHECK(h[265] == '\0' && h[297] == '\0');    /* no user or group names */
	for (size_t i = 0; i < 512; i++)            /* the checksum: every byte, its own field as spaces */
		sum += i >= 148 && i < 156 ? ' ' : h[i];
	CHECK(field(h, 148, 8) == (long long)sum);
	/* the same every time */
	CHECK_INT(hub_oci_tar_header("sub/notes.txt", 12345, &h2, &n2), 0);
	CHECK(n2 == n && !memcmp(h, h2, n));
	free(h);
	free(h2);
}

TEST(what_ustar_cannot_hold_goes_in_a_pax_record)
{
	char name[300];
	unsigned char *h = NULL;
	size_t n = 0;

	memset(name, 'd', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	for (size_t i = 10; i < sizeof(name) - 1; i += 40)
		name[i] = '/';
	CHECK_INT(hub_oci_tar_header(name, 10, &h, &n), 0);
	CHECK(n == 1536 && h[156] == 'x');          /* a pax header, its records, the ustar header */
	CHECK(strstr((char *)h + 512, " path=") != NULL);
	CHECK(memmem(h + 512, 512, name, strlen(name)) != NULL);
	free(h);

	CHECK_INT(hub_oci_tar_header("w.gguf", 10LL << 30, &h, &n), 0);
	CHECK(n == 1536 && h[156] == 'x');
	CHECK(strstr((char *)h + 512, " size=10737418240\n") != NULL);
	free(h);

	CHECK_INT(hub_oci_tar_header("caf\xc3\xa9/r\xc3\xa9sum\xc3\xa9.md", 10, &h, &n), 0);
	CHECK(n == 1536 && h[156] == 'x');
	CHECK(strstr((char *)h + 512, " path=caf\xc3\xa9/r\xc3\xa9sum\xc3\xa9.md\n") != NULL);
	free(h);
}

TEST(the_tail_pads_the_block_and_ends_the_archive)
{
	CHECK(hub_oci_tar_tail(0) == 1024);
	CHECK(hub_oci_tar_tail(1) == 511 + 1024);
	CHECK(hub_oci_tar_tail(512) == 1024);
	CHECK(hub_oci_tar_tail(1000) == 24 + 1024);
}

TEST(the_digest_is_of_header_file_and_tail)
{
	char dir[] = "/tmp/test-hub-oci-XXXXXX", path[64], digest[72], want[72];
	unsigned char *h = NULL, md[32], zeros[1536] = { 0 };
	size_t n = 0;
	unsigned int mdn = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	FILE *f;

	test_tmpdir(dir);
	snprintf(path, sizeof(path), "%s/f", dir);
	f = fopen(path, "wb");
	fputs("hello, layer\n", f);
	fclose(f);
	CHECK_INT(hub_oci_tar_header("a/f.txt", 13, &h, &n), 0);
	CHECK_INT(hub_oci_tar_digest(h, n, path, 13, digest), 0);
	EVP_DigestInit_ex(c, EVP_sha256(), NULL);
	EVP_DigestUpdate(c, h, n);
	EVP_DigestUpdate(c, "hello, layer\n", 13);
	EVP_DigestUpdate(c, zeros, (size_t)hub_oci_tar_tail(13));
	EVP_DigestFinal_ex(c, md, &mdn);
	memcpy(want, "sha256:", 7);
	hex_encode(md, 32, want + 7);
	CHECK_STR(digest, want);
	/* a file shorter than it should be is refused */
	CHECK(hub_oci_tar_digest(h, n, path, 14, digest) != 0);
	/* a daemon stopping gives the reading up; not stopping, the same digest */
	{
		atomic_bool stop = true;
		CHECK_INT(hub_oci_tar_digest_until(h, n, path, 13, &stop, digest), -ECANCELED);
		atomic_store(&stop, false);
		CHECK_INT(hub_oci_tar_digest_until(h, n, path, 13, &stop, digest), 0);
		CHECK_STR(digest, want);
	}
	EVP_MD_CTX_free(c);
	free(h);
	test_rmtree(dir);
}

/* hub_oci_tar_digest_read's reader over a file in memory: it checks that it is asked in order, no more
 * than a chunk at a time, and fails (-EIO) at fail_at when that is set. */
struct mem_file {
	const unsigned char *data;
	int64_t next, fail_at;
	size_t max; /* the chunk asked for (0: HUB_OCI_READ_CHUNK) */
	int calls;
};

static int mem_read(void *ud, int64_t off, void *buf, size_t len)
{
	struct mem_file *m = ud;

	if (off != m->next || len == 0 || len > (m->max ? m->max : HUB_OCI_READ_CHUNK))
		return -EINVAL;
	if (m->fail_at >= 0 && off + (int64_t)len > m->fail_at)
		return -EIO;
	memcpy(buf, m->data + off, len);
	m->next = off + (int64_t)len;
	m->calls++;
	return 0;
}

/* The digest of a file read through a reader (a content in a bucket, by ranges) is the digest of the
 * same file read from disk; a reader's error ends it, returned as it is. */
TEST(the_digest_from_a_reader_is_the_files)
{
	char dir[] = "/tmp/test-hub-oci-XXXXXX", path[64], digest[72], want[72];
	int64_t size = 3 * (int64_t)HUB_OCI_READ_CHUNK + 5;
	unsigned char *data = malloc((size_t)size), *h = NULL;
	struct mem_file m = { .fail_at = -1 };
	size_t n = 0;
	FILE *f;

	for (int64_t i = 0; i < size; i++)
		data[i] = (unsigned char)(i * 7 + i / 4096);
	test_tmpdir(dir);
	snprintf(path, sizeof(path), "%s/f", dir);
	f = fopen(path, "wb");
	fwrite(data, 1, (size_t)size, f);
	fclose(f);
	CHECK_INT(hub_oci_tar_header("w/big.bin", size, &h, &n), 0);
	CHECK_INT(hub_oci_tar_digest(h, n, path, size, want), 0);
	m.data = data;
	CHECK_INT(hub_oci_tar_digest_read(h, n, size, 0, mem_read, &m, digest), 0);
	CHECK_STR(digest, want);
	CHECK_INT(m.next, size);
	CHECK_INT(m.calls, 4);
	/* a chunk of its own (a bucket's ranges): fewer, bigger reads, the same digest */
	m = (struct mem_file){ .data = data, .fail_at = -1, .max = 2 * HUB_OCI_READ_CHUNK + 1 };
	CHECK_INT(hub_oci_tar_digest_read(h, n, size, m.max, mem_read, &m, digest), 0);
	CHECK_STR(digest, want);
	CHECK_INT(m.calls, 2);
	m = (struct mem_file){ .data = data, .fail_at = 2 * (int64_t)HUB_OCI_READ_CHUNK + 1 };
	CHECK_INT(hub_oci_tar_digest_read(h, n, size, 0, mem_read, &m, digest), -EIO);
	free(h);
	free(data);
	test_rmtree(dir);
}

/* Every range of a small layer cut into header, file and zeros: the parts, put back in order, are
 * the layer's bytes of that range (a header of 'h's, a file of 'f's, then zeros). */
TEST(a_range_is_cut_into_header_file_and_zeros)
{
	enum { HL = 512, SIZE = 700 };
	const int64_t total = HL + SIZE + hub_oci_tar_tail(SIZE);
	char *layer = calloc(1, (size_t)total), *got = malloc((size_t)total);
	struct hub_oci_span sp;
	int bad = 0;

	memset(layer, 'h', HL);
	memset(layer + HL, 'f', SIZE);
	for (int64_t a = 0; a < total; a += 37)
		for (int64_t end = a + 1; end <= total; end += 53) {
			size_t n = 0;
			hub_oci_tar_span(HL, SIZE, a, end, &sp);
			if (sp.h1 < sp.h0 || sp.f1 < sp.f0 || sp.zeros < 0) {
				bad++;
				continue;
			}
			memcpy(got + n, layer + sp.h0, (size_t)(sp.h1 - sp.h0));
			n += (size_t)(sp.h1 - sp.h0);
			memcpy(got + n, layer + HL + sp.f0, (size_t)(sp.f1 - sp.f0));
			n += (size_t)(sp.f1 - sp.f0);
			memset(got + n, 0, (size_t)sp.zeros);
			n += (size_t)sp.zeros;
			if (n != (size_t)(end - a) || memcmp(got, layer + a, n))
				bad++;
		}
	CHECK_INT(bad, 0);
	hub_oci_tar_span(HL, SIZE, 0, total, &sp);
	CHECK(sp.h0 == 0 && sp.h1 == HL && sp.f0 == 0 && sp.f1 == SIZE && sp.zeros == hub_oci_tar_tail(SIZE));
	free(layer);
	free(got);
}

int main(void)
{
	RUN(a_short_name_is_one_ustar_block);
	RUN(what_ustar_cannot_hold_goes_in_a_pax_record);
	RUN(the_tail_pads_the_block_and_ends_the_archive);
	RUN(the_digest_is_of_header_file_and_tail);
	RUN(the_digest_from_a_reader_is_the_files);
	RUN(a_range_is_cut_into_header_file_and_zeros);
	return test_done();
}
