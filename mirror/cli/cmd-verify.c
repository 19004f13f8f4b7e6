/*
 * cmd-verify.c - `hubmirror verify`: re-hash the store; quarantine what is corrupt and let the next
 * sync fetch it again. A content only local repositories name has no upstream: it is lost, and the
 * report says so with the commits that name it instead of advising a sync.
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
#include "mirror/data.h"
#include "mirror/maint.h"
#include "mirror/progress.h"

/* What a bad content means for the local repos that name it. */
struct lost {
	bool mirrored;          /* a mirrored repo names it too: a sync fetches it again */
	json_t *commits;        /* "hf:org/name@commit" of each local commit that names it */
};

static int lost_commit(void *ud, const char *hub, const char *type, const char *name, const char *commit)
{
	struct lost *l = ud;

	json_array_append_new(l->commits, json_sprintf("%s:%s%s@%s", hub, strcmp(type, "dataset") ? "" : "datasets/",
						       name, commit));
	return 0;
}

/* Is content sha256 lost for good (local repos name it, no mirrored one does)? l->commits then lists
 * them; a catalog that cannot tell counts as not lost (the usual advice stands). */
static bool lost_for_good(struct mirror_data *d, const char *sha256, struct lost *l)
{
	l->mirrored = false;
	l->commits = json_array();
	if (catalog_local_naming(d->catalog, sha256, &l->mirrored, lost_commit, l)) {
		json_array_clear(l->commits);
		return false;
	}
	return !l->mirrored && json_array_size(l->commits) > 0;
}

/* The lost content's line: the local commits that name it, ten at most. */
static void print_lost(const char *sha256, const struct lost *l)
{
	size_t i, n = json_array_size(l->commits);
	json_t *c;

	printf("lost      content %.12s: no upstream has it (only local repositories name it); the commits that "
	       "name it:", sha256);
	json_array_foreach(l->commits, i, c) {
		if (i == 10) {
			printf(" and %zu more", n - 10);
			break;
		}
		printf("%s %s", i ? "," : "", json_string_value(c));
	}
	printf("\n");
}

static json_t *xet_refused_json(const struct mirror_verify_report *rep)
{
	json_t *a = json_array();

	for (size_t i = 0; i < rep->nxet_refused; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "sha256", rep->xet_refused[i].sha256, "stated",
						   rep->xet_refused[i].stated, "ours", rep->xet_refused[i].ours));
	return a;
}

/* The Xet identities verify computed, and those upstream names otherwise. */
static void print_xet(const struct mirror_verify_report *rep)
{
	for (size_t i = 0; i < rep->nxet_refused; i++)
		printf("xet-hash  content %.12s: upstream states Xet hash %s, its bytes make %s: not offered through "
		       "Xet\n", rep->xet_refused[i].sha256, rep->xet_refused[i].stated, rep->xet_refused[i].ours);
	if (rep->xet_computed || rep->nxet_refused)
		printf("verify: %lld Xet %s computed, %zu refused (upstream states another Xet hash)\n",
		       (long long)rep->xet_computed, cli_plural(rep->xet_computed, "identity", "identities"),
		       rep->nxet_refused);
}

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
		CLI_STORE,
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
		size_t nlost = 0;
		struct lost *lost = xcalloc(rep.ndamage + 1, sizeof(*lost));
		bool *is_lost = xcalloc(rep.ndamage + 1, sizeof(*is_lost));
		for (size_t i = 0; i < rep.ndamage; i++)
			nlost += (is_lost[i] = lost_for_good(data, rep.damage[i].sha256, &lost[i]));
		if (json) {
			json_t *o =
				json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "blobs_checked",
					  (json_int_t)rep.blobs_checked, "bytes_checked", (json_int_t)rep.bytes_checked,
					  "corrupt", (json_int_t)rep.corrupt, "missing", (json_int_t)rep.missing,
					  "repos_marked", (json_int_t)rep.repos_marked, "lost", (json_int_t)nlost);
			json_t *dmg = json_array();
			for (size_t i = 0; i < rep.ndamage; i++) {
				json_t *files = json_array();
				for (size_t k = 0; k < rep.damage[i].nuses; k++)
					json_array_append_new(files, json_string(rep.damage[i].uses[k]));
				json_array_append_new(
					dmg, json_pack("{s:s, s:s, s:o, s:b, s:O}", "sha256", rep.damage[i].sha256,
						       "state", rep.damage[i].missing ? "missing" : "corrupt", "files",
						       files, "lost", is_lost[i], "local_commits", lost[i].commits));
			}
			json_object_set_new(o, "damaged", dmg);
			json_object_set_new(o, "xet_computed", json_integer(rep.xet_computed));
			json_object_set_new(o, "xet_refused", xet_refused_json(&rep));
			cli_print_json(o);
			json_decref(o);
		} else {
			char b[32];
			/* what each bad content breaks: the repos and paths that hold it */
			for (size_t i = 0; i < rep.ndamage; i++) {
				const struct mirror_verify_damage *dm = &rep.damage[i];
				for (size_t k = 0; k < dm->nuses; k++)
					printf("%-9s %s (content %.12s)\n", dm->missing ? "missing" : "corrupt",
					       dm->uses[k], dm->sha256);
				if (!dm->nuses)
					printf("%-9s content %s (no snapshot names it)\n",
					       dm->missing ? "missing" : "corrupt", dm->sha256);
				if (is_lost[i])
					print_lost(dm->sha256, &lost[i]);
			}
			print_xet(&rep);
			cli_human_size(rep.bytes_checked, b, sizeof(b));
			printf("verify: %lld %s (%s) checked, %lld corrupt (quarantined), %lld missing%s",
			       (long long)rep.blobs_checked, cli_plural(rep.blobs_checked, "blob", "blobs"), b,
			       (long long)rep.corrupt, (long long)rep.missing,
			       (size_t)(rep.corrupt + rep.missing) > nlost
				       ? "; run 'hubmirror sync' to fetch them again"
				       : "");
			if (nlost)
				printf("; %zu lost: only local repositories name %s and no sync brings %s back; the "
				       "same bytes "
				       "uploaded again (in any commit) make every commit that names %s whole again",
				       nlost, nlost == 1 ? "it" : "them", nlost == 1 ? "it" : "them",
				       nlost == 1 ? "it" : "them");
			printf("\n");
		}
		for (size_t i = 0; i < rep.ndamage; i++)
			json_decref(lost[i].commits);
		free(lost);
		free(is_lost);
		r = rep.corrupt || rep.missing ? CLI_FAILED : CLI_OK;
	}
	mirror_verify_report_release(&rep);
	free(err);
	mirror_data_free(&data);
	return r;
}
