/*
 * cmd-pin.c - `hubmirror pin [--remove] SPEC[@REV]...`: keep snapshots through gc, retention and the
 * store quota (catalog_snapshot_pin).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/err.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "hub/hub.h"
#include "mirror/data.h"

int cmd_pin(int argc, char **argv)
{
	const struct cli_command *self = cli_find("pin");
	struct mirror_data *data = NULL;
	const char *dir = NULL;
	bool unpin = false;
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_BOOL("remove", &unpin, "unpin instead"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (cli_check_specs(self, optind, argc, argv, true, NULL))
		return CLI_USAGE;
	if (cli_open_data(dir, &data))
		return CLI_FAILED;
	for (int i = optind; i < argc; i++) {
		struct hub_spec s;
		struct catalog_repo repo;
		struct catalog_snapshot snap;
		bool found = false;
		int e;

		hub_spec_parse(argv[i], &s);
		/* tracked repos only: a removed repo's snapshots go with the next gc, pinned or not */
		e = catalog_repo_get(data->catalog, hub_kind_name(s.hub), hub_type_name(s.type), s.name, &repo);
		if (!e) {
			catalog_repo_release(&repo);
			e = catalog_resolve(data->catalog, hub_kind_name(s.hub), hub_type_name(s.type), s.name,
					    s.revision, &repo, &snap, &found);
		}
		if (!e)
			e = catalog_snapshot_pin(data->catalog, snap.id, !unpin);
		if (!e) {
			printf("%s %s at %.12s\n", unpin ? "unpinned" : "pinned", argv[i], snap.commit);
		} else if (e == HM_ERR_NOT_FOUND && found) {
			fprintf(stderr, "hubmirror: pin: %s: no snapshot of %s on this mirror\n", argv[i],
				s.revision ? s.revision : "its followed revision");
			r = CLI_FAILED;
		} else {
			r = cli_repo_error(data, argv[i], e);
		}
		if (found)
			catalog_repo_release(&repo);
		hub_spec_release(&s);
	}
	mirror_data_free(&data);
	return r;
}
