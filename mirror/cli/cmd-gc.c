/*
 * cmd-gc.c - `hubmirror gc`: drop snapshots nothing needs and the blobs only they referenced.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "base/err.h"
#include "cli.h"
#include "mirror/data.h"
#include "mirror/maint.h"

int cmd_gc(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "keep", required_argument, NULL, 'k' },
		{ "partial-age", required_argument, NULL, 'a' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "wait", no_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *self = cli_find("gc");
	struct mirror_data *data = NULL;
	struct mirror_gc_report rep;
	const char *dir = NULL;
	long keep = 2, age_h = 168;
	int c, dry = 0, wait = 0, json = 0, r = CLI_OK, e;
	char *err = NULL, *end;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'n': dry = 1; break;
		case 'w': wait = 1; break;
		case 'j': json = 1; break;
		case 'k':
			keep = strtol(optarg, &end, 10);
			if (*end || keep < 1 || keep > 1000)
				return cli_usage_error(self, "--keep takes 1 to 1000");
			break;
		case 'a':
			age_h = strtol(optarg, &end, 10);
			if (*end || age_h < 0)
				return cli_usage_error(self, "--partial-age takes hours (0 or more)");
			break;
		default:
			return cli_usage_error(self, "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
	if (cli_open_locked(dir, wait, &data))
		return CLI_FAILED;
	e = mirror_gc(data, (int)keep, (int64_t)age_h * 3600, dry, &rep, &err);
	if (e) {
		fprintf(stderr, "hubmirror: gc: %s\n", err ? err : err_str(e));
		r = CLI_FAILED;
	} else if (json) {
		json_t *o = json_pack("{s:b, s:I, s:I, s:I, s:I, s:I}", "dry_run", dry,
				      "snapshots_dropped", (json_int_t)rep.snapshots_dropped,
				      "blobs_removed", (json_int_t)rep.blobs_removed, "bytes_freed", (json_int_t)rep.bytes_freed,
				      "orphans_removed", (json_int_t)rep.orphans_removed,
				      "partials_removed", (json_int_t)rep.partials_removed);
		cli_print_json(o);
		json_decref(o);
	} else {
		char b[32];
		cli_human_size(rep.bytes_freed, b, sizeof(b));
		printf("gc%s: %lld snapshots, %lld blobs (%s), %lld orphan files, %lld stale partial files %s\n",
		       dry ? " (dry run)" : "", (long long)rep.snapshots_dropped, (long long)rep.blobs_removed, b,
		       (long long)rep.orphans_removed, (long long)rep.partials_removed, dry ? "would go" : "removed");
	}
	free(err);
	mirror_data_free(&data);
	return r;
}
