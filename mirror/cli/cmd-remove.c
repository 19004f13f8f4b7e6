/*
 * cmd-remove.c - `hubmirror remove [--data DIR] SPEC...`: stop tracking repositories. Their snapshots
 * stay served until `hubmirror gc` drops what nothing tracked references.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "hub/hub.h"
#include "mirror/data.h"

int cmd_remove(int argc, char **argv)
{
	const struct cli_command *self = cli_find("remove");
	struct mirror_data *data = NULL;
	const char *dir = NULL, *mirror = NULL;
	char *local = NULL;
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_STR("mirror", &mirror, "URL",
			"remove them on that mirror, through its operator API ($HUBMIRROR_ADMIN_TOKEN)"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (cli_check_specs(self, optind, argc, argv, true, "remove takes a repository without @REVISION"))
		return CLI_USAGE;
	if (!mirror && (local = cli_local_serve(dir)))
		mirror = local; /* the serve running on this directory does it */
	if (mirror) {
		/* through a running mirror's operator API */
		for (int i = optind; i < argc; i++) {
			struct hub_spec s;
			char *path;
			json_t *j;
			long status;
			hub_spec_parse(argv[i], &s);
			path = xasprintf("/api/admin/repos/%s/%s/%s", hub_kind_name(s.hub), hub_type_name(s.type),
					 s.name);
			j = cli_admin_call(mirror, "DELETE", path, NULL, &status);
			json_decref(j);
			free(path);
			hub_spec_release(&s);
			if (status != 200)
				r = CLI_FAILED;
			else
				printf("removed %s on %s%s\n", argv[i], mirror,
				       local ? " (the serve of this data directory)" : "");
		}
		free(local);
		return r;
	}
	if (cli_open_data(dir, &data))
		return CLI_FAILED;
	for (int i = optind; i < argc; i++) {
		struct hub_spec s;
		int e;

		hub_spec_parse(argv[i], &s);
		e = catalog_repo_remove(data->catalog, hub_kind_name(s.hub), hub_type_name(s.type), s.name);
		if (e)
			r = cli_repo_error(data, argv[i], e);
		else
			printf("removed %s\n", argv[i]);
		hub_spec_release(&s);
	}
	mirror_data_free(&data);
	return r;
}
