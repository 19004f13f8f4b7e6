/*
 * cache.c - the hubs' client caches (see cache.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "cache.h"
#include "hub.h"

const char *hub_cache_hf_default(char *buf, size_t cap)
{
	const char *v = getenv("HF_HUB_CACHE"), *home = getenv("HF_HOME");

	if (v && *v)
		return v;
	if (home && *home)
		snprintf(buf, cap, "%s/hub", home);
	else
		snprintf(buf, cap, "%s/.cache/huggingface/hub", getenv("HOME") ? getenv("HOME") : "/root");
	return buf;
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

int hub_cache_link_hf(const char *hub_cache, const char *type, const char *name, const char *revision,
		      const char *commit, const char *target_dir, const char *const *paths, size_t n, char **why)
{
	char *repo_dir, *snap, *ref, *flat = xmalloc(strlen(name) * 2 + 1), *o = flat;
	int r;

	if (path_check_str(name) || hub_check_revision(revision) || !hex_is_lower(commit, 40) ||
	    (strcmp(type, "model") && strcmp(type, "dataset"))) {
		free(flat);
		if (why)
			*why = xstrdup("not a snapshot the Hugging Face cache can name");
		return HM_ERR_PATH_UNSAFE;
	}
	for (const char *p = name; *p; p++) { /* org/name -> org--name */
		if (*p == '/') {
			*o++ = '-';
			*o++ = '-';
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	repo_dir = xasprintf("%s/%ss--%s", hub_cache, type, flat);
	snap = xasprintf("%s/snapshots/%s", repo_dir, commit);
	ref = xasprintf("%s/refs/%s", repo_dir, revision);
	r = write_ref(ref, commit);
	if (r && why)
		*why = xasprintf("cannot write %s: %s", ref, err_str(r));
	for (size_t i = 0; !r && i < n; i++) {
		char *link, *target, *slash;
		if (path_check_str(paths[i])) { /* a path never leaves the snapshot folder */
			r = HM_ERR_PATH_UNSAFE;
			if (why)
				*why = xstrdup("a file path the Hugging Face cache cannot hold");
			break;
		}
		link = xasprintf("%s/%s", snap, paths[i]);
		target = xasprintf("%s/%s", target_dir, paths[i]);
		slash = strrchr(link, '/');
		*slash = '\0';
		r = path_mkdirs(link, 0755);
		*slash = '/';
		if (!r) {
			unlink(link);
			if (symlink(target, link) < 0)
				r = -errno;
		}
		if (r && why)
			*why = xasprintf("cannot link %s: %s", link, err_str(r));
		free(link);
		free(target);
	}
	free(repo_dir);
	free(snap);
	free(ref);
	free(flat);
	return r;
}
