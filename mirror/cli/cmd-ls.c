/*
 * cmd-ls.c - `hubmirror ls [--data DIR] [--json]`: the tracked repositories, their followed revision,
 * sync status, and the size of the snapshot that revision points at.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "catalog/catalog.h"
#include "cli.h"
#include "mirror/data.h"

json_t *cli_repo_json(const struct catalog_repo *r)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}",
			      "hub", r->hub, "type", r->type, "name", r->name, "revision", r->follow_rev,
			      "sync_status", r->sync_status, "files", (json_int_t)r->file_count,
			      "size", (json_int_t)r->total_size, "added_at", (json_int_t)r->added_at);

	json_object_set_new(o, "spec", json_sprintf("%s:%s%s", r->hub,
						    strcmp(r->type, "dataset") ? "" : "datasets/", r->name));
	json_object_set_new(o, "commit", r->head_commit ? json_string(r->head_commit) : json_null());
	json_object_set_new(o, "last_sync_at", r->last_sync_at ? json_integer(r->last_sync_at) : json_null());
	json_object_set_new(o, "sync_error", r->sync_error ? json_string(r->sync_error) : json_null());
	json_object_set_new(o, "include", json_loads(r->include_globs, 0, NULL));
	json_object_set_new(o, "exclude", json_loads(r->exclude_globs, 0, NULL));
	return o;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *self = cli_find("ls");
	struct mirror_data *data = NULL;
	struct catalog_repo *list = NULL;
	const char *dir = NULL;
	size_t n = 0, wspec = 4;
	int c, json = 0, r = CLI_OK;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 'j')
			json = 1;
		else
			return cli_usage_error(self, "unknown option");
	}
	if (optind < argc)
		return cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
	if (cli_open_data(dir, &data))
		return CLI_FAILED;
	if (catalog_repo_list(data->catalog, &list, &n)) {
		fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
		r = CLI_FAILED;
		goto out;
	}
	if (json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, cli_repo_json(&list[i]));
		json_dumpf(a, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(a);
		goto out;
	}
	if (n == 0) {
		printf("no repositories tracked (add one with 'hubmirror add hf:ORG/NAME')\n");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t w = strlen(list[i].hub) + 1 + strlen(list[i].name) + (strcmp(list[i].type, "dataset") ? 0 : 9);
		if (w > wspec)
			wspec = w;
	}
	printf("%-*s  %-12s  %-8s  %7s  %10s  %s\n", (int)wspec, "SPEC", "REVISION", "STATUS", "FILES", "SIZE",
	       "LAST SYNC (UTC)");
	for (size_t i = 0; i < n; i++) {
		char spec[512], size[32], when[32];
		snprintf(spec, sizeof(spec), "%s:%s%s", list[i].hub,
			 strcmp(list[i].type, "dataset") ? "" : "datasets/", list[i].name);
		cli_human_size(list[i].total_size, size, sizeof(size));
		cli_human_time(list[i].last_sync_at, when, sizeof(when));
		printf("%-*s  %-12s  %-8s  %7lld  %10s  %s\n", (int)wspec, spec, list[i].follow_rev,
		       list[i].sync_status, (long long)list[i].file_count, size, when);
	}
out:
	catalog_repo_list_free(list, n);
	mirror_data_free(&data);
	return r;
}
