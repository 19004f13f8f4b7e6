/*
 * gitrepo-gc.c - the git side of `hubmirror gc` (mirror_git_gc, gitrepo.h): the repositories of repos
 * no longer tracked go; git gc prunes the others. gitrepo.c builds them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "data.h"
#include "gitrepo-int.h"
#include "gitrepo.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* One <name>.git below root/hub/type/org: gone with its repo, else its unreachable objects pruned. */
static void gc_one(struct mirror_data *d, const char *root, const char *hub, const char *type, const char *org,
		   const char *entry, struct mirror_git_gc_report *rep)
{
	char *gitdir = xasprintf("%s/%s/%s/%s/%s", root, hub, type, org, entry);
	char *name = xasprintf("%s/%.*s", org, (int)(strlen(entry) - 4), entry);
	char *lockpath = xasprintf("%s.lock", gitdir), *err = NULL;
	char *head = xasprintf("%s/HEAD", gitdir);
	struct catalog_repo r = { 0 };
	int lock = open(lockpath, O_CREAT | O_RDWR | O_CLOEXEC, 0600);

	if (lock < 0 || flock(lock, LOCK_EX)) {
		log_warn("gc", "cannot lock %s: %s", gitdir, strerror(errno));
	} else if (access(head, F_OK) || catalog_repo_get(d->catalog, hub, type, name, &r)) {
		/* not tracked any more (or never): nobody clones it; or no HEAD: a git init that failed
		 * (an older version left it so on a full disk), which the next request makes again */
		if (nftw(gitdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0) {
			unlink(lockpath);
			rep->removed++;
		} else {
			log_warn("gc", "cannot remove %s: %s", gitdir, strerror(errno));
		}
	} else {
		const char *argv[] = { "git", "--git-dir", gitdir, "gc", "--quiet", "--prune=now", NULL };
		catalog_repo_release(&r);
		if (gitrepo__git_run(root, argv, -1, -1, &err))
			log_warn("gc", "%s: %s", gitdir, err ? err : "git gc failed");
		else
			rep->collected++;
	}
	if (lock >= 0)
		close(lock);
	free(err);
	free(head);
	free(lockpath);
	free(name);
	free(gitdir);
}

int mirror_git_gc(struct mirror_data *d, struct mirror_git_gc_report *rep)
{
	static const char *const hubs[] = { "hf", "ms" }, *const types[] = { "model", "dataset" };
	char *root = mirror_git_root(d);

	memset(rep, 0, sizeof(*rep));
	for (size_t h = 0; h < 2; h++) {
		for (size_t t = 0; t < 2; t++) {
			char *dir = xasprintf("%s/%s/%s", root, hubs[h], types[t]);
			DIR *orgs = opendir(dir);
			struct dirent *o;
			while (orgs && (o = readdir(orgs))) {
				char *odir;
				DIR *names;
				struct dirent *n;
				if (o->d_name[0] == '.')
					continue;
				odir = xasprintf("%s/%s", dir, o->d_name);
				names = opendir(odir);
				while (names && (n = readdir(names))) {
					size_t l = strlen(n->d_name);
					if (n->d_name[0] != '.' && l > 4 && !strcmp(n->d_name + l - 4, ".git"))
						gc_one(d, root, hubs[h], types[t], o->d_name, n->d_name, rep);
				}
				if (names)
					closedir(names);
				free(odir);
			}
			if (orgs)
				closedir(orgs);
			free(dir);
		}
	}
	free(root);
	return 0;
}
