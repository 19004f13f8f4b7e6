/*
 * bundle-int.h - what bundle.c (export, volumes) and bundle-import.c share; nothing outside mirror/
 * includes it.
 */
#ifndef HM_MIRROR_BUNDLE_INT_H
#define HM_MIRROR_BUNDLE_INT_H

#include <stddef.h>

#include <archive.h>
#include <jansson.h>

#define MANIFEST "manifest.json"
#define MANIFEST_MAX ((int64_t)256 << 20)  /* about a million files; its parse takes ~4x */
/* A manifest compresses some 5-20x; one that expands more than this over what the archive's
 * compressed stream has given so far (past the first MiB) is a decompression bomb: refused before
 * its text, let alone its parse, takes the memory it asks for */
#define MANIFEST_RATIO 200
#define CHUNK (1 << 20)

/* Put a formatted message into *errmsg (when it is empty) and return r. */
int bundle__fail(char **errmsg, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The files of the bundle at path: FILE alone, or its volumes FILE.001, FILE.002, ... in order
 * (NULL-terminated, bundle__files_free), or NULL with *errmsg. */
char **bundle__files(const char *path, char **errmsg);
void bundle__files_free(char **names);
/* How many volumes FILE.001, FILE.002, ... there are. */
size_t bundle__volumes_there(const char *path);

/* The bundle at path (all its volumes) opened for reading, or NULL with *errmsg (bundle-import.c). */
struct archive *bundle__open(const char *path, char **errmsg);
/* Read its manifest, the archive's first entry, bounded and checked; blobs gets what it names. */
int bundle__read_manifest(struct archive *a, json_t **manifest, json_t *blobs, char **errmsg);

#endif
