/*
 * cmd-mount.c - `hubmirror mount SPEC[@REV] [DIR]` and `hubmirror umount DIR`: a synced repo of a
 * mirror as read-only files, fetched on demand from the swarm (p2p/mount.h), and linked into the
 * Hugging Face cache so libraries find them offline.
 *
 * mount asks the mirror for the snapshot's torrent, then forks: the child mounts and serves (its
 * libtorrent session starts after the fork), the parent waits on a pipe until the files are visible
 * and the cache links made, and returns. --foreground keeps it all in one process.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "cli.h"
#include "hub/cache.h"
#include "hub/hub.h"
#include "hub/http.h"
#include "p2p/mount.h"
#include "p2p/p2p.h"

struct hf_links {
	const char *hub_cache;     /* NULL: no links */
	const char *ms_cache;      /* ModelScope: the classic SDK's cache (NULL: no links) */
	const char *ms_hub_cache;  /* and modelscope_hub's */
	const char *type;          /* "model" / "dataset" */
	const char *name;          /* org/name */
	const char *revision;      /* the ref name */
	const char *commit;
	const char *dir;           /* the mount point */
	int ready_fd;              /* -1 in the foreground */
};

static int on_mounted(void *ud, const char *btih, const struct p2p_file_list *files)
{
	const struct hf_links *l = ud;
	char *why = NULL;
	int r = 0;

	(void)btih;
	if (l->hub_cache || l->ms_cache) {
		const char **paths = xcalloc(files->n ? files->n : 1, sizeof(*paths));
		for (size_t i = 0; i < files->n; i++)
			paths[i] = files->v[i].path;
		if (l->hub_cache)
			r = hub_cache_link_hf(l->hub_cache, l->type, l->name, l->revision, l->commit, l->dir, paths,
					      files->n, &why);
		else
			r = hub_cache_link_ms(l->ms_cache, l->ms_hub_cache, l->type, l->name, l->revision, l->commit,
					      l->dir, paths, files->n, &why);
		free(paths);
	}
	if (l->ready_fd >= 0) {
		char *msg = r ? xasprintf("%s\n", why ? why : err_str(r)) : xstrdup("ok\n");
		if (write(l->ready_fd, msg, strlen(msg)) < 0) { /* the parent is gone: carry on */
		}
		free(msg);
		close(l->ready_fd);
	} else if (r) {
		fprintf(stderr, "hubmirror: %s\n", why ? why : err_str(r));
	}
	free(why);
	return r;
}

/* GET the snapshot's meta from the mirror (commit, ref, name, files with sha256): a new reference,
 * or NULL after saying why on stderr. */
static json_t *fetch_meta(const char *mirror, const struct hub_spec *spec, const char *what)
{
	char *q = spec->revision ? hub_url_escape(spec->revision, false) : NULL, *body = NULL, *err = NULL;
	char *url = xasprintf("%s/api/p2p/torrent/%s/%s/%s?meta=1%s%s", mirror, hub_kind_name(spec->hub),
			      hub_type_name(spec->type), spec->name, q ? "&rev=" : "", q ? q : "");
	json_t *meta = NULL;
	size_t len = 0;
	long status = 0;

	if (hub_http_get_blocking(url, cli_mirror_token(), 256 << 20, &body, &len, &status, &err)) {
		fprintf(stderr, "hubmirror: %s: %s\n", mirror, err ? err : "no answer");
	} else {
		meta = json_loads(body, 0, NULL);
		if (status != 200 || !json_is_object(meta)) {
			const char *e = json_string_value(json_object_get(meta, "error"));
			fprintf(stderr, "hubmirror: %s on %s: %s\n", what, mirror, e ? e : "unexpected answer");
			json_decref(meta);
			meta = NULL;
		}
	}
	free(q);
	free(url);
	free(body);
	free(err);
	return meta;
}

/* The files the meta names with a sha256 (borrowed from meta), for placing contents already here. */
static struct p2p_mount_known *known_files(json_t *meta, size_t *n)
{
	json_t *files = json_object_get(meta, "files"), *it;
	struct p2p_mount_known *known = xcalloc(json_array_size(files) + 1, sizeof(*known));
	size_t i;

	*n = 0;
	json_array_foreach(files, i, it) {
		const char *p = json_string_value(json_object_get(it, "path"));
		const char *h = json_string_value(json_object_get(it, "sha256"));
		if (p && h) {
			known[*n].path = p;
			known[*n].sha256 = h;
			(*n)++;
		}
	}
	return known;
}

/* Fork the mount's own process and wait on a pipe until its files are visible (and linked), or it
 * says why it could not. Returns CLI_OK or CLI_FAILED (said on stderr). */
static int run_detached(const struct p2p_mount_config *mc, struct hf_links *links, const char *what)
{
	int pipefd[2];
	pid_t pid;
	char msg[512];
	ssize_t n;

	if (pipe(pipefd) < 0) {
		fprintf(stderr, "hubmirror: pipe: %s\n", strerror(errno));
		return CLI_FAILED;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "hubmirror: fork: %s\n", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return CLI_FAILED;
	}
	if (pid == 0) {
		/* the mount's own process: no terminal, its session starts here */
		char *err = NULL;
		int r;
		close(pipefd[0]);
		setsid();
		if (freopen("/dev/null", "r", stdin) == NULL || freopen("/dev/null", "w", stdout) == NULL) {
		}
		links->ready_fd = pipefd[1];
		r = p2p_mount_run(mc, &err);
		if (r) {
			char *m = xasprintf("%s\n", err ? err : err_str(r));
			if (write(pipefd[1], m, strlen(m)) < 0) {
			}
			free(m);
		}
		_exit(r ? 1 : 0);
	}
	close(pipefd[1]);
	n = read(pipefd[0], msg, sizeof(msg) - 1);
	close(pipefd[0]);
	msg[n > 0 ? n : 0] = '\0';
	if (n <= 0 || strcmp(msg, "ok\n")) {
		waitpid(pid, NULL, 0);
		fprintf(stderr, "hubmirror: mount failed: %s", n > 0 ? msg : "the mount process ended\n");
		return CLI_FAILED;
	}
	printf("mounted %s @ %.12s on %s (pid %ld)%s%s\n", what, links->commit, mc->dir, (long)pid,
	       links->hub_cache ? "; Hugging Face cache: " : links->ms_cache ? "; ModelScope cache: " : "",
	       links->hub_cache ? links->hub_cache : links->ms_cache ? links->ms_cache : "");
	return CLI_OK;
}

int cmd_mount(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mirror", required_argument, NULL, 'm' },
		{ "cache", required_argument, NULL, 'c' },
		{ "hf-cache", required_argument, NULL, 'H' },
		{ "no-hf-cache", no_argument, NULL, 'N' },
		{ "ms-cache", required_argument, NULL, 'S' },
		{ "no-ms-cache", no_argument, NULL, 'n' },
		{ "listen", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *self = cli_find("mount");
	const char *mirror_opt = NULL, *cache = getenv("HUBMIRROR_CACHE"), *listen = NULL, *mirror;
	char hcbuf[4096], mcbuf[4096], mhbuf[4096], *dir = NULL, *err = NULL, *tor = NULL, *url = NULL;
	struct hf_links links = { .ready_fd = -1 };
	struct p2p_mount_config mc = { 0 };
	struct p2p_mount_known *known = NULL;
	size_t nknown = 0;
	struct hub_spec spec;
	json_t *meta = NULL;
	bool foreground = false, no_hf = false, no_ms = false;
	size_t tlen = 0;
	long status = 0;
	int c, r = CLI_FAILED;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mirror_opt = optarg; break;
		case 'c': cache = optarg; break;
		case 'H': links.hub_cache = optarg; break;
		case 'N': no_hf = true; break;
		case 'S': links.ms_cache = links.ms_hub_cache = optarg; break;
		case 'n': no_ms = true; break;
		case 'l': listen = optarg; break;
		case 'f': foreground = true; break;
		default: return cli_usage_error(self, "unknown option");
		}
	}
	if (optind >= argc || argc - optind > 2)
		return cli_usage_error(self, "give a SPEC (and a folder)");
	mirror = cli_mirror_url(mirror_opt);
	if (!mirror)
		return cli_usage_error(self, "which mirror? give --mirror URL or set HUBMIRROR_URL");
	if (hub_spec_parse(argv[optind], &spec))
		return cli_usage_error(self, "'%s' is not a SPEC like hf:org/name[@rev]", argv[optind]);
	if (!strchr(spec.name, '/')) {
		hub_spec_release(&spec);
		return cli_usage_error(self, "mount needs an org/name repo");
	}
	dir = argc - optind == 2 ? xstrdup(argv[optind + 1]) : xasprintf("/models/%s", spec.name);
	if (!cache)
		cache = "/var/cache/hubmirror";
	if (!no_hf && !links.hub_cache && !strcmp(hub_kind_name(spec.hub), "hf"))
		links.hub_cache = hub_cache_hf_default(hcbuf, sizeof(hcbuf));
	if (no_hf || spec.hub != HUB_HF)
		links.hub_cache = NULL;
	if (spec.hub == HUB_MS && !no_ms && !links.ms_cache) {
		links.ms_cache = hub_cache_ms_default(mcbuf, sizeof(mcbuf));
		links.ms_hub_cache = hub_cache_ms_hub_default(mhbuf, sizeof(mhbuf));
	}
	if (no_ms || spec.hub != HUB_MS)
		links.ms_cache = links.ms_hub_cache = NULL;

	/* what to mount: the snapshot's commit and ref, then its torrent */
	if (!(meta = fetch_meta(mirror, &spec, argv[optind])))
		goto out;
	links.type = hub_type_name(spec.type);
	links.name = spec.name;
	links.revision = json_string_value(json_object_get(meta, "revision"));
	links.commit = json_string_value(json_object_get(meta, "commit"));
	links.dir = dir;
	/* the commit names a folder of the HF cache: 40 hex digits, nothing else */
	if (!links.revision || !links.commit || hub_check_revision(links.revision) || !hex_is_lower(links.commit, 40)) {
		fprintf(stderr, "hubmirror: %s answered a snapshot without a usable commit or ref\n", mirror);
		goto out;
	}
	/* the torrent of that very commit, even if a sync moves the ref meanwhile */
	url = xasprintf("%s/api/p2p/torrent/%s/%s/%s?rev=%s", mirror, hub_kind_name(spec.hub), hub_type_name(spec.type),
			spec.name, links.commit);
	if (hub_http_get_blocking(url, cli_mirror_token(), 128 << 20, &tor, &tlen, &status, &err) || status != 200) {
		fprintf(stderr, "hubmirror: cannot get the torrent from %s: %s\n", mirror, err ? err : "unexpected answer");
		goto out;
	}
	if ((c = path_mkdirs(dir, 0755)) != 0 || (c = path_mkdirs(cache, 0755)) != 0) {
		fprintf(stderr, "hubmirror: cannot create %s or %s: %s\n", dir, cache, err_str(c));
		goto out;
	}
	/* contents this instance may hold already (another revision): placed before the torrent starts */
	known = known_files(meta, &nknown);
	mc.known = known;
	mc.nknown = nknown;
	mc.name = json_string_value(json_object_get(meta, "name"));
	mc.torrent = (const unsigned char *)tor;
	mc.len = tlen;
	mc.dir = dir;
	mc.cache_dir = cache;
	mc.listen = listen;
	mc.on_mounted = on_mounted;
	mc.ud = &links;

	if (!foreground) {
		r = run_detached(&mc, &links, argv[optind]);
		goto out;
	}
	r = p2p_mount_run(&mc, &err) ? CLI_FAILED : CLI_OK;
	if (r)
		fprintf(stderr, "hubmirror: %s\n", err ? err : "mount failed");
out:
	free(known);
	json_decref(meta);
	hub_spec_release(&spec);
	free(url);
	free(tor);
	free(dir);
	free(err);
	return r;
}

int cmd_umount(int argc, char **argv)
{
	const struct cli_command *self = cli_find("umount");
	pid_t pid;
	int st;

	if (argc != 2 || argv[1][0] == '-')
		return cli_usage_error(self, "give the folder to unmount");
	/* root unmounts directly; others through libfuse's setuid helper */
	if (getuid() == 0 && umount2(argv[1], 0) == 0)
		return CLI_OK;
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", argv[1], (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "hubmirror: cannot unmount %s\n", argv[1]);
		return CLI_FAILED;
	}
	return CLI_OK;
}
