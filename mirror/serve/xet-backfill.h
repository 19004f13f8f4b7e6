/*
 * xet-backfill.h - serve's background job that computes the Xet identities the mirror lacks
 * (docs/protocols/xet.md, "Identities of older contents"): contents stored before the mirror kept
 * them, or by a writer that did not, are offered only over plain HTTP until theirs is known.
 *
 * One thread of its own (never the loop, never libuv's pool, which answers requests), at SCHED_IDLE
 * and the idle I/O class, with a catalog connection of its own: it takes the contents the catalog
 * knows no Xet hash for (catalog_xet_unknown) in sha256 order, reads each once at the rate the
 * operator set (SHA-256 and the identity in one read: store_xet_check), and records each as
 * it gets it (the identity file, the Xet hash and the dedup chunks; or, where upstream states
 * another Xet hash, a warning and nothing offered: mirror_xet_record). Resumable by
 * construction: what is recorded is not taken again, so a restart goes on where the last one
 * stopped. A pass that finds nothing left waits, then looks again.
 */
#ifndef HM_MIRROR_SERVE_XET_BACKFILL_H
#define HM_MIRROR_SERVE_XET_BACKFILL_H

#include <stdint.h>

struct mirror_data;
struct mirror_xet_backfill;

/* Start it over data d (borrowed: it outlives the job) at rate bytes/s (> 0). Not with a store in a
 * bucket (its contents would all come through the cache): *out stays NULL then. 0 or -errno. */
int mirror_xet_backfill_start(struct mirror_data *d, int64_t rate, struct mirror_xet_backfill **out);
/* Stop it (the read under way ends at its next megabyte) and wait for its thread. NULL-safe. */
void mirror_xet_backfill_stop(struct mirror_xet_backfill **b);

#endif
