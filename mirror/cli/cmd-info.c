/*
 * cmd-info.c - `hubmirror info [--data DIR] [--json] SPEC`: one tracked repository in detail.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "mirror/repojson.h"
#include "hub/hub.h"
#include "mirror/data.h"

/* "main, v1.0 (tag), refs/convert/parquet (convert)": the refs of the JSON array [{name, kind}]. */
static void print_refs(json_t *refs)
{
	json_t *v;
	size_t i;

	printf("  refs        ");
	if (!json_array_size(refs))
		printf("(none)");
	json_array_foreach(refs, i, v) {
		const char *kind = json_string_value(json_object_get(v, "kind"));
		printf("%s%s", i ? ", " : "", json_string_value(json_object_get(v, "name")));
		if (kind && strcmp(kind, "branch"))
			printf(" (%s)", kind);
	}
	putchar('\n');
}

static int ref_to_json(void *ud, const char *name, const char *kind, const char *commit)
{
	json_array_append_new(ud, json_pack("{s:s, s:s, s:s}", "name", name, "kind", kind, "commit", commit));
	return 0;
}

int cmd_info(int argc, char **argv)
{
	const struct cli_command *self = cli_find("info");
	const char *mirror = NULL;
	struct mirror_data *data = NULL;
	struct catalog_repo repo = { 0 };
	struct hub_spec spec;
	const char *dir = NULL;
	bool json = false;
	int r = CLI_OK, e;
	const struct cli_flag flags[] = { CLI_STR("data", &dir), CLI_BOOL("json", &json), CLI_STR("mirror", &mirror), CLI_END };

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (argc - optind != 1)
		return cli_usage_error(self, "expected one repository");
	if (hub_spec_parse(argv[optind], &spec))
		return cli_usage_error(self, "'%s' is not a repository spec", argv[optind]);
	mirror = dir ? NULL : cli_mirror_url(mirror);
	if (mirror) {
		char *path = xasprintf("/api/catalog/repos/%s/%s/%s", hub_kind_name(spec.hub), hub_type_name(spec.type),
				       spec.name);
		json_t *o = cli_mirror_get(mirror, path);
		free(path);
		hub_spec_release(&spec);
		if (!o)
			return CLI_FAILED;
		if (json) {
			cli_print_json(o);
		} else {
			char size[32], when[32];
			cli_human_size(json_integer_value(json_object_get(o, "size")), size, sizeof(size));
			cli_human_time(json_integer_value(json_object_get(o, "last_sync_at")), when, sizeof(when));
			printf("%s\n  type        %s\n  revision    %s\n  commit      %s\n  files       %lld (%s)\n"
			       "  status      %s\n  last sync   %s\n  use         %s\n  mount       %s\n",
			       json_string_value(json_object_get(o, "spec")), json_string_value(json_object_get(o, "type")),
			       json_string_value(json_object_get(o, "revision")),
			       json_is_string(json_object_get(o, "commit")) ? json_string_value(json_object_get(o, "commit")) : "(not synced)",
			       (long long)json_integer_value(json_object_get(o, "files")), size,
			       json_string_value(json_object_get(o, "sync_status")), when,
			       json_string_value(json_object_get(o, "endpoint_env")),
			       json_string_value(json_object_get(o, "mount_command")));
			print_refs(json_object_get(o, "refs"));
		}
		json_decref(o);
		return CLI_OK;
	}
	if (cli_open_data(dir, &data)) {
		hub_spec_release(&spec);
		return CLI_FAILED;
	}
	e = catalog_repo_get(data->catalog, hub_kind_name(spec.hub), hub_type_name(spec.type), spec.name, &repo);
	if (e) {
		r = cli_repo_error(data, argv[optind], e);
	} else if (json) {
		json_t *o = mirror_repo_json(&repo, NULL);
		cli_print_json(o);
		json_decref(o);
	} else {
		char size[32], when[32], added[32];
		json_t *refs = json_array();
		cli_human_size(repo.total_size, size, sizeof(size));
		cli_human_time(repo.last_sync_at, when, sizeof(when));
		cli_human_time(repo.added_at, added, sizeof(added));
		printf("%s\n  type        %s\n  revision    %s\n  commit      %s\n  files       %lld (%s)\n"
		       "  status      %s%s%s\n  last sync   %s\n  added       %s\n  include     %s\n  exclude     %s\n",
		       argv[optind], repo.type, repo.follow_rev, repo.head_commit ? repo.head_commit : "(not synced)",
		       (long long)repo.file_count, size, repo.sync_status, repo.sync_error ? ": " : "",
		       repo.sync_error ? repo.sync_error : "", when, added, repo.include_globs, repo.exclude_globs);
		printf("  mirrors     %s\n", repo.refs_policy);
		catalog_refs_each(data->catalog, repo.id, ref_to_json, refs);
		print_refs(refs);
		json_decref(refs);
	}
	catalog_repo_release(&repo);
	hub_spec_release(&spec);
	mirror_data_free(&data);
	return r;
}
