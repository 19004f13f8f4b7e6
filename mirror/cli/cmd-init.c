/*
 * cmd-init.c - `hubmirror init [--data DIR]`: make an empty mirror (its catalog and store). Only
 * init, add, import and restore make a data directory; every other command refuses one that holds
 * no mirror, so a mistyped --data is an error instead of an empty mirror.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "mirror/data.h"

int cmd_init(int argc, char **argv)
{
	const struct cli_command *self = cli_find("init");
	struct mirror_data *data = NULL;
	struct catalog_repo *list = NULL;
	const char *dir = NULL;
	struct stat st;
	size_t n = 0;
	char *cat;
	bool existed;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_END,
	};

	if (cli_parse_flags_only(self, argc, argv, flags))
		return CLI_USAGE;
	if (!dir)
		dir = mirror_data_default_dir();
	cat = xasprintf("%s/catalog.db", dir);
	existed = stat(cat, &st) == 0;
	free(cat);
	if (cli_create_data(dir, &data))
		return CLI_FAILED;
	if (existed) {
		if (catalog_repo_list(data->catalog, &list, &n) == 0)
			catalog_repo_list_free(list, n);
		printf("%s already holds a mirror (%zu tracked repos): left as it is\n", dir, n);
	} else {
		printf("made an empty mirror in %s: track repos with 'hubmirror add', or serve it on demand\n", dir);
	}
	mirror_data_free(&data);
	return CLI_OK;
}
