/*
 * cache.c - the hubs' client caches (see cache.h).
 */
#include <errno.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "cache.h"
#include "hub.h"

static const char *env_or_home(const char *env, const char *home_rel, char *buf, size_t cap);

const char *hub_cache_hf_default(char *buf, size_t cap)
{
	const char *home = getenv("HF_HOME");

	if (home && *home && !(getenv("HF_HUB_CACHE") && *getenv("HF_HUB_CACHE"))) {
		snprintf(buf, cap, "%s/hub", home);
		return buf;
	}
	return env_or_home("HF_HUB_CACHE", ".cache/huggingface/hub", buf, cap);
}

/* Write commit into the ref file (its folders made). */
static int write_ref(const char *ref, const char *commit)
{
	char *dir = xstrdup(ref);
	FILE *f;
	int r;

	*strrchr(dir, '/') = '\0';
	r = path_mkdirs(dir, 0755);
	free(dir);
	if (r)
		return r;
	if (!(f = fopen(ref, "w")))
		return -errno;
	fputs(commit, f);
	return fclose(f) == 0 ? 0 : -errno;
}

/* dir/<path> -> target_dir/<path> for each path (folders made, an existing link replaced). */
static int link_files(const char *dir, const char *target_dir, const char *const *paths, size_t n, char **errmsg)
{
	int r = 0;

	for (size_t i = 0; !r && i < n; i++) {
		char *link = NULL, *target = NULL, *slash;
		/* a path never leaves the snapshot folder (path_join checks it) */
		if (path_join(dir, paths[i], &link) || path_join(target_dir, paths[i], &target)) {
			free(link);
			if (errmsg)
				*errmsg = xstrdup("a file path the cache cannot hold");
			return HM_ERR_PATH_UNSAFE;
		}
		slash = strrchr(link, '/');
		*slash = '\0';
		r = path_mkdirs(link, 0755);
		*slash = '/';
		if (!r) {
			unlink(link);
			if (symlink(target, link) < 0)
				r = -errno;
		}
		if (r && errmsg)
			*errmsg = xasprintf("cannot link %s: %s", link, err_str(r));
		free(link);
		free(target);
	}
	return r;
}

/* <hub_cache>/<type>s--<org>--<name> */
static char *hf_repo_dir(const char *hub_cache, const char *type, const char *name)
{
	char *flat = xmalloc(strlen(name) * 2 + 1), *o = flat, *dir;

	for (const char *p = name; *p; p++) { /* org/name -> org--name */
		if (*p == '/') {
			*o++ = '-';
			*o++ = '-';
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	dir = xasprintf("%s/%ss--%s", hub_cache, type, flat);
	free(flat);
	return dir;
}

char *hub_cache_hf_snapshot(const char *hub_cache, const char *type, const char *name, const char *commit)
{
	char *repo_dir = hf_repo_dir(hub_cache, type, name), *snap = xasprintf("%s/snapshots/%s", repo_dir, commit);

	free(repo_dir);
	return snap;
}

int hub_cache_link_hf(const char *hub_cache, const char *type, const char *name, const char *revision,
		      const char *commit, const char *target_dir, const char *const *paths, size_t n, char **errmsg)
{
	char *repo_dir, *snap, *ref;
	int r;

	if (path_check_str(name) || hub_check_revision(revision) || !hex_is_lower(commit, 40) ||
	    (strcmp(type, "model") && strcmp(type, "dataset"))) {
		if (errmsg)
			*errmsg = xstrdup("not a snapshot the Hugging Face cache can name");
		return HM_ERR_PATH_UNSAFE;
	}
	repo_dir = hf_repo_dir(hub_cache, type, name);
	snap = xasprintf("%s/snapshots/%s", repo_dir, commit);
	ref = xasprintf("%s/refs/%s", repo_dir, revision);
	r = write_ref(ref, commit);
	if (r && errmsg)
		*errmsg = xasprintf("cannot write %s: %s", ref, err_str(r));
	if (!r)
		r = link_files(snap, target_dir, paths, n, errmsg);
	free(repo_dir);
	free(snap);
	free(ref);
	return r;
}

/* $env if set, else ~/<home_rel> (written into buf). */
static const char *env_or_home(const char *env, const char *home_rel, char *buf, size_t cap)
{
	const char *v = getenv(env);

	if (v && *v)
		return v;
	snprintf(buf, cap, "%s/%s", getenv("HOME") ? getenv("HOME") : "/root", home_rel);
	return buf;
}

size_t hub_cache_unlink_hf(const char *hub_cache, const char *type, const char *name, const char *revision,
			   const char *commit, const char *target)
{
	char *repo = hf_repo_dir(hub_cache, type, name), *snap = xasprintf("%s/snapshots/%s", repo, commit);
	char *p, *held = NULL;
	size_t links = hub_cache_unlink_into(snap, target, 0), len = 0;
	struct stat st;

	if (stat(snap, &st) < 0 && errno == ENOENT && revision && !hub_check_revision(revision)) {
		p = xasprintf("%s/refs/%s", repo, revision);
		if (!path_read_file(p, 64, &held, &len) && len >= 40 && !strncmp(held, commit, 40))
			unlink(p);
		free(held);
		free(p);
	}
	/* the folders that leaves empty (rmdir takes only those) */
	p = xasprintf("%s/refs", repo);
	rmdir(p);
	free(p);
	p = xasprintf("%s/snapshots", repo);
	rmdir(p);
	free(p);
	rmdir(repo);
	free(snap);
	free(repo);
	return links;
}

const char *hub_cache_ms_default(char *buf, size_t cap)
{
	return env_or_home("MODELSCOPE_CACHE", ".cache/modelscope/hub", buf, cap);
}

const char *hub_cache_ms_hub_default(char *buf, size_t cap)
{
	return env_or_home("MODELSCOPE_CACHE", ".cache/modelscope", buf, cap);
}

/* Python pickle (protocol 2), what the classic SDK reads its index with: a str as BINUNICODE. */
static void pickle_str(struct buf *b, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);
	unsigned char len[4] = { (unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
				 (unsigned char)(n >> 24) };

	buf_addch(b, 'X');
	buf_add(b, len, 4);
	buf_adds(b, s);
}

/* The classic SDK's index of a model folder: .msc (the files at a revision), .mdl (the id), .mv.
 * Each replaced whole, not fsynced (as the SDK writes them, and as a Hugging Face ref is written): the
 * agent links from its loop, which must not wait for the disk. */
static int write_ms_index(const char *dir, const char *id, const char *commit, const char *const *paths, size_t n)
{
	struct buf b;
	char *p;
	int r;

	buf_init(&b);
	buf_add(&b, "\x80\x02]q\x00(", 6); /* PROTO 2, EMPTY_LIST, BINPUT 0, MARK */
	for (size_t i = 0; i < n; i++) {
		buf_adds(&b, "}(");             /* EMPTY_DICT, MARK */
		pickle_str(&b, "Path");
		pickle_str(&b, paths[i]);
		pickle_str(&b, "Revision");
		pickle_str(&b, commit);
		buf_addch(&b, 'u');             /* SETITEMS */
	}
	buf_adds(&b, "e.");                     /* APPENDS, STOP */
	p = xasprintf("%s/.msc", dir);
	r = path_write_replace(p, b.data, b.len, 0644);
	free(p);
	buf_reset(&b);
	buf_add(&b, "\x80\x02}", 3);          /* PROTO 2, EMPTY_DICT */
	pickle_str(&b, "id");
	pickle_str(&b, id);
	buf_adds(&b, "s.");                     /* SETITEM, STOP */
	p = xasprintf("%s/.mdl", dir);
	if (!r)
		r = path_write_replace(p, b.data, b.len, 0644);
	free(p);
	buf_reset(&b);
	buf_addf(&b, "Revision:%s,CreatedAt:%lld", commit, (long long)time(NULL));
	p = xasprintf("%s/.mv", dir);
	if (!r)
		r = path_write_replace(p, b.data, b.len, 0644);
	free(p);
	buf_release(&b);
	return r;
}

/* The name as the classic SDK writes it: dots in the name (not the owner) masked, Qwen2.5-7B ->
 * Qwen2___5-7B. */
static char *ms_masked(const char *after_slash)
{
	struct buf m;

	buf_init(&m);
	for (const char *p = after_slash; *p; p++) {
		if (*p == '.')
			buf_adds(&m, "___");
		else
			buf_addch(&m, *p);
	}
	return buf_detach(&m, NULL);
}

char *hub_cache_ms_dir(const char *ms_cache, const char *type, const char *name)
{
	const char *slash = strchr(name, '/');
	char *masked, *dir;

	if (!slash)
		return xasprintf("%s/%ss/%s", ms_cache, type, name);
	masked = ms_masked(slash + 1);
	dir = xasprintf("%s/%ss/%.*s/%s", ms_cache, type, (int)(slash - name), name, masked);
	free(masked);
	return dir;
}

int hub_cache_link_ms(const char *ms_cache, const char *ms_hub_cache, const char *type, const char *name,
		      const char *revision, const char *commit, const char *target_dir, const char *const *paths,
		      size_t n, char **errmsg)
{
	const char *slash = strchr(name, '/');
	char *masked, *dir = NULL, *id = NULL, *flat = NULL, *snap = NULL;
	int r;

	if (!slash || path_check_str(name) || strchr(slash + 1, '/') || hub_check_revision(revision) ||
	    path_check_str(revision) || !hex_is_lower(commit, 40) ||
	    (strcmp(type, "model") && strcmp(type, "dataset"))) {
		if (errmsg)
			*errmsg = xstrdup("not a snapshot the ModelScope cache can name");
		return HM_ERR_PATH_UNSAFE;
	}
	masked = ms_masked(slash + 1);
	dir = hub_cache_ms_dir(ms_cache, type, name);
	id = xasprintf("%.*s/%s", (int)(slash - name), name, masked);
	r = path_mkdirs(dir, 0755);
	if (!r)
		r = link_files(dir, target_dir, paths, n, errmsg);
	if (!r && (r = write_ms_index(dir, id, commit, paths, n)) != 0 && errmsg)
		*errmsg = xasprintf("cannot write the index of %s: %s", dir, err_str(r));
	if (!r && ms_hub_cache) {
		flat = xasprintf("%.*s--%s", (int)(slash - name), name, slash + 1);
		snap = xasprintf("%s/%ss/%s/snapshots/%s", ms_hub_cache, type, flat, revision);
		r = link_files(snap, target_dir, paths, n, errmsg);
	}
	free(masked);
	free(dir);
	free(id);
	free(flat);
	free(snap);
	return r;
}

char *hub_cache_ms_hub_snapshot(const char *ms_hub_cache, const char *type, const char *name, const char *revision)
{
	const char *slash = strchr(name, '/');

	if (!slash)
		return xasprintf("%s/%ss/%s/snapshots/%s", ms_hub_cache, type, name, revision);
	return xasprintf("%s/%ss/%.*s--%s/snapshots/%s", ms_hub_cache, type, (int)(slash - name), name, slash + 1,
			 revision);
}

/* nftw has no user data: the walk's, one at a time (the CLI's) */
static const char *unlink_target;
static size_t unlink_count;

static int unlink_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_SL) {
		char to[4096];
		ssize_t n = readlink(path, to, sizeof(to) - 1);
		size_t tl = strlen(unlink_target);
		if (n > 0) {
			to[n] = '\0';
			if (!strncmp(to, unlink_target, tl) && (to[tl] == '/' || to[tl] == '\0') && unlink(path) == 0)
				unlink_count++;
		}
	} else if (type == FTW_DP) {
		rmdir(path); /* only when empty */
	}
	return 0;
}

size_t hub_cache_unlink_into(const char *dir, const char *target, int ms_index)
{
	unlink_target = target;
	unlink_count = 0;
	nftw(dir, unlink_visit, 16, FTW_DEPTH | FTW_PHYS);
	if (ms_index) {
		/* the classic SDK's index, once the snapshot's own links are gone */
		static const char *const idx[] = { ".msc", ".mdl", ".mv" };
		DIR *d = opendir(dir);
		struct dirent *e;
		bool other = false;
		while (d && (e = readdir(d))) {
			bool known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
			for (size_t i = 0; i < 3; i++)
				known |= !strcmp(e->d_name, idx[i]);
			other |= !known;
		}
		if (d)
			closedir(d);
		if (d && !other) {
			for (size_t i = 0; i < 3; i++) {
				char *p = xasprintf("%s/%s", dir, idx[i]);
				unlink(p);
				free(p);
			}
			rmdir(dir);
		}
	}
	return unlink_count;
}
