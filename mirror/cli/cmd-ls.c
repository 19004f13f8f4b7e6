/*
 * cmd-ls.c - `hubmirror ls [--data DIR] [--json]`: the tracked repositories, their followed revision,
 * sync status, and the size of the snapshot that revision points at.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "mirror/data.h"
#include "mirror/repojson.h"

/* All tracked repos of a remote mirror, following the catalog API's cursors. */
static json_t *remote_list(const char *mirror)
{
	json_t *all = json_array();
	char *path = xstrdup("/api/catalog/repos?sort=name&limit=1000");

	while (path) {
		json_t *page = cli_mirror_get(mirror, path);
		const char *next;
		free(path);
		path = NULL;
		if (!page) {
			json_decref(all);
			return NULL;
		}
		json_array_extend(all, json_object_get(page, "repos"));
		next = json_string_value(json_object_get(page, "next_cursor"));
		if (next)
			path = xasprintf("/api/catalog/repos?sort=name&limit=1000&cursor=%s", next);
		json_decref(page);
	}
	return all;
}

int cmd_ls(int argc, char **argv)
{
	const struct cli_command *self = cli_find("ls");
	struct mirror_data *data = NULL;
	struct catalog_repo *list = NULL;
	const char *dir = NULL, *mirror = NULL;
	json_t *a = NULL;
	size_t n = 0;
	bool json = false;
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_STR("mirror", &mirror, "URL",
			"list a running mirror's catalog (default $HUBMIRROR_URL when --data is not given)"),
		CLI_BOOL("json", &json,
			 "print a JSON array of objects with stable field names:\n"
			 "spec hub type name revision commit sync_status sync_error files size\n"
			 "last_sync_at added_at include exclude"),
		CLI_END,
	};

	if (cli_parse_flags_only(self, argc, argv, flags))
		return CLI_USAGE;
	mirror = dir ? NULL : cli_mirror_url(mirror);
	if (mirror) {
		a = remote_list(mirror);
		if (!a)
			return CLI_FAILED;
	} else {
		if (cli_open_data(dir, &data))
			return CLI_FAILED;
		if (catalog_repo_list(data->catalog, &list, &n)) {
			fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
			r = CLI_FAILED;
			goto out;
		}
		a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, mirror_repo_json(&list[i], NULL));
	}
	if (json) {
		cli_print_json(a);
	} else if (json_array_size(a) == 0) {
		printf("no repositories tracked (add one with 'hubmirror add hf:ORG/NAME')\n");
	} else {
		cli_print_repo_table(a);
	}
out:
	json_decref(a);
	catalog_repo_list_free(list, n);
	mirror_data_free(&data);
	return r;
}
