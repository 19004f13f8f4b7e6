/*
 * share.h - several mirrors on one bucket (docs/operations.md, section 8, "Several mirrors on one
 * bucket"). Each mirror has an id (the file mirror-id in its data directory, made the first time) and
 * writes the set of contents its catalog names, its live set, into the bucket (store/bucket.h:
 * mirrors/<id>/live) after each sync and at each gc. gc deletes from the bucket only what its own
 * catalog does not name, no mirror's live set names, and the bucket got before every live set was
 * written less the grace: a content another mirror put or took since its last live set is kept.
 */
#ifndef HM_MIRROR_SHARE_H
#define HM_MIRROR_SHARE_H

#include <stdbool.h>
#include <stdint.h>

struct mirror_data;

/* The mirror's id into out (32 lowercase hex): read from <data>/mirror-id, made there the first time.
 * Returns 0 or -errno. */
int mirror_share_id(struct mirror_data *d, char out[33]);

/* Write the mirror's live set to the bucket (without a bucket: 0, nothing done). Returns 0 or an error
 * (with *errmsg, malloc'd, if errmsg). */
int mirror_share_publish(struct mirror_data *d, char **errmsg);

/* The other mirrors' live sets, read from the bucket, and the cutoff store_reap_cutoff takes:
 * the earliest set's time (this mirror's own, just published, among them) less grace_s. */
struct mirror_share;
int mirror_share_load(struct mirror_data *d, int64_t grace_s, struct mirror_share **out, char **errmsg);
/* Does another mirror's live set name the content? */
bool mirror_share_names(const struct mirror_share *sh, const char *sha256);
int64_t mirror_share_cutoff(const struct mirror_share *sh);
/* How many mirrors wrote a live set besides this one. */
int mirror_share_others(const struct mirror_share *sh);
void mirror_share_free(struct mirror_share **sh);

#endif
