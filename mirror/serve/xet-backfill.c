/*
 * xet-backfill.c - the Xet identities the mirror lacks, computed in the background (xet-backfill.h).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/data.h"
#include "store/store-xet.h"
#include "mirror/xet-record.h"
#include "store/store.h"
#include "xet-backfill.h"

#define BATCH 64                /* contents taken from the catalog at a time */
#define REST_S 600              /* after a pass that found nothing left, this long before the next look */
#define BAD_MAX 1024            /* contents whose bytes are not their sha256, remembered (said once) */
#define MIN_COST (256 * 1024)   /* what a content costs of the rate at least: its catalog writes (a store of
				 * many small files is not a flood of transactions) */

struct mirror_xet_backfill {
	struct mirror_data *d;
	int64_t rate;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;                      /* under mu */
	struct timespec due;            /* the pace: no byte is read before it (CLOCK_MONOTONIC) */
	char (*bad)[65];
	size_t nbad;
	int64_t learnt, refused, bytes; /* this run's, for the log */
};

static void ts_add_ns(struct timespec *t, int64_t ns)
{
	t->tv_sec += ns / 1000000000;
	t->tv_nsec += ns % 1000000000;
	if (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Wait until `until` (CLOCK_MONOTONIC) or the stop; true when stopped. */
static bool rest_until(struct mirror_xet_backfill *b, const struct timespec *until)
{
	bool stop;

	pthread_mutex_lock(&b->mu);
	while (!b->stop && pthread_cond_timedwait(&b->cv, &b->mu, until) != ETIMEDOUT)
		;
	stop = b->stop;
	pthread_mutex_unlock(&b->mu);
	return stop;
}

/* The rate: n more bytes read push the time the next read may start by n / rate seconds (no credit
 * saved up while idle). -ECANCELED once stopped. */
static int pace(void *ud, size_t n)
{
	struct mirror_xet_backfill *b = ud;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (ts_before(&b->due, &now))
		b->due = now;
	ts_add_ns(&b->due, (int64_t)((double)n * 1e9 / (double)b->rate));
	b->bytes += (int64_t)n;
	return rest_until(b, &b->due) ? -ECANCELED : 0;
}

static bool known_bad(const struct mirror_xet_backfill *b, const char *sha256)
{
	for (size_t i = 0; i < b->nbad; i++)
		if (!strcmp(b->bad[i], sha256))
			return true;
	return false;
}

/* One content: read, checked, its identity recorded. -ECANCELED when stopped. */
static int learn(struct mirror_xet_backfill *b, struct catalog *c, const char *sha256)
{
	bool ok = false;
	int64_t got = 0;
	int r;

	if (known_bad(b, sha256))
		return 0;
	r = store_xet_check(b->d->store, sha256, pace, b, &ok, &got);
	if (r == -ECANCELED)
		return r;
	if (r) {
		if (r != -ENOENT)   /* (a content missing is verify's to find) */
			log_warn("serve", "Xet identities: %.12s: %s", sha256, err_str(r));
		return 0;
	}
	if (!ok) {
		if (b->nbad < BAD_MAX)
			snprintf(b->bad[b->nbad++], 65, "%s", sha256);
		log_warn("serve", "Xet identities: content %.12s is not its sha256 in the store (%lld bytes): not "
			 "offered through Xet; 'hubmirror verify' quarantines it", sha256, (long long)got);
		return 0;
	}
	r = mirror_xet_record(b->d->store, c, sha256);
	if (!r)
		b->learnt++;
	else if (r == HM_ERR_HASH_MISMATCH)
		b->refused++;   /* (said by the record) */
	b->bytes -= got < MIN_COST ? MIN_COST - got : 0;   /* (counted as paced, not read) */
	return got < MIN_COST ? pace(b, (size_t)(MIN_COST - got)) : 0;
}

/* One pass over what the catalog lacks: the number of contents taken, or -ECANCELED. */
static int64_t pass(struct mirror_xet_backfill *b, struct catalog *c)
{
	char after[65] = "", (*sha)[65] = xcalloc(BATCH, sizeof(*sha));
	int64_t *size = xcalloc(BATCH, sizeof(*size)), taken = 0;
	size_t n = BATCH;
	int r = 0;

	while (!r && n == BATCH) {
		if (catalog_xet_unknown(c, after, BATCH, sha, size, &n)) {
			log_warn("serve", "Xet identities: catalog: %s", catalog_errmsg(c));
			break;
		}
		for (size_t i = 0; i < n && !r; i++) {
			r = learn(b, c, sha[i]);
			memcpy(after, sha[i], sizeof(after));
			taken++;
		}
	}
	free(sha);
	free(size);
	return r ? r : taken;
}

static void io_idle(void)
{
	enum { WHO_PROCESS = 1, CLASS_IDLE = 3, CLASS_SHIFT = 13 };

	syscall(SYS_ioprio_set, WHO_PROCESS, 0, CLASS_IDLE << CLASS_SHIFT);   /* this thread's reads last */
}

static void *run(void *ud)
{
	struct mirror_xet_backfill *b = ud;
	struct sched_param p = { 0 };
	struct catalog *c = NULL;
	char *path = mirror_data_path(b->d, MIRROR_DATA_CATALOG), *err = NULL;
	int64_t taken;

	/* on CPU and disk time nobody else wants: every request goes first */
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &p);
	io_idle();
	if (catalog_open(path, &c, &err)) {
		log_warn("serve", "Xet identities: cannot open the catalog: %s", err ? err : "?");
		goto out;
	}
	for (bool first = true;; first = false) {
		struct timespec until;
		int64_t learnt = b->learnt, refused = b->refused;
		taken = pass(b, c);
		if (taken < 0)
			break;
		/* said after the first pass (what a restart found left to do), then when one did anything */
		if (first || taken)
			log_info("serve", "Xet identities: pass over: %lld computed, %lld refused (upstream states "
				 "another Xet hash), %lld bytes read in all", (long long)(b->learnt - learnt),
				 (long long)(b->refused - refused), (long long)b->bytes);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += REST_S;
		if (rest_until(b, &until))
			break;
	}
out:
	catalog_free(&c);
	free(err);
	free(path);
	return NULL;
}

int mirror_xet_backfill_start(struct mirror_data *d, int64_t rate, struct mirror_xet_backfill **out)
{
	struct mirror_xet_backfill *b;
	pthread_condattr_t ca;
	int r;

	if (rate <= 0 || store_in_bucket(d->store))
		return 0;
	b = xcalloc(1, sizeof(*b));
	b->d = d;
	b->rate = rate;
	b->bad = xcalloc(BAD_MAX, sizeof(*b->bad));
	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	r = pthread_create(&b->thread, NULL, run, b);
	if (r) {
		pthread_cond_destroy(&b->cv);
		pthread_mutex_destroy(&b->mu);
		free(b->bad);
		free(b);
		return -r;
	}
	*out = b;
	return 0;
}

void mirror_xet_backfill_stop(struct mirror_xet_backfill **bp)
{
	struct mirror_xet_backfill *b = bp ? *bp : NULL;

	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	b->stop = true;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
	pthread_join(b->thread, NULL);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b->bad);
	free(b);
	*bp = NULL;
}
