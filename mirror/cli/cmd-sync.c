/*
 * cmd-sync.c - `hubmirror sync [SPEC...]`: bring tracked repositories up to date (mirror/sync.c).
 *
 * One sync at a time per data directory: a second one exits with a message, or with --wait queues
 * behind the first. Safe to run from cron or a systemd timer while `serve` runs: readers see a repo's
 * new snapshot only once all its files are verified in the store.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "hub/hub.h"
#include "hub/upstream.h"
#include "mirror/data.h"
#include "mirror/sync.h"

static const char *env_first(const char *a, const char *b)
{
	const char *v = getenv(a);
	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

static json_t *report_json(const struct mirror_sync_report *rep)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "run_id", (json_int_t)rep->run_id,
			      "ok", (json_int_t)rep->ok, "failed", (json_int_t)rep->failed,
			      "files_fetched", (json_int_t)rep->files_fetched,
			      "bytes_fetched", (json_int_t)rep->bytes_fetched,
			      "upstream_requests", (json_int_t)rep->upstream_requests, "seconds", rep->seconds);
	json_t *a = json_array();

	for (size_t i = 0; i < rep->nrepos; i++) {
		const struct mirror_sync_repo_result *r = &rep->repos[i];
		json_t *ro = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:o}",
			"spec", r->spec, "outcome", r->outcome,
			"commit", r->commit ? json_string(r->commit) : json_null(),
			"files", (json_int_t)r->files, "bytes", (json_int_t)r->bytes,
			"files_fetched", (json_int_t)r->files_fetched, "bytes_fetched", (json_int_t)r->bytes_fetched,
			"skipped_unsafe", (json_int_t)r->skipped_unsafe,
			"error", r->error ? json_string(r->error) : json_null());
		if (r->refs_listed) {
			/* the second pass: only when upstream's refs were asked for in this run */
			json_t *refs = json_array();
			for (size_t k = 0; k < r->nrefs; k++) {
				const struct mirror_sync_ref_result *f = &r->refs[k];
				json_array_append_new(refs, json_pack("{s:s, s:o, s:o, s:s, s:o}", "name", f->name,
					"kind", f->kind ? json_string(f->kind) : json_null(),
					"commit", f->commit ? json_string(f->commit) : json_null(), "outcome", f->outcome,
					"error", f->error ? json_string(f->error) : json_null()));
			}
			json_object_set_new(ro, "refs", refs);
			json_object_set_new(ro, "refs_error", r->refs_error ? json_string(r->refs_error) : json_null());
			json_object_set_new(ro, "refs_dropped", json_integer((json_int_t)r->refs_dropped));
		}
		json_array_append_new(a, ro);
	}
	json_object_set_new(o, "repos", a);
	json_object_set_new(o, "torrents_made", json_integer((json_int_t)rep->torrents_made));
	return o;
}

static void print_report(const struct mirror_sync_report *rep)
{
	char b[32];

	for (size_t i = 0; i < rep->nrepos; i++) {
		const struct mirror_sync_repo_result *r = &rep->repos[i];
		cli_human_size(r->bytes_fetched, b, sizeof(b));
		if (r->error)
			printf("%-9s %s: %s\n", r->outcome, r->spec, r->error);
		else
			printf("%-9s %s @ %.12s: %lld files, fetched %lld (%s)%s\n", r->outcome, r->spec, r->commit,
			       (long long)r->files, (long long)r->files_fetched, b,
			       r->skipped_unsafe ? ", skipped unsafe paths" : "");
		if (r->refs_error)
			printf("%-9s %s: %s\n", "error", r->spec, r->refs_error);
		for (size_t k = 0; k < r->nrefs; k++) {
			const struct mirror_sync_ref_result *f = &r->refs[k];
			if (f->error || strcmp(f->outcome, "unchanged"))
				printf("%-9s %s@%s%s%.12s%s%s\n", f->outcome, r->spec, f->name, f->commit ? " @ " : "",
				       f->commit ? f->commit : "", f->error ? ": " : "", f->error ? f->error : "");
		}
		if (r->refs_dropped)
			printf("%-9s %s: %lld refs upstream no longer has\n", "dropped", r->spec, (long long)r->refs_dropped);
	}
	cli_human_size(rep->bytes_fetched, b, sizeof(b));
	printf("sync: %zu ok, %zu failed; fetched %lld files (%s) in %.1f s with %llu upstream requests\n",
	       rep->ok, rep->failed, (long long)rep->files_fetched, b, rep->seconds,
	       (unsigned long long)rep->upstream_requests);
	if (rep->torrents_made)
		printf("sync: made %lld torrents for the swarm\n", (long long)rep->torrents_made);
}

/* The tracked repos the specs name (all of them when there are none), into *repos (n of them). Says
 * why on stderr and returns -1 when one is not tracked or the catalog cannot be read. */
static int repos_to_sync(struct mirror_data *data, char **specs, int nspecs, struct catalog_repo **repos, size_t *n)
{
	*n = 0;
	if (nspecs == 0) {
		if (!catalog_repo_list(data->catalog, repos, n))
			return 0;
		fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
		return -1;
	}
	*repos = xcalloc((size_t)nspecs, sizeof(**repos));
	for (int i = 0; i < nspecs; i++) {
		struct hub_spec s;
		int e;
		hub_spec_parse(specs[i], &s);
		e = catalog_repo_get(data->catalog, hub_kind_name(s.hub), hub_type_name(s.type), s.name, &(*repos)[*n]);
		hub_spec_release(&s);
		if (e) {
			fprintf(stderr, "hubmirror: '%s' is not tracked (add it with 'hubmirror add %s')\n", specs[i],
				specs[i]);
			return -1;
		}
		(*n)++;
	}
	return 0;
}

/* --retry-delay SECONDS: the first backoff, above 0 and at most 600 (f->dest a double). */
static int take_retry_delay(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || v <= 0 || v > 600)
		return cli_usage_error(self, "--retry-delay takes seconds, above 0 and at most 600");
	*(double *)f->dest = v;
	return CLI_OK;
}

int cmd_sync(int argc, char **argv)
{
	const struct cli_command *self = cli_find("sync");
	struct mirror_sync_config cfg = { 0 };
	struct mirror_sync_report rep = { 0 };
	struct mirror_data *data = NULL;
	struct catalog_repo *repos = NULL;
	size_t n = 0;
	const char *dir = NULL;
	bool json = false, wait = false, progress = isatty(STDERR_FILENO);
	int r = CLI_OK, e;
	char *err = NULL;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir),
		CLI_STR("hf-upstream", &cfg.hf_base),
		CLI_STR("ms-upstream", &cfg.ms_base),
		CLI_BOOL("json", &json),
		CLI_BOOL("wait", &wait),
		CLI_INT("jobs", &cfg.max_parallel_files, 1, 256),
		CLI_INT("max-tries", &cfg.http.max_tries, 1, 100),
		CLI_FN("retry-delay", &cfg.http.backoff_base_s, take_retry_delay),
		CLI_BOOL("check-refs", &cfg.check_refs),
		CLI_BOOL("progress", &progress),
		CLI_NO("no-progress", &progress),
		CLI_END,
	};

	cfg.hf_base = env_first("HUBMIRROR_HF_UPSTREAM", "HF_ENDPOINT");
	cfg.ms_base = env_first("HUBMIRROR_MS_UPSTREAM", "MODELSCOPE_ENDPOINT");
	cfg.hf_token = env_first("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN");
	cfg.ms_token = env_first("MODELSCOPE_API_TOKEN", NULL);
	/* a token goes into a header (and ModelScope's cookie): a stray newline would add headers */
	if (!hub_token_valid(cfg.hf_token) || !hub_token_valid(cfg.ms_token))
		return cli_usage_error(self, "%s holds characters no token has (spaces, ';', control bytes)",
				       hub_token_valid(cfg.hf_token) ? "MODELSCOPE_API_TOKEN" : "HF_TOKEN");
	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	cfg.max_file_tries = cfg.http.max_tries; /* --max-tries bounds a file's attempts too */
	for (int i = optind; i < argc; i++) {
		struct hub_spec s;
		if (hub_spec_parse(argv[i], &s))
			return cli_usage_error(self, "'%s' is not a repository spec", argv[i]);
		e = s.revision != NULL;
		hub_spec_release(&s);
		if (e)
			return cli_usage_error(self, "'%s': sync follows the tracked revision; change it with 'hubmirror add'",
					       argv[i]);
	}
	if (cli_open_locked(dir, wait, &data))
		return CLI_FAILED;
	if (repos_to_sync(data, argv + optind, argc - optind, &repos, &n)) {
		r = CLI_FAILED;
		goto out;
	}
	cfg.progress = progress && !json;
	e = mirror_sync_run(data, repos, n, &cfg, &rep, &err);
	if (e) {
		fprintf(stderr, "hubmirror: sync: %s\n", err ? err : err_str(e));
		r = CLI_FAILED;
		goto out;
	}
	if (rep.torrents_error) {
		fprintf(stderr, "hubmirror: %s\n", rep.torrents_error);
		r = CLI_FAILED;
	}
	if (json) {
		json_t *o = report_json(&rep);
		cli_print_json(o);
		json_decref(o);
	} else {
		print_report(&rep);
	}
	if (rep.failed)
		r = CLI_FAILED;
	else if (r != CLI_FAILED)
		r = CLI_OK;
out:
	free(err);
	mirror_sync_report_release(&rep);
	catalog_repo_list_free(repos, n);
	mirror_data_free(&data);
	return r;
}
