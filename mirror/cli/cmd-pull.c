/*
 * cmd-pull.c - `hubmirror pull SPEC...`: snapshots whole into the instance agent's cache, without FUSE
 * (containers without /dev/fuse), linked into the hub caches once every byte is verified there.
 *
 * The agent does the work (POST /v1/pull); this command follows its status until every snapshot is
 * verified, showing progress: a line redrawn on a terminal, JSON lines with --json, nothing
 * otherwise. Exit 0 only when every byte of every snapshot is verified and linked.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "cli.h"
#include "hub/cache.h"
#include "hub/hub.h"
#include "p2p/agent/agent.h"

/* a[ka] and b[kb] are the same string */
static bool same(json_t *a, const char *ka, json_t *b, const char *kb)
{
	const char *x = json_string_value(json_object_get(a, ka)), *y = json_string_value(json_object_get(b, kb));

	return x && y && !strcmp(x, y);
}

/* The status entry of what w pulled (its snapshot under the name pulled: twins and refs with the
 * same files share a snapshot, each with an entry of its own), borrowed from st. */
static json_t *entry(json_t *st, json_t *w)
{
	json_t *s;
	size_t i;

	json_array_foreach(json_object_get(st, "snapshots"), i, s)
		if (same(s, "btih", w, "btih") && same(s, "spec", w, "canon") && same(s, "commit", w, "commit") &&
		    same(s, "revision", w, "revision"))
			return s;
	json_array_foreach(json_object_get(st, "snapshots"), i, s)
		if (same(s, "btih", w, "btih") && same(s, "spec", w, "canon"))
			return s;
	return NULL;
}

/* This pull's links: 1 made, 0 not yet, -1 failed (*why borrowed from e). */
static int linked(json_t *e, json_t *w, const char **why)
{
	char id[32];
	json_t *v;

	snprintf(id, sizeof(id), "%lld", (long long)json_integer_value(json_object_get(w, "link")));
	v = json_object_get(json_object_get(e, "links"), id);
	if (!v)
		return 0;
	if (json_is_string(v)) {
		*why = json_string_value(v);
		return -1;
	}
	return 1;
}

static int64_t num(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* Where w's files are for a library that loads by name: its Hugging Face cache snapshot, or its
 * ModelScope cache folder; NULL when no hub cache is linked. Malloc'd. */
static char *snapshot_path(json_t *w, const struct cli_agent_opts *o)
{
	struct hub_spec sp;
	char buf[4096], *p = NULL;
	const char *commit = json_string_value(json_object_get(w, "commit"));

	if (!commit || hub_spec_parse(json_string_value(json_object_get(w, "canon")), &sp))
		return NULL;
	if (sp.hub == HUB_HF && !o->no_hf)
		p = hub_cache_hf_snapshot(o->hf ? o->hf : hub_cache_hf_default(buf, sizeof(buf)),
					  hub_type_name(sp.type), sp.name, commit);
	else if (sp.hub == HUB_MS && !o->no_ms)
		p = hub_cache_ms_dir(o->ms ? o->ms : hub_cache_ms_default(buf, sizeof(buf)), hub_type_name(sp.type),
				     sp.name);
	hub_spec_release(&sp);
	return p;
}

/* For the progress line's rate: bytes held and when, at the first look and now. */
struct pace {
	int64_t first_have;
	double first_at;
	bool started;
};

/* What the progress line shows of every snapshot together. */
struct line_totals {
	int64_t have, total, rate_now;
	size_t n, ended;                /* snapshots, and those done or failed */
};

/* The progress line on a terminal: a bar, bytes, the rate now, and the ETA or why nothing comes. */
static void draw(json_t *want, const struct line_totals *tot, const char *waiting, struct pace *pace)
{
	char h[16], t[16];
	double secs = cli_mono_s() - pace->first_at,
	       rate = tot->rate_now > 0 ? (double)tot->rate_now
		      : secs > 0.5 && !waiting ? (double)(tot->have - pace->first_have) / secs : 0;
	char bar[21], r[24] = "", eta[300] = "";
	int pct = tot->total ? (int)(100 * tot->have / tot->total) : 100, fill = pct / 5;
	for (int k = 0; k < 20; k++)
		bar[k] = k < fill ? '#' : '-';
	bar[20] = '\0';
	cli_human_size(tot->have, h, sizeof(h));
	cli_human_size(tot->total, t, sizeof(t));
	if (rate > 0) {
		char x[32];
		char rs[16];
		cli_human_size((int64_t)rate, rs, sizeof(rs));
		snprintf(r, sizeof(r), "%s/s", rs);
		cli_human_secs((double)(tot->total - tot->have) / rate, x, sizeof(x));
		snprintf(eta, sizeof(eta), "  ETA %s", x);
	}
	if (waiting) /* the wait, not an ETA that pretends */
		snprintf(eta, sizeof(eta), "  %s", waiting);
	if (tot->n == 1)
		fprintf(stderr, "\r\033[K%s [%s] %s / %s  %s%s",
			json_string_value(json_object_get(json_array_get(want, 0), "spec")), bar, h, t, r,
			tot->ended == tot->n ? "\n" : eta);
	else
		fprintf(stderr, "\r\033[Kpulling %zu of %zu [%s] %s / %s  %s%s", tot->n - tot->ended, tot->n, bar, h,
			t, r, tot->ended == tot->n ? "\n" : eta);
}

/* Show one round of progress; returns 1 when every snapshot is verified or failed, else 0. A failed
 * one gets "error" in its want entry (said at the end, with the others' outcomes). */
static int progress(json_t *st, json_t *want, bool as_json, bool tty, struct pace *pace)
{
	int64_t have = 0, total = 0, rate_now = 0;
	const char *waiting = NULL;
	size_t i, done = 0, failed = 0, n = json_array_size(want);
	json_t *w;

	json_array_foreach(want, i, w) {
		json_t *e;
		const char *err;
		int link;
		bool ok;
		if (json_object_get(w, "error")) {
			failed++;
			continue;
		}
		e = entry(st, w);
		err = json_string_value(json_object_get(e, "error"));
		link = e ? linked(e, w, &err) : 0;
		if (!e && (link = linked(st, w, &err)) == 1) {
			/* linked, then evicted before this look (the agent keeps every pull's outcome): the
			 * hub cache holds the files */
			done++;
			json_object_set_new(w, "done", json_true());
			continue;
		}
		if (!e || err) {
			json_object_set_new(w, "error", json_string(err ? err : "the agent no longer holds it"));
			failed++;
			continue;
		}
		have += num(e, "bytes_have");
		total += num(e, "bytes_total");
		/* the agent's rate now (not an average since the start, which decays through a stall), and
		 * why nothing comes when nothing does */
		rate_now += num(e, "rate");
		if (!waiting)
			waiting = json_string_value(json_object_get(e, "waiting"));
		/* of how many files (null: all), for the lines below and the last one */
		json_object_set(w, "selected", json_object_get(e, "selected"));
		json_object_set(w, "files", json_object_get(e, "files"));
		ok = json_is_true(json_object_get(e, "verified")) && link == 1;
		done += ok;
		if (ok)
			json_object_set_new(w, "done", json_true());
		if (as_json) {
			json_t *line =
				json_pack("{s:O, s:O, s:O, s:I, s:I, s:b}", "spec", json_object_get(w, "spec"),
					  "revision", json_object_get(w, "revision"), "commit",
					  json_object_get(e, "commit"), "bytes_have", (json_int_t)num(e, "bytes_have"),
					  "bytes_total", (json_int_t)num(e, "bytes_total"), "verified", ok);
			char *s;
			if (json_is_integer(json_object_get(e, "selected"))) {
				json_object_set(line, "selected", json_object_get(e, "selected"));
				json_object_set(line, "files", json_object_get(e, "files"));
			}
			if (json_object_get(w, "offline"))
				json_object_set(line, "offline", json_object_get(w, "offline"));
			json_object_set_new(line, "rate", json_integer(num(e, "rate")));
			if (json_is_string(json_object_get(e, "waiting")) && !ok)
				json_object_set(line, "waiting", json_object_get(e, "waiting"));
			if (ok && json_object_get(w, "path"))
				json_object_set(line, "path", json_object_get(w, "path"));
			s = json_dumps(line, JSON_COMPACT);
			puts(s);
			free(s);
			json_decref(line);
		}
	}
	if (!pace->started) {
		pace->started = true;
		pace->first_have = have;
		pace->first_at = cli_mono_s();
	}
	if (tty) {
		struct line_totals tot = { have, total, rate_now, n, done + failed };
		draw(want, &tot, waiting, pace);
	}
	fflush(stdout);
	return done + failed == n;
}

/* What a Ctrl-C while following leaves said (the handler's, prepared beforehand). */
static char *interrupt_note;

static void on_interrupt(int sig)
{
	if (interrupt_note)
		(void)!write(STDERR_FILENO, interrupt_note, strlen(interrupt_note));
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Follow the agent's status until every snapshot in want is verified (or failed). */
static int follow(const char *socket, json_t *want, bool as_json)
{
	bool tty = !as_json && isatty(STDERR_FILENO);
	struct timespec nap = { 0, 200 * 1000 * 1000 };
	time_t last_json = 0;
	struct pace pace = { 0 };

	for (;;) {
		json_t *st = NULL;
		char *err = NULL;
		long status = 0;
		int r = agent_call(socket, "/v1/status", NULL, 30, &status, &st, &err);
		bool print_json = as_json && time(NULL) != last_json;

		if (r || status != 200) {
			fprintf(stderr, "hubmirror: the agent stopped answering: %s\n", err ? err : "no status");
			free(err);
			json_decref(st);
			return CLI_FAILED;
		}
		r = progress(st, want, print_json, tty, &pace);
		if (print_json)
			last_json = time(NULL);
		if (r == 1 && as_json && !print_json)
			progress(st, want, true, false, &pace); /* the last line says verified */
		json_decref(st);
		if (r)
			return CLI_OK;
		nanosleep(&nap, NULL);
	}
}

/* Every operand from argv[first] on is a SPEC of an org/name (a bare legacy name has no snapshot
 * torrent). Returns CLI_OK, or CLI_USAGE after saying which one is not. */
static int check_specs(const struct cli_command *self, int first, int argc, char **argv)
{
	for (int k = first; k < argc; k++) {
		struct hub_spec spec;
		bool ok = !hub_spec_parse(argv[k], &spec);
		if (ok) {
			ok = strchr(spec.name, '/') != NULL;
			hub_spec_release(&spec);
		}
		if (!ok)
			return cli_spec_error(self, NULL, argv[k]);
	}
	return CLI_OK;
}

/* The want entry of spec from the agent's answer ans: what it pulls (the snapshot's spec, revision,
 * btih and commit, the link's id) and, when offline, why and what it uses instead. */
static json_t *want_entry(const char *spec, json_t *ans)
{
	json_t *got = json_pack("{s:s, s:O, s:O, s:O, s:O, s:O}", "spec", spec, "canon", json_object_get(ans, "spec"),
				"revision", json_object_get(ans, "revision"), "btih", json_object_get(ans, "btih"),
				"commit", json_object_get(ans, "commit"), "link", json_object_get(ans, "link"));

	if (json_object_get(ans, "offline")) {
		/* --json says it on each line of that spec: {why, revision, commit, synced_at} */
		json_t *off = json_deep_copy(json_object_get(ans, "offline_using"));
		if (!json_is_object(off)) {
			json_decref(off);
			off = json_object();
		}
		json_object_set(off, "why", json_object_get(ans, "offline"));
		json_object_set_new(got, "offline", off);
	}
	return got;
}

/* Asks the agent to pull spec, and appends what it pulls, or that it refused, to want. Returns
 * CLI_OK, CLI_FAILED when the agent refused (said on stderr; the other specs go on, and the end says
 * each one's outcome), or CLI_USAGE (said already; nothing else to follow). */
static int request_pull(const struct cli_agent_opts *o, const char *spec, bool pin, json_t *inc, json_t *exc,
			json_t *want)
{
	json_t *req = cli_agent_request(spec, o), *ans = NULL;
	int pr;

	json_object_set_new(req, "pin", json_boolean(pin));
	if (json_array_size(inc))
		json_object_set(req, "include", inc);
	if (json_array_size(exc))
		json_object_set(req, "exclude", exc);
	pr = cli_agent_post(o, "/v1/pull", req, &ans);
	json_decref(req);
	if (pr == CLI_USAGE) {
		json_decref(ans);
		return CLI_USAGE;
	}
	if (pr) {
		json_array_append_new(want, json_pack("{s:s, s:s}", "spec", spec, "error", "refused (see above)"));
	} else {
		json_array_append_new(want, want_entry(spec, ans));
		cli_agent_offline_note(spec, ans);
	}
	json_decref(ans);
	return pr ? CLI_FAILED : CLI_OK;
}

/* Records in want where each snapshot's files will be, and prepares what a Ctrl-C while following
 * says: the agent goes on, and links them there. */
static void prepare_interrupt_note(json_t *want, const struct cli_agent_opts *o)
{
	struct buf note;
	json_t *w;
	size_t i;

	buf_init(&note);
	json_array_foreach(want, i, w) {
		char *path = json_object_get(w, "error") ? NULL : snapshot_path(w, o);
		if (path) {
			json_object_set_new(w, "path", json_string(path));
			buf_addf(&note, "%s%s -> %s", note.len ? ", " : "",
				 json_string_value(json_object_get(w, "spec")), path);
		}
		free(path);
	}
	interrupt_note = xasprintf("\nhubmirror: stopped following; the agent carries on and links %s once every "
				   "byte is verified ('hubmirror status' shows how far)\n",
				   note.len ? note.data : "the snapshots");
	buf_release(&note);
}

/* Says each spec's outcome: its error on stderr (unless said already), and "failed SPEC" or a JSON line
 * on stdout; without --json, "pulled SPEC @ COMMIT" for each one done. Returns CLI_FAILED when any
 * failed, else CLI_OK. */
static int report_outcomes(json_t *want, bool as_json)
{
	int r = CLI_OK;
	json_t *w;
	size_t i;

	json_array_foreach(want, i, w) {
		const char *e = json_string_value(json_object_get(w, "error"));
		if (e) {
			r = CLI_FAILED;
			if (strcmp(e, "refused (see above)"))
				fprintf(stderr, "hubmirror: %s: %s\n", json_string_value(json_object_get(w, "spec")),
					e);
			if (!as_json) {
				printf("failed %s\n", json_string_value(json_object_get(w, "spec")));
			} else {
				json_t *line = json_pack("{s:O, s:s}", "spec", json_object_get(w, "spec"), "error", e);
				char *js = json_dumps(line, JSON_COMPACT);
				puts(js);
				free(js);
				json_decref(line);
			}
			continue;
		}
		if (!as_json && json_is_true(json_object_get(w, "done"))) {
			char part[64] = "";
			const char *path = json_string_value(json_object_get(w, "path"));
			if (json_is_integer(json_object_get(w, "selected")))
				snprintf(part, sizeof(part), " (%lld of %lld %s)", (long long)num(w, "selected"),
					 (long long)num(w, "files"), cli_plural(num(w, "files"), "file", "files"));
			printf("pulled %s @ %.12s%s%s%s%s\n", json_string_value(json_object_get(w, "spec")),
			       json_string_value(json_object_get(w, "commit")), part,
			       json_object_get(w, "offline") ? " (offline: the snapshot this instance holds)" : "",
			       path ? ": " : "", path ? path : "");
		}
	}
	return r;
}

int cmd_pull(int argc, char **argv)
{
	const struct cli_command *self = cli_find("pull");
	struct cli_agent_opts o = { .command = "pull", .socket = agent_socket_default() };
	bool pin = false, as_json = false;
	json_t *want = json_array(), *inc = json_array(), *exc = json_array();
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_FN("include", inc, cli_take_pattern, "PATTERN",
		       "only the files matching a PATTERN (several may be given), as hf download\n"
		       "--include: a shell glob against the whole path ('*' crosses '/', 'dir/' is all under\n"
		       "dir), plus the small files a library reads first (config*.json, tokenizer*,\n"
		       "*.index.json, README.md, ...). A later pull of more files adds them."),
		CLI_FN("exclude", exc, cli_take_pattern, "PATTERN",
		       "not the files matching a PATTERN (metadata included)"),
		CLI_BOOL("pin", &pin, "never evict these snapshots from the cache (agent --cache-size)"),
		CLI_BOOL("json", &as_json,
			 "a JSON line per snapshot about once a second: spec commit bytes_have bytes_total\n"
			 "verified rate (bytes/s now) and, while nothing comes, waiting (why); on a\n"
			 "terminal without --json: a progress line"),
		CLI_AGENT_FLAGS(&o),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		r = CLI_USAGE;
	else if (optind >= argc)
		r = cli_usage_error(self, "give one or more SPECs");
	else
		r = check_specs(self, optind, argc, argv);
	if (r)
		goto out;
	o.mirror = cli_mirror_url(o.mirror);
	for (int k = optind; k < argc; k++) {
		int pr = request_pull(&o, argv[k], pin, inc, exc, want);
		if (pr == CLI_USAGE) {
			r = pr;
			break;
		}
		if (pr)
			r = CLI_FAILED;
	}
	prepare_interrupt_note(want, &o);
	if (r != CLI_USAGE && json_array_size(want)) {
		int fr;
		signal(SIGINT, on_interrupt);
		signal(SIGTERM, on_interrupt);
		fr = follow(o.socket, want, as_json);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (fr)
			r = fr;
	}
	if (report_outcomes(want, as_json))
		r = CLI_FAILED;
out:
	free(interrupt_note);
	interrupt_note = NULL;
	json_decref(want);
	json_decref(inc);
	json_decref(exc);
	return r;
}
