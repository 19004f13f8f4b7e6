/*
 * xet-record.c - a content's Xet identity, recorded in the catalog (see xet-record.h).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/xet/xet.h"
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
static bool legacy_first(const struct store *s, const char *sha256, struct xet_hash *out)
{
	char *blob = store_blob_path(s, sha256);
	unsigned char *buf = xmalloc(XET_CHUNK_MAX);
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC) : -1;
	ssize_t n = fd >= 0 ? pread(fd, buf, XET_CHUNK_MAX, 0) : -1;
	size_t first = n > 0 ? xet_chunk_first_legacy(buf, (size_t)n) : 0;

	if (first)
		xet_chunk_hash(buf, first, out);
	if (fd >= 0)
		close(fd);
	free(buf);
	free(blob);
	return first > 0;
}

/* Record in c the chunks of content sha256 that the global dedup query answers for: its first, and
 * the eligible ones (a thousandth of the rest), from its identity file, and its first as older
 * chunkers cut it; nothing without an identity file. */
static void record_dedup(const struct store *s, struct catalog *c, const char *sha256)
{
	char *blob = store_blob_path(s, sha256);
	struct stat st;
	struct xet_identity *id = blob && !stat(blob, &st) ? store_xet_read(s, sha256, st.st_size) : NULL;
	const struct xet_chunk *ch;
	char (*hex)[65];
	struct xet_hash alias;
	size_t n, k = 0;

	free(blob);
	if (!id)
		return;
	ch = xet_identity_chunks(id, &n);
	hex = xcalloc(n + 1, sizeof(*hex));
	for (size_t i = 0; i < n; i++)
		if (i == 0 || mirror_xet_dedup_eligible(&ch[i].hash))
			xet_hash_hex(&ch[i].hash, hex[k++]);
	if (legacy_first(s, sha256, &alias))
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
