/*
 * fuzz-bundle.c - mirror/bundle.c, a bundle's manifest as import reads it (from an archive anyone may
 * hand the operator). The input is the text of manifest.json, put as the first entry of a tar: a
 * manifest that is accepted names only repos whose spec checks, snapshots whose commit and files
 * whose hashes are lowercase hex of their length, paths that path_check passes, files whose content
 * the manifest lists at the same size, and refs that name one of the repo's snapshots. A refused one
 * says why.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>

#include "base/hex.h"
#include "base/path.h"
#include "hub/hub.h"
#include "mirror/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool hex_of(json_t *v, size_t n)
{
	return json_is_string(v) && json_string_length(v) == n && hex_is_lower(json_string_value(v), n);
}

static void check_accepted(json_t *m)
{
	json_t *blobs = json_object_get(m, "blobs"), *repos = json_object_get(m, "repos"), *r, *b, *s, *f;
	json_t *sizes = json_object();
	size_t i, j, k;

	json_array_foreach(blobs, i, b) {
		if (!hex_of(json_object_get(b, "sha256"), 64) || json_integer_value(json_object_get(b, "size")) < 0)
			abort();
		json_object_set(sizes, json_string_value(json_object_get(b, "sha256")), json_object_get(b, "size"));
	}
	json_array_foreach(repos, i, r) {
		const char *hub = json_string_value(json_object_get(r, "hub"));
		const char *name = json_string_value(json_object_get(r, "name"));
		json_t *commits = json_object();
		enum hub_kind kind;
		if (!hub || !name || hub_kind_parse(hub, &kind) || hub_check_name(kind, name) || strstr(name, ".."))
			abort();
		json_array_foreach(json_object_get(r, "snapshots"), j, s) {
			if (!hex_of(json_object_get(s, "commit"), 40))
				abort();
			json_object_set_new(commits, json_string_value(json_object_get(s, "commit")), json_true());
			json_array_foreach(json_object_get(s, "files"), k, f) {
				json_t *p = json_object_get(f, "path"), *sha = json_object_get(f, "sha256"), *want;
				if (!json_is_string(p) || path_check(json_string_value(p), json_string_length(p)) ||
				    !hex_of(sha, 64))
					abort();
				want = json_object_get(sizes, json_string_value(sha));
				if (!want || json_integer_value(want) != json_integer_value(json_object_get(f, "size")))
					abort();
			}
		}
		json_array_foreach(json_object_get(r, "refs"), j, s)
			if (!json_object_get(commits, json_string_value(json_object_get(s, "commit"))))
				abort();
		json_decref(commits);
	}
	json_decref(sizes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cap = size + 4096, used = 0;
	void *tar = malloc(cap);
	struct archive *w = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	json_t *m = NULL;
	char *err = NULL;
	int r;

	archive_write_set_format_pax_restricted(w);
	archive_write_set_bytes_in_last_block(w, 1);
	if (archive_write_open_memory(w, tar, cap, &used) != ARCHIVE_OK)
		abort();
	archive_entry_set_pathname(e, "manifest.json");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)size);
	if (archive_write_header(w, e) != ARCHIVE_OK || (size && archive_write_data(w, data, size) != (la_ssize_t)size))
		abort();
	archive_write_close(w);
	archive_write_free(w);
	archive_entry_free(e);

	r = mirror_bundle_read_manifest(tar, used, &m, &err);
	if (r == 0) {
		if (!m || err)
			abort();
		check_accepted(m);
	} else if (m || !err || !*err) {
		abort(); /* refused: nothing handed back, and a reason */
	}
	json_decref(m);
	free(err);
	free(tar);
	return 0;
}
