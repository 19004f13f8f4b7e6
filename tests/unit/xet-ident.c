/*
 * xet-ident FILE: a file's Xet identity as hub/xet computes it, for t0110-xet-identity.sh to
 * compare with Hugging Face's JavaScript implementation (tests/js/xetident.mjs), same lines:
 *   chunk OFFSET SIZE HASH   (one per chunk)
 *   file HASH | xorb HASH | range HASH
 * The file is read in uneven slices (1 byte, then growing), so the chunker's streaming is what is
 * compared, and the chunks are printed from the identity's compact form read back, so that form is
 * checked on the way.
 *
 * xet-ident --bench MIB: CPU-seconds per GiB (this process's user + system) of SHA-256 alone
 * (OpenSSL, as the store hashes), of SHA-256 and the Xet identity in one pass over the same 256 KiB
 * slices, of the identity alone, of SHA-256 with the identity a Xet fetch makes (BLAKE3 of each chunk
 * it checks, the chunks stated), and of the identity's two parts alone: its chunker (the gear hash, no
 * BLAKE3) and its chunk hashes (BLAKE3, no chunker), over MIB MiB of random bytes held in memory
 * (bench/xet_bench.sh, docs/benchmarks.md, "Xet identity").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "hub/xet/xet.h"

static int feed(struct xet_identity *id, int fd)
{
	static unsigned char buf[4 << 20];
	size_t step = 1;
	for (;;) {
		ssize_t k = read(fd, buf, step);
		if (k < 0)
			return -errno;
		if (k == 0)
			return 0;
		xet_identity_update(id, buf, (size_t)k);
		step = step * 7 + 13;
		if (step > sizeof(buf))
			step = 1 + step % 100003;
	}
}

static void print(const struct xet_identity *id)
{
	size_t n;
	const struct xet_chunk *c = xet_identity_chunks(id, &n);
	struct xet_node *nodes = calloc(n ? n : 1, sizeof(*nodes));
	struct xet_hash *hashes = calloc(n ? n : 1, sizeof(*hashes));
	struct xet_hash h;
	char hex[XET_HEX_LEN + 1];

	for (size_t i = 0; i < n; i++) {
		xet_hash_hex(&c[i].hash, hex);
		printf("chunk %llu %u %s\n", (unsigned long long)c[i].offset, c[i].size, hex);
		nodes[i].hash = hashes[i] = c[i].hash;
		nodes[i].size = c[i].size;
	}
	xet_hash_hex(xet_identity_file_hash(id), hex);
	printf("file %s\n", hex);
	xet_xorb_hash(nodes, n, &h);
	xet_hash_hex(&h, hex);
	printf("xorb %s\n", hex);
	xet_range_hash(hashes, n, &h);
	xet_hash_hex(&h, hex);
	printf("range %s\n", hex);
	free(nodes);
	free(hashes);
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The chunker alone over mib MiB as pass() slices it: CPU-seconds per GiB; *cuts counts its boundaries. */
static double chunker_pass(const unsigned char *buf, size_t buflen, size_t mib, size_t *cuts)
{
	const size_t slice = 256 << 10;
	struct xet_chunker c;
	double t0 = cpu_now();

	xet_chunker_init(&c);
	*cuts = 0;
	for (size_t done = 0; done < mib << 20; done += slice) {
		const unsigned char *p = buf + done % buflen;
		size_t left = slice;
		while (left > 0) {
			bool cut;
			size_t k = xet_chunker_scan(&c, p, left, &cut);
			*cuts += cut;
			p += k;
			left -= k;
		}
	}
	return (cpu_now() - t0) * 1024.0 / (double)mib;
}

/* One pass over mib MiB (a 64 MiB buffer again and again) in 256 KiB slices: CPU-seconds per GiB. */
static double pass(const unsigned char *buf, size_t buflen, size_t mib, int sha, int xet)
{
	const size_t slice = 256 << 10;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct xet_identity *id = xet_identity_new();
	unsigned char digest[32];
	double t0 = cpu_now();

	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	for (size_t done = 0; done < mib << 20; done += slice) {
		const unsigned char *p = buf + done % buflen;
		if (sha)
			EVP_DigestUpdate(md, p, slice);
		if (xet)
			xet_identity_update(id, p, slice);
	}
	EVP_DigestFinal_ex(md, digest, NULL);
	xet_identity_finish(id);
	t0 = cpu_now() - t0;
	EVP_MD_CTX_free(md);
	xet_identity_free(&id);
	return t0 * 1024.0 / (double)mib;
}

/* A Xet fetch's pass: SHA-256 of the bytes, and BLAKE3 of each chunk (which checks it against its xorb;
 * its boundaries are the xorb's, here the chunker's of the same bytes, found before the clock starts),
 * the identity made of those hashes (xet_identity_new_given), not found again. */
static double given_pass(const unsigned char *buf, size_t buflen, size_t mib)
{
	struct xet_identity *cut = xet_identity_new();
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	const struct xet_chunk *c;
	unsigned char digest[32];
	size_t n, done = 0;
	double t0;

	xet_identity_update(cut, buf, buflen);
	xet_identity_finish(cut);
	c = xet_identity_chunks(cut, &n);
	t0 = cpu_now();
	for (; done < mib << 20 || done == 0; done += buflen) {  /* a file of buflen bytes each time */
		struct xet_identity *id = xet_identity_new_given();
		EVP_DigestInit_ex(md, EVP_sha256(), NULL);
		for (size_t i = 0; i < n; i++) {
			struct xet_hash h;
			EVP_DigestUpdate(md, buf + c[i].offset, c[i].size);
			xet_chunk_hash(buf + c[i].offset, c[i].size, &h);
			if (xet_identity_add_chunk(id, c[i].size, &h))
				abort();  /* a chunker's cut: never */
		}
		EVP_DigestFinal_ex(md, digest, NULL);
		xet_identity_finish(id);
		xet_identity_free(&id);
	}
	t0 = cpu_now() - t0;
	EVP_MD_CTX_free(md);
	xet_identity_free(&cut);
	return t0 * 1024.0 / (double)(done >> 20);
}

/* BLAKE3 of each chunk alone (the chunker's chunks of the same bytes, found before the clock starts):
 * CPU-seconds per GiB. With the chunker alone, the two parts of the identity's cost. */
static double chunk_hash_pass(const unsigned char *buf, size_t buflen, size_t mib)
{
	struct xet_identity *cut = xet_identity_new();
	const struct xet_chunk *c;
	size_t n, done = 0;
	double t0;

	xet_identity_update(cut, buf, buflen);
	xet_identity_finish(cut);
	c = xet_identity_chunks(cut, &n);
	t0 = cpu_now();
	for (; done < mib << 20 || done == 0; done += buflen)
		for (size_t i = 0; i < n; i++) {
			struct xet_hash h;
			xet_chunk_hash(buf + c[i].offset, c[i].size, &h);
		}
	t0 = cpu_now() - t0;
	xet_identity_free(&cut);
	return t0 * 1024.0 / (double)(done >> 20);
}

static int bench(size_t mib)
{
	size_t buflen = 64 << 20, cuts;
	double t;
	unsigned char *buf = malloc(buflen);
	uint64_t x = 88172645463325252ULL;
	for (size_t i = 0; i < buflen; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	printf("sha256 alone          %.3f cpu-s/GiB\n", pass(buf, buflen, mib, 1, 0));
	printf("sha256 + xet identity %.3f cpu-s/GiB\n", pass(buf, buflen, mib, 1, 1));
	printf("xet identity alone    %.3f cpu-s/GiB\n", pass(buf, buflen, mib, 0, 1));
	printf("sha256 + xet identity of a Xet fetch's checked chunks %.3f cpu-s/GiB\n", given_pass(buf, buflen, mib));
	t = chunker_pass(buf, buflen, mib, &cuts);
	printf("xet chunker alone     %.3f cpu-s/GiB (%zu chunks)\n", t, cuts);
	printf("xet chunk hashes alone %.3f cpu-s/GiB\n", chunk_hash_pass(buf, buflen, mib));
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct xet_identity *id, *back = NULL;
	unsigned char *form;
	size_t len;
	char *why = NULL;
	int fd, rc;

	if (argc == 3 && strcmp(argv[1], "--bench") == 0)
		return bench((size_t)strtoul(argv[2], NULL, 10));
	if (argc != 2) {
		fprintf(stderr, "usage: xet-ident FILE | --bench MIB\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	id = xet_identity_new();
	rc = feed(id, fd);
	close(fd);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	xet_identity_finish(id);
	form = xet_identity_serialize(id, &len);
	if (xet_identity_parse(form, len, &back, &why) < 0) {
		fprintf(stderr, "its own identity file does not read back: %s\n", why);
		return 1;
	}
	print(back);
	free(form);
	xet_identity_free(&id);
	xet_identity_free(&back);
	return 0;
}
