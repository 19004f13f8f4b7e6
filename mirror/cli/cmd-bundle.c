/*
 * cmd-bundle.c - `hubmirror export` and `hubmirror import`: air-gapped bundles (mirror/bundle.c).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "hub/hub.h"
#include "mirror/bundle.h"
#include "mirror/progress.h"
#include "mirror/data.h"

/* --since DATE: 2026-11-01, 2026-11-01T12:00:00Z (UTC), or @UNIXSECONDS. Returns 0 or -1. */
static int parse_since_date(const char *arg, int64_t *out)
{
	static const char *const forms[] = { "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ", "%Y-%m-%d" };
	char *end;

	if (arg[0] == '@') {
		long long v = strtoll(arg + 1, &end, 10);
		if (end == arg + 1 || *end || v <= 0)
			return -1;
		*out = v;
		return 0;
	}
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct tm tm;
		memset(&tm, 0, sizeof(tm));
		end = strptime(arg, forms[i], &tm);
		if (end && !*end) {
			*out = (int64_t)timegm(&tm);
			return 0;
		}
	}
	return -1;
}

/* --all: a spec for every repo the catalog holds a snapshot of; the others counted in *unsynced.
 * Returns 0, or -1 after saying why. */
static int all_specs(struct mirror_data *data, struct hub_spec **out, size_t *n, size_t *unsynced)
{
	struct catalog_repo *list = NULL;
	size_t k = 0;

	if (catalog_repo_list(data->catalog, &list, &k)) {
		fprintf(stderr, "hubmirror: export: %s\n", catalog_errmsg(data->catalog));
		return -1;
	}
	*out = xcalloc(k ? k : 1, sizeof(**out));
	*n = 0;
	for (size_t i = 0; i < k; i++) {
		struct hub_spec *sp = &(*out)[*n];
		if (!list[i].head_commit || hub_kind_parse(list[i].hub, &sp->hub) ||
		    hub_type_parse(list[i].type, &sp->type)) {
			(*unsynced)++;
			continue;
		}
		sp->name = xstrdup(list[i].name);
		(*n)++;
	}
	catalog_repo_list_free(list, k);
	if (!*n) {
		fprintf(stderr, "hubmirror: export --all: the mirror holds no snapshot to export%s\n",
			*unsynced ? " (its repos were never synced)" : "");
		return -1;
	}
	return 0;
}

int cmd_export(int argc, char **argv)
{
	const struct cli_command *self = cli_find("export");
	struct mirror_bundle_report rep;
	struct mirror_data *data = NULL;
	struct hub_spec *specs = NULL;
	struct mirror_bundle_opts opt = { 0 };
	struct cli_progress cp;
	struct mirror_progress mp = { cli_progress_fn, &cp };
	int e;
	const char *dir = NULL, *out = NULL, *since = NULL;
	char *err = NULL, size[32];
	size_t n = 0, unsynced = 0;
	bool all = false;
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_STR("output", &out, "FILE", "the bundle (written through a temporary file, renamed at the end)"),
		CLI_STR("since", &since, "BUNDLE|DATE",
			"an incremental bundle: the manifest whole, but only the contents\n"
			"that earlier bundle does not list (or stored here after DATE: 2026-11-01,\n"
			"2026-11-01T12:00:00Z, @UNIXSECONDS); importing it needs those in the store"),
		CLI_BOOL("all", &all, "every repository the mirror holds a snapshot of (those never synced\n"
			 "are left out, and counted)"),
		CLI_SIZE("volume-size", &opt.volume_size, 64 << 10, "SIZE",
			 "cut the archive into FILE.001, FILE.002, ... of SIZE bytes (4G, 700M);\n"
			 "import FILE.001 reads them all"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (!out)
		return cli_usage_error(self, "--output FILE is required");
	if (since) {
		/* an earlier bundle (a file there), else a date */
		if (access(since, F_OK) == 0)
			opt.since_bundle = since;
		else if (parse_since_date(since, &opt.since_time))
			return cli_usage_error(self, "--since takes an earlier bundle (no file '%s') or a date "
					       "(2026-11-01, 2026-11-01T12:00:00Z, @UNIXSECONDS)", since);
	}
	if (all && optind < argc)
		return cli_usage_error(self, "--all or repository specs, not both");
	if (!all && optind >= argc)
		return cli_usage_error(self, "no repository given (or --all)");
	for (int i = optind; i < argc; i++) {
		if (!specs)
			specs = xcalloc((size_t)(argc - optind), sizeof(*specs));
		if (hub_spec_parse(argv[i], &specs[n]) || specs[n].revision) {
			r = specs[n].revision ? cli_usage_error(self,
								"'%s': no @REVISION here (every ref the mirror holds "
								"of it goes)",
								argv[i])
					      : cli_spec_error(self, NULL, argv[i]);
			if (specs[n].name)
				n++; /* parsed, with a revision: released below */
			goto out;
		}
		n++;
	}
	if (cli_open_data(dir, &data)) {
		r = CLI_FAILED;
		goto out;
	}
	if (all && all_specs(data, &specs, &n, &unsynced)) {
		r = CLI_FAILED;
		goto out;
	}
	cli_progress_start(&cp, "export");
	opt.progress = &mp;
	e = mirror_bundle_export(data, specs, n, out, &opt, &rep, &err);
	cli_progress_end(&cp);
	if (e) {
		fprintf(stderr, "hubmirror: export: %s\n", err ? err : "failed");
		r = CLI_FAILED;
		goto out;
	}
	cli_human_size(rep.bytes, size, sizeof(size));
	printf("export: %lld %s, %lld %s, %lld %s (%s) in %s", (long long)rep.repos,
	       cli_plural(rep.repos, "repo", "repos"), (long long)rep.snapshots,
	       cli_plural(rep.snapshots, "snapshot", "snapshots"), (long long)rep.blobs,
	       cli_plural(rep.blobs, "content", "contents"), size, out);
	if (opt.volume_size)
		printf(".001 .. .%03lld (%lld %s)", (long long)rep.volumes, (long long)rep.volumes,
		       cli_plural(rep.volumes, "volume", "volumes"));
	if (since)
		printf("; %lld %s left out (held since %s)", (long long)rep.blobs_omitted,
		       cli_plural(rep.blobs_omitted, "content", "contents"), since);
	if (unsynced)
		printf("; %zu %s never synced left out", unsynced, unsynced == 1 ? "repo" : "repos");
	putchar('\n');
out:
	for (size_t i = 0; i < n; i++)
		hub_spec_release(&specs[i]);
	free(specs);
	free(err);
	mirror_data_free(&data);
	return r;
}

int cmd_import(int argc, char **argv)
{
	const struct cli_command *self = cli_find("import");
	struct mirror_bundle_report rep;
	struct mirror_data *data = NULL;
	const char *dir = NULL;
	bool wait = false, json = false, keep_options = false;
	char *err = NULL, size[32];
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_BOOL("wait", &wait, "wait for a running sync instead of failing"),
		CLI_BOOL("json", &json, "print each bundle's report as JSON"),
		CLI_BOOL("keep-options", &keep_options,
			 "give new repositories the bundle's options (open, preheat, include/exclude,\n"
			 "guards); without it they get none, and tracked ones always keep their own"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (argc - optind < 1)
		return cli_usage_error(self, "expected a bundle FILE");
	/* like a sync: one writer of the store and catalog at a time (a bundle may start a new mirror) */
	if (cli_create_data(dir, &data))
		return CLI_FAILED;
	if (cli_lock_data(data, wait)) {
		mirror_data_free(&data); /* (another holds it: not ours to take back) */
		return CLI_FAILED;
	}
	for (int i = optind; i < argc && r == CLI_OK; i++) {
		/* FILE.001 stands for all its volumes: the later ones given too (a shell glob) are skipped */
		int vol = mirror_bundle_volume(argv[i]), e;
		struct cli_progress cp;
		struct mirror_progress mp = { cli_progress_fn, &cp };
		if (vol > 1 && i > optind && mirror_bundle_volume(argv[i - 1]) == vol - 1 &&
		    !strncmp(argv[i], argv[i - 1], strlen(argv[i]) - 3))
			continue;
		cli_progress_start(&cp, "import");
		e = mirror_bundle_import(data, argv[i], keep_options, &rep, &mp, &err);
		cli_progress_end(&cp);
		if (e) {
			fprintf(stderr, "hubmirror: import %s: %s\n", argv[i], err ? err : "failed");
			r = CLI_FAILED;
		} else if (json) {
			json_t *o = json_pack(
				"{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "bundle", argv[i], "repos",
				(json_int_t)rep.repos, "snapshots", (json_int_t)rep.snapshots, "blobs",
				(json_int_t)rep.blobs, "blobs_skipped", (json_int_t)rep.blobs_skipped, "bytes",
				(json_int_t)rep.bytes, "torrents_made", (json_int_t)rep.torrents_made, "options_kept",
				(json_int_t)rep.options_kept, "options_dropped", (json_int_t)rep.options_dropped);
			cli_print_json(o);
			json_decref(o);
		} else {
			cli_human_size(rep.bytes, size, sizeof(size));
			printf("import %s: %lld %s, %lld %s; %lld %s stored (%s), %lld held already; %lld %s made\n",
			       argv[i], (long long)rep.repos, cli_plural(rep.repos, "repo", "repos"),
			       (long long)rep.snapshots, cli_plural(rep.snapshots, "snapshot", "snapshots"),
			       (long long)rep.blobs, cli_plural(rep.blobs, "content", "contents"), size,
			       (long long)rep.blobs_skipped, (long long)rep.torrents_made,
			       cli_plural(rep.torrents_made, "torrent", "torrents"));
			if (rep.options_kept)
				printf("  %lld %s already tracked %s own options (the bundle's are not taken)\n",
				       (long long)rep.options_kept, cli_plural(rep.options_kept, "repo", "repos"),
				       cli_plural(rep.options_kept, "keeps its", "keep their"));
			if (rep.options_dropped)
				printf("  %lld new %s no options from the bundle (open, preheat, globs, guards): set "
				       "them with hubmirror add, or import --keep-options\n",
				       (long long)rep.options_dropped,
				       cli_plural(rep.options_dropped, "repo gets", "repos get"));
		}
		free(err);
		err = NULL;
	}
	cli_data_done(&data, r);
	return r;
}
