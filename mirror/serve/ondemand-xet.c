/*
 * ondemand-xet.c - an on-demand fetch's bytes through Xet (docs/protocols/xet.md, "On-demand fetches
 * through Xet"): when the listing kept upstream's Xet hash for the content, mirror/xet-fetch.c
 * writes the file into the fetch's writer from its xorbs, giving the loop back after each
 * OD_XET_TURN bytes of stored chunks; when it fails, the plain fetch goes on from what the writer
 * holds (ondemand.c), and a content whose Xet bytes failed the proof is fetched plain from then on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "hub/upstream.h"
#include "mirror/data.h"
#include "mirror/xet-fetch.h"
#include "store/store-xet.h"
#include "store/store.h"
#include "ondemand.h"
#include "routes-int.h"

#include "ondemand-int.h"

static void xet_on_bytes(void *ud, int64_t fetched, int64_t written)
{
	struct fetch *f = ud;

	(void)written;
	f->have = store_writer_flushed(f->w);   /* what the clients following may take */
	f->od->bytes_fetched += (uint64_t)fetched;
}

static void xet_on_idle(uv_idle_t *h)
{
	struct mirror_ondemand *od = h->data;
	struct fetch *f = od->xet_wait;

	od->xet_wait = NULL;
	uv_idle_stop(h);
	while (f) {
		struct fetch *next = f->next_wait;
		f->next_wait = NULL;
		mirror_xet_fetch_resume(f->xet);
		f = next;
	}
}

/* After OD_XET_TURN bytes of stored chunks (read on the loop), the loop's other work goes first. */
static void xet_on_yield(void *ud, struct mirror_xet_fetch *x)
{
	struct fetch *f = ud;

	(void)x;
	f->next_wait = f->od->xet_wait;
	f->od->xet_wait = f;
	uv_idle_start(&f->od->xet_idle, xet_on_idle);
}

void mirror__od_xet_remember_bad(struct mirror_ondemand *od, const char *sha256)
{
	snprintf(od->xet_bad[od->xet_bad_next++ % OD_XET_BAD], 65, "%s", sha256);
}

static bool xet_known_bad(const struct mirror_ondemand *od, const char *sha256)
{
	for (size_t i = 0; i < OD_XET_BAD; i++)
		if (!strcmp(od->xet_bad[i], sha256))
			return true;
	return false;
}

/* The Xet transfer ended: the file is in the writer (proven as any), or the plain path goes on from
 * what the writer holds. Bytes that fail the proof are dropped and the content is not tried through
 * Xet again by this serve: the next client's fetch is plain. */
static void xet_on_end(void *ud, struct mirror_xet_fetch *x, int fail, const char *why)
{
	struct fetch *f = ud;

	(void)x;
	if (!fail) {
		mirror__od_fetch_verify(f);   /* (records the chunks once committed) */
		return;
	}
	log_info("ondemand", "%s: content %.12s: Xet: %s; %s", f->spec, f->sha256, why ? why : err_str(fail),
		 f->od->stopping ? "stopping" : "over plain HTTP");
	mirror_xet_fetch_free(&f->xet);   /* (why was its: not used past here) */
	f->have = store_writer_flushed(f->w);
	if (f->od->stopping || !mirror__od_fetch_plain(f, store_writer_offset(f->w))) {
		mirror__od_fetch_end(f, FETCH_FAILED,
				     f->od->stopping ? "serve is stopping" : "no plain request after Xet");
		mirror__od_fetch_unref(f);
	}
}

/* Through Xet, when the listing kept upstream's Xet hash for the content (a Hugging Face LFS file) and
 * nothing refused it; the writer then checks that hash too. Not for an untrusted client's fetch (its
 * bytes come from its own upstream's plain file, every one). true when started. */
bool mirror__od_fetch_xet(struct fetch *f, const struct mirror_ondemand_file *in)
{
	struct mirror_ondemand *od = f->od;
	char xh[65], *base, *name, *url;
	bool refused = true;
	struct mirror_xet_fetch_host h = {
		.http = od->http, .catalog = f->rt->data->catalog, .store = f->rt->data->store, .w = f->w,
		.token = hub_client_token(od->client, HUB_HF), .xet_hash = xh, .size = f->size,
		.local_turn = OD_XET_TURN, .on_bytes = xet_on_bytes, .yield = xet_on_yield, .on_end = xet_on_end,
		.ud = f,
	};

	if (f->kind != HUB_HF || in->untrusted || !in->commit || xet_known_bad(od, f->sha256) ||
	    catalog_xet_stated(f->rt->data->catalog, f->sha256, xh, &refused) || refused)
		return false;
	base = hub_client_base(od->client, HUB_HF);
	name = hub_url_escape(in->name, true);
	url = xasprintf("%s/api/%s/%s/xet-read-token/%s", base, strcmp(in->type, "dataset") ? "models" : "datasets",
			name, in->commit);
	store_writer_expect_xet(f->w, xh);
	f->xet_stated = true;
	h.token_url = url;
	f->refs = 1;   /* the transfer's, which an immediate end below may drop */
	mirror_xet_fetch_start(&h, &f->xet);
	free(url);
	free(name);
	free(base);
	return true;
}

