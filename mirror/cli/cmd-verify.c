/*
 * cmd-verify.c - `hubmirror verify`: re-hash the store; quarantine what is corrupt and let the next
 * sync fetch it again.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "base/err.h"
#include "cli.h"
#include "mirror/data.h"
#include "mirror/maint.h"
#include "mirror/progress.h"

int cmd_verify(int argc, char **argv)
{
	const struct cli_command *self = cli_find("verify");
	struct mirror_data *data = NULL;
	struct mirror_verify_report rep;
	const char *dir = NULL;
	bool wait = false, json = false;
	int r, e;
	char *err = NULL;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
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
		cli_progress_start(&cp, "verify");
		e = mirror_verify(data, &rep, &mp, &err);
		cli_progress_end(&cp);
	}
	if (e) {
		fprintf(stderr, "hubmirror: verify: %s\n", err ? err : err_str(e));
		r = CLI_FAILED;
	} else {
		if (json) {
			json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "blobs_checked", (json_int_t)rep.blobs_checked,
					      "bytes_checked", (json_int_t)rep.bytes_checked, "corrupt", (json_int_t)rep.corrupt,
					      "missing", (json_int_t)rep.missing, "repos_marked", (json_int_t)rep.repos_marked);
			json_t *dmg = json_array();
			for (size_t i = 0; i < rep.ndamage; i++) {
				json_t *files = json_array();
				for (size_t k = 0; k < rep.damage[i].nuses; k++)
					json_array_append_new(files, json_string(rep.damage[i].uses[k]));
				json_array_append_new(dmg, json_pack("{s:s, s:s, s:o}", "sha256", rep.damage[i].sha256, "state",
								     rep.damage[i].missing ? "missing" : "corrupt", "files", files));
			}
			json_object_set_new(o, "damaged", dmg);
			cli_print_json(o);
			json_decref(o);
		} else {
			char b[32];
			/* what each bad content breaks: the repos and paths that hold it */
			for (size_t i = 0; i < rep.ndamage; i++) {
				const struct mirror_verify_damage *dm = &rep.damage[i];
				for (size_t k = 0; k < dm->nuses; k++)
					printf("%-9s %s (content %.12s)\n", dm->missing ? "missing" : "corrupt", dm->uses[k], dm->sha256);
				if (!dm->nuses)
					printf("%-9s content %s (no snapshot names it)\n", dm->missing ? "missing" : "corrupt", dm->sha256);
			}
			cli_human_size(rep.bytes_checked, b, sizeof(b));
			printf("verify: %lld blobs (%s) checked, %lld corrupt (quarantined), %lld missing%s\n",
			       (long long)rep.blobs_checked, b, (long long)rep.corrupt, (long long)rep.missing,
			       rep.corrupt || rep.missing ? "; run 'hubmirror sync' to fetch them again" : "");
		}
		r = rep.corrupt || rep.missing ? CLI_FAILED : CLI_OK;
	}
	mirror_verify_report_release(&rep);
	free(err);
	mirror_data_free(&data);
	return r;
}
