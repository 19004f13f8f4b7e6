/*
 * cmd-mount.c - `hubmirror mount SPEC[@REV] [DIR]` and `hubmirror umount DIR`: a synced repo of a
 * mirror as read-only files, fetched on demand from the swarm, and linked into the hub caches so
 * libraries find them offline.
 *
 * Both are clients of the instance agent (p2p/agent/agent.h), which holds every mount of the
 * machine in one process with one swarm session and one cache. mount starts an agent (with its
 * --cache and --listen) when none answers on the socket, and returns once the files are visible.
 * umount detaches; the snapshot stays in the agent's cache and keeps seeding.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <dirent.h>
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "base/buf.h"
#include "base/path.h"
#include "cli.h"
#include "hub/cache.h"
#include "hub/hub.h"
#include "hub/select.h"
#include "p2p/agent/agent.h"

/* An absolute form of dir (the agent runs elsewhere). Caller frees. */
static char *absolute(const char *dir)
{
	char cwd[4096];

	if (dir[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return xstrdup(dir);
	return xasprintf("%s/%s", cwd, dir);
}

int cmd_mount(int argc, char **argv)
{
	const struct cli_command *self = cli_find("mount");
	struct cli_agent_opts o = { .command = "mount", .socket = agent_socket_default() };
	const char *hf, *ms;
	struct hub_spec spec;
	json_t *ans = NULL, *req, *prefetch = json_array();
	char *dir;
	int r;
	const struct cli_flag flags[] = {
		CLI_FN("prefetch", prefetch, cli_take_pattern, "PATTERN",
		       "fetch the files matching PATTERN (a glob, as pull --include) in the\n"
		       "background too; 'all': every file (not for a repo bigger than the cache's bound\n"
		       "or its disk's room: then the default, and a warning); 'none': only what is read"),
		CLI_AGENT_FLAGS(&o),
		CLI_END,
	};
	const char *word = NULL;
	size_t i;
	json_t *it;

	r = cli_parse_flags(self, argc, argv, flags);
	/* all or none: alone */
	json_array_foreach(prefetch, i, it)
		if (!strcmp(json_string_value(it), "all") || !strcmp(json_string_value(it), "none"))
			word = json_string_value(it);
	if (!r && word && json_array_size(prefetch) > 1)
		r = cli_usage_error(self, "--prefetch %s goes alone, not with other --prefetch patterns", word);
	if (!r && (optind >= argc || argc - optind > 2))
		r = cli_usage_error(self, "give a SPEC (and a folder)");
	if (r) {
		json_decref(prefetch);
		return CLI_USAGE;
	}
	if (hub_spec_parse(argv[optind], &spec)) {
		json_decref(prefetch);
		return cli_spec_error(self, NULL, argv[optind]);
	}
	if (!strchr(spec.name, '/')) {
		hub_spec_release(&spec);
		json_decref(prefetch);
		return cli_usage_error(self, "mount needs an org/name repo");
	}
	o.mirror = cli_mirror_url(o.mirror);
	dir = argc - optind == 2 ? absolute(argv[optind + 1]) : xasprintf("/models/%s", spec.name);
	req = cli_agent_request(argv[optind], &o);
	json_object_set_new(req, "dir", json_string(dir));
	if (word)
		json_object_set_new(req, "prefetch", json_string(word));
	else if (json_array_size(prefetch))
		json_object_set(req, "prefetch", prefetch);
	json_decref(prefetch);
	r = cli_agent_post(&o, "/v1/mount", req, &ans);
	json_decref(req);
	if (r)
		goto out;
	hf = json_string_value(json_object_get(ans, "hf_cache"));
	ms = json_string_value(json_object_get(ans, "ms_cache"));
	printf("mounted %s @ %.12s on %s (agent pid %lld)%s%s\n", argv[optind],
	       json_string_value(json_object_get(ans, "commit")), dir,
	       (long long)json_integer_value(json_object_get(ans, "pid")),
	       hf ? "; Hugging Face cache: " : ms ? "; ModelScope cache: " : "", hf ? hf : ms ? ms : "");
	cli_agent_offline_note(argv[optind], ans);
	if (json_string_value(json_object_get(ans, "warning")))
		fprintf(stderr, "hubmirror: warning: %s\n", json_string_value(json_object_get(ans, "warning")));
out:
	json_decref(ans);
	hub_spec_release(&spec);
	free(dir);
	return r;
}

/* A mount no agent holds (one from before the agent, or of a dead agent): unmount it directly. */
static int unmount_direct(const char *dir)
{
	pid_t pid;
	int st;

	/* root unmounts directly; others through libfuse's setuid helper */
	if (getuid() == 0 && umount2(dir, 0) == 0)
		return CLI_OK;
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", dir, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "hubmirror: cannot unmount %s\n", dir);
		return CLI_FAILED;
	}
	return CLI_OK;
}

/* A /proc file whole (their size says 0: read to the end), at most max bytes; NULL when unreadable. */
static char *read_proc(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct buf b;
	char chunk[8192];
	ssize_t n;

	if (fd < 0)
		return NULL;
	buf_init(&b);
	while (b.len < max && ((n = read(fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR)))
		if (n > 0)
			buf_add(&b, chunk, (size_t)n);
	close(fd);
	return buf_detach(&b, NULL);
}

/* A process's name, from /proc/PID/comm ("?" when gone). */
static void proc_comm(const char *pid, char *out, size_t cap)
{
	char *p = xasprintf("/proc/%s/comm", pid), *txt = read_proc(p, 256);

	snprintf(out, cap, "?");
	if (txt && *txt) {
		txt[strcspn(txt, "\n")] = '\0';
		snprintf(out, cap, "%s", txt);
	}
	free(txt);
	free(p);
}

/* Does link (a /proc symlink) name dir or a path below it? */
static bool points_into(const char *link, const char *dir)
{
	char to[4096];
	ssize_t n = readlink(link, to, sizeof(to) - 1);
	size_t dl = strlen(dir);

	if (n <= 0)
		return false;
	to[n] = '\0';
	return !strncmp(to, dir, dl) && (to[dl] == '/' || to[dl] == '\0');
}

/*
 * Who holds the mount at dir: processes with a file, their working folder or their root in it ("pid
 * 1234 (python3)"), and other mount namespaces that copied it (a container's: "pid 5678 (sleep) in
 * another mount namespace"), found by the mount's device in their mountinfo. NULL when none is seen
 * (another user's processes may not be readable). Malloc'd.
 */
static char *holders(const char *dir)
{
	struct stat st, ns_self;
	struct buf b;
	char dev[32], mine[64] = "";
	DIR *proc = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!proc || stat(dir, &st) < 0) {
		if (proc)
			closedir(proc);
		return NULL;
	}
	snprintf(dev, sizeof(dev), " %u:%u ", major(st.st_dev), minor(st.st_dev));
	if (stat("/proc/self/ns/mnt", &ns_self) == 0)
		snprintf(mine, sizeof(mine), "%lu", (unsigned long)ns_self.st_ino);
	buf_init(&b);
	while ((e = readdir(proc)) && n < 12) {
		char comm[64], *p;
		bool held = false, other_ns = false;
		struct stat ns;
		DIR *fds;
		if (!isdigit((unsigned char)e->d_name[0]) || atol(e->d_name) == (long)getpid())
			continue;
		p = xasprintf("/proc/%s/ns/mnt", e->d_name);
		other_ns = stat(p, &ns) == 0 && *mine && (unsigned long)ns.st_ino != strtoul(mine, NULL, 10);
		free(p);
		if (other_ns) {
			/* a namespace that copied the mount: its mountinfo has the mount's device */
			char *mi;
			p = xasprintf("/proc/%s/mountinfo", e->d_name);
			mi = read_proc(p, 4 << 20);
			held = mi && strstr(mi, dev) != NULL;
			free(mi);
			free(p);
		} else {
			p = xasprintf("/proc/%s/cwd", e->d_name);
			held = points_into(p, dir);
			free(p);
			p = xasprintf("/proc/%s/root", e->d_name);
			held |= points_into(p, dir);
			free(p);
			p = xasprintf("/proc/%s/fd", e->d_name);
			fds = opendir(p);
			free(p);
			while (fds && !held) {
				struct dirent *f = readdir(fds);
				char *fp;
				if (!f)
					break;
				fp = xasprintf("/proc/%s/fd/%s", e->d_name, f->d_name);
				held = points_into(fp, dir);
				free(fp);
			}
			if (fds)
				closedir(fds);
		}
		if (!held)
			continue;
		proc_comm(e->d_name, comm, sizeof(comm));
		buf_addf(&b, "%spid %s (%s)%s", b.len ? ", " : "", e->d_name, comm,
			 other_ns ? " in another mount namespace" : "");
		n++;
	}
	closedir(proc);
	if (!b.len) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

int cmd_umount(int argc, char **argv)
{
	char *who = NULL;
	const struct cli_command *self = cli_find("umount");
	const char *socket = agent_socket_default();
	char *dir, *body, *err = NULL;
	json_t *ans = NULL, *req;
	long status = 0;
	int r;
	const struct cli_flag flags[] = {
		CLI_STR("socket", &socket, "PATH",
			"the agent's socket (default $HUBMIRROR_AGENT_SOCKET or /run/hubmirror/agent.sock)"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (argc - optind != 1)
		return cli_usage_error(self, "give the folder to unmount");
	dir = absolute(argv[optind]);
	who = holders(dir); /* before the detach: after it, their paths no longer name it */
	req = json_pack("{s:s}", "dir", dir);
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	r = agent_call(socket, "/v1/umount", body, 60, &status, &ans, &err);
	if (r || status == 404) {
		r = unmount_direct(dir);
	} else if (status != 200) {
		const char *e = json_string_value(json_object_get(ans, "error"));
		fprintf(stderr, "hubmirror: %s\n", e ? e : "the agent could not unmount it");
		r = CLI_FAILED;
	} else {
		json_int_t yes = json_integer_value(json_object_get(ans, "relinked"));
		json_int_t no = json_integer_value(json_object_get(ans, "unlinked"));
		/* the hub cache's links into the folder: never left pointing into an empty one */
		if (yes)
			printf("unmounted %s: its %lld %s in the hub cache now %s at the agent's cache (verified)\n",
			       dir, (long long)yes, yes == 1 ? "file" : "files", yes == 1 ? "points" : "point");
		if (no)
			printf("unmounted %s: %lld %s into it taken out of the hub cache (the agent's cache does "
			       "not hold %s verified: mount or pull it again)\n",
			       dir, (long long)no, no == 1 ? "link" : "links", no == 1 ? "that file" : "those files");
		if (json_is_true(json_object_get(ans, "in_use")))
			fprintf(stderr,
				"hubmirror: %s is unmounted here, but the mount stays in use elsewhere (files open in "
				"it, or a container or other mount namespace that copied it): it is served until the "
				"last of them lets go%s%s\n",
				dir, who ? "; held by " : "", who ? who : "");
		r = CLI_OK;
	}
	json_decref(ans);
	free(body);
	free(dir);
	free(who);
	free(err);
	return r;
}
