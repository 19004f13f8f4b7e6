/*
 * bundle-import.c - importing an air-gapped bundle (mirror_bundle_import, mirror_bundle_read_manifest;
 * bundle.h): the manifest read and checked before any content, every content streamed out of the
 * archive into the store and verified, the snapshots recorded, their torrents made. bundle.c writes
 * bundles (export, volumes).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "bundle-int.h"
#include "gitobj.h"
#include "bundle.h"
#include "progress.h"
#include "catalog/catalog.h"
#include "data.h"
#include "hub/hub.h"
#include "store/store-xet.h"
#include "xet-record.h"
#include "store/store.h"
#include "torrents.h"

/* ---- import ------------------------------------------------------------------------------------ */

static bool is_hex(json_t *v, size_t n)
{
	return json_is_string(v) && hex_is_lower(json_string_value(v), n) && json_string_length(v) == n;
}

static bool str_or_null_ok(json_t *v)
{
	return !v || json_is_null(v) || json_is_string(v);
}

/* Check everything the manifest says before anything is written; blobs (sha256 -> size) is filled.
 * Returns NULL or what is wrong (malloc'd). */
/* A local repo's commit in a bundle (docs/uploads.md): is it the commit its id says, of the files its
 * snapshot lists? Its tree and commit are computed here (gitobj.h) and compared; NULL when they match,
 * else what is wrong. */
static char *local_commit_check(json_t *s, const char *name)
{
	json_t *m = json_object_get(s, "commit_meta"), *files = json_object_get(s, "files"), *f;
	const char *author = json_string_value(json_object_get(m, "author"));
	const char *msg = json_string_value(json_object_get(m, "message"));
	const char *raw = json_string_value(json_object_get(m, "raw"));
	json_t *parent = json_object_get(m, "parent");
	struct gitobj_file *g = xcalloc(json_array_size(files) + 1, sizeof(*g));
	char (*blob)[41] = xcalloc(json_array_size(files) + 1, sizeof(*blob)), tree[41], id[41], *text, *err = NULL;
	size_t i, len;

	if (!json_is_object(m) || !is_hex(json_object_get(m, "tree"), 40) ||
	    !(json_is_null(parent) || is_hex(parent, 40)) || !author || strchr(author, '\n') || !msg ||
	    !json_is_integer(json_object_get(m, "at")))
		err = xasprintf("%s: local commit %s has no commit record", name,
				json_string_value(json_object_get(s, "commit")));
	json_array_foreach(files, i, f) {
		const char *lfs = json_string_value(json_object_get(f, "lfs_oid"));
		const char *git = json_string_value(json_object_get(f, "git_oid"));
		char ptr[200];
		if (lfs)
			gitobj_id("blob", ptr,
				  gitobj_lfs_pointer(lfs, json_integer_value(json_object_get(f, "size")), ptr,
						     sizeof(ptr)),
				  blob[i]);
		else
			snprintf(blob[i], sizeof(blob[i]), "%s", git ? git : "");
		g[i] = (struct gitobj_file){ json_string_value(json_object_get(f, "path")), blob[i] };
	}
	if (!err && (gitobj_tree_id(g, json_array_size(files), tree) ||
		     strcmp(tree, json_string_value(json_object_get(m, "tree")))))
		err = xasprintf("%s: commit %s does not hold the files it lists", name,
				json_string_value(json_object_get(s, "commit")));
	if (!err && raw) {
		/* a pushed commit: its object as git wrote it, of this tree and parent */
		struct gitobj_commit pc;
		const char *why;
		if (gitobj_commit_parse(raw, strlen(raw), &pc, &why) || strcmp(pc.tree, tree) ||
		    strcmp(pc.parent, json_is_null(parent) ? "" : json_string_value(parent)))
			err = xasprintf("%s: commit %s's object is not of its record", name,
					json_string_value(json_object_get(s, "commit")));
		else
			gitobj_id("commit", raw, strlen(raw), id);
		gitobj_commit_release(&pc);
	} else if (!err) {
		text = gitobj_commit_text(tree, json_string_value(parent), author,
					  json_integer_value(json_object_get(m, "at")), msg, &len);
		gitobj_id("commit", text, len, id);
		free(text);
	}
	if (!err) {
		if (strcmp(id, json_string_value(json_object_get(s, "commit"))))
			err = xasprintf("%s: commit %s is not what its record makes (%s)", name,
					json_string_value(json_object_get(s, "commit")), id);
	}
	free(g);
	free(blob);
	return err;
}

static char *manifest_check(json_t *m, json_t *blobs)
{
	json_t *repos = json_object_get(m, "repos"), *bl = json_object_get(m, "blobs"), *r, *b;
	const char *format = json_string_value(json_object_get(m, "format"));
	size_t i;

	if (!json_is_object(m) || !format || strcmp(format, "hubmirror-bundle"))
		return xstrdup("not a hubmirror bundle manifest");
	if (json_integer_value(json_object_get(m, "version")) != 1)
		return xstrdup("a bundle version this hubmirror does not know");
	if (!json_is_array(repos) || !json_is_array(bl))
		return xstrdup("the manifest lacks repos or blobs");
	json_array_foreach(bl, i, b) {
		json_t *sz = json_object_get(b, "size");
		if (!is_hex(json_object_get(b, "sha256"), 64) || !json_is_integer(sz) || json_integer_value(sz) < 0)
			return xasprintf("blob entry %zu is malformed", i);
		if (json_object_get(blobs, json_string_value(json_object_get(b, "sha256"))))
			return xasprintf("blob %s is listed twice", json_string_value(json_object_get(b, "sha256")));
		json_object_set(blobs, json_string_value(json_object_get(b, "sha256")), sz);
	}
	json_array_foreach(repos, i, r) {
		const char *hub = json_string_value(json_object_get(r, "hub")),
			   *type = json_string_value(json_object_get(r, "type"));
		const char *name = json_string_value(json_object_get(r, "name"));
		const char *follow = json_string_value(json_object_get(r, "follow_rev"));
		json_t *snaps = json_object_get(r, "snapshots"), *refs = json_object_get(r, "refs"), *s, *f, *g;
		json_t *commits = json_object();
		enum hub_kind k;
		size_t j, l;
		char *err = NULL;

		if (!hub || !type || !name || !follow || hub_kind_parse(hub, &k) ||
		    (strcmp(type, "model") && strcmp(type, "dataset")) || hub_check_name(k, name) ||
		    hub_check_revision(follow) || !json_is_array(snaps) || !json_is_array(refs) ||
		    !json_is_array(json_object_get(r, "include")) || !json_is_array(json_object_get(r, "exclude")) ||
		    !json_is_object(json_object_get(r, "options")) ||
		    !str_or_null_ok(json_object_get(r, "refs_policy"))) {
			json_decref(commits);
			return xasprintf("repo entry %zu is malformed", i);
		}
		json_array_foreach(json_object_get(r, "include"), j, g)
			if (!json_is_string(g))
				err = xasprintf("%s: a glob is not a string", name);
		json_array_foreach(json_object_get(r, "exclude"), j, g)
			if (!err && !json_is_string(g))
				err = xasprintf("%s: a glob is not a string", name);
		json_array_foreach(snaps, j, s) {
			if (err)
				break;
			if (!is_hex(json_object_get(s, "commit"), 40) || !json_is_array(json_object_get(s, "files"))) {
				err = xasprintf("%s: snapshot %zu is malformed", name, j);
				break;
			}
			json_object_set_new(commits, json_string_value(json_object_get(s, "commit")), json_true());
			if (json_is_true(json_object_get(r, "local")) && (err = local_commit_check(s, name)))
				break;
			json_array_foreach(json_object_get(s, "files"), l, f) {
				json_t *p = json_object_get(f, "path"), *sz = json_object_get(f, "size");
				json_t *sha = json_object_get(f, "sha256"), *want;
				json_t *git = json_object_get(f, "git_oid"), *lfs = json_object_get(f, "lfs_oid");
				if (!json_is_string(p) || path_check(json_string_value(p), json_string_length(p)) ||
				    !json_is_integer(sz) || !is_hex(sha, 64) ||
				    !(json_is_null(git) || is_hex(git, 40)) ||
				    !(json_is_null(lfs) || is_hex(lfs, 64))) {
					err = xasprintf("%s: file %zu of snapshot %zu is malformed or its path unsafe",
							name, l, j);
					break;
				}
				want = json_object_get(blobs, json_string_value(sha));
				if (!want || json_integer_value(want) != json_integer_value(sz)) {
					err = xasprintf("%s: %s names content the bundle does not list", name,
							json_string_value(p));
					break;
				}
			}
		}
		json_array_foreach(refs, j, s) {
			const char *kind = json_string_value(json_object_get(s, "kind"));
			const char *rn = json_string_value(json_object_get(s, "name"));
			if (err)
				break;
			if (!rn || hub_check_revision(rn) || !kind ||
			    (strcmp(kind, "branch") && strcmp(kind, "tag") && strcmp(kind, "pr") &&
			     strcmp(kind, "convert")) ||
			    !is_hex(json_object_get(s, "commit"), 40) ||
			    !json_object_get(commits, json_string_value(json_object_get(s, "commit"))))
				err = xasprintf("%s: ref %zu is malformed or names no snapshot of the bundle", name, j);
		}
		json_decref(commits);
		if (err)
			return err;
	}
	return NULL;
}

/* The first entry, manifest.json, read whole and checked. Returns 0 or an error (said). */
int bundle__read_manifest(struct archive *a, json_t **manifest, json_t *blobs, char **errmsg)
{
	struct archive_entry *e;
	char *text, *why;
	int64_t size;
	json_error_t jerr;

	if (archive_read_next_header(a, &e) != ARCHIVE_OK)
		return bundle__fail(errmsg, HM_ERR_JSON, "not a readable tar archive: %s", archive_error_string(a));
	size = archive_entry_size(e);
	if (strcmp(archive_entry_pathname(e), MANIFEST) || archive_entry_filetype(e) != AE_IFREG ||
	    !archive_entry_size_is_set(e) || size <= 0 || size > MANIFEST_MAX)
		return bundle__fail(errmsg, HM_ERR_JSON, "the archive does not start with its %s", MANIFEST);
	{
		/* read in steps, the buffer growing with what came, and the expansion watched */
		size_t cap = (size_t)(size < (1 << 20) ? size : (1 << 20)), got = 0;
		text = xmalloc(cap);
		while ((int64_t)got < size) {
			la_ssize_t n;
			int64_t raw;
			if (got == cap) {
				cap = (int64_t)cap * 2 > size ? (size_t)size : cap * 2;
				text = xrealloc(text, cap);
			}
			n = archive_read_data(a, text + got, cap - got);
			if (n <= 0) {
				free(text);
				return bundle__fail(errmsg, HM_ERR_JSON, "%s is cut short", MANIFEST);
			}
			got += (size_t)n;
			raw = archive_filter_bytes(a, -1);
			if (got > (1 << 20) && raw > 0 && (int64_t)got / raw > MANIFEST_RATIO) {
				free(text);
				return bundle__fail(errmsg, HM_ERR_JSON,
						    "%s expands %lld times over its compressed bytes (a "
						    "decompression bomb?): refused",
						    MANIFEST, (long long)((int64_t)got / raw));
			}
		}
	}
	*manifest = json_loadb(text, (size_t)size, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!*manifest)
		return bundle__fail(errmsg, HM_ERR_JSON, "%s: %s (line %d)", MANIFEST, jerr.text, jerr.line);
	if ((why = manifest_check(*manifest, blobs))) {
		bundle__fail(errmsg, HM_ERR_JSON, "%s: %s", MANIFEST, why);
		free(why);
		return HM_ERR_JSON;
	}
	return 0;
}

int mirror_bundle_read_manifest(const void *bytes, size_t len, json_t **manifest, char **errmsg)
{
	struct archive *a = archive_read_new();
	json_t *blobs = json_object();
	int r;

	*manifest = NULL;
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_memory(a, bytes, len) != ARCHIVE_OK)
		r = bundle__fail(errmsg, HM_ERR_JSON, "not a readable archive: %s", archive_error_string(a));
	else
		r = bundle__read_manifest(a, manifest, blobs, errmsg);
	if (r && *manifest) {
		json_decref(*manifest);
		*manifest = NULL;
	}
	archive_read_free(a);
	json_decref(blobs);
	return r;
}

struct archive *bundle__open(const char *path, char **errmsg)
{
	char **names = bundle__files(path, errmsg);
	struct archive *a;

	if (!names)
		return NULL;
	a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	/* volumes are read as one stream, in order */
	if (archive_read_open_filenames(a, (const char **)names, CHUNK) != ARCHIVE_OK) {
		bundle__fail(errmsg, -EIO, "cannot open '%s': %s", path, archive_error_string(a));
		archive_read_free(a);
		a = NULL;
	}
	bundle__files_free(names);
	return a;
}

/* The entry is blobs/<a sha256 the manifest names>, a regular file of the size it says, not seen
 * before. Returns the sha256 (borrowed from the entry) or NULL after saying what is wrong. */
static const char *entry_blob(struct archive_entry *e, json_t *blobs, json_t *seen, char **errmsg)
{
	const char *name = archive_entry_pathname(e), *sha;
	json_t *want;

	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) || archive_entry_symlink(e)) {
		bundle__fail(errmsg, HM_ERR_PATH_UNSAFE,
			     "entry '%s' is not a regular file (links and devices are refused)", name ? name : "?");
		return NULL;
	}
	sha = name ? skip_prefix(name, "blobs/") : NULL;
	if (!sha || !hex_is_lower(sha, 64) || strlen(sha) != 64) {
		bundle__fail(errmsg, HM_ERR_PATH_UNSAFE, "entry '%s' is not one the manifest names", name ? name : "?");
		return NULL;
	}
	want = json_object_get(blobs, sha);
	if (!want || json_object_get(seen, sha)) {
		bundle__fail(errmsg, HM_ERR_PATH_UNSAFE, "entry '%s' is %s", name,
			     want ? "there twice" : "not in the manifest");
		return NULL;
	}
	if (!archive_entry_size_is_set(e) || archive_entry_size(e) != json_integer_value(want)) {
		bundle__fail(errmsg, HM_ERR_SIZE_MISMATCH, "entry '%s' is not the size the manifest says", name);
		return NULL;
	}
	json_object_set_new(seen, sha, json_true());
	return sha;
}

/* Store one entry's bytes, verified against sha256. Returns 0 or an error (said). */
static int store_blob(struct mirror_data *d, struct archive *a, const char *sha256, int64_t size, char *buf,
		      char **errmsg)
{
	struct store_expect ex = { sha256, NULL, size };
	struct store_writer *w = NULL;
	la_ssize_t got;
	int r = store_writer_new(d->store, &ex, false, &w);

	if (r)
		return bundle__fail(errmsg, r, "store: %s", err_str(r));
	store_writer_stream(w); /* (bigger than the bucket's cache: into it, not to disk) */
	while ((got = archive_read_data(a, buf, CHUNK)) > 0)
		if ((r = store_writer_write(w, buf, (size_t)got)) != 0) {
			store_writer_abort(&w, false);
			return bundle__fail(errmsg, r, "content %s: %s", sha256, err_str(r));
		}
	if (got < 0) {
		store_writer_abort(&w, false);
		return bundle__fail(errmsg, -EIO, "content %s: %s", sha256, archive_error_string(a));
	}
	r = store_writer_commit(&w, NULL);
	if (r)
		return bundle__fail(errmsg, r, "content %s does not hash to its name (%s): the bundle is damaged",
				    sha256, err_str(r));
	mirror_xet_record(d->store, d->catalog, sha256);   /* listings say its Xet hash, as a sync's */
	return 0;
}

/* The archive's bytes of an entry whose content the store holds already: hashed all the same, for
 * it to count as carried (a bundle must not claim a content by its name alone). 0 when they hash to
 * sha256, else an error (said). */
static int hash_entry(struct archive *a, const char *sha256, char *buf, char **errmsg)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[65];
	la_ssize_t got = -1;
	int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);

	while (ok && (got = archive_read_data(a, buf, CHUNK)) > 0)
		ok = EVP_DigestUpdate(ctx, buf, (size_t)got);
	ok = ok && got == 0 && EVP_DigestFinal_ex(ctx, md, &mdlen) && mdlen == 32;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return bundle__fail(errmsg, -EIO, "content %s: %s", sha256,
				    archive_error_string(a) ? archive_error_string(a) : "cannot hash");
	hex_encode(md, 32, hex);
	if (strcmp(hex, sha256))
		return bundle__fail(errmsg, HM_ERR_HASH_MISMATCH,
				    "content %s does not hash to its name: the bundle is damaged, or "
				    "claims a content it does not hold",
				    sha256);
	return 0;
}

/* Every content a repo entry of the manifest names that the archive does not carry (seen lacks it)
 * must be one this mirror holds and that repository may name: public, or fetched by it already (as
 * sync's rule for listings has it); else a bundle of a few KB could publish a gated repository's
 * content under an open name. 0, or an error (said). */
static int check_named(struct mirror_data *d, json_t *manifest, json_t *seen, char **errmsg)
{
	json_t *r, *sn, *f;
	size_t i, j, k;

	json_array_foreach(json_object_get(manifest, "repos"), i, r) {
		const char *hub = json_string_value(json_object_get(r, "hub")),
			   *type = json_string_value(json_object_get(r, "type"));
		const char *name = json_string_value(json_object_get(r, "name"));
		struct catalog_repo cr = { 0 };
		int64_t id = catalog_repo_get(d->catalog, hub, type, name, &cr) ? 0 : cr.id;
		catalog_repo_release(&cr);
		json_array_foreach(json_object_get(r, "snapshots"), j, sn)
			json_array_foreach(json_object_get(sn, "files"), k, f) {
				const char *sha = json_string_value(json_object_get(f, "sha256"));
				if (!sha || json_object_get(seen, sha) ||
				    catalog_blob_public_or_own(d->catalog, sha, id, NULL, NULL))
					continue;
				return bundle__fail(
					errmsg, HM_ERR_PATH_UNSAFE,
					"the bundle names content %s for %s:%s%s (%s) without "
					"carrying it, and this mirror holds it only for repositories that may not "
					"share it: refused",
					sha, hub, strcmp(type, "dataset") ? "" : "datasets/", name,
					json_string_value(json_object_get(f, "path")));
			}
	}
	return 0;
}

/* A snapshot of repo entry r by commit: its files for catalog_snapshot_commit. */
static struct catalog_file *snapshot_files(json_t *r, const char *commit, size_t *n)
{
	json_t *s, *f;
	size_t i, j;

	json_array_foreach(json_object_get(r, "snapshots"), i, s) {
		struct catalog_file *out;
		json_t *files = json_object_get(s, "files");
		if (strcmp(json_string_value(json_object_get(s, "commit")), commit))
			continue;
		*n = json_array_size(files);
		out = xcalloc(*n ? *n : 1, sizeof(*out));
		json_array_foreach(files, j, f) {
			out[j].path = json_string_value(json_object_get(f, "path"));
			out[j].size = json_integer_value(json_object_get(f, "size"));
			out[j].sha256 = json_string_value(json_object_get(f, "sha256"));
			out[j].git_oid = json_string_value(json_object_get(f, "git_oid"));
			out[j].lfs_oid = json_string_value(json_object_get(f, "lfs_oid"));
		}
		return out;
	}
	*n = 0;
	return NULL;
}

/* The globs and options repo entry r is to be tracked with, malloc'd (NULL: none). Access options are
 * the importing operator's (see bundle.h): a repo tracked here keeps its own, a new one takes the
 * bundle's only with keep_options; rep counts both. */
static void repo_options(struct catalog *cat, json_t *r, bool keep_options, struct mirror_bundle_report *rep,
			 char **inc, char **exc, char **opt)
{
	const char *hub = json_string_value(json_object_get(r, "hub"));
	const char *type = json_string_value(json_object_get(r, "type"));
	const char *name = json_string_value(json_object_get(r, "name"));
	struct catalog_repo cr = { 0 };

	if (!catalog_repo_get(cat, hub, type, name, &cr)) {
		*inc = xstrdup(cr.include_globs ? cr.include_globs : "[]");
		*exc = xstrdup(cr.exclude_globs ? cr.exclude_globs : "[]");
		*opt = xstrdup(cr.options ? cr.options : "{}");
		rep->options_kept++;
	} else if (keep_options) {
		*inc = json_dumps(json_object_get(r, "include"), JSON_COMPACT);
		*exc = json_dumps(json_object_get(r, "exclude"), JSON_COMPACT);
		*opt = json_dumps(json_object_get(r, "options"), JSON_COMPACT | JSON_SORT_KEYS);
	} else if (json_object_size(json_object_get(r, "options")) || json_array_size(json_object_get(r, "include")) ||
		   json_array_size(json_object_get(r, "exclude"))) {
		rep->options_dropped++;
	}
	catalog_repo_release(&cr);
}

/* Record the snapshot each ref of repo entry r points at, for cr (tracked as r says). Returns 0 or an
 * error (said). */
static int record_refs(struct catalog *cat, json_t *r, const struct catalog_repo *cr, char **errmsg)
{
	const char *name = json_string_value(json_object_get(r, "name"));
	char *sel = catalog_repo_selection(cr);
	json_t *ref;
	size_t i;
	int e = 0;

	json_array_foreach(json_object_get(r, "refs"), i, ref) {
		const char *commit = json_string_value(json_object_get(ref, "commit"));
		const char *kind = json_string_value(json_object_get(ref, "kind"));
		size_t n = 0;
		struct catalog_file *files = snapshot_files(r, commit, &n);
		e = catalog_snapshot_commit(cat, cr->id, commit, json_string_value(json_object_get(ref, "name")),
					    !strcmp(kind, "tag"), sel, files, n);
		free(files);
		if (e) {
			e = bundle__fail(errmsg, HM_ERR_SQLITE, "%s: catalog: %s", name, catalog_errmsg(cat));
			break;
		}
	}
	free(sel);
	return e;
}

/* Each snapshot's time as the exporting mirror recorded it (its answers show it), for repo repo_id.
 * Returns 0 or an error (said). */
static int record_synced_at(struct catalog *cat, json_t *r, int64_t repo_id, char **errmsg)
{
	json_t *sn;
	size_t i;

	json_array_foreach(json_object_get(r, "snapshots"), i, sn)
		if (json_is_integer(json_object_get(sn, "synced_at")) &&
		    catalog_snapshot_set_synced_at(cat, repo_id, json_string_value(json_object_get(sn, "commit")),
						   json_integer_value(json_object_get(sn, "synced_at"))))
			return bundle__fail(errmsg, HM_ERR_SQLITE, "%s: catalog: %s",
					    json_string_value(json_object_get(r, "name")), catalog_errmsg(cat));
	return 0;
}

/* The repo's own contents, for the rule on naming content (docs/security.md): only what the archive
 * carried and what hashed to its name here, never what it merely named. */
static void record_carried(struct catalog *cat, json_t *r, int64_t repo_id, json_t *carried)
{
	json_t *sn, *f;
	size_t i, j;

	json_array_foreach(json_object_get(r, "snapshots"), i, sn)
		json_array_foreach(json_object_get(sn, "files"), j, f) {
			const char *sha = json_string_value(json_object_get(f, "sha256"));
			if (sha && json_object_get(carried, sha))
				catalog_blob_fetched(cat, sha, repo_id);
		}
}

/* v's integer value, or dflt when v is no integer. */
static json_int_t int_or(json_t *v, json_int_t dflt)
{
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* v as compact JSON text (malloc'd), NULL when v is absent or null. */
static char *text_or_null(json_t *v)
{
	return json_is_null(v) || !v ? NULL : json_dumps(v, JSON_COMPACT);
}

/* The metadata of a repo entry's meta into *m (borrowing from meta), its card data and tags as text
 * (malloc'd, NULL when absent); the source is "bundle". */
static void meta_from_bundle(json_t *meta, struct catalog_repo_meta *m, char **card, char **tags)
{
	json_int_t tier = int_or(json_object_get(meta, "tier"), 0);

	memset(m, 0, sizeof(*m));
	m->gated = json_string_value(json_object_get(meta, "gated"));
	m->private_ = (int)int_or(json_object_get(meta, "private"), -1);
	*card = text_or_null(json_object_get(meta, "card_data"));
	*tags = text_or_null(json_object_get(meta, "tags"));
	m->card_data = *card;
	m->tags = *tags;
	m->pipeline_tag = json_string_value(json_object_get(meta, "pipeline_tag"));
	m->library_name = json_string_value(json_object_get(meta, "library_name"));
	m->license = json_string_value(json_object_get(meta, "license"));
	m->downloads = int_or(json_object_get(meta, "downloads"), -1);
	m->likes = int_or(json_object_get(meta, "likes"), -1);
	m->last_modified = json_string_value(json_object_get(meta, "last_modified"));
	m->upstream_name = json_string_value(json_object_get(meta, "upstream_name"));
	/* a bundle puts the importer one tier below the mirror that wrote it (taken as tier 1 when it did not say) */
	m->tier = tier > 0 && tier < 100 ? (int)tier + 1 : 2;
	m->upstream = "bundle";
	m->created_at = int_or(json_object_get(meta, "created_at"), 0);
	m->origin_checked_at = int_or(json_object_get(meta, "origin_checked_at"), 0);
}

/* One commit of a local repo entry r, recorded for repo_id. */
static int local_record(struct catalog *cat, json_t *r, json_t *s, int64_t repo_id)
{
	json_t *m = json_object_get(s, "commit_meta");
	const char *commit = json_string_value(json_object_get(s, "commit"));
	struct catalog_commit cm = {commit,
				    json_string_value(json_object_get(m, "parent")),
				    json_string_value(json_object_get(m, "tree")),
				    json_string_value(json_object_get(m, "author")),
				    json_integer_value(json_object_get(m, "at")),
				    json_string_value(json_object_get(m, "message")),
				    json_string_value(json_object_get(m, "raw"))};
	size_t n = 0;
	struct catalog_file *files = snapshot_files(r, commit, &n);
	int e = catalog_local_record(cat, repo_id, &cm, files, n);

	free(files);
	return e;
}

/* A repo of another mirror's local namespace (docs/uploads.md), made the same here: local, its commits
 * (checked by manifest_check: each is what its id says) recorded parents first, then its refs. */
static int import_local(struct mirror_data *d, json_t *r, json_t *carried, struct mirror_bundle_report *rep,
			char **errmsg)
{
	const char *hub = json_string_value(json_object_get(r, "hub")),
		   *type = json_string_value(json_object_get(r, "type"));
	const char *name = json_string_value(json_object_get(r, "name"));
	json_t *snaps = json_object_get(r, "snapshots"), *done = json_object(), *s;
	struct catalog_repo cr = { 0 };
	bool more = true;
	size_t i;
	int e = catalog_repo_get(d->catalog, hub, type, name, &cr);

	if (e == HM_ERR_NOT_FOUND &&
	    !(e = catalog_local_create(d->catalog, hub, type, name,
				       json_integer_value(json_object_get(json_object_get(r, "meta"), "private")) == 1,
				       NULL, NULL, NULL, 0, NULL)))
		e = catalog_repo_get(d->catalog, hub, type, name, &cr);
	if (!e && !cr.local)
		e = bundle__fail(errmsg, HM_ERR_EXISTS, "%s: a mirrored repository of that name is here", name);
	while (!e && more) {
		more = false;
		json_array_foreach(snaps, i, s) {
			const char *c = json_string_value(json_object_get(s, "commit"));
			const char *p = json_string_value(json_object_get(json_object_get(s, "commit_meta"), "parent"));
			struct catalog_commit have;
			if (json_object_get(done, c) || (p && !json_object_get(done, p) &&
							 catalog_commit_get(d->catalog, cr.id, p, &have)))
				continue;
			if (p && !json_object_get(done, p))
				catalog_commit_release(&have);
			if ((e = local_record(d->catalog, r, s, cr.id))) {
				e = bundle__fail(errmsg, HM_ERR_SQLITE, "%s: catalog: %s", name,
						 catalog_errmsg(d->catalog));
				break;
			}
			json_object_set_new(done, c, json_true());
			more = true;
		}
	}
	if (!e && json_object_size(done) < json_array_size(snaps))
		e = bundle__fail(errmsg, HM_ERR_NOT_FOUND, "%s: a commit's parent is neither in the bundle nor here: "
				 "import the bundle this one extends first", name);
	if (!e && !(e = record_refs(d->catalog, r, &cr, errmsg))) {
		record_carried(d->catalog, r, cr.id, carried);
		rep->repos++;
		rep->snapshots += (int64_t)json_array_size(snaps);
	}
	json_decref(done);
	catalog_repo_release(&cr);
	return e;
}

/* Track repo entry r and record its snapshots and refs. Returns 0 or an error (said). */
static int import_repo(struct mirror_data *d, json_t *r, json_t *carried, bool keep_options,
		       struct mirror_bundle_report *rep, char **errmsg)
{
	const char *hub = json_string_value(json_object_get(r, "hub"));
	const char *type = json_string_value(json_object_get(r, "type"));
	const char *name = json_string_value(json_object_get(r, "name"));
	const char *policy = json_string_value(json_object_get(r, "refs_policy"));
	char *inc = NULL, *exc = NULL, *opt = NULL, *card = NULL, *tags = NULL;
	struct catalog_repo cr = { 0 };
	struct catalog_repo_meta m;
	int e;

	if (json_is_true(json_object_get(r, "local")))
		return import_local(d, r, carried, rep, errmsg);
	repo_options(d->catalog, r, keep_options, rep, &inc, &exc, &opt);
	e = catalog_repo_add(d->catalog, hub, type, name, json_string_value(json_object_get(r, "follow_rev")), inc, exc,
			     opt, NULL);
	if (!e && policy)
		e = catalog_repo_set_refs(d->catalog, hub, type, name, policy);
	if (!e)
		e = catalog_repo_get(d->catalog, hub, type, name, &cr);
	if (e) {
		e = bundle__fail(errmsg, HM_ERR_SQLITE, "%s: catalog: %s", name, catalog_errmsg(d->catalog));
		goto out;
	}
	if ((e = record_refs(d->catalog, r, &cr, errmsg)))
		goto out;
	if ((e = record_synced_at(d->catalog, r, cr.id, errmsg)))
		goto out;
	record_carried(d->catalog, r, cr.id, carried);
	meta_from_bundle(json_object_get(r, "meta"), &m, &card, &tags);
	if (catalog_repo_set_sync(d->catalog, cr.id, "ok", NULL, (int64_t)time(NULL), &m)) {
		e = bundle__fail(errmsg, HM_ERR_SQLITE, "%s: catalog: %s", name, catalog_errmsg(d->catalog));
		goto out;
	}
	rep->repos++;
	rep->snapshots += (int64_t)json_array_size(json_object_get(r, "snapshots"));
out:
	catalog_repo_release(&cr);
	free(inc);
	free(exc);
	free(opt);
	free(card);
	free(tags);
	return e;
}

/* Contents and bytes: what a bundle carries, or what of it was read so far. */
struct tally {
	int64_t n, bytes;
};

/* Every content the manifest names that the archive does not carry (seen lacks it) must be in the
 * store already; else the error says why it may be missing (the bundles an incremental one was made
 * against, a volume). */
static int check_held(struct mirror_data *d, const char *path, json_t *manifest, json_t *blobs, json_t *seen,
		      char **errmsg)
{
	json_t *since = json_object_get(manifest, "since"), *v;
	const char *sha, *lacks = NULL;

	json_object_foreach(blobs, sha, v)
		if (!json_object_get(seen, sha) && !store_has(d->store, sha, json_integer_value(v))) {
			lacks = sha;
			break;
		}
	if (!lacks)
		return 0;
	if (json_is_string(json_object_get(since, "bundle")))
		return bundle__fail(errmsg, HM_ERR_NOT_FOUND, "the bundle is incremental, made against '%s', and this "
				    "store lacks content %s it left out: import that bundle first",
				    json_string_value(json_object_get(since, "bundle")), lacks);
	if (since)
		return bundle__fail(
			errmsg, HM_ERR_NOT_FOUND,
			"the bundle is incremental (contents stored before "
			"%lld left out) and this store lacks content %s: import the bundles before it first",
			(long long)json_integer_value(json_object_get(since, "time")), lacks);
	if (mirror_bundle_volume(path) == 1)
		return bundle__fail(errmsg, HM_ERR_NOT_FOUND, "the bundle lacks content %s (and this store does not "
				    "hold it): is a volume missing? %zu read, through '%.*s.%03zu'", lacks,
				    bundle__volumes_there(path), (int)strlen(path) - 4, path,
				    bundle__volumes_there(path));
	return bundle__fail(errmsg, HM_ERR_NOT_FOUND, "the bundle lacks content %s (and this store does not hold it)",
			    lacks);
}

/* Pass 1 over the bundle at path: every header, nothing stored. Any entry out of place refuses the
 * whole archive, as does a content named but neither carried nor held, or named for a repository that
 * may not name it. *total gets what the archive carries, for a progress line. */
static int check_pass(struct mirror_data *d, const char *path, struct tally *total, char **errmsg)
{
	json_t *manifest = NULL, *blobs = json_object(), *seen = json_object();
	struct tally t = { 0, 0 };
	struct archive_entry *e;
	struct archive *a;
	int rc, err;

	if (!(a = bundle__open(path, errmsg))) {
		err = -EIO;
		goto out;
	}
	if ((err = bundle__read_manifest(a, &manifest, blobs, errmsg)))
		goto out;
	while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		if (!entry_blob(e, blobs, seen, errmsg)) {
			err = HM_ERR_PATH_UNSAFE;
			goto out;
		}
		t.n++;
		t.bytes += archive_entry_size(e);
		archive_read_data_skip(a);
	}
	if (rc != ARCHIVE_EOF) {
		err = bundle__fail(errmsg, -EIO, "the archive is damaged: %s", archive_error_string(a));
		goto out;
	}
	if ((err = check_held(d, path, manifest, blobs, seen, errmsg)))
		goto out;
	if ((err = check_named(d, manifest, seen, errmsg)))
		goto out;
	*total = t;
out:
	if (a)
		archive_read_free(a);
	json_decref(manifest);
	json_decref(blobs);
	json_decref(seen);
	return err;
}

/* Pass 2's contents, the entries after the manifest of archive a (which names blobs): each verified as
 * it is stored; those held already are hashed, not stored again. seen then holds what the archive
 * carried, verified. */
static int store_pass(struct mirror_data *d, struct archive *a, json_t *blobs, json_t *seen,
		      const struct mirror_progress *progress, const struct tally *total,
		      struct mirror_bundle_report *rep, char **errmsg)
{
	struct tally done = { 0, 0 };
	struct archive_entry *e;
	char *buf = xmalloc(CHUNK);
	const char *sha;
	int rc, err = 0;

	while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		int64_t size;
		if (!(sha = entry_blob(e, blobs, seen, errmsg))) {
			err = HM_ERR_PATH_UNSAFE; /* changed between the passes */
			goto out;
		}
		size = archive_entry_size(e);
		if (store_reuse(d->store, sha, size)) {
			if ((err = hash_entry(a, sha, buf, errmsg)))
				goto out;
			rep->blobs_skipped++;
		} else {
			if ((err = store_blob(d, a, sha, size, buf, errmsg)))
				goto out;
			rep->blobs++;
			rep->bytes += size;
		}
		done.n++;
		done.bytes += size;
		mirror_progress_say(progress, done.n, total->n, done.bytes, total->bytes);
	}
	if (rc != ARCHIVE_EOF)
		err = bundle__fail(errmsg, -EIO, "the archive is damaged: %s", archive_error_string(a));
out:
	free(buf);
	return err;
}

int mirror_bundle_import(struct mirror_data *d, const char *path, bool keep_options, struct mirror_bundle_report *rep,
			 const struct mirror_progress *progress, char **errmsg)
{
	struct archive *a = NULL;
	json_t *manifest = NULL, *blobs = json_object(), *seen = json_object(), *r;
	struct tally total = { 0, 0 };
	size_t i, made = 0;
	int err;

	memset(rep, 0, sizeof(*rep));
	if ((err = check_pass(d, path, &total, errmsg)))
		goto out;
	/* Pass 2: the contents stored, then the catalog. */
	if (!(a = bundle__open(path, errmsg))) {
		err = -EIO;
		goto out;
	}
	if ((err = bundle__read_manifest(a, &manifest, blobs, errmsg)))
		goto out;
	if ((err = store_pass(d, a, blobs, seen, progress, &total, rep, errmsg)))
		goto out;
	/* Every content is in: the catalog, then the torrents (deterministic: the same info-hashes). */
	json_array_foreach(json_object_get(manifest, "repos"), i, r)
		if ((err = import_repo(d, r, seen, keep_options, rep, errmsg)))
			goto out;
	err = mirror_torrents_make(d, (int64_t)time(NULL), &made, errmsg);
	rep->torrents_made = (int64_t)made;
out:
	if (a)
		archive_read_free(a);
	json_decref(manifest);
	json_decref(blobs);
	json_decref(seen);
	return err;
}
