/*
 * util.c - small helpers the command files share.
 */
#include "hub/hub.h"
#include "hub/upstream.h"
#include "base/xmalloc.h"
#include "base/path.h"
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/log.h"
#include "catalog/catalog.h"
#include "base/size.h"
#include "base/str.h"
#include "cli.h"
#include "mirror/data.h"

static int open_data(const char *dir, bool create, struct mirror_data **out)
{
	char *err = NULL;
	int r = create ? mirror_data_create(dir ? dir : mirror_data_default_dir(), out, &err)
		       : mirror_data_open(dir ? dir : mirror_data_default_dir(), out, &err);

	if (r) {
		fprintf(stderr, "hubmirror: %s\n", err ? err : "cannot open data directory");
		free(err);
		return CLI_FAILED;
	}
	return CLI_OK;
}

int cli_spec_error(const struct cli_command *cmd, const char *where, const char *arg)
{
	const char *rest = skip_prefix(arg, "hf:"), *at;
	enum hub_kind k = rest ? HUB_HF : HUB_MS;
	char *name = NULL, *why;

	if (!rest)
		rest = skip_prefix(arg, "ms:");
	if (!rest) {
		bool slip = (!strncmp(arg, "hf/", 3) || !strncmp(arg, "ms/", 3));
		why = slip ? xasprintf("did you mean %.2s:%s?", arg, arg + 3)
			   : xstrdup("a repository is hf:ORG/NAME, hf:datasets/ORG/NAME, ms:ORG/NAME or "
				     "ms:datasets/ORG/NAME");
	} else {
		rest = skip_prefix(rest, "datasets/") ? skip_prefix(rest, "datasets/")
		       : skip_prefix(rest, "models/") ? skip_prefix(rest, "models/")
						      : rest;
		at = strchr(rest, '@');
		name = at ? xstrndup(rest, (size_t)(at - rest)) : xstrdup(rest);
		if (hub_check_name(k, name))
			why = xasprintf("'%s' is not a repository name (ORG/NAME: letters, digits, '.', '_' and '-', "
					"neither '..' nor '--', at most 96 each%s)",
					name, k == HUB_MS ? "; ModelScope needs the ORG" : "");
		else if (at && hub_check_revision(at + 1))
			why = xasprintf(
				"'%s' is not a revision (a branch, tag or commit: printable, no spaces or '..')",
				at + 1);
		else
			why = xstrdup("not a repository this command takes (an ORG/NAME)");
	}
	/* one line and where help is, no usage block: the command was right, one value was not */
	fprintf(stderr, "hubmirror: %s%s%s'%s': %s\n(see 'hubmirror help %s')\n", where ? where : "",
		where && *where ? "" : cmd->name, where && *where ? "" : ": ", arg, why, cmd->name);
	free(name);
	free(why);
	return CLI_USAGE;
}

int cli_check_specs(const struct cli_command *self, int first, int argc, char **argv, bool one_at_least,
		    const char *no_revision)
{
	if (one_at_least && first >= argc)
		return cli_usage_error(self, "no repository given");
	for (int i = first; i < argc; i++) {
		struct hub_spec s;
		bool rev;
		if (hub_spec_parse(argv[i], &s))
			return cli_spec_error(self, NULL, argv[i]);
		rev = s.revision != NULL;
		hub_spec_release(&s);
		if (rev && no_revision)
			return cli_usage_error(self, "'%s': %s", argv[i], no_revision);
	}
	return CLI_OK;
}

int cli_open_data(const char *dir, struct mirror_data **out)
{
	return open_data(dir, false, out);
}

int cli_create_data(const char *dir, struct mirror_data **out)
{
	return open_data(dir, true, out);
}

void cli_data_done(struct mirror_data **d, int r)
{
	struct catalog_repo *list = NULL;
	size_t n = 0;

	if (!*d || !((*d)->made & MIRROR_DATA_MADE_CATALOG)) {
		mirror_data_free(d);
		return;
	}
	if (r != CLI_OK && catalog_repo_list((*d)->catalog, &list, &n) == 0 && n == 0) {
		char *dir = xstrdup((*d)->dir);
		int e = mirror_data_unmake(d);
		if (e)
			fprintf(stderr, "hubmirror: the new mirror in '%s' could not be taken back whole: %s\n", dir,
				err_str(e));
		free(dir);
		return;
	}
	catalog_repo_list_free(list, n);
	fprintf(stderr, "hubmirror: made a new mirror in '%s' (no mirror was there; if another was meant: --data or "
		"HUBMIRROR_DATA)\n", (*d)->dir);
	mirror_data_free(d);
}

const char *cli_plural(long long n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void cli_human_size(int64_t bytes, char *out, size_t outlen)
{
	size_human(bytes, out, outlen);
}

void cli_human_time(int64_t t, char *out, size_t outlen)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0) {
		snprintf(out, outlen, "never");
		return;
	}
	gmtime_r(&tt, &tm);
	strftime(out, outlen, "%Y-%m-%d %H:%M", &tm);
}

void cli_human_age(int64_t t, char *out, size_t outlen)
{
	int64_t age = (int64_t)time(NULL) - t;

	if (t <= 0)
		snprintf(out, outlen, "never");
	else if (age < 60)
		snprintf(out, outlen, "just now");
	else if (age < 3600)
		snprintf(out, outlen, "%lldm ago", (long long)(age / 60));
	else if (age < 2 * 86400)
		snprintf(out, outlen, "%lldh ago", (long long)(age / 3600));
	else if (age < 365 * 86400)
		snprintf(out, outlen, "%lldd ago", (long long)(age / 86400));
	else {
		time_t tt = (time_t)t;
		struct tm tm;
		gmtime_r(&tt, &tm);
		strftime(out, outlen, "%Y-%m-%d", &tm);
	}
}

double cli_mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void cli_human_secs(double secs, char *out, size_t cap)
{
	long v = secs < 0 ? 0 : secs > 3599999 ? 3599999 : (long)(secs + 0.5);

	if (v >= 3600)
		snprintf(out, cap, "%ldh%02ldm", v / 3600, v / 60 % 60);
	else if (v >= 60)
		snprintf(out, cap, "%ldm%02lds", v / 60, v % 60);
	else
		snprintf(out, cap, "%lds", v);
}

void cli_progress_start(struct cli_progress *p, const char *what)
{
	memset(p, 0, sizeof(*p));
	p->what = what;
	p->started = cli_mono_s();
	p->on = isatty(STDERR_FILENO) && log_get_level() >= LOG_LEVEL_INFO;
}

void cli_progress_fn(void *ud, int64_t done_n, int64_t total_n, int64_t done_bytes, int64_t total_bytes)
{
	struct cli_progress *p = ud;
	double now = cli_mono_s(), secs = now - p->started, rate = secs > 0.5 ? (double)done_bytes / secs : 0;
	char db[16], tb[16], rb[16], eta[32] = "";

	if (!p->on || (now - p->last < 0.25 && done_n < total_n))
		return;
	p->last = now;
	p->drawn = true;
	cli_human_size(done_bytes, db, sizeof(db));
	cli_human_size(total_bytes, tb, sizeof(tb));
	cli_human_size((int64_t)rate, rb, sizeof(rb));
	if (rate > 0 && total_bytes > done_bytes) {
		char left[24];
		cli_human_secs((double)(total_bytes - done_bytes) / rate, left, sizeof(left));
		snprintf(eta, sizeof(eta), ", ETA %s", left);
	}
	if (total_bytes <= 0) { /* a count alone (gc's walk) */
		fprintf(stderr, "\r\033[K%s: %lld of about %lld entries (%d%%)", p->what, (long long)done_n,
			(long long)total_n, total_n > 0 ? (int)(100 * done_n / total_n) : 100);
		fflush(stderr);
		return;
	}
	fprintf(stderr, "\r\033[K%s: %lld of %lld contents, %s of %s (%d%%)%s%s%s", p->what, (long long)done_n,
		(long long)total_n, db, tb, (int)(100 * done_bytes / total_bytes),
		rate > 0 ? ", " : "", rate > 0 ? rb : "", rate > 0 ? "/s" : "");
	fputs(eta, stderr);
	fflush(stderr);
}

void cli_progress_end(struct cli_progress *p)
{
	if (p->drawn)
		fputs("\r\033[K", stderr);
}

int cli_term_width(void)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (cols && *cols) {
		char *end;
		long c = strtol(cols, &end, 10);
		if (!*end && c > 0 && c < 100000)
			return (int)c;
	}
	if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0)
		return 0;
	return ws.ws_col;
}

int cli_lock_data(struct mirror_data *d, bool wait)
{
	long holder = 0;
	int e = mirror_data_lock(d, wait, &holder);

	if (e == HM_ERR_LOCKED)
		fprintf(stderr, "hubmirror: another sync is running on '%s' (pid %ld); use --wait to run after it\n",
			d->dir, holder);
	else if (e)
		fprintf(stderr, "hubmirror: cannot lock '%s': %s\n", d->dir, err_str(e));
	return e ? CLI_FAILED : CLI_OK;
}

int cli_open_locked(const char *dir, bool wait, struct mirror_data **out)
{
	struct mirror_data *d = NULL;

	if (cli_open_data(dir, &d))
		return CLI_FAILED;
	if (cli_lock_data(d, wait)) {
		mirror_data_free(&d);
		return CLI_FAILED;
	}
	*out = d;
	return CLI_OK;
}

void cli_print_json(json_t *o)
{
	json_dumpf(o, stdout, JSON_INDENT(2));
	putchar('\n');
}

int cli_repo_error(struct mirror_data *d, const char *spec, int e)
{
	if (e == HM_ERR_NOT_FOUND)
		fprintf(stderr, "hubmirror: '%s' is not tracked\n", spec);
	else
		fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(d->catalog));
	return CLI_FAILED;
}

/* A token from a file: the file must be readable by its owner only (a token is a password), and hold
 * one token (surrounding whitespace ignored). *out is malloc'd. Returns 0, or -1 after saying why. */
int cli_read_token_file(const char *path, const char *what, char **out)
{
	struct stat st;
	char *data = NULL, *b, *e;
	size_t len = 0;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "hubmirror: %s '%s': %s\n", what, path, errno ? strerror(errno) : "not a file");
		return -1;
	}
	if (st.st_mode & 077) {
		fprintf(stderr, "hubmirror: %s '%s' can be read by others: make it the owner's only (chmod 600)\n",
			what, path);
		return -1;
	}
	if (path_read_file(path, 8192, &data, &len)) {
		fprintf(stderr, "hubmirror: cannot read %s '%s'\n", what, path);
		return -1;
	}
	for (b = data; *b == ' ' || *b == '\t' || *b == '\n' || *b == '\r'; b++)
		;
	for (e = b + strlen(b); e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'); e--)
		;
	*e = '\0';
	if (!*b || !hub_token_valid(b)) {
		fprintf(stderr, "hubmirror: %s '%s' holds no token (one line of printable characters)\n", what, path);
		free(data);
		return -1;
	}
	*out = xstrdup(b);
	free(data);
	return 0;
}
