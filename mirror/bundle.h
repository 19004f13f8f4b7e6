/*
 * bundle.h - air-gapped bundles: repositories' snapshots (their refs, files and metadata) and the
 * contents they name, in one tar archive (libarchive), to carry into a network without internet.
 *
 * The archive holds manifest.json first (the repositories, their snapshots and refs, each file's
 * path, size and hashes, and the list of contents), then blobs/<sha256> for each content. Import
 * reads every header before it stores anything and refuses an archive with anything but regular
 * files, a path other than manifest.json and blobs/<a sha256 the manifest names>, an entry twice,
 * or a size the manifest does not say: nothing enters the store then. Each content is verified
 * against its sha256 as it is stored (the store publishes only verified bytes), contents already
 * held are skipped (an interrupted import goes on where it stopped), and only once every content
 * named is in does the catalog record the repositories and their snapshots (each ref's snapshot in
 * a transaction of its own). Torrents are made again afterwards: they are deterministic, so the
 * info-hashes are the exporting mirror's.
 */
#ifndef HM_MIRROR_BUNDLE_H
#define HM_MIRROR_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct mirror_data;
struct hub_spec;

struct mirror_bundle_report {
	int64_t repos, snapshots, blobs;
	int64_t blobs_omitted;    /* export --since: contents listed but left out (the far side has them) */
	int64_t volumes;          /* export: files written */
	int64_t bytes;            /* of the contents written (export) or stored (import) */
	int64_t blobs_skipped;    /* import: contents the store already held (the archive's copy hashed too) */
	int64_t torrents_made;    /* import */
	int64_t options_kept;     /* import: tracked repos whose own options stayed, the bundle's left out */
	int64_t options_dropped;  /* import: new repos whose bundle options (open, preheat, globs,
				   * guards) were left out (keep_options takes them) */
};

struct mirror_progress;

struct mirror_bundle_opts {
	int64_t volume_size;      /* cut the archive into out.001, out.002, ... of this many bytes; 0: one file */
	const char *since_bundle; /* an earlier bundle (its first volume): leave out the contents it lists */
	int64_t since_time;       /* else, when > 0: leave out the contents stored here before this time */
	const struct mirror_progress *progress; /* contents and bytes written of the total; may be NULL */
};

/* Write the followed snapshot and every ref's snapshot of the n tracked repos to out (a tar; zstd
 * compressed when out ends in .zst), through temporary files renamed at the end. opt may be NULL.
 * An incremental bundle (opt's since) lists every content in its manifest, and "since" says against
 * what it was made, but carries only the others: importing it needs the left-out ones in the store.
 * Returns 0 or an error with *errmsg. */
int mirror_bundle_export(struct mirror_data *d, const struct hub_spec *specs, size_t n, const char *out,
			 const struct mirror_bundle_opts *opt, struct mirror_bundle_report *rep, char **errmsg);

/* 1, 2, ... when path is a volume (ends in .001, .002, ...), else 0. Import takes a bundle's first
 * volume and reads the others after it. */
int mirror_bundle_volume(const char *path);

/* Read the bundle at path into d (whose sync lock the caller holds). Returns 0 or an error with
 * *errmsg (the store untouched when the archive itself is refused).
 *
 * A bundle is the exporting operator's word, not this one's: a content it names but does not carry
 * must be in the store and one that any of its repositories may name (public, or fetched by that
 * repository: catalog_blob_public_or_own), or the archive is refused; only contents the archive
 * carried, whose bytes hashed to their names here, count as fetched by its repositories. Access
 * options (open, preheat, include/exclude globs, guards) stay this mirror's: a tracked repository
 * keeps its own, a new one gets none unless keep_options (rep says how many of each). progress, if
 * not NULL, hears of each content read (of those the archive carries). */
int mirror_bundle_import(struct mirror_data *d, const char *path, bool keep_options, struct mirror_bundle_report *rep,
			 const struct mirror_progress *progress, char **errmsg);

/* The manifest of the archive in bytes (a tar, compressed or not), read and checked as import does
 * before anything is written: its size and expansion bounded, its JSON parsed, every name, path,
 * hash and reference checked. Returns 0 and *manifest (the caller's), or an error with *errmsg.
 * For the fuzz harness (tests/fuzz/fuzz-bundle.c); import reads its files with the same code. */
int mirror_bundle_read_manifest(const void *bytes, size_t len, json_t **manifest, char **errmsg);

#endif
