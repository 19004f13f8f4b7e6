/*
 * cmd-requests.c - users' requests for repositories the mirror lacks:
 *   hubmirror request [--mirror URL] [--reason TEXT] SPEC...          ask a mirror for them
 *   hubmirror requests [--data DIR | --mirror URL] [--state S] [--json]   the list
 *   hubmirror requests approve|decline [--data DIR | --mirror URL] [--note TEXT] ID...
 * Against a mirror (--mirror or $HUBMIRROR_URL) the list is its public one and deciding goes through
 * its operator API ($HUBMIRROR_ADMIN_TOKEN; approving starts a sync of the repository there); on a
 * data directory, approving tracks the repository and the next sync fetches it.
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
#include "hub/hub.h"
#include "mirror/data.h"

int cmd_request(int argc, char **argv)
{
	const struct cli_command *self = cli_find("request");
	const char *mirror = NULL, *reason = NULL;
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("mirror", &mirror, "URL", "the mirror"),
		CLI_STR("reason", &reason, "TEXT", "why (one line, at most 1000 bytes): the operator sees it"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (optind >= argc)
		return cli_usage_error(self, "no repository given");
	mirror = cli_mirror_url(mirror);
	if (!mirror)
		return cli_usage_error(self, "which mirror? --mirror URL or $HUBMIRROR_URL");
	if (cli_check_specs(self, optind, argc, argv, true, "ask for a repository, without @REVISION"))
		return CLI_USAGE;
	for (int i = optind; i < argc; i++) {
		json_t *body = json_pack("{s:s}", "spec", argv[i]), *ans;
		long status = 0;
		if (reason)
			json_object_set_new(body, "reason", json_string(reason));
		ans = cli_mirror_call(mirror, "POST", "/api/catalog/requests", body, cli_mirror_token(), &status);
		json_decref(body);
		if (status == 201 || status == 200)
			printf("asked for %s: request %lld, %s (%lld %s)\n", argv[i],
			       (long long)json_integer_value(json_object_get(ans, "id")),
			       json_string_value(json_object_get(ans, "state")),
			       (long long)json_integer_value(json_object_get(ans, "votes")),
			       json_integer_value(json_object_get(ans, "votes")) == 1 ? "ask" : "asks");
		else if (status == 409)
			printf("%s is mirrored already: hubmirror info --mirror %s %s\n", argv[i], mirror, argv[i]);
		else
			r = CLI_FAILED;
		json_decref(ans);
	}
	return r;
}

static int list_cb(void *ud, const struct catalog_request *q)
{
	json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:I}", "id", (json_int_t)q->id, "state", q->state, "requested_by",
			      q->requested_by ? q->requested_by : "", "votes", (json_int_t)q->votes, "requested_at",
			      (json_int_t)q->requested_at);
	char *spec = xasprintf("%s:%s%s", q->hub, strcmp(q->type, "dataset") ? "" : "datasets/", q->name);

	json_object_set_new(o, "spec", json_string(spec));
	json_object_set_new(o, "reason", q->reason ? json_string(q->reason) : json_null());
	json_object_set_new(o, "note", q->note ? json_string(q->note) : json_null());
	json_array_append_new(ud, o);
	free(spec);
	return 0;
}

static void print_list(json_t *reqs)
{
	json_t *q;
	size_t i;

	if (!json_array_size(reqs)) {
		printf("no requests\n");
		return;
	}
	printf("%6s  %-8s  %5s  %-16s  %-40s  %s\n", "ID", "STATE", "ASKS", "ASKED (UTC)", "SPEC", "REASON / NOTE");
	json_array_foreach(reqs, i, q) {
		char when[32];
		const char *reason = json_string_value(json_object_get(q, "reason"));
		const char *note = json_string_value(json_object_get(q, "note"));
		cli_human_time(json_integer_value(json_object_get(q, "requested_at")), when, sizeof(when));
		printf("%6lld  %-8s  %5lld  %-16s  %-40s  %s%s%s\n",
		       (long long)json_integer_value(json_object_get(q, "id")),
		       json_string_value(json_object_get(q, "state")),
		       (long long)json_integer_value(json_object_get(q, "votes")), when,
		       json_string_value(json_object_get(q, "spec")), reason ? reason : "", note ? " / " : "",
		       note ? note : "");
	}
}

/* approve|decline ID... on a data directory: approving tracks the repository. */
static int decide_local(struct mirror_data *d, bool approve, const char *note, int n, char **ids)
{
	int r = CLI_OK;

	for (int i = 0; i < n; i++) {
		struct catalog_request q;
		char *end, *spec;
		long long id = strtoll(ids[i], &end, 10);
		int e = end == ids[i] || *end || id <= 0 ? HM_ERR_NOT_FOUND : catalog_request_get(d->catalog, id, &q);
		if (e) {
			fprintf(stderr, "hubmirror: requests: %s: %s\n", ids[i],
				e == HM_ERR_NOT_FOUND ? "no such request" : catalog_errmsg(d->catalog));
			r = CLI_FAILED;
			continue;
		}
		spec = xasprintf("%s:%s%s", q.hub, strcmp(q.type, "dataset") ? "" : "datasets/", q.name);
		if (strcmp(q.state, "pending")) {
			fprintf(stderr, "hubmirror: requests: %s (%s) was %s already\n", ids[i], spec, q.state);
			r = CLI_FAILED;
		} else if ((approve && catalog_repo_add(d->catalog, q.hub, q.type, q.name,
							hub_default_revision(strcmp(q.hub, "ms") ? HUB_HF : HUB_MS),
							NULL, NULL, NULL, NULL)) ||
			   catalog_request_decide(d->catalog, id, approve, "cli", note)) {
			fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(d->catalog));
			r = CLI_FAILED;
		} else {
			printf("request %lld: %s %s%s\n", id, approve ? "approved, tracking" : "declined", spec,
			       approve ? " (the next sync fetches it; or now: hubmirror sync SPEC)" : "");
		}
		free(spec);
		catalog_request_release(&q);
	}
	return r;
}

static int decide_remote(const char *mirror, bool approve, const char *note, int n, char **ids)
{
	int r = CLI_OK;

	for (int i = 0; i < n; i++) {
		json_t *body = json_pack("{s:s}", "decision", approve ? "approve" : "decline"), *ans;
		char *path = xasprintf("/api/admin/requests/%s", ids[i]);
		long status = 0;
		if (note)
			json_object_set_new(body, "note", json_string(note));
		ans = strspn(ids[i], "0123456789") == strlen(ids[i]) && *ids[i]
			? cli_admin_call(mirror, "POST", path, body, &status) : NULL;
		if (status == 200)
			printf("request %s: %s %s%s\n", ids[i], approve ? "approved, tracking" : "declined",
			       json_string_value(json_object_get(ans, "spec")),
			       !approve                                             ? ""
			       : json_is_true(json_object_get(ans, "sync_started")) ? " (syncing it now)"
										    : " (the next sync fetches it)");
		else {
			if (!status && ans == NULL && strspn(ids[i], "0123456789") != strlen(ids[i]))
				fprintf(stderr, "hubmirror: requests: '%s' is not a request id\n", ids[i]);
			r = CLI_FAILED;
		}
		json_decref(ans);
		json_decref(body);
		free(path);
	}
	return r;
}

int cmd_requests(int argc, char **argv)
{
	const struct cli_command *self = cli_find("requests");
	const char *dir = NULL, *mirror = NULL, *state = NULL, *note = NULL, *verb = NULL;
	bool json = false;
	struct mirror_data *data = NULL;
	int r = CLI_OK;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_STR("mirror", &mirror, "URL", "a running mirror instead (or $HUBMIRROR_URL)"),
		CLI_STR("state", &state, "S", "only the requests in state S"),
		CLI_STR("note", &note, "TEXT", "the operator's word on the decision"),
		CLI_BOOL("json", &json, "print JSON"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (optind < argc) {
		verb = argv[optind++];
		if (strcmp(verb, "approve") && strcmp(verb, "decline"))
			return cli_usage_error(self, "'%s': the verbs are approve and decline", verb);
		if (optind >= argc)
			return cli_usage_error(self, "%s which request? (the ids 'hubmirror requests' lists)", verb);
	}
	if (state && strcmp(state, "pending") && strcmp(state, "approved") && strcmp(state, "declined"))
		return cli_usage_error(self, "--state is pending, approved or declined");
	mirror = dir ? NULL : cli_mirror_url(mirror);
	if (verb && mirror)
		return decide_remote(mirror, !strcmp(verb, "approve"), note, argc - optind, argv + optind);
	if (mirror) {
		char *path = xasprintf("/api/catalog/requests%s%s", state ? "?state=" : "", state ? state : "");
		json_t *ans = cli_mirror_get(mirror, path);
		free(path);
		if (!ans)
			return CLI_FAILED;
		if (json)
			cli_print_json(ans);
		else
			print_list(json_object_get(ans, "requests"));
		json_decref(ans);
		return CLI_OK;
	}
	if (cli_open_data(dir, &data))
		return CLI_FAILED;
	if (verb) {
		r = decide_local(data, !strcmp(verb, "approve"), note, argc - optind, argv + optind);
	} else {
		json_t *a = json_array();
		if (catalog_requests_each(data->catalog, state, 0, list_cb, a)) {
			fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
			r = CLI_FAILED;
		} else if (json) {
			json_t *o = json_pack("{s:O}", "requests", a);
			cli_print_json(o);
			json_decref(o);
		} else {
			print_list(a);
		}
		json_decref(a);
	}
	mirror_data_free(&data);
	return r;
}
