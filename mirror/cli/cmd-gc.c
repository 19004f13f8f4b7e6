/*
 * cmd-gc.c - `hubmirror gc`: drop snapshots nothing needs and the blobs only they referenced.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <jansson.h>

#include "base/err.h"
#include "cli.h"
#include "mirror/data.h"
#include "mirror/maint.h"
#include "mirror/progress.h"

/* The report as JSON (--json). */
static void print_json(const struct mirror_gc_report *rep, int64_t staged, bool dry)
{
	json_t *o = json_pack("{s:b, s:I, s:I, s:I, s:I, s:I}", "dry_run", dry, "snapshots_dropped",
			      (json_int_t)rep->snapshots_dropped, "blobs_removed", (json_int_t)rep->blobs_removed,
			      "bytes_freed", (json_int_t)rep->bytes_freed, "orphans_removed",
			      (json_int_t)rep->orphans_removed, "partials_removed",
			      (json_int_t)rep->partials_removed);
	json_object_set_new(o, "git_repositories_removed", json_integer(rep->git_removed));
	json_object_set_new(o, "uploads_kept", json_integer(rep->uploads_kept));
	json_object_set_new(o, "uploads_kept_until", json_integer(rep->uploads_until));
	json_object_set_new(o, "writes_kept", json_integer(rep->writes_kept));
	json_object_set_new(o, "restored", json_integer(rep->restored));
	json_object_set_new(o, "bucket_uploads_aborted", json_integer(rep->bucket_uploads_aborted));
	json_object_set_new(o, "xet_staged_removed", json_integer(staged));
	json_object_set_new(o, "bucket_kept_shared", json_integer(rep->bucket_kept_shared));
	json_object_set_new(o, "bucket_kept_young", json_integer(rep->bucket_kept_young));
	json_object_set_new(o, "bucket_mirrors", json_integer(rep->bucket_mirrors));
	json_object_set_new(o, "bucket_trash_restored", json_integer(rep->bucket_trash_restored));
	json_object_set_new(o, "bucket_trash_removed", json_integer(rep->bucket_trash_removed));
	json_object_set_new(o, "bucket_trash_kept", json_integer(rep->bucket_trash_kept));
	cli_print_json(o);
	json_decref(o);
}

/* The human report's lines of a store in a bucket. */
static void print_bucket(const struct mirror_gc_report *rep, int64_t staged, int xet_h, bool dry)
{
	if (rep->bucket_uploads_aborted)
		printf("gc: %lld unfinished %s to the bucket aborted\n", (long long)rep->bucket_uploads_aborted,
		       cli_plural(rep->bucket_uploads_aborted, "upload", "uploads"));
	if (staged)
		printf("gc: %lld %s of Xet uploads past %d hours in the bucket's staging area %s\n",
		       (long long)staged, cli_plural(staged, "object", "objects"), xet_h, dry ? "would go" : "removed");
	if (rep->bucket_kept_shared)
		printf("gc: kept %lld %s other mirrors on the bucket name\n", (long long)rep->bucket_kept_shared,
		       cli_plural(rep->bucket_kept_shared, "content", "contents"));
	if (rep->bucket_kept_young)
		printf("gc: kept %lld %s the bucket got within the grace (--grace), or being put\n",
		       (long long)rep->bucket_kept_young, cli_plural(rep->bucket_kept_young, "content", "contents"));
	if (rep->bucket_trash_restored)
		printf("gc: put back %lld %s from the bucket's trash (a mirror names them)\n",
		       (long long)rep->bucket_trash_restored,
		       cli_plural(rep->bucket_trash_restored, "content", "contents"));
	if (rep->bucket_trash_removed)
		printf("gc: emptied %lld %s of the bucket's trash\n", (long long)rep->bucket_trash_removed,
		       cli_plural(rep->bucket_trash_removed, "object", "objects"));
}

int cmd_gc(int argc, char **argv)
{
	const struct cli_command *self = cli_find("gc");
	struct mirror_data *data = NULL;
	struct mirror_gc_report rep;
	const char *dir = NULL;
	int keep = 2, age_h = 168, grace_h = (int)(MIRROR_GC_GRACE / 3600), r = CLI_OK, e;
	int xet_h = (int)(MIRROR_GC_XET_STAGED_AGE / 3600);
	int64_t staged = 0;
	bool dry = false, wait = false, json = false;
	char *err = NULL;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_INT("keep", &keep, 1, 1000, "N",
			"recent snapshots kept per repository besides ref targets (default 2)"),
		CLI_INT_TAKES("partial-age", &age_h, 0, INT_MAX, "hours (0 or more)", "HOURS",
			      "delete partial downloads older than this (default 168)"),
		CLI_INT_TAKES("grace", &grace_h, 0, INT_MAX, "hours (0 or more)", "HOURS",
			      "with a bucket: keep what it got less than this before the\n"
			      "earliest mirror's live set (default 48)"),
		CLI_INT_TAKES("xet-upload-age", &xet_h, 0, INT_MAX, "hours (0 or more)", "HOURS",
			      "with a bucket: delete the Xet uploads' xorbs in its staging\n"
			      "area written longer ago than this (default 24)"),
		CLI_BOOL("dry-run", &dry, "report what would go, change nothing"),
		CLI_BOOL("wait", &wait, "wait for a running sync instead of failing"),
		CLI_BOOL("json", &json, "print the report as JSON"),
		CLI_END,
	};

	if (cli_parse_flags_only(self, argc, argv, flags))
		return CLI_USAGE;
	if (cli_open_locked(dir, wait, &data))
		return CLI_FAILED;
	{
		struct cli_progress cp;
		struct mirror_progress mp = { cli_progress_fn, &cp };
		cli_progress_start(&cp, "gc: the store's walk");
		e = mirror_gc(data, keep, (int64_t)age_h * 3600, (int64_t)grace_h * 3600, dry, &rep, &mp, &err);
		cli_progress_end(&cp);
		if (!e)
			e = mirror_gc_xet_staged(data, (int64_t)xet_h * 3600, dry, &staged, &err);
	}
	if (e) {
		fprintf(stderr, "hubmirror: gc: %s\n", err ? err : err_str(e));
		r = CLI_FAILED;
	} else if (json) {
		print_json(&rep, staged, dry);
	} else {
		char b[32];
		cli_human_size(rep.bytes_freed, b, sizeof(b));
		printf("gc%s: %lld %s, %lld %s (%s), %lld orphan %s, %lld stale partial %s %s\n",
		       dry ? " (dry run)" : "", (long long)rep.snapshots_dropped,
		       cli_plural(rep.snapshots_dropped, "snapshot", "snapshots"), (long long)rep.blobs_removed,
		       cli_plural(rep.blobs_removed, "blob", "blobs"), b, (long long)rep.orphans_removed,
		       cli_plural(rep.orphans_removed, "file", "files"), (long long)rep.partials_removed,
		       cli_plural(rep.partials_removed, "file", "files"), dry ? "would go" : "removed");
		if (rep.git_removed)
			printf("gc: %lld git %s of repos no longer tracked removed\n", (long long)rep.git_removed,
			       cli_plural(rep.git_removed, "repository", "repositories"));
		if (rep.uploads_kept) {
			char when[32];
			time_t t = (time_t)rep.uploads_until;
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&t));
			printf("gc: kept %lld uploaded %s that no commit names yet: promised to their uploaders "
			       "for 24 hours (the last until %s)\n", (long long)rep.uploads_kept,
			       cli_plural(rep.uploads_kept, "content", "contents"), when);
		}
		print_bucket(&rep, staged, xet_h, dry);
		if (rep.writes_kept)
			printf("gc: kept %lld %s of commits or pushes being made\n", (long long)rep.writes_kept,
			       cli_plural(rep.writes_kept, "content", "contents"));
		if (rep.restored)
			printf("gc: put back %lld %s a writer claimed while gc took them\n", (long long)rep.restored,
			       cli_plural(rep.restored, "content", "contents"));
	}
	free(err);
	mirror_data_free(&data);
	return r;
}
