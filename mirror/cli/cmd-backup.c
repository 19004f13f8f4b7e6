/*
 * cmd-backup.c - `hubmirror backup` and `hubmirror restore`: the catalog out (a consistent copy
 * while the mirror serves and syncs) and back.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "base/err.h"
#include "cli.h"
#include "mirror/backup.h"
#include "mirror/data.h"

int cmd_backup(int argc, char **argv)
{
	const struct cli_command *self = cli_find("backup");
	struct mirror_data *data = NULL;
	const char *dir = NULL, *out = NULL;
	int64_t bytes = 0;
	char *err = NULL, size[32];
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_STR("output", &out, "FILE", "where to write it (replaced if it exists)"),
		CLI_END,
	};

	if (cli_parse_flags_only(self, argc, argv, flags))
		return CLI_USAGE;
	if (!out)
		return cli_usage_error(self, "--output FILE is required");
	if (cli_open_data(dir, &data))
		return CLI_FAILED;
	if (mirror_backup(data, out, &bytes, &err)) {
		fprintf(stderr, "hubmirror: backup: %s\n", err ? err : "failed");
		r = CLI_FAILED;
	} else {
		cli_human_size(bytes, size, sizeof(size));
		printf("backup: the catalog of %s as of now in %s (%s)\n", data->dir, out, size);
	}
	free(err);
	mirror_data_free(&data);
	return r;
}

int cmd_restore(int argc, char **argv)
{
	const struct cli_command *self = cli_find("restore");
	struct mirror_restore_report rep;
	const char *dir = NULL;
	bool json = false;
	char *err = NULL;
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_BOOL("json", &json, "print the report as JSON"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (argc - optind != 1)
		return cli_usage_error(self, "expected one backup FILE");
	if (!dir)
		dir = mirror_data_default_dir();
	if (mirror_restore(dir, argv[optind], &rep, &err)) {
		fprintf(stderr, "hubmirror: restore: %s (nothing was changed)\n", err ? err : "failed");
		free(err);
		return CLI_FAILED;
	}
	if (json) {
		json_t *o = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I}", "version", rep.version, "repos",
				      (json_int_t)rep.repos, "blobs", (json_int_t)rep.blobs, "blobs_missing",
				      (json_int_t)rep.blobs_missing, "repos_damaged", (json_int_t)rep.repos_damaged,
				      "torrents_dropped", (json_int_t)rep.torrents_dropped);
		cli_print_json(o);
		json_decref(o);
	} else {
		printf("restore: %s now holds the catalog from %s: %lld %s, %lld %s\n", dir, argv[optind],
		       (long long)rep.repos, cli_plural(rep.repos, "repo", "repos"), (long long)rep.blobs,
		       cli_plural(rep.blobs, "content", "contents"));
		if (rep.blobs_missing)
			printf("restore: the store lacks %lld of them: %lld %s marked damaged; "
			       "'hubmirror sync' fetches them again\n",
			       (long long)rep.blobs_missing, (long long)rep.repos_damaged,
			       cli_plural(rep.repos_damaged, "repo", "repos"));
		if (rep.torrents_dropped)
			printf("restore: %lld %s to make again (the next sync does, same info-hashes)\n",
			       (long long)rep.torrents_dropped,
			       cli_plural(rep.torrents_dropped, "torrent", "torrents"));
	}
	return r;
}
