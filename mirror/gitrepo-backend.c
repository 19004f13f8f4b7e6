/*
 * gitrepo-backend.c - git clone and fetch of a mirrored repo (mirror_git_backend, gitrepo.h): one
 * request handed to git's own http-backend (a CGI, run with a clean environment, its input and output
 * in unlinked temporary files, bounded in time), upload-pack only; a gzip'd body inflated here within
 * its bound, and an upload-pack request's pkt-lines checked before git runs (gitpkt.h). gitrepo.c
 * builds the repositories it serves.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fdio.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "data.h"
#include "gitpkt.h"
#include "gitrepo-int.h"
#include "gitrepo.h"

#define GIT_BODY_MAX ((size_t)10 << 20)  /* a request's body, inflated: a want list of 100,000 objects */
#define GIT_RUN_MAX_S 120                /* one http-backend run */
#define GIT_PUSH_MAX_S 1800              /* one push: its pack read, its files stored */
#define PUSH_ENV_MAX 40

/* gitrepo__git_wait, but a run past limit_s is killed (-2): an upload-pack is bounded in time, so no client
 * holds one of serve's workers for long. */
static int git_wait_bounded(pid_t pid, int limit_s)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	int st;

	for (long waited_ms = 0;; waited_ms += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (waited_ms >= (long)limit_s * 1000) {
			kill(pid, SIGKILL);
			gitrepo__git_wait(pid);
			return -2;
		}
		nanosleep(&nap, NULL);
	}
}

/* Inflate a gzip'd request body (git sends large want lists so) here, up to GIT_BODY_MAX bytes, so that
 * git's http-backend never sees more: 0 with *out (malloc'd), -EFBIG past the cap, -EINVAL when it is
 * no gzip. libarchive's raw format reads the bare stream. */
static int inflate_body(const char *body, size_t len, char **out, size_t *outlen)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	struct buf b;
	char chunk[65536];
	la_ssize_t n;
	int r = 0;

	buf_init(&b);
	archive_read_support_filter_gzip(a);
	archive_read_support_format_raw(a);
	if (archive_read_open_memory(a, body, len) != ARCHIVE_OK || archive_read_next_header(a, &e) != ARCHIVE_OK ||
	    archive_filter_code(a, 0) != ARCHIVE_FILTER_GZIP) {
		r = -EINVAL;
	} else {
		while ((n = archive_read_data(a, chunk, sizeof(chunk))) > 0) {
			if (b.len + (size_t)n > GIT_BODY_MAX) {
				r = -EFBIG;
				break;
			}
			buf_add(&b, chunk, (size_t)n);
		}
		if (!r && n < 0)
			r = -EINVAL;
	}
	archive_read_free(a);
	if (r) {
		buf_release(&b);
		return r;
	}
	*outlen = b.len;
	*out = buf_detach(&b, NULL);
	return 0;
}

/* A header value safe to hand a CGI as an environment variable: printable ASCII, short. */
static bool env_value_ok(const char *v)
{
	if (!v || strlen(v) > 200)
		return false;
	for (; *v; v++)
		if ((unsigned char)*v < ' ' || (unsigned char)*v > '~')
			return false;
	return true;
}

/* The body git is to read: q's own, or inflated into *inflated (malloc'd) when gzip'd. An upload-pack
 * request's framing is read here first: a malformed request or a filter not served never runs git. */
static int request_body(const struct mirror_git_request *q, const char **body, size_t *len, char **inflated,
			char **errmsg)
{
	const char *b = q->body;
	size_t l = q->len;
	char *infl = NULL;
	int r;

	if (q->content_encoding &&
	    (!strcasecmp(q->content_encoding, "gzip") || !strcasecmp(q->content_encoding, "x-gzip"))) {
		r = inflate_body(b, l, &infl, &l);
		if (r) {
			*errmsg = xstrdup(r == -EFBIG ? "the request inflates past 10 MiB"
						      : "the request's gzip body is damaged");
			return r;
		}
		b = infl;
	} else if (q->content_encoding && *q->content_encoding && strcasecmp(q->content_encoding, "identity")) {
		*errmsg = xasprintf("unknown Content-Encoding '%s'", q->content_encoding);
		return -EINVAL;
	}
	if (!strcmp(q->path_after, "/git-upload-pack")) {
		struct gitpkt_summary sum;
		if ((r = mirror_git_pkt_check(b, l, &sum, errmsg)) != 0) {
			free(infl);
			return r == -2 ? -EPERM : -EINVAL;
		}
	}
	*body = b;
	*len = l;
	*inflated = infl;
	return 0;
}

/* A push's settings for git (receive-pack through http-backend, `hubmirror git-hook` its pre-receive
 * hook; the refs serve builds stay hidden and untouchable) and the hook's own, appended to env at n. */
static int push_env(const char *root, const struct mirror_git_request *q, char **env, int n)
{
	/* a pack is kept as it came (unpackLimit 1: index-pack, never thousands of loose files or a blob
	 * deflated again), and a blob past the hook's 10 MiB is read by streaming, never held whole */
	static const char *const cfg[][2] = {{"http.receivepack", "true"},
					     {"receive.hideRefs", "refs/hubmirror"},
					     {"receive.fsckObjects", "true"},
					     {"receive.denyDeletes", "false"},
					     {"uploadpackfilter.sparse:oid.allow", "false"},
					     {"receive.unpackLimit", "1"},
					     {"core.bigFileThreshold", "16m"}};
	size_t k = sizeof(cfg) / sizeof(cfg[0]);

	env[n++] = xasprintf("GIT_CONFIG_COUNT=%zu", k + 1);
	for (size_t i = 0; i < k; i++) {
		env[n++] = xasprintf("GIT_CONFIG_KEY_%zu=%s", i, cfg[i][0]);
		env[n++] = xasprintf("GIT_CONFIG_VALUE_%zu=%s", i, cfg[i][1]);
	}
	env[n++] = xasprintf("GIT_CONFIG_KEY_%zu=core.hooksPath", k);
	env[n++] = xasprintf("GIT_CONFIG_VALUE_%zu=%s/hooks", k, root);
	for (size_t i = 0; q->push_env && q->push_env[i] && n < PUSH_ENV_MAX - 1; i++)
		env[n++] = xstrdup(q->push_env[i]);
	return n;
}

/* The hook git runs before a push moves a ref: <data>/git/hooks/pre-receive, written when it is not as it
 * should be (it runs the binary serve runs). */
static int hook_write(const char *root, char **errmsg)
{
	char exe[4096], *dir = xasprintf("%s/hooks", root), *path = xasprintf("%s/pre-receive", dir), *want,
			*have = NULL;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t len = 0;
	int r = 0;

	exe[n > 0 ? n : 0] = '\0';
	/* git runs under a bound of its memory (gitrepo__git_start_bounded); the hook keeps its own (the
	 * few bytes of one file at a time) and lifts it for itself */
	want = xasprintf("#!/bin/sh\n# written by hubmirror serve: a push into a local repository (docs/uploads.md)\n"
			 "ulimit -S -d unlimited 2>/dev/null\nexec '%s' git-hook\n", exe);
	if (n <= 0 || strchr(exe, '\'')) {
		*errmsg = xstrdup("cannot name this program for git's hook");
		r = HM_ERR_GIT;
	} else if (path_read_file(path, 1 << 16, &have, &len) || len != strlen(want) || memcmp(have, want, len)) {
		if (path_mkdirs(dir, 0755) || path_write_atomic(path, want, strlen(want), 0755)) {
			*errmsg = xasprintf("writing %s: %s", path, strerror(errno));
			r = HM_ERR_GIT;
		}
	}
	free(have);
	free(want);
	free(path);
	free(dir);
	return r;
}

/* The CGI's environment for request q, whose body is len bytes, into env (room for PUSH_ENV_MAX): only
 * what http-backend needs, header values only when safe. Returns how many it set. */
static int cgi_env(const char *root, const struct mirror_git_request *q, size_t len, char **env)
{
	int n = 0;

	env[n++] = xasprintf("GIT_PROJECT_ROOT=%s", root);
	env[n++] = xstrdup("GIT_HTTP_EXPORT_ALL=1");
	env[n++] = xasprintf("PATH_INFO=/%s%s", q->rel, q->path_after);
	env[n++] = xasprintf("REQUEST_METHOD=%s", q->method);
	env[n++] = xasprintf("QUERY_STRING=%s", env_value_ok(q->query) ? q->query : "");
	env[n++] = xasprintf("CONTENT_LENGTH=%zu", len);
	if (env_value_ok(q->content_type))
		env[n++] = xasprintf("CONTENT_TYPE=%s", q->content_type);
	if (env_value_ok(q->git_protocol))
		env[n++] = xasprintf("GIT_PROTOCOL=%s", q->git_protocol);
	if (q->push)
		return push_env(root, q, env, n);
	/* a sparse:oid filter costs paths times patterns: refused (git's own switch) */
	env[n++] = xstrdup("GIT_CONFIG_COUNT=1");
	env[n++] = xstrdup("GIT_CONFIG_KEY_0=uploadpackfilter.sparse:oid.allow");
	env[n++] = xstrdup("GIT_CONFIG_VALUE_0=false");
	return n;
}

/* The CGI's header lines in head (up to the blank line, cut there) read into a's status (200 unless
 * one says otherwise) and Content-Type. */
static void cgi_headers(char *head, struct mirror_git_answer *a)
{
	a->status = 200;
	for (char *p = head; p && *p;) {
		char *e = strchr(p, '\n');
		if (e) {
			*e = '\0';
			if (e > p && e[-1] == '\r')
				e[-1] = '\0';
		}
		if (!strncasecmp(p, "Status:", 7))
			a->status = atoi(p + 7);
		else if (!strncasecmp(p, "Content-Type:", 13))
			a->ctype = xstrdup(p + 13 + strspn(p + 13, " "));
		p = e ? e + 1 : NULL;
	}
}

/* The CGI's answer in out read into *a: its headers, then where its body starts and how long it is.
 * When it answered nothing, git's last words in err (it exited st) say why. */
static int cgi_answer(int out, int err, int st, struct mirror_git_answer *a, char **errmsg)
{
	char head[4096], *end;
	size_t skip = 4;
	struct stat sb;
	ssize_t got;

	/* the CGI's headers, then a blank line, then the body */
	got = pread(out, head, sizeof(head) - 1, 0);
	if (got <= 0) {
		char *w = gitrepo__last_words(err);
		*errmsg = xasprintf("git http-backend (exit %d): %s", st, w);
		free(w);
		return HM_ERR_GIT;
	}
	head[got] = '\0';
	end = strstr(head, "\r\n\r\n");
	if (!end || (strstr(head, "\n\n") && strstr(head, "\n\n") < end)) {
		end = strstr(head, "\n\n");
		skip = 2;
	}
	if (!end) {
		*errmsg = xstrdup("git http-backend answered without headers");
		return HM_ERR_GIT;
	}
	*end = '\0';
	if (fstat(out, &sb)) { /* before the headers fill a: a failure writes nothing there */
		*errmsg = xasprintf("git http-backend's answer: %s", strerror(errno));
		return HM_ERR_GIT;
	}
	cgi_headers(head, a);
	a->offset = (long long)(end - head) + (long long)skip;
	a->length = (long long)sb.st_size - a->offset;
	if (a->status < 100 || a->status > 599)
		a->status = 500;
	if (!a->ctype)
		a->ctype = xstrdup("text/plain");
	return 0;
}

int mirror_git_backend(const struct mirror_data *d, const struct mirror_git_request *q, struct mirror_git_answer *a,
		       char **errmsg)
{
	const char *argv[] = { "git", "http-backend", NULL };
	char *root = mirror_git_root(d), *env[PUSH_ENV_MAX] = { 0 }, *inflated = NULL;
	int in = -1, out = -1, err = -1, r, n = 0, st;
	const char *body = NULL;
	size_t len = 0;
	struct stat sb;
	pid_t pid;

	a->fd = -1;
	a->ctype = NULL;
	*errmsg = NULL;
	if (q->push) {
		/* git runs hooks from the repository's directory, and skips a hook it does not find: the path
		 * is absolute */
		char *abs = realpath(root, NULL);
		if (abs) {
			free(root);
			root = abs;
		}
		r = abs ? hook_write(root, errmsg) : HM_ERR_GIT;
		if (!abs)
			*errmsg = xasprintf("%s: %s", root, strerror(errno));
		if (!r && q->content_encoding && *q->content_encoding && strcasecmp(q->content_encoding, "identity")) {
			*errmsg = xasprintf("a push's body is not encoded ('%s')", q->content_encoding);
			r = -EINVAL;
		}
		if (!r && q->body_fd >= 0 && !fstat(q->body_fd, &sb))
			len = (size_t)sb.st_size;
	} else {
		r = request_body(q, &body, &len, &inflated, errmsg);
	}
	if (r)
		goto out;
	n = cgi_env(root, q, len, env);
	in = q->push && q->body_fd >= 0 ? dup(q->body_fd) : gitrepo__tmpfile_in(root);
	out = gitrepo__tmpfile_in(root);
	err = gitrepo__tmpfile_in(root);
	if (in < 0 || out < 0 || err < 0 || (body && len && fdio_write_all(in, body, len)) ||
	    lseek(in, 0, SEEK_SET)) {
		*errmsg = xasprintf("temporary files in %s: %s", root, strerror(errno));
		r = HM_ERR_GIT;
		goto out;
	}
	pid = q->push ? gitrepo__git_start_bounded(argv, (const char *const *)env, in, out, err)
		      : gitrepo__git_start(argv, (const char *const *)env, in, out, err);
	if (pid < 0) {
		*errmsg = xasprintf("cannot run git http-backend: %s", strerror((int)-pid));
		r = HM_ERR_GIT;
		goto out;
	}
	st = git_wait_bounded(pid, q->push ? GIT_PUSH_MAX_S : GIT_RUN_MAX_S);
	if (st == -2) {
		*errmsg =
			xasprintf("git http-backend ran past %d s: stopped", q->push ? GIT_PUSH_MAX_S : GIT_RUN_MAX_S);
		r = -ETIMEDOUT;
		goto out;
	}
	r = cgi_answer(out, err, st, a, errmsg);
	if (r)
		goto out;
	a->fd = out;
	out = -1;
out:
	r = gitrepo__full_disk(root, r, errmsg);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (err >= 0)
		close(err);
	for (int i = 0; i < n; i++)
		free(env[i]);
	free(inflated);
	free(root);
	return r;
}

void mirror_git_invalidate(const struct mirror_data *d, const char *rel)
{
	char *root = mirror_git_root(d), *state = xasprintf("%s/%s/" STATE_FILE, root, rel);

	unlink(state);
	free(state);
	free(root);
}
