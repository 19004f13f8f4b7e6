/*
 * cmd-pull.c - `hubmirror pull SPEC...`: snapshots whole into the instance agent's cache, without FUSE
 * (containers without /dev/fuse), linked into the hub caches once every byte is verified there.
 *
 * The agent does the work (POST /v1/pull); this command follows its status until every snapshot is
 * verified, showing progress: a line redrawn on a terminal, JSON lines with --json, nothing
 * otherwise. Exit 0 only when every byte of every snapshot is verified and linked.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/xmalloc.h"
#include "cli.h"
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

/* Show one round of progress; returns 1 when all are verified, -1 on an error (said), else 0. */
static int progress(json_t *st, json_t *want, bool as_json, bool tty, const char *socket)
{
	int64_t have = 0, total = 0;
	size_t i, done = 0;
	json_t *w;
	char h[16], t[16];

	json_array_foreach(want, i, w) {
		json_t *e = entry(st, w);
		const char *err = json_string_value(json_object_get(e, "error"));
		int link = e ? linked(e, w, &err) : 0;
		bool ok;
		if (!e || err) {
			fprintf(stderr, "%shubmirror: %s: %s\n", tty ? "\n" : "", json_string_value(json_object_get(w, "spec")),
				err ? err : "the agent no longer holds it");
			return -1;
		}
		have += num(e, "bytes_have");
		total += num(e, "bytes_total");
		/* of how many files (null: all), for the lines below and the last one */
		json_object_set(w, "selected", json_object_get(e, "selected"));
		json_object_set(w, "files", json_object_get(e, "files"));
		ok = json_is_true(json_object_get(e, "verified")) && link == 1;
		done += ok;
		if (as_json) {
			json_t *line = json_pack("{s:O, s:O, s:O, s:I, s:I, s:b}", "spec", json_object_get(w, "spec"), "revision",
						 json_object_get(w, "revision"), "commit", json_object_get(e, "commit"),
						 "bytes_have", (json_int_t)num(e, "bytes_have"),
						 "bytes_total", (json_int_t)num(e, "bytes_total"), "verified", ok);
			char *s;
			if (json_is_integer(json_object_get(e, "selected"))) {
				json_object_set(line, "selected", json_object_get(e, "selected"));
				json_object_set(line, "files", json_object_get(e, "files"));
			}
			if (json_object_get(w, "offline"))
				json_object_set(line, "offline", json_object_get(w, "offline"));
			s = json_dumps(line, JSON_COMPACT);
			puts(s);
			free(s);
			json_decref(line);
		}
	}
	if (tty) {
		cli_human_size(have, h, sizeof(h));
		cli_human_size(total, t, sizeof(t));
		fprintf(stderr, "\rpulling %zu of %zu: %s / %s (%d%%)%s", json_array_size(want) - done, json_array_size(want),
			h, t, total ? (int)(100 * have / total) : 100, done == json_array_size(want) ? ", verified\n" : "   ");
	}
	fflush(stdout);
	(void)socket;
	return done == json_array_size(want);
}

/* Follow the agent's status until every snapshot in want is verified. */
static int follow(const char *socket, json_t *want, bool as_json)
{
	bool tty = !as_json && isatty(STDERR_FILENO);
	struct timespec nap = { 0, 200 * 1000 * 1000 };
	time_t last_json = 0;

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
		r = progress(st, want, print_json, tty, socket);
		if (print_json)
			last_json = time(NULL);
		if (r == 1 && as_json && !print_json)
			progress(st, want, true, false, socket); /* the last line says verified */
		json_decref(st);
		if (r)
			return r == 1 ? CLI_OK : CLI_FAILED;
		nanosleep(&nap, NULL);
	}
}

int cmd_pull(int argc, char **argv)
{
	const struct cli_command *self = cli_find("pull");
	struct cli_agent_opts o = { .command = "pull", .socket = agent_socket_default() };
	bool pin = false, as_json = false;
	json_t *want = json_array(), *ans, *w, *inc = json_array(), *exc = json_array();
	size_t i;
	int r = CLI_OK;
	const struct cli_flag flags[] = { CLI_AGENT_FLAGS(&o), CLI_BOOL("pin", &pin), CLI_BOOL("json", &as_json),
					  CLI_FN("include", inc, cli_take_pattern), CLI_FN("exclude", exc, cli_take_pattern),
					  CLI_END };

	if (cli_parse_flags(self, argc, argv, flags))
		r = CLI_USAGE;
	else if (optind >= argc)
		r = cli_usage_error(self, "give one or more SPECs");
	if (r) {
		json_decref(want);
		json_decref(inc);
		json_decref(exc);
		return CLI_USAGE;
	}
	for (int k = optind; k < argc; k++) {
		struct hub_spec spec;
		bool ok = !hub_spec_parse(argv[k], &spec);
		if (ok) {
			ok = strchr(spec.name, '/') != NULL; /* org/name: a bare legacy name has no snapshot torrent */
			hub_spec_release(&spec);
		}
		if (!ok) {
			json_decref(want);
			json_decref(inc);
			json_decref(exc);
			return cli_usage_error(self, "'%s' is not a SPEC like hf:org/name[@rev]", argv[k]);
		}
	}
	o.mirror = cli_mirror_url(o.mirror);
	for (int k = optind; k < argc && !r; k++) {
		json_t *req = cli_agent_request(argv[k], &o);
		ans = NULL;
		json_object_set_new(req, "pin", json_boolean(pin));
		if (json_array_size(inc))
			json_object_set(req, "include", inc);
		if (json_array_size(exc))
			json_object_set(req, "exclude", exc);
		r = cli_agent_post(&o, "/v1/pull", req, &ans);
		json_decref(req);
		if (!r) {
			json_t *got = json_pack("{s:s, s:O, s:O, s:O, s:O, s:O}", "spec", argv[k], "canon",
					      json_object_get(ans, "spec"), "revision", json_object_get(ans, "revision"), "btih",
					      json_object_get(ans, "btih"), "commit", json_object_get(ans, "commit"), "link",
					      json_object_get(ans, "link"));
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
			json_array_append_new(want, got);
			cli_agent_offline_note(argv[k], ans);
		}
		json_decref(ans);
	}
	if (!r)
		r = follow(o.socket, want, as_json);
	if (!r && !as_json)
		json_array_foreach(want, i, w) {
			char part[64] = "";
			if (json_is_integer(json_object_get(w, "selected")))
				snprintf(part, sizeof(part), " (%lld of %lld files)", (long long)num(w, "selected"),
					 (long long)num(w, "files"));
			printf("pulled %s @ %.12s%s%s\n", json_string_value(json_object_get(w, "spec")),
			       json_string_value(json_object_get(w, "commit")), part,
			       json_object_get(w, "offline") ? " (offline: the snapshot this instance holds)" : "");
		}
	json_decref(want);
	json_decref(inc);
	json_decref(exc);
	return r;
}
