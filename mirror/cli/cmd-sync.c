/*
 * cmd-sync.c - `hubmirror sync [SPEC...]`: bring tracked repositories up to date (mirror/sync.c).
 *
 * One sync at a time per data directory: a second one exits with a message, or with --wait queues
 * behind the first. Safe to run from cron or a systemd timer while `serve` runs: readers see a repo's
 * new snapshot only once all its files are verified in the store.
 */
#include <getopt.h>
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/path.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "config.h"
#include "prepare.h"
#include "hub/hub.h"
#include "hub/upstream.h"
#include "mirror/data.h"
#include "mirror/maint.h"
#include "mirror/sync.h"

static const char *env_first(const char *a, const char *b)
{
	const char *v = getenv(a);
	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

static json_t *report_json(const struct mirror_sync_report *rep)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "run_id", (json_int_t)rep->run_id,
			      "ok", (json_int_t)rep->ok, "failed", (json_int_t)rep->failed,
			      "files_fetched", (json_int_t)rep->files_fetched,
			      "bytes_fetched", (json_int_t)rep->bytes_fetched,
			      "upstream_requests", (json_int_t)rep->upstream_requests, "seconds", rep->seconds);
	json_t *a = json_array();

	for (size_t i = 0; i < rep->nrepos; i++) {
		const struct mirror_sync_repo_result *r = &rep->repos[i];
		json_t *ro = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:o}",
			"spec", r->spec, "outcome", r->outcome,
			"commit", r->commit ? json_string(r->commit) : json_null(),
			"files", (json_int_t)r->files, "bytes", (json_int_t)r->bytes,
			"files_fetched", (json_int_t)r->files_fetched, "bytes_fetched", (json_int_t)r->bytes_fetched,
			"skipped_unsafe", (json_int_t)r->skipped_unsafe,
			"error", r->error ? json_string(r->error) : json_null());
		json_object_set_new(ro, "warning", r->warning ? json_string(r->warning) : json_null());
		if (r->refs_listed) {
			/* the second pass: only when upstream's refs were asked for in this run */
			json_t *refs = json_array();
			for (size_t k = 0; k < r->nrefs; k++) {
				const struct mirror_sync_ref_result *f = &r->refs[k];
				json_array_append_new(refs,
						      json_pack("{s:s, s:o, s:o, s:s, s:o}", "name", f->name, "kind",
								f->kind ? json_string(f->kind) : json_null(), "commit",
								f->commit ? json_string(f->commit) : json_null(),
								"outcome", f->outcome, "error",
								f->error ? json_string(f->error) : json_null()));
			}
			json_object_set_new(ro, "refs", refs);
			json_object_set_new(ro, "refs_error", r->refs_error ? json_string(r->refs_error) : json_null());
			json_object_set_new(ro, "refs_dropped", json_integer((json_int_t)r->refs_dropped));
		}
		json_array_append_new(a, ro);
	}
	json_object_set_new(o, "repos", a);
	json_object_set_new(o, "torrents_made", json_integer((json_int_t)rep->torrents_made));
	json_object_set_new(o, "quota_dropped", json_integer((json_int_t)rep->quota_dropped));
	json_object_set_new(o, "quota_freed", json_integer((json_int_t)rep->quota_freed));
	return o;
}

/* How far the run is, for the line a Ctrl-C leaves (the handler reads them). */
static volatile sig_atomic_t repos_done, repos_total, progress_on;
static volatile sig_atomic_t report_fd = STDOUT_FILENO;
static bool lines_on; /* not with --json: stdout is the JSON's alone */

static size_t put_num(char *p, long v)
{
	char tmp[24];
	size_t n = 0, k = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	while (n)
		p[k++] = tmp[--n];
	return k;
}

/* SIGINT, SIGTERM: say what was done, then end as the signal would (only async-signal-safe calls).
 * Every repo that ended is in the catalog and its line was printed; a file being fetched stays in
 * the store's partial folder and the next sync goes on from it. */
static void on_interrupt(int sig)
{
	static const char a[] = "sync: interrupted after ", b[] = " of ",
		c[] = " repos: what they fetched is kept, and the next sync goes on from there\n";
	char line[256];
	size_t n = 0;

	if (progress_on)
		(void)!write(STDERR_FILENO, "\r\033[K", 4);
	memcpy(line + n, a, sizeof(a) - 1);
	n += sizeof(a) - 1;
	n += put_num(line + n, (long)repos_done);
	memcpy(line + n, b, sizeof(b) - 1);
	n += sizeof(b) - 1;
	n += put_num(line + n, (long)repos_total);
	memcpy(line + n, c, sizeof(c) - 1);
	n += sizeof(c) - 1;
	(void)!write(report_fd, line, n);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The live progress line on a terminal: overall numbers, then the biggest file in flight with its
 * own progress, like the tools ML users know; one line, rewritten in place (mirror_sync_config's
 * on_progress), ended with a newline after the run's last numbers. */
static void draw_progress(void *ud, const struct mirror_sync_progress *p)
{
	char file[64] = "";

	(void)ud;
	if (p->file) {
		const char *base = strrchr(p->file, '/') ? strrchr(p->file, '/') + 1 : p->file;
		snprintf(file, sizeof(file), "  %.40s %3d%%", base, p->file_percent);
	}
	if (p->waiting_s > 0 && !p->done) /* not a line that stands still */
		snprintf(file, sizeof(file), "  waiting %.0f s: upstream asked to slow down", p->waiting_s + 0.499);
	fprintf(stderr, "\r\033[Ksync: repos %zu/%zu  files %lld/%lld  %.1f/%.1f MiB  %.1f MiB/s%s%s", p->repos_done,
		p->repos_total, (long long)p->files_done, (long long)p->files_total, (double)p->bytes_done / 1048576.0,
		(double)p->bytes_total / 1048576.0, p->bytes_per_s / 1048576.0, file, p->done ? "\n" : "");
}

/* A repo's line (and its warning), printed as its first pass ends (on_repo): a run of hours shows
 * what it did so far, into a file or a pipe too. */
static void print_repo(void *ud, const struct mirror_sync_repo_result *r)
{
	char b[32];

	(void)ud;
	repos_done++;
	if (progress_on)
		fputs("\r\033[K", stderr); /* the progress line comes back at its next tick */
	if (!lines_on)
		return;
	/* -q: only what went wrong or needs a look */
	if (log_get_level() < LOG_LEVEL_INFO && !r->error && !r->warning)
		return;
	cli_human_size(r->bytes_fetched, b, sizeof(b));
	if (r->error)
		printf("%-9s %s: %s\n", r->outcome, r->spec, r->error);
	else
		printf("%-9s %s @ %.12s: %lld %s, fetched %lld (%s)%s\n", r->outcome, r->spec, r->commit,
		       (long long)r->files, cli_plural(r->files, "file", "files"), (long long)r->files_fetched, b,
		       r->skipped_unsafe ? ", skipped unsafe paths" : "");
	if (r->warning)
		printf("%-9s %s: %s\n", "warning", r->spec, r->warning);
	fflush(stdout);
}

/* The rest of the report once the run ended: the refs of the second pass, then the summary. */
static void print_report(const struct mirror_sync_report *rep)
{
	char b[32];

	for (size_t i = 0; i < rep->nrepos; i++) {
		const struct mirror_sync_repo_result *r = &rep->repos[i];
		if (!r->reported && r->outcome) /* (each had its line as it ended; this is for safety) */
			print_repo(NULL, r);
		if (r->refs_error)
			printf("%-9s %s: %s\n", "error", r->spec, r->refs_error);
		for (size_t k = 0; k < r->nrefs; k++) {
			const struct mirror_sync_ref_result *f = &r->refs[k];
			if (f->error || strcmp(f->outcome, "unchanged"))
				printf("%-9s %s@%s%s%.12s%s%s\n", f->outcome, r->spec, f->name, f->commit ? " @ " : "",
				       f->commit ? f->commit : "", f->error ? ": " : "", f->error ? f->error : "");
		}
		if (r->refs_dropped)
			printf("%-9s %s: %lld %s upstream no longer has\n", "dropped", r->spec,
			       (long long)r->refs_dropped, cli_plural(r->refs_dropped, "ref", "refs"));
	}
	if (log_get_level() < LOG_LEVEL_INFO && !rep->failed && !rep->torrents_error)
		return; /* -q: a run that went well says nothing */
	cli_human_size(rep->bytes_fetched, b, sizeof(b));
	printf("sync: %zu ok, %zu failed; fetched %lld %s (%s) in %.1f s with %llu upstream %s\n",
	       rep->ok, rep->failed, (long long)rep->files_fetched, cli_plural(rep->files_fetched, "file", "files"), b,
	       rep->seconds, (unsigned long long)rep->upstream_requests,
	       cli_plural((long long)rep->upstream_requests, "request", "requests"));
	if (rep->torrents_made)
		printf("sync: made %lld %s for the swarm\n", (long long)rep->torrents_made,
		       cli_plural(rep->torrents_made, "torrent", "torrents"));
	if (rep->quota_dropped) {
		char fb[32];
		cli_human_size(rep->quota_freed, fb, sizeof(fb));
		printf("sync: quota: dropped %lld old %s (%s) to make room\n", (long long)rep->quota_dropped,
		       cli_plural(rep->quota_dropped, "snapshot", "snapshots"), fb);
	}
}

/* The tracked repos the specs name (all of them when there are none), into *repos (n of them). Says
 * why on stderr and returns -1 when one is not tracked or the catalog cannot be read. */
static int repos_to_sync(struct mirror_data *data, char **specs, int nspecs, struct catalog_repo **repos, size_t *n)
{
	*n = 0;
	if (nspecs == 0) {
		size_t kept = 0;
		if (catalog_repo_list(data->catalog, repos, n)) {
			fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
			return -1;
		}
		/* the mirror's own repos (uploads) have no upstream to sync from */
		for (size_t i = 0; i < *n; i++) {
			if ((*repos)[i].local)
				catalog_repo_release(&(*repos)[i]);
			else
				(*repos)[kept++] = (*repos)[i];
		}
		*n = kept;
		return 0;
	}
	*repos = xcalloc((size_t)nspecs, sizeof(**repos));
	for (int i = 0; i < nspecs; i++) {
		struct hub_spec s;
		int e;
		hub_spec_parse(specs[i], &s);
		e = catalog_repo_get(data->catalog, hub_kind_name(s.hub), hub_type_name(s.type), s.name, &(*repos)[*n]);
		hub_spec_release(&s);
		if (!e && (*repos)[*n].local) {
			catalog_repo_release(&(*repos)[*n]);
			fprintf(stderr, "hubmirror: '%s' is %s: there is no upstream to sync it from\n", specs[i],
				err_str(HM_ERR_LOCAL));
			return -1;
		}
		if (e) {
			fprintf(stderr, "hubmirror: '%s' is not tracked (add it with 'hubmirror add %s')\n", specs[i],
				specs[i]);
			return -1;
		}
		(*n)++;
	}
	return 0;
}

/* --retry-delay SECONDS: the first backoff, above 0 and at most 600 (f->dest a double). */
static int take_retry_delay(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || v <= 0 || v > 600)
		return cli_usage_error(self, "--retry-delay takes seconds, above 0 and at most 600");
	*(double *)f->dest = v;
	return CLI_OK;
}

/* --xet on|off (f->dest: the config's no_xet). */
static int take_xet(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	if (strcmp(arg, "on") && strcmp(arg, "off"))
		return cli_usage_error(self, "--xet takes on or off");
	*(bool *)f->dest = !strcmp(arg, "off");
	return CLI_OK;
}

int cli_sync_prepare(int argc, char **argv, const char *config_file, struct cli_sync_opts *o, struct config *conf)
{
	const struct cli_command *self = cli_find("sync");
	struct mirror_sync_config *cfg = &o->cfg;
	const struct cli_flag flags[] = {
		CLI_STR("data", &o->dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_BOOL("check-refs", &cfg->check_refs,
			 "list upstream's refs of every repository now, not only when due"),
		CLI_INT("retention", &o->retention, 0, 1000, "N",
			"after the run, keep N old snapshots per repository besides those a ref\n"
			"points at, and drop the rest with the contents only they used (gc)"),
		CLI_SIZE("quota", &cfg->quota_bytes, 1, "SIZE",
			 "the store's size limit (500G, 2T): a repository that would go over it\n"
			 "first drops old snapshots (never a ref's or a pinned one, oldest first);\n"
			 "when that cannot make room it fails with outcome quota, the rest go on"),
		CLI_STR("config", &o->config, "FILE",
			"the configuration file (default $HUBMIRROR_CONFIG, else\n"
			"/etc/hubmirror/hubmirror.conf if present): its [sync] keys and data"),
		CLI_STR("mirror", &o->mirror, "URL",
			"have that mirror's serve run the sync (its operator API, with\n"
			"$HUBMIRROR_ADMIN_TOKEN); with --wait, until it ends, with its status.\n"
			"A serve with the operator API on this data directory is used by itself\n"
			"(its token read from its file), unless an option only a run here can\n"
			"honour is given (--jobs, --quota, ...); it prints what the serve's run\n"
			"prints, as it goes"),
		CLI_BOOL("status", &o->status,
			 "how the running sync stands (repo i of n, bytes, rate, ETA, what it\n"
			 "fetches, a wait upstream asked for), or how the last ended; and when the\n"
			 "serve's schedule runs the next"),
		CLI_BOOL("local", &o->local, "run the sync here even then"),
		CLI_STR("hf-token-file", &o->hf_token_file, "FILE",
			"the Hugging Face token, from a file readable by\nits owner only (wins over $HF_TOKEN)"),
		CLI_STR("ms-token-file", &o->ms_token_file, "FILE",
			"the ModelScope token, from a file readable by\n"
			"its owner only (wins over $MODELSCOPE_API_TOKEN)"),
		CLI_STR("hf-upstream", &cfg->hf_base, "URL",
			"Hugging Face endpoint (default $HUBMIRROR_HF_UPSTREAM, $HF_ENDPOINT,\n"
			"or https://huggingface.co); may be another hubmirror"),
		CLI_STR("ms-upstream", &cfg->ms_base, "URL",
			"ModelScope endpoint (default $HUBMIRROR_MS_UPSTREAM,\n"
			"$MODELSCOPE_ENDPOINT, or https://www.modelscope.cn)"),
		CLI_BOOL("json", &o->json, "print the run's report as JSON"),
		CLI_BOOL("wait", &o->wait, "if another sync runs on this data directory, wait for it"),
		CLI_INT("jobs", &cfg->max_parallel_files, 1, 256, "N", "files fetched in parallel (default 8)"),
		CLI_INT("max-tries", &cfg->http.max_tries, 1, 100, "N",
			"attempts per request and per file before giving up (default 6 / 5)"),
		CLI_FN("retry-delay", &cfg->http.backoff_base_s, take_retry_delay, "S",
		       "first backoff after a failure, doubling with jitter (default 0.5)"),
		CLI_FN("xet", &cfg->no_xet, take_xet, "on|off",
		       "fetch a file upstream offers through Xet as the chunks the store lacks\n"
		       "(on, the default), or every file whole over plain HTTP (off)"),
		CLI_BOOL("progress", &o->progress, "live progress on stderr (default: when it is a terminal)"),
		CLI_NO("no-progress", &o->progress, "no live progress"),
		CLI_END,
	};
	int r;

	memset(o, 0, sizeof(*o));
	memset(conf, 0, sizeof(*conf));
	o->retention = -1;
	o->progress = isatty(STDERR_FILENO);
	cfg->hf_base = env_first("HUBMIRROR_HF_UPSTREAM", "HF_ENDPOINT");
	cfg->ms_base = env_first("HUBMIRROR_MS_UPSTREAM", "MODELSCOPE_ENDPOINT");
	cfg->hf_token = env_first("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN");
	cfg->ms_token = env_first("MODELSCOPE_API_TOKEN", NULL);
	cli_help_if_asked(self, argc, argv, flags); /* before the file: its help whatever the file holds */
	r = config_load(config_file ? config_file : config_path(config_option(argc, argv, "config")), conf);
	if (r == CLI_FAILED)
		return r;
	if (config_apply(conf, self, CONFIG_SYNC, flags) != CLI_OK || r != CLI_OK) /* every mistake said */
		return CLI_USAGE;
	if (argc && cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	/* a token file (the command line's or the configuration's) wins over the environment */
	if ((o->hf_token_file && cli_read_token_file(o->hf_token_file, "Hugging Face token file", &o->hf_token)) ||
	    (o->ms_token_file && cli_read_token_file(o->ms_token_file, "ModelScope token file", &o->ms_token)))
		return CLI_FAILED;
	if (o->hf_token)
		cfg->hf_token = o->hf_token;
	if (o->ms_token)
		cfg->ms_token = o->ms_token;
	/* a token goes into a header (and ModelScope's cookie): a stray newline would add headers */
	if (!hub_token_valid(cfg->hf_token) || !hub_token_valid(cfg->ms_token))
		return cli_usage_error(self, "%s holds characters no token has (spaces, ';', control bytes)",
				       hub_token_valid(cfg->hf_token) ? "MODELSCOPE_API_TOKEN" : "HF_TOKEN");
	return CLI_OK;
}

void cli_sync_opts_release(struct cli_sync_opts *o)
{
	free(o->hf_token);
	free(o->ms_token);
	o->hf_token = o->ms_token = NULL;
}

/* sync --mirror URL [SPEC...]: the mirror's serve runs it (its operator API); with --wait, followed
 * to its end, and the exit status is the sync's. */
/* The serve's progress of the run, on stderr (a terminal's line). */
static void remote_progress(const struct cli_sync_opts *o)
{
	long status;
	json_t *st = cli_admin_call(o->mirror, "GET", "/api/admin/status", NULL, &status);
	json_t *pg = json_object_get(st, "sync_progress");

	if (status == 200 && json_is_true(json_object_get(pg, "running")))
		fprintf(stderr, "\r\033[Ksync on %s: repos %lld/%lld  files %lld/%lld  %.1f/%.1f MiB", o->mirror,
			(long long)json_integer_value(json_object_get(pg, "repos_done")),
			(long long)json_integer_value(json_object_get(pg, "repos_total")),
			(long long)json_integer_value(json_object_get(pg, "files_done")),
			(long long)json_integer_value(json_object_get(pg, "files_total")),
			(double)json_integer_value(json_object_get(pg, "bytes_done")) / 1048576.0,
			(double)json_integer_value(json_object_get(pg, "bytes_total")) / 1048576.0);
	json_decref(st);
}

/* A sync run by the serve of the mirror (its operator API): it prints what the serve's run prints,
 * line by line as it comes (GET /api/admin/sync/report), with that run's exit status. */
static int sync_remote(const struct cli_sync_opts *o, int nspecs, char **specs)
{
	json_t *body = json_object(), *arr = json_array(), *j;
	long status;
	int64_t run, from = 0;
	bool tty = o->progress && !o->json && isatty(STDERR_FILENO) && log_get_level() >= LOG_LEVEL_INFO;
	bool quiet = log_get_level() < LOG_LEVEL_INFO;

	for (int i = 0; i < nspecs; i++)
		json_array_append_new(arr, json_string(specs[i]));
	json_object_set_new(body, "specs", arr);
	if (o->json)
		json_object_set_new(body, "json", json_true());
	j = cli_admin_call(o->mirror, "POST", "/api/admin/sync", body, &status);
	json_decref(body);
	run = json_integer_value(json_object_get(j, "run"));
	json_decref(j);
	if (status != 202)
		return CLI_FAILED;
	if (!o->json && !quiet)
		fprintf(stderr, "sync started on %s (run %lld)\n", o->mirror, (long long)run);
	if (!o->wait)
		return CLI_OK;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		char path[96];
		json_t *rep, *v, *ex;
		size_t i;
		bool running;

		snprintf(path, sizeof(path), "/api/admin/sync/report?run=%lld&from=%lld", (long long)run,
			 (long long)from);
		rep = cli_admin_call(o->mirror, "GET", path, NULL, &status);
		if (status != 200) {
			json_decref(rep);
			fprintf(stderr,
				"hubmirror: sync on %s: its report is gone (the serve restarted?): see its log\n",
				o->mirror);
			return CLI_FAILED;
		}
		if (tty && json_array_size(json_object_get(rep, "lines")))
			fputs("\r\033[K", stderr);
		json_array_foreach(json_object_get(rep, "lines"), i, v) {
			const char *line = json_string_value(v);
			/* -q: a line about a repo that is fine is left out, as a local sync -q does */
			if (quiet && (skip_prefix(line, "ok ") || skip_prefix(line, "unchanged ")))
				continue;
			puts(line);
		}
		from = json_integer_value(json_object_get(rep, "next"));
		running = json_is_true(json_object_get(rep, "running"));
		ex = json_object_get(rep, "exit");
		if (!running) {
			int code = json_is_integer(ex) ? (int)json_integer_value(ex) : 1;
			json_decref(rep);
			if (tty)
				fputs("\r\033[K", stderr);
			if (!o->json && !quiet)
				fprintf(stderr, "sync on %s ended: %s\n", o->mirror,
					code == 0 ? "ok" : "with failures");
			return code == 0 ? CLI_OK : CLI_FAILED;
		}
		json_decref(rep);
		if (tty)
			remote_progress(o);
		usleep(300000);
	}
}

static void local_time(int64_t t, char *out, size_t cap)
{
	time_t tt = (time_t)t;
	struct tm tm;

	localtime_r(&tt, &tm);
	strftime(out, cap, "%Y-%m-%d %H:%M %Z", &tm);
}

static int64_t jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/*
 * `sync --status`: the running sync (or the last), from <data>/sync.progress that every sync of the
 * directory writes, and the schedule of the serve that runs syncs there (its operator API, when the
 * serve advertises one or --mirror names it). --json prints {progress, serve}.
 */
static int sync_status(const struct cli_sync_opts *o)
{
	json_t *pg = NULL, *sv = NULL;
	char *local = o->mirror ? NULL : cli_local_serve(o->dir);
	const char *mirror = o->mirror ? o->mirror : local;
	char when[64], b1[32], b2[32], d[32];
	long status = 0;

	if (mirror) {
		sv = cli_admin_call(mirror, "GET", "/api/admin/status", NULL, &status);
		if (status != 200) {
			json_decref(sv);
			free(local);
			return CLI_FAILED;
		}
		pg = json_incref(json_object_get(sv, "sync_progress"));
	} else {
		struct mirror_data *data = NULL;
		char *path;
		if (cli_open_data(o->dir, &data))
			return CLI_FAILED;
		path = mirror_data_path(data, MIRROR_DATA_SYNC_PROGRESS);
		pg = json_load_file(path, 0, NULL);
		free(path);
		mirror_data_free(&data);
		/* a run that says it is running but whose process is gone was interrupted */
		if (json_is_true(json_object_get(pg, "running")) && jint(pg, "pid") > 0 &&
		    kill((pid_t)jint(pg, "pid"), 0) < 0 && errno == ESRCH) {
			json_object_set_new(pg, "running", json_false());
			json_object_set_new(pg, "outcome", json_string("interrupted"));
		}
	}
	if (o->json) {
		json_t *out = json_pack("{s:O?, s:O?}", "progress", pg, "serve", sv);
		cli_print_json(out);
		json_decref(out);
	} else {
		if (!json_is_object(pg)) {
			printf("no sync has run on this mirror yet\n");
		} else if (json_is_true(json_object_get(pg, "running"))) {
			double rate = json_number_value(json_object_get(pg, "bytes_per_s"));
			int64_t left = jint(pg, "bytes_total") - jint(pg, "bytes_done");
			json_t *f;
			size_t i;
			local_time(jint(pg, "started_at"), when, sizeof(when));
			cli_human_secs((double)(time(NULL) - jint(pg, "started_at")), d, sizeof(d));
			cli_human_size(jint(pg, "bytes_done"), b1, sizeof(b1));
			cli_human_size(jint(pg, "bytes_total"), b2, sizeof(b2));
			printf("sync running since %s (%s, pid %lld): repo %lld of %lld, files %lld of %lld, %s of %s",
			       when, d, (long long)jint(pg, "pid"), (long long)jint(pg, "repos_done"),
			       (long long)jint(pg, "repos_total"), (long long)jint(pg, "files_done"),
			       (long long)jint(pg, "files_total"), b1, b2);
			if (rate > 0) {
				char r[32], eta[32];
				cli_human_size((int64_t)rate, r, sizeof(r));
				cli_human_secs((double)left / rate, eta, sizeof(eta));
				printf(", %s/s, ETA %s", r, left > 0 ? eta : "-");
			}
			putchar('\n');
			if (jint(pg, "waiting_s") > 0)
				printf("waiting %lld s: upstream asked to slow down\n",
				       (long long)jint(pg, "waiting_s"));
			json_array_foreach(json_object_get(pg, "fetching"), i, f) {
				int64_t size = jint(f, "size");
				printf("  fetching %s %s%s (%d%%)\n", json_string_value(json_object_get(f, "repo")),
				       json_string_value(json_object_get(f, "path")), "",
				       size > 0 ? (int)(100 * jint(f, "done") / size) : 100);
			}
		} else {
			const char *oc = json_string_value(json_object_get(pg, "outcome"));
			long long rn = jint(pg, "repos_total"), fn = jint(pg, "files_done");
			local_time(jint(pg, "started_at"), when, sizeof(when));
			cli_human_size(jint(pg, "bytes_done"), b1, sizeof(b1));
			printf("no sync running; the last started %s and %s: %lld of %lld %s, %lld %s fetched "
			       "(%s)\n", when,
			       !oc                          ? "ended"
			       : !strcmp(oc, "ok")          ? "ended ok"
			       : !strcmp(oc, "interrupted") ? "was interrupted"
							    : "ended with failures ('hubmirror ls' says which)",
			       (long long)jint(pg, "repos_done"), rn, cli_plural(rn, "repo", "repos"), fn,
			       cli_plural(fn, "file", "files"), b1);
		}
		if (!sv) {
			printf("no serve with the operator API runs on this data directory: no schedule to tell\n");
		} else if (json_is_true(json_object_get(sv, "schedule_paused"))) {
			printf("the serve's schedule is paused (resume it: POST /api/admin/schedule)\n");
		} else if (json_is_integer(json_object_get(sv, "next_sync_in_s"))) {
			int64_t in = jint(sv, "next_sync_in_s");
			/* serve's own time of it, so both say the same minute */
			local_time(json_is_integer(json_object_get(sv, "next_sync_at")) ? jint(sv, "next_sync_at")
											: (int64_t)time(NULL) + in,
				   when, sizeof(when));
			cli_human_secs((double)in, d, sizeof(d));
			printf("next sync at %s (in %s)\n", when, d);
		} else if (!json_is_true(json_object_get(sv, "sync_running"))) {
			printf("the serve has no schedule (serve --sync-at HH:MM or --sync-every D)\n");
		}
	}
	json_decref(pg);
	json_decref(sv);
	free(local);
	return CLI_OK;
}

/* Options only a sync run here can honour (a serve's sync takes its own configuration). */
static bool local_only_options(int argc, char **argv)
{
	static const char *const opts[] = { "--jobs", "--max-tries", "--retry-delay", "--check-refs", "--retention",
					    "--quota", "--hf-token-file", "--ms-token-file", "--hf-upstream",
					    "--ms-upstream" };

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
			if (!strncmp(argv[i], opts[k], strlen(opts[k])) &&
			    (argv[i][strlen(opts[k])] == '\0' || argv[i][strlen(opts[k])] == '='))
				return true;
	return false;
}

/* How a run of n repos here reports: the progress line (on a terminal, not with --json or -q), each
 * repo's line as it ends (line-buffered stdout) or, with --json, an interruption's line on stderr;
 * SIGINT and SIGTERM say how far it got. */
static void start_reporting(const struct cli_sync_opts *o, struct mirror_sync_config *cfg, size_t n)
{
	if (o->progress && !o->json && log_get_level() >= LOG_LEVEL_INFO) /* -q: no progress line */
		cfg->on_progress = draw_progress;
	cfg->on_repo = print_repo;
	lines_on = !o->json;
	if (lines_on)
		setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it happens, into a file or a pipe too */
	else
		report_fd = STDERR_FILENO;
	repos_total = (sig_atomic_t)n;
	progress_on = cfg->on_progress != NULL;
	signal(SIGINT, on_interrupt);
	signal(SIGTERM, on_interrupt);
}

/* --retention N after the run: what it left old beyond N per repo goes, with the contents only it
 * used; said unless --json. Returns CLI_OK, or CLI_FAILED after saying why. */
static int apply_retention(struct mirror_data *data, const struct cli_sync_opts *o)
{
	struct mirror_gc_report g;
	char *gerr = NULL, b[32];
	int r = CLI_OK;

	if (mirror_gc(data, o->retention, 7 * 24 * 3600, MIRROR_GC_GRACE, false, &g, NULL, &gerr)) {
		fprintf(stderr, "hubmirror: sync: gc after the run: %s\n", gerr ? gerr : "failed");
		r = CLI_FAILED;
	} else if (!o->json && (g.snapshots_dropped || g.blobs_removed)) {
		cli_human_size(g.bytes_freed, b, sizeof(b));
		printf("sync: retention %d: dropped %lld old %s and %lld %s (%s)\n", o->retention,
		       (long long)g.snapshots_dropped, cli_plural(g.snapshots_dropped, "snapshot", "snapshots"),
		       (long long)g.blobs_removed, cli_plural(g.blobs_removed, "content", "contents"), b);
	}
	free(gerr);
	return r;
}

int cmd_sync(int argc, char **argv)
{
	const struct cli_command *self = cli_find("sync");
	struct cli_sync_opts o;
	struct mirror_sync_report rep = { 0 };
	struct mirror_data *data = NULL;
	struct catalog_repo *repos = NULL;
	struct config conf;
	size_t n = 0;
	int r, e;
	char *err = NULL;
	struct mirror_sync_config cfg;
	char *local = NULL;

	if ((r = cli_sync_prepare(argc, argv, NULL, &o, &conf)) != CLI_OK)
		goto out;
	cfg = o.cfg;
	cfg.max_file_tries = cfg.http.max_tries; /* --max-tries bounds a file's attempts too */
	if (o.status) {
		r = optind < argc ? cli_usage_error(self, "--status takes no SPEC") : sync_status(&o);
		goto out;
	}
	if ((r = cli_check_specs(self, optind, argc, argv, false,
				 "sync follows the tracked revision; change it with 'hubmirror add'")) != CLI_OK)
		goto out;
	if (!o.mirror && !o.local && !local_only_options(argc, argv) && (local = cli_local_serve(o.dir))) {
		/* a serve runs on this directory: it runs the sync, with its configuration and tokens, and
		 * this command follows it to the end */
		o.mirror = local;
		o.wait = true;
	}
	if (o.mirror) {
		r = sync_remote(&o, argc - optind, argv + optind);
		goto out;
	}
	if (cli_open_locked(o.dir, o.wait, &data)) {
		r = CLI_FAILED;
		goto out;
	}
	if (repos_to_sync(data, argv + optind, argc - optind, &repos, &n)) {
		r = CLI_FAILED;
		goto out;
	}
	start_reporting(&o, &cfg, n);
	e = mirror_sync_run(data, repos, n, &cfg, &rep, &err);
	if (e) {
		fprintf(stderr, "hubmirror: sync: %s\n", err ? err : err_str(e));
		r = CLI_FAILED;
		goto out;
	}
	if (rep.torrents_error) {
		fprintf(stderr, "hubmirror: %s\n", rep.torrents_error);
		r = CLI_FAILED;
	}
	if (o.json) {
		json_t *j = report_json(&rep);
		cli_print_json(j);
		json_decref(j);
	} else {
		print_report(&rep);
	}
	if (o.retention >= 0 && apply_retention(data, &o))
		r = CLI_FAILED;
	if (rep.failed)
		r = CLI_FAILED;
	else if (r != CLI_FAILED)
		r = CLI_OK;
out:
	free(err);
	free(local);
	mirror_sync_report_release(&rep);
	catalog_repo_list_free(repos, n);
	mirror_data_free(&data);
	config_release(&conf); /* cfg borrowed its strings */
	cli_sync_opts_release(&o);
	return r;
}
