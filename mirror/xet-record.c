/*
 * xet-record.c - a content's Xet identity, recorded in the catalog (see xet-record.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/xet/xet.h"
#include "store/bucket.h"
#include "store/store-xet.h"
#include "store/store.h"
#include "xet-record.h"

bool mirror_xet_dedup_eligible(const struct xet_hash *h)
{
	uint64_t w = 0;

	for (int i = 31; i >= 24; i--)
		w = w << 8 | h->b[i];
	return w % 1024 == 0;
}

/* The hash of content sha256's first chunk as a chunker before the spec's fix cuts it (xet.h:
 * xet_chunk_first_legacy), when that is not the spec's first chunk: @huggingface/hub asks the dedup
 * query for it, so it names the content too. true and *out, or false. */
struct head_buf {
	unsigned char *buf;
	size_t n;
};

static int head_sink(void *ud, const void *data, size_t n)
{
	struct head_buf *h = ud;

	if (n > XET_CHUNK_MAX - h->n)
		return -EOVERFLOW;
	memcpy(h->buf + h->n, data, n);
	h->n += n;
	return 0;
}

/* The content's first bytes (at most XET_CHUNK_MAX) into buf: from its local file, else (a bucket's
 * content not in the cache) a ranged read of the bucket's object, which was completed only verified;
 * the content is never brought into the cache for it. How many, or -1. */
static ssize_t content_head(const struct store *s, const char *sha256, int64_t size, unsigned char *buf)
{
	char *blob = store_cache_path(s, sha256);
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC) : -1;
	struct head_buf h = { buf, 0 };
	ssize_t n = -1;

	free(blob);
	if (fd >= 0) {
		n = pread(fd, buf, XET_CHUNK_MAX, 0);
		close(fd);
	} else if (store_bucket_of(s) && size > 0 &&
		   !store_bucket_get(store_bucket_of(s), sha256, 0, size < XET_CHUNK_MAX ? size : XET_CHUNK_MAX,
				     head_sink, &h)) {
		n = (ssize_t)h.n;
	}
	return n;
}

static bool legacy_first(const struct store *s, const char *sha256, int64_t size, struct xet_hash *out)
{
	unsigned char *buf = xmalloc(XET_CHUNK_MAX);
	ssize_t n = content_head(s, sha256, size, buf);
	size_t first = n > 0 ? xet_chunk_first_legacy(buf, (size_t)n) : 0;

	if (first)
		xet_chunk_hash(buf, first, out);
	free(buf);
	return first > 0;
}

/* The content's size: its local file's, else (a bucket's content not in the cache) the bucket's; the
 * content is never brought into the cache for it. -1: neither has it. */
static int64_t content_size(const struct store *s, const char *sha256)
{
	char *blob = store_cache_path(s, sha256);
	struct stat st;
	int64_t size = -1;

	if (blob && !stat(blob, &st))
		size = st.st_size;
	else if (blob && store_bucket_of(s) && store_bucket_stat(store_bucket_of(s), sha256, &size))
		size = -1;
	free(blob);
	return size;
}

/* Record in c the chunks of content sha256 that the global dedup query answers for: its first, and
 * the eligible ones (a thousandth of the rest), from its identity file, and its first as older
 * chunkers cut it; nothing without an identity file. */
static void record_dedup(const struct store *s, struct catalog *c, const char *sha256)
{
	int64_t size = content_size(s, sha256);
	struct xet_identity *id = size >= 0 ? store_xet_read(s, sha256, size) : NULL;
	const struct xet_chunk *ch;
	char (*hex)[65];
	struct xet_hash alias;
	size_t n, k = 0;

	if (!id)
		return;
	ch = xet_identity_chunks(id, &n);
	hex = xcalloc(n + 1, sizeof(*hex));
	for (size_t i = 0; i < n; i++)
		if (i == 0 || mirror_xet_dedup_eligible(&ch[i].hash))
			xet_hash_hex(&ch[i].hash, hex[k++]);
	if (legacy_first(s, sha256, size, &alias))
		xet_hash_hex(&alias, hex[k++]);
	if (catalog_xet_dedup_set(c, sha256, (const char (*)[65])hex, k))
		log_warn("store", "catalog: %s", catalog_errmsg(c));
	free(hex);
	xet_identity_free(&id);
}

int mirror_xet_record(const struct store *s, struct catalog *c, const char *sha256)
{
	char xh[XET_HEX_LEN + 1], stated[XET_HEX_LEN + 1];
	bool refused;
	int r;

	if ((r = store_xet_file_hash(s, sha256, xh)) != 0)
		return r;
	r = catalog_blob_set_xet(c, sha256, xh);
	if (r == HM_ERR_HASH_MISMATCH) {
		if (!catalog_xet_stated(c, sha256, stated, &refused))
			log_warn("store", "content %.12s: upstream states Xet hash %s, its bytes make %s: not offered "
				 "through Xet", sha256, stated, xh);
		return r;
	}
	if (r) {
		log_warn("store", "catalog: %s", catalog_errmsg(c));
		return r;
	}
	record_dedup(s, c, sha256);
	return 0;
}
