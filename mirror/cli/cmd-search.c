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
#include "hub/http.h"
#include "mirror/data.h"

static int add_cb(void *ud, const struct catalog_repo *r)
{
	json_array_append_new(ud, mirror_repo_json(r, NULL));
	return 0;
}

int cmd_search(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "mirror", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "hub", required_argument, NULL, 'H' },
		{ "type", required_argument, NULL, 't' },
		{ "limit", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *self = cli_find("search");
	struct catalog_search s = { 0 };
	int sr;
	struct mirror_data *data = NULL;
	const char *dir = NULL, *mirror = NULL;
	struct buf q;
	json_t *a = NULL;
	int c, json = 0, r = CLI_OK;
	long limit = 50;
	int64_t total = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'm': mirror = optarg; break;
		case 'j': json = 1; break;
		case 'H': s.hub = optarg; break;
		case 't': s.type = optarg; break;
		case 'n':
			limit = strtol(optarg, &end, 10);
			if (*end || limit < 1 || limit > 1000)
				return cli_usage_error(self, "--limit takes 1 to 1000");
			break;
		default:
			return cli_usage_error(self, "unknown option");
		}
	}
	if (optind >= argc)
		return cli_usage_error(self, "nothing to search for");
	if ((s.hub && strcmp(s.hub, "hf") && strcmp(s.hub, "ms")) || (s.type && strcmp(s.type, "model") && strcmp(s.type, "dataset")))
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
		char *path = xasprintf("/api/catalog/repos?q=%s&limit=%ld%s%s%s%s", eq, limit, s.hub ? "&hub=" : "",
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
			printf("(%lld matches, showing %zu; --limit for more)\n", (long long)total, json_array_size(a));
	}
out:
	json_decref(a);
	buf_release(&q);
	mirror_data_free(&data);
	return r;
}
