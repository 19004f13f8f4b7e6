/*
 * store-behind.c - a cache fill's SHA-256 on a thread of its own (store-int.h): the fill's worker
 * receives the bucket's bytes and writes them into the partial file, which the answer follows; this
 * thread hashes each buffer the worker wrote, behind it, instead of the worker hashing before it writes.
 * The two then share the machine's cores instead of taking turns on one (docs/benchmarks.md, "The
 * store in an S3 bucket"). The buffers are handed over, never copied: a ring of BEHIND_BUFS, each
 * either the worker's (being filled), queued, or being hashed. The content is still verified whole
 * before the cache keeps it: the writer's check waits for the queue to drain (store__behind_finish).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "base/bug.h"
#include "base/xmalloc.h"
#include "store-int.h"

#define BEHIND_BUFS 8 /* of the writer's buffer size each (1 MiB): a fill's memory, and how far it may run ahead */

struct store__behind {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	EVP_MD_CTX *ctx;              /* the writer's, this thread's alone until _finish */
	char *bufs[BEHIND_BUFS];      /* every buffer: freed at _finish */
	char *free_[BEHIND_BUFS];     /* the ones neither the writer's nor queued */
	int nfree;
	char *queue[BEHIND_BUFS];     /* written, to hash, in order */
	size_t qlen[BEHIND_BUFS];
	int qhead, qcount;
	bool stop;                    /* no more buffers come */
	bool failed;                  /* a digest update failed: the check will say so */
};

static void *behind_main(void *ud)
{
	struct store__behind *b = ud;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		char *p;
		size_t n;
		bool ok;
		while (b->qcount == 0 && !b->stop)
			pthread_cond_wait(&b->cv, &b->mu);
		if (b->qcount == 0)
			break;
		p = b->queue[b->qhead];
		n = b->qlen[b->qhead];
		pthread_mutex_unlock(&b->mu);
		/* (outside the lock: the worker queues the next one meanwhile) */
		ok = b->failed || EVP_DigestUpdate(b->ctx, p, n);
		pthread_mutex_lock(&b->mu);
		b->failed |= !ok;
		b->qhead = (b->qhead + 1) % BEHIND_BUFS;
		b->qcount--;
		b->free_[b->nfree++] = p;
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

int store__behind_new(EVP_MD_CTX *ctx, size_t bufcap, struct store__behind **out, char **first)
{
	struct store__behind *b = xcalloc(1, sizeof(*b));
	int r;

	b->ctx = ctx;
	for (int i = 0; i < BEHIND_BUFS; i++)
		b->bufs[i] = b->free_[i] = xmalloc(bufcap);
	b->nfree = BEHIND_BUFS;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	r = pthread_create(&b->thread, NULL, behind_main, b);
	if (r) {
		pthread_cond_destroy(&b->cv);
		pthread_mutex_destroy(&b->mu);
		for (int i = 0; i < BEHIND_BUFS; i++)
			free(b->bufs[i]);
		free(b);
		return -r;
	}
	*first = b->free_[--b->nfree];
	*out = b;
	return 0;
}

char *store__behind_swap(struct store__behind *b, char *full, size_t n)
{
	char *next;

	pthread_mutex_lock(&b->mu);
	BUG_ON(b->stop || b->qcount == BEHIND_BUFS);
	b->queue[(b->qhead + b->qcount) % BEHIND_BUFS] = full;
	b->qlen[(b->qhead + b->qcount) % BEHIND_BUFS] = n;
	b->qcount++;
	pthread_cond_broadcast(&b->cv);
	while (b->nfree == 0) /* every other buffer waits to be hashed: the hash is the slower one */
		pthread_cond_wait(&b->cv, &b->mu);
	next = b->free_[--b->nfree];
	pthread_mutex_unlock(&b->mu);
	return next;
}

int store__behind_finish(struct store__behind **bp)
{
	struct store__behind *b = *bp;
	bool failed;

	if (!b)
		return 0;
	*bp = NULL;
	pthread_mutex_lock(&b->mu);
	b->stop = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	pthread_join(b->thread, NULL); /* (it hashes what was queued first) */
	failed = b->failed;
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	for (int i = 0; i < BEHIND_BUFS; i++)
		free(b->bufs[i]);
	free(b);
	return failed ? -ENOMEM : 0;
}
