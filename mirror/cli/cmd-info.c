/*
 * cmd-info.c - `hubmirror info [--data DIR | --mirror URL] [--json] [--files] SPEC[@REV]`: one tracked
 * repository in detail; with --files, the files of its followed snapshot (or of REV: a ref it mirrors
 * or a commit it holds) with size and sha256.
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
#include "hub/http/http.h"
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

/* "3 (pinned: 0123456789ab)": the snapshots the mirror holds, of the JSON array [{commit, pinned}]. */
static void print_snapshots(json_t *snaps)
{
	json_t *v;
	size_t i, pinned = 0;

	printf("  snapshots   %zu", json_array_size(snaps));
	json_array_foreach(snaps, i, v) if (json_is_true(json_object_get(v, "pinned")))
		printf("%s%.12s", pinned++ ? ", " : " (pinned: ", json_string_value(json_object_get(v, "commit")));
	printf("%s\n", pinned ? ")" : "");
}

/* The file table: size, sha256, path; then the count. */
static void print_files(json_t *files, const char *commit)
{
	json_t *f;
	size_t i;
	int64_t total = 0;
	char size[32];

	printf("files of %s:\n", commit ? commit : "(not synced)");
	json_array_foreach(files, i, f) {
		total += json_integer_value(json_object_get(f, "size"));
		printf("%14lld  %s  %s\n", (long long)json_integer_value(json_object_get(f, "size")),
		       json_string_value(json_object_get(f, "sha256")), json_string_value(json_object_get(f, "path")));
	}
	cli_human_size(total, size, sizeof(size));
	printf("%zu %s, %s\n", json_array_size(files), cli_plural((long long)json_array_size(files), "file", "files"),
	       size);
}

static int file_to_json(void *ud, const struct catalog_entry *e)
{
	json_t *o = json_pack("{s:s, s:I, s:s, s:b}", "path", e->path, "size", (json_int_t)e->size, "sha256", e->sha256,
			      "lfs", e->lfs_oid[0] != '\0');
	json_object_set_new(o, "git_oid", e->git_oid[0] ? json_string(e->git_oid) : json_null());
	json_array_append_new(ud, o);
	return 0;
}

/* Every file of SPEC at its revision (NULL: the followed one) from a mirror's catalog API, page by
 * page; commit (41 bytes) gets the snapshot's commit ("" when never synced). */
static json_t *mirror_files(const char *mirror, const struct hub_spec *spec, char *commit)
{
	json_t *all = json_array();
	char *cursor = NULL;

	for (;;) {
		char *rev = spec->revision ? hub_url_escape(spec->revision, false) : NULL;
		char *cur = cursor ? hub_url_escape(cursor, false) : NULL;
		char *path = xasprintf("/api/catalog/repos/%s/%s/%s/files?recursive=1&limit=1000%s%s%s%s",
				       hub_kind_name(spec->hub), hub_type_name(spec->type), spec->name,
				       rev ? "&rev=" : "", rev ? rev : "", cur ? "&cursor=" : "", cur ? cur : "");
		json_t *page = cli_mirror_get(mirror, path), *e;
		size_t i;

		free(rev);
		free(cur);
		free(path);
		free(cursor);
		cursor = NULL;
		if (!page) {
			json_decref(all);
			return NULL;
		}
		json_array_foreach(json_object_get(page, "entries"), i, e)
			json_array_append(all, e);
		if (json_is_string(json_object_get(page, "commit")))
			snprintf(commit, 41, "%s", json_string_value(json_object_get(page, "commit")));
		if (json_is_string(json_object_get(page, "next_cursor")))
			cursor = xstrdup(json_string_value(json_object_get(page, "next_cursor")));
		json_decref(page);
		if (!cursor)
			return all;
	}
}

/* The repository's lines from a mirror's catalog API answer o: what it is, where it stands, how to
 * use it, its refs and snapshots. */
static void print_remote_repo(json_t *o)
{
	char size[32], when[32];

	cli_human_size(json_integer_value(json_object_get(o, "size")), size, sizeof(size));
	cli_human_time(json_integer_value(json_object_get(o, "last_sync_at")), when, sizeof(when));
	printf("%s\n  type        %s\n  revision    %s\n  commit      %s\n  files       %lld (%s)\n"
	       "  status      %s\n  last sync   %s\n  use         %s\n  mount       %s\n",
	       json_string_value(json_object_get(o, "spec")), json_string_value(json_object_get(o, "type")),
	       json_string_value(json_object_get(o, "revision")),
	       json_is_string(json_object_get(o, "commit")) ? json_string_value(json_object_get(o, "commit"))
							    : "(not synced)",
	       (long long)json_integer_value(json_object_get(o, "files")), size,
	       json_string_value(json_object_get(o, "sync_status")), when,
	       json_string_value(json_object_get(o, "endpoint_env")),
	       json_string_value(json_object_get(o, "mount_command")));
	if (json_is_string(json_object_get(o, "upstream_name")))
		printf("  upstream    renamed to %s (both names work here)\n",
		       json_string_value(json_object_get(o, "upstream_name")));
	print_refs(json_object_get(o, "refs"));
	print_snapshots(json_object_get(o, "snapshots"));
}

/* info --mirror: the repository from a mirror's catalog API (with files, its files too), printed or
 * as JSON. Returns the command's exit code. */
static int info_remote(const char *mirror, const struct hub_spec *spec, bool json, bool files)
{
	char *path = xasprintf("/api/catalog/repos/%s/%s/%s", hub_kind_name(spec->hub), hub_type_name(spec->type),
			       spec->name);
	json_t *o = cli_mirror_get(mirror, path), *fl = NULL;
	char commit[41] = "";

	free(path);
	if (o && files && !(fl = mirror_files(mirror, spec, commit))) {
		json_decref(o);
		o = NULL;
	}
	if (!o)
		return CLI_FAILED;
	if (fl && json) {
		json_object_set_new(o, "file_list", fl);
		fl = NULL;
	}
	if (json)
		cli_print_json(o);
	else
		print_remote_repo(o);
	if (fl)
		print_files(fl, commit[0] ? commit : NULL);
	json_decref(fl);
	json_decref(o);
	return CLI_OK;
}

/* The files of repo's followed snapshot, or of the revision named (arg: the spec as typed, for the
 * messages), as a JSON array in *out and the snapshot in *snap (id 0: tracked, never synced, no files).
 * Returns the command's exit code, having said what went wrong. */
static int local_files(struct mirror_data *data, const struct catalog_repo *repo, const char *arg,
		       const char *revision, struct catalog_snapshot *snap, json_t **out)
{
	struct catalog_repo r2 = { 0 };
	struct catalog_snapshot sn = { 0 };
	bool found = false;
	json_t *fl = json_array();
	int r = CLI_FAILED;
	int fe = catalog_resolve(data->catalog, repo->hub, repo->type, repo->name, revision, &r2, &sn, &found);

	if (found)
		catalog_repo_release(&r2);
	if (fe == HM_ERR_NOT_FOUND && revision) {
		fprintf(stderr, "hubmirror: %s: no revision '%s' here (see the refs 'hubmirror info' lists)\n", arg,
			revision);
		goto out;
	}
	if (fe == HM_ERR_NOT_FOUND)
		sn.id = 0; /* tracked, never synced: no files */
	else if (fe || catalog_snapshot_walk(data->catalog, sn.id, NULL, NULL, 0, file_to_json, fl)) {
		fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
		goto out;
	}
	*snap = sn;
	*out = fl;
	fl = NULL;
	r = CLI_OK;
out:
	json_decref(fl);
	return r;
}

/* The repository's lines from the local catalog (arg: the spec as typed): what it is, where it stands,
 * what it follows and mirrors, its refs. */
static void print_local_repo(struct mirror_data *data, const struct catalog_repo *repo, const char *arg)
{
	char size[32], when[32], added[32];
	json_t *refs;

	cli_human_size(repo->total_size, size, sizeof(size));
	cli_human_time(repo->last_sync_at, when, sizeof(when));
	cli_human_time(repo->added_at, added, sizeof(added));
	printf("%s\n  type        %s\n  revision    %s\n  commit      %s\n  files       %lld (%s)\n"
	       "  status      %s%s%s\n  last sync   %s\n  added       %s\n  include     %s\n  exclude     %s\n",
	       arg, repo->type, repo->follow_rev, repo->head_commit ? repo->head_commit : "(not synced)",
	       (long long)repo->file_count, size, repo->sync_status, repo->sync_error ? ": " : "",
	       repo->sync_error ? repo->sync_error : "", when, added, repo->include_globs, repo->exclude_globs);
	if (repo->upstream_name)
		printf("  upstream    renamed to %s (both names work here)\n", repo->upstream_name);
	printf("  mirrors     %s\n", repo->refs_policy);
	refs = mirror_refs_json(data->catalog, repo->id);
	print_refs(refs);
	json_decref(refs);
}

int cmd_info(int argc, char **argv)
{
	const struct cli_command *self = cli_find("info");
	const char *mirror = NULL;
	struct mirror_data *data = NULL;
	struct catalog_repo repo = { 0 };
	struct catalog_snapshot snap = { 0 };
	json_t *fl = NULL, *snaps = NULL;
	struct hub_spec spec;
	const char *dir = NULL;
	bool json = false, files = false;
	int r = CLI_OK, e;
	const struct cli_flag flags[] = {
		CLI_BOOL("files", &files,
			 "also list its files (size, sha256, path): of the followed snapshot, or of REV\n"
			 "(a ref or commit the mirror holds)"),
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_STR("mirror", &mirror, "URL",
			"ask a running mirror instead (default $HUBMIRROR_URL when --data is not given);\n"
			"also prints the lines to use it (endpoint and mount command)"),
		CLI_BOOL("json", &json, "print a JSON object (the same fields as one entry of `ls --json`)"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (argc - optind != 1)
		return cli_usage_error(self, "expected one repository");
	if (hub_spec_parse(argv[optind], &spec))
		return cli_spec_error(self, NULL, argv[optind]);
	if (spec.revision && !files) {
		hub_spec_release(&spec);
		return cli_usage_error(self, "'%s': a revision goes with --files (info shows the repository)",
				       argv[optind]);
	}
	mirror = dir ? NULL : cli_mirror_url(mirror);
	if (mirror) {
		r = info_remote(mirror, &spec, json, files);
		hub_spec_release(&spec);
		return r;
	}
	if (cli_open_data(dir, &data)) {
		hub_spec_release(&spec);
		return CLI_FAILED;
	}
	e = catalog_repo_get(data->catalog, hub_kind_name(spec.hub), hub_type_name(spec.type), spec.name, &repo);
	if (e) {
		r = cli_repo_error(data, argv[optind], e);
		goto out;
	}
	if (files) {
		r = local_files(data, &repo, argv[optind], spec.revision, &snap, &fl);
		if (r)
			goto out;
	}
	snaps = mirror_snapshots_json(data->catalog, repo.id);
	if (!snaps) {
		r = cli_repo_error(data, argv[optind], HM_ERR_SQLITE);
		goto out;
	}
	if (json) {
		json_t *o = mirror_repo_json(&repo, NULL);
		json_object_set(o, "snapshots", snaps);
		if (fl)
			json_object_set_new(o, "file_list", json_incref(fl));
		cli_print_json(o);
		json_decref(o);
	} else {
		print_local_repo(data, &repo, argv[optind]);
		print_snapshots(snaps);
		if (fl)
			print_files(fl, snap.id ? snap.commit : NULL);
	}
out:
	json_decref(fl);
	json_decref(snaps);
	catalog_repo_release(&repo);
	hub_spec_release(&spec);
	mirror_data_free(&data);
	return r;
}
