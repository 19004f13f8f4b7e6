/*
 * cmd-search.c - `hubmirror search QUERY...`: full-text search of the catalog (names, authors, tags,
 * task, library, license, card), ranked, locally or on a mirror.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "mirror/repojson.h"
#include "hub/http/http.h"
#include "mirror/data.h"

static int add_cb(void *ud, const struct catalog_repo *r)
{
	json_array_append_new(ud, mirror_repo_json(r, NULL));
	return 0;
}

int cmd_search(int argc, char **argv)
{
	const struct cli_command *self = cli_find("search");
	struct catalog_search s = { 0 };
	int sr;
	struct mirror_data *data = NULL;
	const char *dir = NULL, *mirror = NULL;
	struct buf q;
	json_t *a = NULL;
	bool json = false;
	int limit = 50, r = CLI_OK;
	int64_t total = 0;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR",
			"search the local catalog (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_STR("mirror", &mirror, "URL",
			"search a running mirror (default $HUBMIRROR_URL when --data is not given)"),
		CLI_STR("hub", &s.hub, "hf|ms", "narrow to one hub"),
		CLI_STR("type", &s.type, "model|dataset", "narrow to one kind"),
		CLI_INT("limit", &limit, 1, 1000, "N", "at most N results (default 50)"),
		CLI_BOOL("json", &json, "print a JSON array"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (optind >= argc)
		return cli_usage_error(self, "nothing to search for");
	if ((s.hub && strcmp(s.hub, "hf") && strcmp(s.hub, "ms")) ||
	    (s.type && strcmp(s.type, "model") && strcmp(s.type, "dataset")))
		return cli_usage_error(self, "--hub takes hf or ms, --type model or dataset");
	buf_init(&q);
	for (int i = optind; i < argc; i++) {
		if (i > optind)
			buf_addch(&q, ' ');
		buf_adds(&q, argv[i]);
	}
	mirror = dir ? NULL : cli_mirror_url(mirror);
	if (mirror) {
		char *eq = hub_url_escape(q.data, false);
		char *path = xasprintf("/api/catalog/repos?q=%s&limit=%d%s%s%s%s", eq, limit, s.hub ? "&hub=" : "",
				       s.hub ? s.hub : "", s.type ? "&type=" : "", s.type ? s.type : "");
		json_t *page = cli_mirror_get(mirror, path);
		free(eq);
		free(path);
		if (!page) {
			r = CLI_FAILED;
			goto out;
		}
		a = json_incref(json_object_get(page, "repos"));
		total = json_integer_value(json_object_get(page, "total"));
		json_decref(page);
	} else {
		if (cli_open_data(dir, &data)) {
			r = CLI_FAILED;
			goto out;
		}
		s.q = q.data;
		s.gated = -1;
		s.min_size = s.max_size = -1;
		s.limit = (size_t)limit;
		a = json_array();
		if ((sr = catalog_search(data->catalog, &s, add_cb, a, &total))) {
			if (sr == HM_ERR_USAGE && catalog_search_refusal(&s))
				fprintf(stderr, "hubmirror: %s\n", catalog_search_refusal(&s));
			else
				fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
			r = CLI_FAILED;
			goto out;
		}
	}
	if (json) {
		cli_print_json(a);
	} else if (!json_array_size(a)) {
		printf("nothing matches '%s'\n", q.data);
	} else {
		cli_print_repo_table(a);
		if (total > (int64_t)json_array_size(a))
			printf("(%lld %s, showing %zu; --limit for more)\n", (long long)total,
			       cli_plural(total, "match", "matches"), json_array_size(a));
	}
out:
	json_decref(a);
	buf_release(&q);
	mirror_data_free(&data);
	return r;
}
