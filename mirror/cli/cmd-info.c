/*
 * cmd-info.c - `hubmirror info [--data DIR] [--json] SPEC`: one tracked repository in detail.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "base/err.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "hub/hub.h"
#include "mirror/data.h"

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *self = cli_find("info");
	struct mirror_data *data = NULL;
	struct catalog_repo repo = { 0 };
	struct hub_spec spec;
	const char *dir = NULL;
	int c, json = 0, r = CLI_OK, e;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 'j')
			json = 1;
		else
			return cli_usage_error(self, "unknown option");
	}
	if (argc - optind != 1)
		return cli_usage_error(self, "expected one repository");
	if (hub_spec_parse(argv[optind], &spec))
		return cli_usage_error(self, "'%s' is not a repository spec", argv[optind]);
	if (cli_open_data(dir, &data)) {
		hub_spec_release(&spec);
		return CLI_FAILED;
	}
	e = catalog_repo_get(data->catalog, hub_kind_name(spec.hub), hub_type_name(spec.type), spec.name, &repo);
	if (e == HM_ERR_NOT_FOUND) {
		fprintf(stderr, "hubmirror: '%s' is not tracked\n", argv[optind]);
		r = CLI_FAILED;
	} else if (e) {
		fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
		r = CLI_FAILED;
	} else if (json) {
		json_t *o = cli_repo_json(&repo);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		char size[32], when[32], added[32];
		cli_human_size(repo.total_size, size, sizeof(size));
		cli_human_time(repo.last_sync_at, when, sizeof(when));
		cli_human_time(repo.added_at, added, sizeof(added));
		printf("%s\n  type        %s\n  revision    %s\n  commit      %s\n  files       %lld (%s)\n"
		       "  status      %s%s%s\n  last sync   %s\n  added       %s\n  include     %s\n  exclude     %s\n",
		       argv[optind], repo.type, repo.follow_rev, repo.head_commit ? repo.head_commit : "(not synced)",
		       (long long)repo.file_count, size, repo.sync_status, repo.sync_error ? ": " : "",
		       repo.sync_error ? repo.sync_error : "", when, added, repo.include_globs, repo.exclude_globs);
	}
	catalog_repo_release(&repo);
	hub_spec_release(&spec);
	mirror_data_free(&data);
	return r;
}
