/*
 * serve.c - the mirror node's loop: HTTP server, signal handling, nightly sync schedule.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "access.h"
#include "mirror/data.h"
#include "hub/http/httpd.h"
#include "hub/http/tls.h"
#include "routes.h"
#include "ondemand.h"
#include "seeder.h"
#include "serve.h"
#include "xet-backfill.h"

/* A sync child's report (its stdout), read line by line into serve's log: each line gets the log's
 * time and level. One per run, freed when its pipe closes (or at the end, after the last loop run). */
struct sync_reader {
	uv_pipe_t pipe;
	struct buf line;
	struct server *s;
	int64_t run;                /* the sync run it reads */
	struct sync_reader *next;
};

/* The report a serve keeps of its last sync run, for the operator API (GET /api/admin/sync/report):
 * what `hubmirror sync --mirror` prints as it happens. Bounded: past the cap, a line says so. */
#define SYNC_REPORT_MAX (8u << 20)

struct server {
	const struct mirror_serve_config *cfg;
	char *spill_dir;                /* <data>/store/tmp: big answers leave from files there */
	uv_loop_t loop;
	uv_signal_t sigint, sigterm, sighup;
	struct hub_tls *tls;
	uv_timer_t sync_timer;
	uv_timer_t grace_timer;     /* the longest a graceful shutdown waits for answers in flight */
	bool stopping;
	uv_process_t sync_proc;
	bool sync_running;
	bool sync_by_admin;         /* the running sync came from the admin API */
	const char *sync_kind;      /* "scheduled" or "requested": the running or last one */
	int64_t sync_run;           /* runs started by this serve: the running or last one's number */
	bool sync_json;             /* that run reports in JSON (kept, not logged) */
	json_t *sync_report;        /* its lines (an array), for the operator API */
	size_t sync_report_bytes;
	bool sync_report_open;      /* its report may have more lines (the pipe is not at its end) */
	struct sync_reader *readers; /* the sync children's reports being read (or closing) */
	bool paused;                /* the schedule, through the admin API */
	int64_t sync_started_at;
	int64_t last_sync_status;   /* of the last sync's exit, -1 before any */
	int sync_minute;            /* minutes after local midnight, -1: none */
	int64_t next_sync_at;       /* when the timer is due (unix seconds, rounded): the log and the
				     * admin API say the same minute */
	struct mirror_data *data;
	struct httpd *httpd;
	struct mirror_routes *routes;
	struct mirror_seeder *seeder;
	struct mirror_ondemand *ondemand;
	struct mirror_access *access;
	struct mirror_xet_backfill *xet_backfill; /* the Xet identities the store lacks (xet-backfill.h) */
	bool loop_open;             /* the loop is initialized: server_close runs it down and closes it */
};

int mirror_parse_hhmm(const char *s)
{
	int h, m;
	char extra;

	if (!s || sscanf(s, "%2d:%2d%c", &h, &m, &extra) != 2 || h < 0 || h > 23 || m < 0 || m > 59 ||
	    strlen(s) != 5)
		return -1;
	return h * 60 + m;
}

/* Milliseconds from now until the next local HH:MM. */
static uint64_t ms_until(int minute_of_day)
{
	time_t now = time(NULL), next;
	struct tm tm;

	localtime_r(&now, &tm);
	tm.tm_hour = minute_of_day / 60;
	tm.tm_min = minute_of_day % 60;
	tm.tm_sec = 0;
	tm.tm_isdst = -1;
	next = mktime(&tm);
	if (next <= now) {
		tm.tm_mday += 1;
		tm.tm_isdst = -1;
		next = mktime(&tm);
	}
	return (uint64_t)(next - now) * 1000;
}

static void schedule_sync(struct server *s);

static void on_sync_exit(uv_process_t *p, int64_t status, int sig)
{
	struct server *s = p->data;

	if (sig)
		log_warn("serve", "%s sync killed by signal %d", s->sync_kind, sig);
	else if (status)
		log_warn("serve", "%s sync finished with failures (exit %lld); see 'hubmirror ls'", s->sync_kind,
			 (long long)status);
	else
		log_info("serve", "%s sync finished", s->sync_kind);
	s->sync_running = false;
	s->last_sync_status = sig ? 128 + sig : status;
	uv_close((uv_handle_t *)p, NULL);
	schedule_sync(s);
}

static void reader_closed(uv_handle_t *h)
{
	struct sync_reader *rd = h->data;

	for (struct sync_reader **pp = &rd->s->readers; *pp; pp = &(*pp)->next)
		if (*pp == rd) {
			*pp = rd->next;
			break;
		}
	buf_release(&rd->line);
	free(rd);
}

/* One line of the child's report: kept for the operator API, and logged (its errors and warnings as
 * such, the rest as info; a JSON report is only kept). */
static void reader_say(struct sync_reader *rd, const char *line)
{
	struct server *s = rd->s;

	if (rd->run == s->sync_run && s->sync_report) {
		if (s->sync_report_bytes < SYNC_REPORT_MAX) {
			json_t *l = json_string(line);
			s->sync_report_bytes += strlen(line) + 1;
			if (!l) { /* not UTF-8 (a name upstream wrote so): its other bytes as '?' */
				char *c = xstrdup(line);
				for (char *q = c; *q; q++)
					if ((unsigned char)*q >= 0x80)
						*q = '?';
				l = json_string(c);
				free(c);
			}
			json_array_append_new(
				s->sync_report,
				s->sync_report_bytes < SYNC_REPORT_MAX
					? l
					: (json_decref(l), json_string("(the rest of this report is in serve's log)")));
		}
		if (s->sync_json)
			return;
	}
	if (skip_prefix(line, "sync: ")) /* the summary's own "sync: " is the log's topic already */
		line = skip_prefix(line, "sync: ");
	if (skip_prefix(line, "error") || skip_prefix(line, "warning") || skip_prefix(line, "gated") ||
	    skip_prefix(line, "denied") || skip_prefix(line, "missing") || skip_prefix(line, "quota"))
		log_warn("sync", "%s", line);
	else
		log_info("sync", "%s", line);
}

static void reader_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char chunk[16384];

	(void)h;
	(void)hint;
	*b = uv_buf_init(chunk, sizeof(chunk)); /* the loop's thread only, and consumed at once */
}

static void reader_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct sync_reader *rd = st->data;

	if (n > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (b->base[i] != '\n') {
				if (rd->line.len < 4096) /* a line longer than that is cut */
					buf_addch(&rd->line, b->base[i]);
				continue;
			}
			if (rd->line.len)
				reader_say(rd, rd->line.data);
			buf_reset(&rd->line);
		}
	} else if (n < 0) {
		if (rd->line.len)
			reader_say(rd, rd->line.data);
		buf_reset(&rd->line);
		if (rd->run == rd->s->sync_run)
			rd->s->sync_report_open = false;
		if (!uv_is_closing((uv_handle_t *)st))
			uv_close((uv_handle_t *)st, reader_closed);
	}
}

/* Start `hubmirror sync` as a child (of the specs named, or all). Returns 0 or a libuv error. */
static int start_sync(struct server *s, json_t *specs, bool json)
{
	size_t nspecs = json_array_size(specs), i;
	char **args = xcalloc(16 + nspecs, sizeof(*args));
	json_t *v;
	int n = 0, r;
	uv_process_options_t o;
	uv_stdio_container_t io[3];
	struct sync_reader *rd;

	/* The sync runs as its own process: a crash or a long hash never stalls the server, and the
	 * data directory's lock orders it with syncs started by hand. */
	args[n++] = (char *)s->cfg->self_exe;
	args[n++] = "sync";
	args[n++] = "--wait";
	args[n++] = "--no-progress";
	args[n++] = "--local"; /* here: not back through our own operator API */
	if (json)
		args[n++] = "--json";
	args[n++] = "--data";
	args[n++] = (char *)s->cfg->data_dir;
	if (s->cfg->config_path) {
		/* the sync reads its own settings (upstream token files) from the same file */
		args[n++] = "--config";
		args[n++] = (char *)s->cfg->config_path;
	}
	if (s->cfg->hf_upstream) {
		args[n++] = "--hf-upstream";
		args[n++] = (char *)s->cfg->hf_upstream;
	}
	if (s->cfg->ms_upstream) {
		args[n++] = "--ms-upstream";
		args[n++] = (char *)s->cfg->ms_upstream;
	}
	json_array_foreach(specs, i, v)
		args[n++] = (char *)json_string_value(v);
	args[n] = NULL;
	memset(&o, 0, sizeof(o));
	s->sync_run++;
	s->sync_json = json;
	json_decref(s->sync_report);
	s->sync_report = json_array();
	s->sync_report_bytes = 0;
	s->sync_report_open = true;
	rd = xcalloc(1, sizeof(*rd));
	rd->s = s;
	rd->run = s->sync_run;
	buf_init(&rd->line);
	uv_pipe_init(&s->loop, &rd->pipe, 0);
	rd->pipe.data = rd;
	rd->next = s->readers;
	s->readers = rd;
	io[0].flags = UV_IGNORE;
	io[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	io[1].data.stream = (uv_stream_t *)&rd->pipe; /* its report: read into our log, line by line */
	io[2].flags = UV_INHERIT_FD; /* its log lines have their time already */
	io[2].data.fd = STDERR_FILENO;
	o.file = s->cfg->self_exe;
	o.args = args;
	o.exit_cb = on_sync_exit;
	o.stdio = io;
	o.stdio_count = 3;
	s->sync_proc.data = s;
	r = uv_spawn(&s->loop, &s->sync_proc, &o);
	free(args);
	if (r) {
		log_error("serve", "cannot start the sync: %s", uv_strerror(r));
		uv_close((uv_handle_t *)&s->sync_proc, NULL);
		uv_close((uv_handle_t *)&rd->pipe, reader_closed);
		s->sync_report_open = false;
		return r;
	}
	uv_read_start((uv_stream_t *)&rd->pipe, reader_alloc, reader_read);
	s->sync_running = true;
	s->sync_started_at = (int64_t)time(NULL);
	s->sync_kind = nspecs || s->sync_by_admin ? "requested" : "scheduled";
	log_info("serve", "%s sync started (pid %d)", s->sync_kind, s->sync_proc.pid);
	return 0;
}

static void on_sync_timer(uv_timer_t *t)
{
	struct server *s = t->data;

	if (s->sync_running) {
		log_warn("serve", "previous scheduled sync still running; skipping this one");
		schedule_sync(s);
		return;
	}
	s->sync_by_admin = false;
	if (start_sync(s, NULL, false))
		schedule_sync(s);
}

static void schedule_sync(struct server *s)
{
	uint64_t ms = 0;

	if (s->paused || s->stopping)
		return;
	if (s->sync_minute >= 0)
		ms = ms_until(s->sync_minute);
	/* With both, whichever comes first: the interval counts from the end of the previous run. */
	if (s->cfg->sync_every_s > 0 && (!ms || (uint64_t)(s->cfg->sync_every_s * 1000) < ms))
		ms = (uint64_t)(s->cfg->sync_every_s * 1000);
	if (!ms)
		return;
	uv_timer_start(&s->sync_timer, on_sync_timer, ms, 0);
	{
		struct timespec now;
		struct tm tm;
		char when[64];
		time_t at;
		uint64_t min = (ms / 1000 + 59) / 60, sec = ms / 1000;

		clock_gettime(CLOCK_REALTIME, &now);
		s->next_sync_at = ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + (int64_t)ms + 500) / 1000;
		at = (time_t)s->next_sync_at;
		localtime_r(&at, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M %Z", &tm);
		if (min >= 60)
			log_info("serve", "next sync at %s (in %lluh%02llum)", when, (unsigned long long)(min / 60),
				 (unsigned long long)(min % 60));
		else if (sec >= 60)
			log_info("serve", "next sync at %s (in %llum)", when, (unsigned long long)min);
		else
			log_info("serve", "next sync at %s (in %llu s)", when, (unsigned long long)sec);
	}
}

/* ---- the admin API's side (routes-admin.c) ---- */

/* The running or last sync's progress (sync.progress, written by every sync of this directory,
 * ours or one started by hand), or null. A run that says it is running but whose process is gone
 * was interrupted. */
static json_t *sync_progress(struct server *s)
{
	char *path = mirror_data_path(s->data, MIRROR_DATA_SYNC_PROGRESS);
	json_t *o = json_load_file(path, 0, NULL);
	json_t *pid = json_object_get(o, "pid");

	free(path);
	if (!json_is_object(o))
		return json_null();
	if (json_is_true(json_object_get(o, "running")) && json_is_integer(pid) &&
	    kill((pid_t)json_integer_value(pid), 0) < 0 && errno == ESRCH) {
		json_object_set_new(o, "running", json_false());
		json_object_set_new(o, "outcome", json_string("interrupted"));
	}
	return o;
}

/* <data>/serve.admin while we run with the operator API: the CLI on this machine (add, remove,
 * sync on this data directory) goes through us, with the token it reads from token_file (which only
 * the operator's account can read). Written whole; on the way out, removed if it is still ours. */
static void advertise_admin(struct server *s, bool on)
{
	char *path = mirror_data_path(s->data, MIRROR_DATA_SERVE_ADMIN), *tmp = xasprintf("%s.tmp", path);
	char *token_file = s->cfg->admin_token_file ? realpath(s->cfg->admin_token_file, NULL) : NULL;
	json_t *o = NULL;

	if (!s->cfg->admin_token || !token_file)
		goto out;
	if (on) {
		const char *host = s->cfg->listen, *colon = strrchr(host, ':');
		char *h = xasprintf("%.*s", (int)(colon - host), host);
		char *url;
		/* a wildcard address is reached on loopback */
		if (!strcmp(h, "0.0.0.0") || !*h)
			url = xasprintf("http://127.0.0.1:%d", httpd_port(s->httpd));
		else if (!strcmp(h, "[::]"))
			url = xasprintf("http://[::1]:%d", httpd_port(s->httpd));
		else
			url = xasprintf("http://%s:%d", h, httpd_port(s->httpd));
		o = json_pack("{s:s, s:i, s:s}", "url", url, "pid", (int)getpid(), "token_file", token_file);
		if (json_dump_file(o, tmp, JSON_COMPACT) || rename(tmp, path)) {
			log_warn("serve", "cannot write %s: %s", path, strerror(errno));
			unlink(tmp);
		}
		free(url);
		free(h);
	} else {
		o = json_load_file(path, 0, NULL);
		if (json_integer_value(json_object_get(o, "pid")) == getpid())
			unlink(path);
	}
out:
	json_decref(o);
	free(token_file);
	free(tmp);
	free(path);
}

static json_t *admin_status(void *ud)
{
	struct server *s = ud;
	uint64_t due = uv_is_active((uv_handle_t *)&s->sync_timer) ? uv_timer_get_due_in(&s->sync_timer) : 0;
	json_t *o = json_pack("{s:b, s:b}", "sync_running", s->sync_running, "schedule_paused", s->paused);

	json_object_set_new(o, "sync_pid", s->sync_running ? json_integer(s->sync_proc.pid) : json_null());
	json_object_set_new(o, "sync_started_at", s->sync_running ? json_integer(s->sync_started_at) : json_null());
	json_object_set_new(o, "next_sync_in_s", due ? json_integer((json_int_t)((due + 500) / 1000)) : json_null());
	json_object_set_new(o, "next_sync_at", due ? json_integer(s->next_sync_at) : json_null());
	json_object_set_new(o, "last_sync_exit",
			    s->last_sync_status >= 0 ? json_integer(s->last_sync_status) : json_null());
	json_object_set_new(o, "sync_progress", sync_progress(s));
	return o;
}

static int admin_sync_now(void *ud, json_t *specs, bool json, int64_t *run)
{
	struct server *s = ud;
	int r;

	if (s->sync_running)
		return -EBUSY;
	s->sync_by_admin = true;
	uv_timer_stop(&s->sync_timer); /* the schedule counts from this run's end */
	r = start_sync(s, specs, json);
	*run = s->sync_run;
	return r;
}

static json_t *admin_report(void *ud, int64_t run, int64_t from)
{
	struct server *s = ud;
	json_t *lines = json_array(), *o;
	size_t n = json_array_size(s->sync_report);

	if (run != s->sync_run || !s->sync_report) {
		json_decref(lines);
		return NULL;
	}
	for (size_t i = (size_t)from; i < n; i++)
		json_array_append(lines, json_array_get(s->sync_report, i));
	/* ended only once the process has and its last line is read */
	o = json_pack("{s:I, s:o, s:I, s:b}", "run", (json_int_t)run, "lines", lines, "next", (json_int_t)n, "running",
		      s->sync_running || s->sync_report_open);
	json_object_set_new(o, "exit", !s->sync_running && !s->sync_report_open && s->last_sync_status >= 0
					       ? json_integer(s->last_sync_status) : json_null());
	return o;
}

static void admin_pause(void *ud, bool paused)
{
	struct server *s = ud;

	s->paused = paused;
	log_info("serve", "admin: schedule %s", paused ? "paused" : "resumed");
	if (paused)
		uv_timer_stop(&s->sync_timer);
	else if (!s->sync_running)
		schedule_sync(s);
}

static void on_drained(void *ud)
{
	struct server *s = ud;

	log_info("serve", "every answer in flight is out: stopping");
	uv_stop(&s->loop);
}

static void on_grace_over(uv_timer_t *t)
{
	struct server *s = t->data;
	struct httpd_stats st;

	httpd_get_stats(s->httpd, &st);
	log_warn("serve", "shutdown grace over: closing %llu connections still answering",
		 (unsigned long long)st.connections_open);
	uv_stop(&s->loop);
}

/* SIGTERM or SIGINT: stop taking connections, let the answers in flight finish (at most the grace),
 * then stop (the seed, the scheduled sync and the catalog close after the loop). A second signal
 * stops at once. */
static void on_signal(uv_signal_t *sig, int signum)
{
	struct server *s = sig->data;
	struct httpd_stats st;

	if (s->stopping || !s->cfg->shutdown_grace_ms) {
		log_info("serve", "signal %d: shutting down now", signum);
		uv_stop(&s->loop);
		return;
	}
	s->stopping = true;
	httpd_get_stats(s->httpd, &st);
	log_info("serve", "signal %d: shutting down: no new connections; finishing the answers in flight "
		 "(up to %.1f s; a second signal stops at once)", signum, s->cfg->shutdown_grace_ms / 1000.0);
	uv_timer_stop(&s->sync_timer); /* no scheduled sync starts now */
	uv_timer_start(&s->grace_timer, on_grace_over, s->cfg->shutdown_grace_ms, 0);
	httpd_drain(s->httpd, on_drained, s);
}

/* The tokens file again: the new rules apply to every request from now on (a scrape being built
 * keeps its reference to the old ones); a file that does not load leaves the old rules in place. */
static void reload_tokens(struct server *s)
{
	struct mirror_access *a = NULL, *old;
	char *err = NULL;

	if (!s->cfg->tokens_file)
		return;
	if (mirror_access_load(s->cfg->tokens_file, (enum mirror_access_mode)s->cfg->auth_mode, &a, &err)) {
		log_error("serve", "SIGHUP: tokens file not reloaded, the old rules stay: %s", err ? err : "?");
		free(err);
		return;
	}
	old = s->access;
	s->access = a;
	mirror_routes_set_access(s->routes, a);
	if (s->seeder)
		mirror_seeder_set_access(s->seeder, a);
	mirror_access_free(&old);
	log_info("serve", "SIGHUP: tokens file %s reloaded", s->cfg->tokens_file);
}

/* SIGHUP: the certificate and key again (renewed by certbot or an operator); new connections get
 * them, open ones keep theirs. A file that does not load leaves the one in use. */
static void on_sighup(uv_signal_t *sig, int signum)
{
	struct server *s = sig->data;
	char *err = NULL, *what;

	(void)signum;
	if (s->cfg->on_sighup)
		s->cfg->on_sighup(s->cfg->on_sighup_ud); /* the configuration file: what changed, said */
	reload_tokens(s);
	if (!s->tls) {
		log_info("serve", "SIGHUP: no TLS certificate to reload");
		return;
	}
	if (hub_tls_reload(s->tls, &err)) {
		log_error("serve", "SIGHUP: TLS certificate not reloaded, the old one stays: %s", err);
		free(err);
		return;
	}
	what = hub_tls_describe(s->tls);
	log_info("serve", "SIGHUP: TLS certificate reloaded (%s)", what);
	free(what);
}

static void close_walk(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* Path segments the access log leaves out: a guarded torrent's web seed URL carries its capability
 * in the path (routes-p2p.c); the query is never logged. */
static const char *const log_redact[] = { "/p2p/kseed/", NULL };

/* Loads the tokens file, opens the data folder and takes its serve lock (held for life: a restore
 * waits for no serve), and loads the TLS certificate; what it opened stays in s for server_close. */
static int open_data(struct server *s, char **errmsg)
{
	const struct mirror_serve_config *cfg = s->cfg;
	int r;

	r = mirror_access_load(cfg->tokens_file, (enum mirror_access_mode)cfg->auth_mode, &s->access, errmsg);
	if (r)
		return r;
	r = mirror_data_open(cfg->data_dir, &s->data, errmsg);
	if (r)
		return r;
	r = mirror_data_serve_lock(s->data);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf(r == -EWOULDBLOCK ? "a restore is replacing the catalog of %s: try again"
							      : "cannot lock %s", cfg->data_dir);
		return r;
	}
	if (cfg->tls_cert && hub_tls_new(cfg->tls_cert, cfg->tls_key, &s->tls, errmsg))
		return HM_ERR_USAGE;
	return 0;
}

/* Starts the loop and the HTTP server on it, with the routes installed: the peer mirrors and the
 * operator API when configured. */
static int start_http(struct server *s, char **errmsg)
{
	const struct mirror_serve_config *cfg = s->cfg;
	struct httpd_config hc = { 0 };
	int r;

	/* the deferred answers' two workers, git's two (its own lane), the writers' two (uploads hashed,
	 * commits) and the disk work (new commits' torrents, spill files) each get threads of their own:
	 * libuv reads this once, at its first job */
	setenv("UV_THREADPOOL_SIZE", "10", 0);
	uv_loop_init(&s->loop);
	s->loop_open = true;
	hc.listen = cfg->listen;
	hc.tls = s->tls;
	hc.access_log = cfg->access_log;
	hc.log_redact = log_redact;
	hc.max_connections = cfg->max_connections;
	hc.trusted_proxies = cfg->trusted_proxies;
	s->spill_dir = mirror_data_path(s->data, MIRROR_DATA_SPILL);
	hc.spill_dir = s->spill_dir;
	hc.header_timeout_ms = cfg->header_timeout_ms;
	hc.idle_timeout_ms = cfg->idle_timeout_ms;
	hc.write_timeout_ms = cfg->write_timeout_ms;
	r = httpd_new(&s->loop, &hc, &s->httpd);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot listen on %s: %s", cfg->listen, uv_strerror(r));
		return r;
	}
	s->routes = mirror_routes_new(s->data, s->access);
	mirror_routes_set_search_budget(s->routes, cfg->search_budget_ms);
	mirror_routes_install(s->routes, s->httpd);
	if (cfg->peer_mirrors)
		mirror_routes_set_peer_mirrors(s->routes, cfg->peer_mirrors);
	if (cfg->local_namespaces)
		mirror_routes_set_local(s->routes, cfg->local_namespaces, cfg->local_quota);
	mirror_routes_set_write_bounds(s->routes, cfg->write_body_max, cfg->write_spool_max);
	mirror_routes_set_loop(s->routes, &s->loop);
	if (cfg->s3_domain)
		mirror_routes_set_s3_domain(s->routes, cfg->s3_domain);
	if (cfg->s3_keys) {
		char *e = NULL;
		if ((r = mirror_routes_set_s3_keys(s->routes, cfg->s3_keys, &e))) {
			if (errmsg)
				*errmsg = e;
			else
				free(e);
			return r;
		}
	}
	if (cfg->admin_token) {
		struct mirror_admin a = {cfg->admin_token, s, admin_status, admin_sync_now, admin_report, admin_pause};
		mirror_routes_set_admin(s->routes, &a);
	}
	return 0;
}

/* Starts fetching on demand what a client asks for, when configured, and hands it to the routes. */
static int start_ondemand(struct server *s, char **errmsg)
{
	const struct mirror_serve_config *cfg = s->cfg;
	struct mirror_ondemand_config oc = { cfg->on_demand, cfg->data_dir, cfg->hf_upstream, cfg->ms_upstream,
					     cfg->hf_token, cfg->ms_token, cfg->on_demand_ttl_s, cfg->self_exe,
					     cfg->config_path, cfg->hf_token_file, cfg->ms_token_file, cfg->quota_bytes,
					     cfg->on_demand_max_repos };
	int r;

	if (!cfg->on_demand)
		return 0;
	r = mirror_ondemand_new(&s->loop, &oc, &s->ondemand, errmsg);
	if (r)
		return r;
	mirror_routes_set_ondemand(s->routes, s->ondemand);
	log_info("serve", "fetching on demand what a client asks for and %s covers", cfg->on_demand);
	return 0;
}

/* Starts the BitTorrent seed, when configured, and hands it to the routes. */
static int start_seeder(struct server *s, char **errmsg)
{
	const struct mirror_serve_config *cfg = s->cfg;
	struct mirror_seeder_config sc = { cfg->p2p_listen, cfg->p2p_upload_limit, cfg->p2p_rescan_ms,
					   cfg->p2p_super_seed, s->access };
	char *why = NULL;
	int r;

	if (!cfg->p2p_listen)
		return 0;
	r = mirror_seeder_new(&s->loop, s->data, &sc, &s->seeder, &why);
	if (r) {
		if (errmsg)
			*errmsg = xasprintf("cannot start the BitTorrent seed on %s: %s", cfg->p2p_listen,
					    why ? why : err_str(r));
		free(why);
		return r;
	}
	mirror_routes_set_seeder(s->routes, s->seeder);
	log_info("serve", "seeding over BitTorrent on port %d", mirror_seeder_port(s->seeder));
	return 0;
}

/* Starts watching SIGINT, SIGTERM and SIGHUP (SIGPIPE ignored), sets up the sync and grace timers,
 * and schedules the first sync. */
static void start_handles(struct server *s)
{
	uv_signal_init(&s->loop, &s->sigint);
	uv_signal_init(&s->loop, &s->sigterm);
	s->sigint.data = s->sigterm.data = s;
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	uv_signal_init(&s->loop, &s->sighup);
	s->sighup.data = s;
	uv_signal_start(&s->sighup, on_sighup, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	uv_timer_init(&s->loop, &s->sync_timer);
	s->sync_timer.data = s;
	uv_timer_init(&s->loop, &s->grace_timer);
	s->grace_timer.data = s;
	schedule_sync(s);
}

/* Writes the server's URL to the ready file, through a temporary file renamed over it, so that
 * whoever waits for it reads a whole line. A file that cannot be written is warned about. */
static void write_ready_file(const char *path, const char *listen, int port)
{
	char *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");

	if (f) {
		const char *colon = strrchr(listen, ':');
		fprintf(f, "http://%.*s:%d\n", (int)(colon - listen), listen, port);
		fclose(f);
		if (rename(tmp, path) < 0)
			log_warn("serve", "cannot write %s: %s", path, strerror(errno));
	}
	free(tmp);
}

/* Says where the server listens, over TLS or not, and where its operator API is; writes the ready
 * file. */
static void announce(struct server *s)
{
	const struct mirror_serve_config *cfg = s->cfg;

	log_info("serve", "listening on %s (port %d), data %s", cfg->listen, httpd_port(s->httpd), cfg->data_dir);
	if (s->tls) {
		char *what = hub_tls_describe(s->tls);
		log_info("serve", "HTTPS on the same port (%s)", what);
		free(what);
	}
	if (cfg->local_namespaces)
		log_info("serve", "local namespaces (writable with a write grant: docs/uploads.md): %s%s%s",
			 cfg->local_namespaces, cfg->local_quota ? "; quotas in bytes: " : "",
			 cfg->local_quota ? cfg->local_quota : "");
	else
		log_info("serve", "no local namespace: the mirror is read-only (serve --local NS to take uploads)");
	if (cfg->on_demand)
		log_info("serve", "on demand: %s", cfg->on_demand);
	if (cfg->ready_file)
		write_ready_file(cfg->ready_file, cfg->listen, httpd_port(s->httpd));
	if (cfg->admin_token)
		log_info("serve", "operator API on /api/admin/ (its token in %s): add, remove and sync on this "
			 "machine go through this serve", cfg->admin_token_file ? cfg->admin_token_file : "?");
}

/* Releases whatever the server got as far as opening: the loop's handles first (the HTTP server, on
 * demand, the seed, a running sync), then what the loop's workers used, then the data. */
static void server_close(struct server *s)
{
	if (s->loop_open) {
		mirror_routes_stop(s->routes);
		httpd_free(&s->httpd); /* deferred answers still running finish in the uv_run below */
		mirror_ondemand_stop(s->ondemand, &s->loop); /* after the clients' connections closed */
		mirror_seeder_free(&s->seeder); /* closes its handles: before the walk below */
		if (s->sync_running)
			uv_process_kill(&s->sync_proc, SIGTERM); /* its lock and temp files make this safe */
		uv_walk(&s->loop, close_walk, NULL);
		uv_run(&s->loop, UV_RUN_DEFAULT);
		uv_loop_close(&s->loop);
	}
	json_decref(s->sync_report);
	while (s->readers) { /* closed by the walk, without reader_closed */
		struct sync_reader *rd = s->readers;
		s->readers = rd->next;
		buf_release(&rd->line);
		free(rd);
	}
	mirror_routes_free(&s->routes); /* after the workers: they use its catalog connections */
	mirror_ondemand_free(&s->ondemand); /* after the workers too: listings use it */
	mirror_xet_backfill_stop(&s->xet_backfill); /* its thread uses the store */
	mirror_data_free(&s->data);
	free(s->spill_dir);
	mirror_access_free(&s->access);
	hub_tls_free(&s->tls);
}

int mirror_serve(const struct mirror_serve_config *cfg, char **errmsg)
{
	struct server s;
	int r;

	memset(&s, 0, sizeof(s));
	s.cfg = cfg;
	s.sync_minute = cfg->sync_at ? mirror_parse_hhmm(cfg->sync_at) : -1;
	s.last_sync_status = -1;
	s.sync_kind = "scheduled";
	r = open_data(&s, errmsg);
	if (r)
		goto out;
	r = start_http(&s, errmsg);
	if (r)
		goto out;
	r = start_ondemand(&s, errmsg);
	if (r)
		goto out;
	r = start_seeder(&s, errmsg);
	if (r)
		goto out;
	r = mirror_xet_backfill_start(s.data, cfg->xet_backfill_rate, &s.xet_backfill);
	if (r) {
		*errmsg = xasprintf("cannot start computing Xet identities: %s", err_str(r));
		goto out;
	}
	start_handles(&s);
	announce(&s);
	advertise_admin(&s, true);
	uv_run(&s.loop, UV_RUN_DEFAULT);
	advertise_admin(&s, false);
	r = 0;
out:
	server_close(&s);
	return r;
}
