/*
 * bundle.c - air-gapped bundles (see bundle.h).
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
#include "base/fdio.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "bundle-int.h"
#include "repojson.h"
#include "bundle.h"
#include "progress.h"
#include "catalog/catalog.h"
#include "data.h"
#include "hub/hub.h"
#include "store/store.h"
#include "torrents.h"

#define PIECE ((size_t)8 << 20) /* a content read into the archive at a time (with a bucket, one ranged read) */

int bundle__fail(char **errmsg, int r, const char *fmt, ...)
{
	va_list ap;
	char buf[1024];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (errmsg && !*errmsg)
		*errmsg = xstrdup(buf);
	return r;
}

/* ---- export ------------------------------------------------------------------------------------ */

struct files_ctx {
	json_t *files, *blobs;
};

static int file_cb(void *ud, const struct catalog_entry *e)
{
	struct files_ctx *f = ud;
	json_t *o = json_pack("{s:s, s:I, s:s}", "path", e->path, "size", (json_int_t)e->size, "sha256", e->sha256);

	json_object_set_new(o, "git_oid", e->git_oid[0] ? json_string(e->git_oid) : json_null());
	json_object_set_new(o, "lfs_oid", e->lfs_oid[0] ? json_string(e->lfs_oid) : json_null());
	json_array_append_new(f->files, o);
	json_object_set_new(f->blobs, e->sha256, json_integer((json_int_t)e->size));
	return 0;
}

/* A local repo's history (docs/uploads.md): the commits its refs' commits descend from, into commits,
 * and each commit's record (parent, tree, author, time, message; a pushed one's object: raw) into metas by id. */
static void local_history(struct mirror_data *d, const struct catalog_repo *r, json_t *commits, json_t *metas)
{
	json_t *todo = json_deep_copy(commits), *v;
	const char *id;

	while (json_object_size(todo)) {
		struct catalog_commit cm;
		char *next = NULL;
		json_object_foreach(todo, id, v)
			break;
		if (!catalog_commit_get(d->catalog, r->id, id, &cm)) {
			json_object_set_new(metas, id,
					    json_pack("{s:s?, s:s, s:s, s:I, s:s, s:s*}", "parent", cm.parent, "tree",
						      cm.tree, "author", cm.author, "at", (json_int_t)cm.at, "message",
						      cm.message, "raw", cm.raw));
			if (cm.parent && !json_object_get(commits, cm.parent)) {
				next = xstrdup(cm.parent);
				json_object_set_new(commits, next, json_true());
			}
			catalog_commit_release(&cm);
		}
		json_object_del(todo, id);
		if (next)
			json_object_set_new(todo, next, json_true());
		free(next);
	}
	json_decref(todo);
}

/* One repo's part of the manifest; its contents added to blobs. */
static int export_repo(struct mirror_data *d, const struct hub_spec *spec, json_t *repos, json_t *blobs, char **errmsg)
{
	struct catalog_repo r = { 0 };
	json_t *o, *refs = NULL, *snaps = json_array(), *commits = json_object(), *metas = json_object(), *v;
	const char *hub = hub_kind_name(spec->hub), *type = hub_type_name(spec->type);
	char *s = hub_spec_format(spec, 0);
	size_t i;
	int e = catalog_repo_get(d->catalog, hub, type, spec->name, &r);

	if (e) {
		e = bundle__fail(errmsg, e, "%s is not tracked here", s);
		goto out;
	}
	if (!r.head_commit) {
		e = bundle__fail(errmsg, HM_ERR_NOT_FOUND, "%s was never synced: nothing to export", s);
		goto out;
	}
	refs = mirror_refs_json(d->catalog, r.id);
	if (!refs) {
		e = bundle__fail(errmsg, HM_ERR_SQLITE, "%s: %s", s, catalog_errmsg(d->catalog));
		goto out;
	}
	json_array_foreach(refs, i, v)
		json_object_set_new(commits, json_string_value(json_object_get(v, "commit")), json_true());
	if (r.local)
		local_history(d, &r, commits, metas);
	{
		const char *commit;
		json_t *unused;
		json_object_foreach(commits, commit, unused) {
			struct catalog_repo r2 = { 0 };
			struct catalog_snapshot snap;
			struct files_ctx f = { json_array(), blobs };
			bool found = false;
			e = catalog_resolve(d->catalog, hub, type, spec->name, commit, &r2, &snap, &found);
			if (found)
				catalog_repo_release(&r2);
			if (!e && catalog_snapshot_complete(d->catalog, snap.id) == 0) {
				json_decref(f.files);
				e = bundle__fail(errmsg, HM_ERR_NOT_FOUND,
						 "%s: snapshot %.12s is not complete here yet (fetched on "
						 "demand): sync it first",
						 s, commit);
				goto out;
			}
			if (!e)
				e = catalog_snapshot_walk(d->catalog, snap.id, NULL, NULL, 0, file_cb, &f);
			if (e) {
				json_decref(f.files);
				e = bundle__fail(errmsg, e, "%s: snapshot %.12s: %s", s, commit,
						 catalog_errmsg(d->catalog));
				goto out;
			}
			json_array_append_new(snaps, json_pack("{s:s, s:I, s:o}", "commit", commit, "synced_at",
							       (json_int_t)snap.synced_at, "files", f.files));
			if (json_object_get(metas, commit)) /* a local repo's commit, to rebuild and check */
				json_object_set(json_array_get(snaps, json_array_size(snaps) - 1), "commit_meta",
						json_object_get(metas, commit));
		}
	}
	/* (repojson.h's helpers, as the catalog API's shape of a repo uses them) */
	o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "hub", hub, "type", type, "name", r.name,
		      "follow_rev", r.follow_rev, "include", mirror_json_text_or(r.include_globs, json_array()),
		      "exclude", mirror_json_text_or(r.exclude_globs, json_array()),
		      "options", mirror_json_text_or(r.options, json_object()),
		      "refs_policy", mirror_json_str_or_null(r.refs_policy), "refs", refs, "snapshots", snaps);
	json_object_set_new(o, "meta", json_pack("{s:o, s:i, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:o, s:o}",
		"gated", mirror_json_str_or_null(r.gated), "private", r.private_,
		"card_data", mirror_json_text_or(r.card_data, json_null()),
		"tags", mirror_json_text_or(r.tags, json_null()),
		"pipeline_tag", mirror_json_str_or_null(r.pipeline_tag),
		"library_name", mirror_json_str_or_null(r.library_name),
		"license", mirror_json_str_or_null(r.license), "downloads", (json_int_t)r.downloads,
		"likes", (json_int_t)r.likes,
		"last_modified", mirror_json_str_or_null(r.last_modified),
		"upstream_name", mirror_json_str_or_null(r.upstream_name)));
	/* its place in a chain of mirrors: an importing mirror is one tier further */
	if (r.tier > 0)
		json_object_set_new(json_object_get(o, "meta"), "tier", json_integer(r.tier));
	if (r.origin_checked_at > 0)
		json_object_set_new(json_object_get(o, "meta"), "origin_checked_at", json_integer(r.origin_checked_at));
	if (r.created_at > 0)
		json_object_set_new(json_object_get(o, "meta"), "created_at", json_integer(r.created_at));
	if (r.local)
		json_object_set_new(o, "local", json_true());
	json_array_append_new(repos, o);
	refs = snaps = NULL;
	e = 0;
out:
	json_decref(refs);
	json_decref(snaps);
	json_decref(commits);
	json_decref(metas);
	catalog_repo_release(&r);
	free(s);
	return e;
}

static int write_entry_head(struct archive *a, const char *name, int64_t size)
{
	struct archive_entry *e = archive_entry_new();
	int r;

	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, size);
	archive_entry_set_mtime(e, time(NULL), 0);
	r = archive_write_header(a, e);
	archive_entry_free(e);
	return r == ARCHIVE_OK ? 0 : -1;
}

/* ---- volumes: the archive's byte stream cut into FILE.001, FILE.002, ... (or one FILE) ---------- */

struct volumes {
	const char *out;
	int64_t size;           /* bytes per volume; 0: one file */
	int fd;
	int64_t in_vol;         /* bytes in the open volume */
	char **tmps;            /* the temporary names written so far, renamed at the end */
	size_t n;
};

static char *volume_name(const struct volumes *v, size_t idx, bool tmp)
{
	if (!v->size)
		return tmp ? xasprintf("%s.tmp-%ld", v->out, (long)getpid()) : xstrdup(v->out);
	return tmp ? xasprintf("%s.%03zu.tmp-%ld", v->out, idx + 1, (long)getpid())
		   : xasprintf("%s.%03zu", v->out, idx + 1);
}

static int volume_next(struct archive *a, struct volumes *v)
{
	char *name;

	if (v->fd >= 0 && (fsync(v->fd) < 0 || close(v->fd) < 0)) {
		v->fd = -1;
		archive_set_error(a, errno, "cannot finish volume %zu: %s", v->n, strerror(errno));
		return -1;
	}
	if (v->size && v->n >= 999) {
		archive_set_error(a, EFBIG, "more than 999 volumes: take a larger --volume-size");
		return -1;
	}
	name = volume_name(v, v->n, true);
	/* a temporary name of ours: one left by a crash goes; a link planted there is not followed */
	unlink(name);
	v->fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (v->fd < 0) {
		archive_set_error(a, errno, "cannot create '%s': %s", name, strerror(errno));
		free(name);
		return -1;
	}
	v->tmps = xreallocarray(v->tmps, v->n + 1, sizeof(*v->tmps));
	v->tmps[v->n++] = name;
	v->in_vol = 0;
	return 0;
}

static la_ssize_t volumes_write(struct archive *a, void *ud, const void *buf, size_t len)
{
	struct volumes *v = ud;
	const char *p = buf;
	size_t left = len;

	while (left) {
		size_t room = left;
		ssize_t w;
		if (v->size && v->in_vol >= v->size && volume_next(a, v))
			return -1;
		if (v->size && (int64_t)room > v->size - v->in_vol)
			room = (size_t)(v->size - v->in_vol);
		w = write(v->fd, p, room);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			archive_set_error(a, w < 0 ? errno : EIO, "cannot write volume %zu: %s", v->n,
					  w < 0 ? strerror(errno) : "short write");
			return -1;
		}
		p += w;
		left -= (size_t)w;
		v->in_vol += w;
	}
	return (la_ssize_t)len;
}

static int volumes_open(struct archive *a, void *ud)
{
	return volume_next(a, ud) ? ARCHIVE_FATAL : ARCHIVE_OK;
}

static int volumes_close(struct archive *a, void *ud)
{
	struct volumes *v = ud;
	int r = ARCHIVE_OK;

	if (v->fd >= 0 && (fsync(v->fd) < 0 || close(v->fd) < 0)) {
		archive_set_error(a, errno, "cannot finish the last volume: %s", strerror(errno));
		r = ARCHIVE_FATAL;
	}
	v->fd = -1;
	return r;
}

/* Rename every volume to its name (ok), or delete them all. */
static int volumes_end(struct volumes *v, bool ok, char **errmsg)
{
	int r = 0;

	for (size_t i = 0; i < v->n; i++) {
		char *final = volume_name(v, i, false);
		if (ok && !r && rename(v->tmps[i], final) < 0)
			r = bundle__fail(errmsg, -errno, "cannot rename to '%s': %s", final, strerror(errno));
		if (!ok || r)
			unlink(v->tmps[i]);
		free(final);
		free(v->tmps[i]);
	}
	free(v->tmps);
	v->tmps = NULL;
	v->n = 0;
	return r;
}

int mirror_bundle_volume(const char *path)
{
	size_t n = strlen(path);

	if (n < 5 || path[n - 4] != '.' || !isdigit((unsigned char)path[n - 3]) ||
	    !isdigit((unsigned char)path[n - 2]) || !isdigit((unsigned char)path[n - 1]))
		return 0;
	return atoi(path + n - 3);
}

/* The files a bundle path stands for: itself, or, for FILE.001, every volume FILE.001, FILE.002, ...
 * there is (NULL-terminated; free each and the array). NULL after saying why. */
char **bundle__files(const char *path, char **errmsg)
{
	char **names = xcalloc(2, sizeof(*names));
	int vol = mirror_bundle_volume(path);
	size_t n = 1;

	names[0] = xstrdup(path);
	if (vol > 1) {
		bundle__fail(errmsg, -EINVAL, "'%s' is a later volume of a bundle: import its first one (.001)", path);
		free(names[0]);
		free(names);
		return NULL;
	}
	if (vol == 1) {
		size_t base = strlen(path) - 4;
		for (;;) {
			char *next = xasprintf("%.*s.%03zu", (int)base, path, n + 1);
			if (access(next, F_OK) < 0) {
				free(next);
				break;
			}
			names = xreallocarray(names, n + 2, sizeof(*names));
			names[n++] = next;
		}
		names[n] = NULL;
	}
	return names;
}

size_t bundle__volumes_there(const char *path)
{
	char **names = bundle__files(path, NULL);
	size_t n = 0;

	while (names && names[n])
		free(names[n++]);
	free(names);
	return n;
}

void bundle__files_free(char **names)
{
	for (size_t i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}


/* The contents another bundle lists (its manifest's): the far side holds them once it imported it. */
static int since_bundle_blobs(const char *path, json_t *into, char **errmsg)
{
	struct archive *a = bundle__open(path, errmsg);
	json_t *m = NULL;
	int r;

	if (!a)
		return -EIO;
	r = bundle__read_manifest(a, &m, into, errmsg);
	archive_read_free(a);
	json_decref(m);
	if (r && errmsg && *errmsg) {
		char *t = xasprintf("--since '%s': %s", path, *errmsg);
		free(*errmsg);
		*errmsg = t;
	}
	return r;
}

/* The contents the far side already has, into omit, and *since, the manifest's word on against what
 * (left alone for a full bundle): another bundle's list, or what was stored here before a time. */
static int since_omit(struct mirror_data *d, const struct mirror_bundle_opts *opt, json_t *blobs, json_t *omit,
		      json_t **since, char **errmsg)
{
	const char *sha;
	json_t *v;
	int r;

	/* An incremental bundle lists every content but carries only those the far side lacks. */
	if (opt && opt->since_bundle) {
		if ((r = since_bundle_blobs(opt->since_bundle, omit, errmsg)))
			return r;
		*since = json_pack("{s:s}", "bundle", opt->since_bundle);
	} else if (opt && opt->since_time > 0) {
		json_object_foreach(blobs, sha, v) {
			int64_t at = 0;
			if (!catalog_blob_stored_at(d->catalog, sha, &at) && at < opt->since_time)
				json_object_set_new(omit, sha, json_true());
		}
		*since = json_pack("{s:I}", "time", (json_int_t)opt->since_time);
	}
	return 0;
}

/* The manifest's text (malloc'd): the repos, every content they name with its size, and since (taken;
 * may be NULL). */
static char *manifest_text(json_t *repos, json_t *blobs, json_t *since)
{
	json_t *bl = json_array(), *manifest, *v;
	const char *sha;
	char *text;

	json_object_foreach(blobs, sha, v)
		json_array_append_new(bl, json_pack("{s:s, s:O}", "sha256", sha, "size", v));
	manifest = json_pack("{s:s, s:i, s:I, s:O, s:O}", "format", "hubmirror-bundle", "version", 1,
			     "created", (json_int_t)time(NULL), "repos", repos, "blobs", bl);
	if (since)
		json_object_set_new(manifest, "since", since);
	text = json_dumps(manifest, JSON_COMPACT);
	json_decref(manifest);
	json_decref(bl);
	return text;
}

/* Archive a set up to write out's volumes (zstd compressed when out ends in .zst) and opened, with the
 * manifest's text as its first entry. */
static int archive_begin(struct archive *a, const char *out, struct volumes *vols, const char *text, char **errmsg)
{
	size_t len = strlen(out);

	archive_write_set_format_pax_restricted(a);
	/* 64 KiB blocks (libarchive writes 10 KiB by default; 1 MiB measured 3x slower) */
	archive_write_set_bytes_per_block(a, 64 << 10);
	archive_write_set_bytes_in_last_block(a, 1);
	if (len > 4 && !strcmp(out + len - 4, ".zst") && archive_write_add_filter_zstd(a) != ARCHIVE_OK)
		return bundle__fail(errmsg, -ENOTSUP, "this libarchive cannot write zstd: %s", archive_error_string(a));
	if (archive_write_open(a, vols, volumes_open, volumes_write, volumes_close) != ARCHIVE_OK ||
	    write_entry_head(a, MANIFEST, (int64_t)strlen(text)) ||
	    archive_write_data(a, text, strlen(text)) != (la_ssize_t)strlen(text))
		return bundle__fail(errmsg, -EIO, "cannot write '%s': %s", out, archive_error_string(a));
	return 0;
}

/* What writing an export's contents needs: the store, the archive (its file's name for messages), a
 * buffer, and the report and totals its progress counts. */
struct blob_writer {
	struct mirror_data *d;
	struct archive *a;
	const char *out;
	char *buf;                              /* PIECE bytes */
	const struct mirror_progress *progress; /* may be NULL */
	struct mirror_bundle_report *rep;
	int64_t total_n, total_bytes;           /* what will be written */
};

/* Bytes [off, off + n) of content sha into buf: from fd (the store's file), or with fd -1 from wherever
 * the store has it (store_read: with a bucket, a ranged read of it). 0, or -errno / the bucket's code
 * with *why (malloc'd). */
static int blob_read(struct store *st, int fd, const char *sha, int64_t off, char *buf, size_t n, char **why)
{
	int r;

	if (fd < 0)
		return store_read(st, sha, off, buf, n, why);
	if ((r = fdio_pread_all(fd, buf, n, (off_t)off)) != 0)
		*why = xstrdup(r == -EIO ? "the stored file is short" : err_str(r));
	return r;
}

/* Content sha (size bytes, read from the store) into the archive as blobs/<sha>. With a bucket, one the
 * cache does not hold is read from the bucket by ranges, never brought into the cache (an export of
 * the whole mirror would push everything else out of it, and a content bigger than it past its bound);
 * the bundle's importer hashes every content to its name. */
static int blob_write(struct blob_writer *w, const char *sha, int64_t size, char **errmsg)
{
	struct store *st = w->d->store;
	char *p = store_in_bucket(st) ? store_cache_path(st, sha) : store_blob_path(st, sha), name[80], *why = NULL;
	int64_t off = 0;
	int fd;

	fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
	free(p);
	if (fd < 0 && (!store_in_bucket(st) || !store_has(st, sha, size)))
		return bundle__fail(errmsg, -ENOENT, "content %s is not in the store (run 'hubmirror verify' and sync)",
				    sha);
	if (fd >= 0)
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	snprintf(name, sizeof(name), "blobs/%s", sha);
	if (write_entry_head(w->a, name, size)) {
		if (fd >= 0)
			close(fd);
		return bundle__fail(errmsg, -EIO, "cannot write '%s': %s", w->out, archive_error_string(w->a));
	}
	/* streamed a chunk at a time: a 100 GB model never sits in memory or in a temporary copy */
	while (off < size) {
		size_t n = size - off > (int64_t)PIECE ? PIECE : (size_t)(size - off);
		int r = blob_read(st, fd, sha, off, w->buf, n, &why);
		if (r || archive_write_data(w->a, w->buf, n) != (la_ssize_t)n) {
			if (fd >= 0)
				close(fd);
			r = bundle__fail(errmsg, -EIO, "cannot copy content %s: %s", sha,
					 r ? why : archive_error_string(w->a));
			free(why);
			return r;
		}
		off += (int64_t)n;
		w->rep->bytes += (int64_t)n;
		mirror_progress_say(w->progress, w->rep->blobs, w->total_n, w->rep->bytes, w->total_bytes);
	}
	if (fd >= 0)
		close(fd);
	w->rep->blobs++;
	mirror_progress_say(w->progress, w->rep->blobs, w->total_n, w->rep->bytes, w->total_bytes);
	return 0;
}

/* Every content of blobs but those in omit into archive a, in blobs' order; the left-out ones counted. */
static int write_blobs(struct mirror_data *d, struct archive *a, const char *out, json_t *blobs, json_t *omit,
		       const struct mirror_bundle_opts *opt, struct mirror_bundle_report *rep, char **errmsg)
{
	struct blob_writer w = { .d = d, .a = a, .out = out, .progress = opt ? opt->progress : NULL, .rep = rep };
	const char *sha;
	json_t *v;
	int r = 0;

	w.buf = xmalloc(PIECE);
	/* the totals, for a progress line: what will be written */
	json_object_foreach(blobs, sha, v)
		if (!json_object_get(omit, sha)) {
			w.total_n++;
			w.total_bytes += json_integer_value(v);
		}
	json_object_foreach(blobs, sha, v) {
		if (json_object_get(omit, sha)) {
			rep->blobs_omitted++;
			continue;
		}
		if ((r = blob_write(&w, sha, json_integer_value(v), errmsg)))
			break;
	}
	free(w.buf);
	return r;
}

int mirror_bundle_export(struct mirror_data *d, const struct hub_spec *specs, size_t n, const char *out,
			 const struct mirror_bundle_opts *opt, struct mirror_bundle_report *rep, char **errmsg)
{
	json_t *repos = json_array(), *blobs = json_object(), *omit = json_object(), *since = NULL, *v;
	struct volumes vols = { out, opt ? opt->volume_size : 0, -1, 0, NULL, 0 };
	struct archive *a = NULL;
	char *text = NULL;
	size_t i;
	int r = 0;

	memset(rep, 0, sizeof(*rep));
	for (i = 0; i < n && !r; i++)
		r = export_repo(d, &specs[i], repos, blobs, errmsg);
	if (r)
		goto out;
	if ((r = since_omit(d, opt, blobs, omit, &since, errmsg)))
		goto out;
	text = manifest_text(repos, blobs, since);
	a = archive_write_new();
	if ((r = archive_begin(a, out, &vols, text, errmsg)))
		goto out;
	if ((r = write_blobs(d, a, out, blobs, omit, opt, rep, errmsg)))
		goto out;
	if (archive_write_close(a) != ARCHIVE_OK) {
		r = bundle__fail(errmsg, -EIO, "cannot finish '%s': %s", out, archive_error_string(a));
		goto out;
	}
	rep->volumes = vols.size ? (int64_t)vols.n : 1;
	r = volumes_end(&vols, true, errmsg);
	if (r)
		goto out;
	rep->repos = (int64_t)json_array_size(repos);
	json_array_foreach(repos, i, v)
		rep->snapshots += (int64_t)json_array_size(json_object_get(v, "snapshots"));
out:
	if (a)
		archive_write_free(a); /* closes the open volume, if any */
	if (vols.n)
		volumes_end(&vols, false, NULL);
	free(text);
	json_decref(repos);
	json_decref(blobs);
	json_decref(omit);
	return r;
}
