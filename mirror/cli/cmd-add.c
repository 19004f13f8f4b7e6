/*
 * cmd-add.c - `hubmirror add`: track repositories in the local catalog.
 *
 *   hubmirror add [--data DIR] [--revision REV] [--include GLOB]... [--exclude GLOB]... [--refs WHICH] SPEC...
 *   hubmirror add [--data DIR] --from FILE
 *
 * FILE holds one SPEC per line with the same options after it, quoted as on a command line or not
 * (`hf:org/x --include '*.json'` and `hf:org/x --include *.json` are the same: nothing is expanded);
 * '#' starts a comment. Everything is checked
 * before anything is written, and all lines are added in one transaction: a bad line adds nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/err.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "hub/hub.h"
#include "hub/select.h"
#include "mirror/data.h"

struct add_item {
	struct hub_spec spec;   /* spec.revision: the revision to follow */
	char *include;          /* JSON array text */
	char *exclude;
	char *options;          /* JSON object text */
	char *refs;             /* the refs policy: tags, default, all, or a JSON array of names */
};

struct add_opts {
	const char *where;      /* "" on the command line, "FILE:LINE: " in a list file: starts messages */
	const char *data;
	const char *from;
	const char *mirror;     /* --mirror URL: through its operator API, not a local catalog */
	const char *revision;
	json_t *include;
	json_t *exclude;
	bool prefer_safetensors;
	bool open;
	bool preheat;
	const char *refs_word;  /* tags, default or all */
	json_t *refs_names;     /* or names */
};

/* --data and --from (f->dest the struct add_opts): on the command line, not in a list file. */
static int take_global(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	struct add_opts *o = f->dest;

	if (*o->where)
		return cli_usage_error(NULL, "%s--%s is not allowed in a list file", o->where, f->name);
	if (!strcmp(f->name, "data"))
		o->data = arg;
	else if (!strcmp(f->name, "mirror"))
		o->mirror = arg;
	else
		o->from = arg;
	return CLI_OK;
}

/* --include and --exclude (f->dest the struct add_opts): a glob more for their list. */
static int take_glob(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	struct add_opts *o = f->dest;

	if (hub_glob_check(arg))
		return cli_usage_error(self, "%sbad glob '%s'", o->where, arg);
	json_array_append_new(!strcmp(f->name, "include") ? o->include : o->exclude, json_string(arg));
	return CLI_OK;
}

/* --refs (f->dest the struct add_opts): a word, or names (comma-separated, repeatable). */
static int take_refs(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	struct add_opts *o = f->dest;
	char **list;

	if (!strcmp(arg, "tags") || !strcmp(arg, "default") || !strcmp(arg, "all")) {
		if (json_array_size(o->refs_names))
			return cli_usage_error(self, "%s--refs %s cannot go with names", o->where, arg);
		o->refs_word = !strcmp(arg, "tags") ? "tags" : !strcmp(arg, "all") ? "all" : "default";
		return CLI_OK;
	}
	if (o->refs_word)
		return cli_usage_error(self, "%s--refs %s cannot go with names", o->where, o->refs_word);
	list = str_split(arg, ",", NULL);
	for (char **p = list; *p; p++) {
		if (hub_check_revision(*p) || !strcmp(*p, "tags") || !strcmp(*p, "default") || !strcmp(*p, "all")) {
			int r = cli_usage_error(self, "%sbad ref name '%s' in --refs", o->where, *p);
			str_split_free(list);
			return r;
		}
		json_array_append_new(o->refs_names, json_string(*p));
	}
	str_split_free(list);
	if (!json_array_size(o->refs_names))
		return cli_usage_error(self, "%s--refs needs tags, default, all or ref names", o->where);
	return CLI_OK;
}

/* Parse options from argv into o (getopt state must be reset by the caller). Returns CLI_OK or
 * CLI_USAGE (message printed). */
static int parse_opts(int argc, char **argv, struct add_opts *o)
{
	const struct cli_flag flags[] = {
		CLI_FN("data", o, take_global, "DIR", "data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)"),
		CLI_STORE,
		CLI_STR("revision", &o->revision, "REV", "revision to follow, for every SPEC without @REVISION"),
		CLI_FN("include", o, take_glob, "GLOB",
		       "sync only paths matching GLOB (repeatable; default: everything)"),
		CLI_FN("exclude", o, take_glob, "GLOB", "skip paths matching GLOB (repeatable)"),
		CLI_BOOL("prefer-safetensors", &o->prefer_safetensors,
			 "when the snapshot has *.safetensors weights, skip the other weight\n"
			 "formats (*.bin *.pt *.pth *.h5 *.msgpack *.ckpt *.ot)"),
		CLI_BOOL("open", &o->open,
			 "serve the content of a repo that is gated upstream to every client of\n"
			 "this mirror (the operator has cleared its license for them)"),
		CLI_BOOL("preheat", &o->preheat,
			 "have agents started with --preheat fetch each new snapshot in the\n"
			 "background, so the swarm is warm before the first instance needs it"),
		CLI_FN("refs", o, take_refs, "WHICH",
		       "refs mirrored besides the followed revision, each addressable by name\n"
		       "and commit: tags (the default: every tag, and a dataset's\n"
		       "refs/convert/parquet), default (the followed revision only), all (every\n"
		       "branch, tag and conversion), or names (v1.0,dev; repeatable)"),
		CLI_FN("mirror", o, take_global, "URL",
		       "add them on that mirror, through its operator API ($HUBMIRROR_ADMIN_TOKEN),\n"
		       "not in a local data directory"),
		CLI_FN("from", o, take_global, "FILE",
		       "read one SPEC per line, each followed by its own options; '#' comments.\n"
		       "All lines are checked first: one bad line adds nothing. FILE - is stdin."),
		CLI_END,
	};

	return cli_parse_flags_in(cli_find("add"), o->where, argc, argv, flags);
}

/* Turn one SPEC plus options into an item. Returns CLI_OK or CLI_USAGE (message printed). */
static int make_item(const char *spec, const struct add_opts *o, const char *where, struct add_item *it)
{
	if (hub_spec_parse(spec, &it->spec))
		return cli_spec_error(cli_find("add"), where, spec);
	if (!strchr(it->spec.name, '/'))
		/* the Hub kept a few repositories of its first days under a bare name (gpt2): allowed, but
		 * most such names are a slip for ORG/NAME */
		fprintf(stderr,
			"hubmirror: %snote: '%s' names no organisation: only a few old Hugging Face repositories "
			"have such a name (gpt2, bert-base-uncased); a repository of an organisation is hf:ORG/NAME\n",
			where, spec);
	if (o->revision) {
		if (hub_check_revision(o->revision)) {
			hub_spec_release(&it->spec);
			return cli_usage_error(cli_find("add"), "%sbad revision '%s'", where, o->revision);
		}
		if (it->spec.revision && strcmp(it->spec.revision, o->revision)) {
			hub_spec_release(&it->spec);
			return cli_usage_error(cli_find("add"), "%s'%s' names a revision and --revision another",
					       where, spec);
		}
		if (!it->spec.revision)
			it->spec.revision = xstrdup(o->revision);
	}
	if (!it->spec.revision)
		it->spec.revision = xstrdup(hub_default_revision(it->spec.hub));
	it->include = json_dumps(o->include, JSON_COMPACT);
	it->exclude = json_dumps(o->exclude, JSON_COMPACT);
	{
		json_t *opts = json_object();
		if (o->prefer_safetensors)
			json_object_set_new(opts, "prefer_safetensors", json_true());
		if (o->open)
			json_object_set_new(opts, "open", json_true());
		if (o->preheat)
			json_object_set_new(opts, "preheat", json_true());
		it->options = json_dumps(opts, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(opts);
	}
	it->refs = json_array_size(o->refs_names) ? json_dumps(o->refs_names, JSON_COMPACT)
						  : xstrdup(o->refs_word ? o->refs_word : "tags");
	return CLI_OK;
}

static void item_release(struct add_item *it)
{
	hub_spec_release(&it->spec);
	free(it->include);
	free(it->exclude);
	free(it->options);
	free(it->refs);
}

/*
 * Split a list-file line into words as a POSIX shell would, without expanding anything: blanks
 * separate words, '...' keeps everything literally, "..." too except that a backslash escapes
 * " \\ $ and `, a backslash outside quotes keeps the next character, and '#' at the start of a word
 * begins a comment. So a quoted glob here is what it is on a command line.
 * The words are written over line. Returns the count, -1 for too many words, -2 for an unclosed quote.
 */
static int split_words(char *line, char **words, int max)
{
	char *in = line, *out = line;
	int n = 0;

	for (;;) {
		char quote = 0;

		while (*in == ' ' || *in == '\t' || *in == '\r' || *in == '\n')
			in++;
		if (!*in || *in == '#')
			break;
		if (n == max - 1)
			return -1;
		words[n++] = out;
		for (; *in; in++) {
			if (quote == '\'') {
				if (*in == '\'')
					quote = 0;
				else
					*out++ = *in;
			} else if (quote == '"') {
				if (*in == '"')
					quote = 0;
				else if (*in == '\\' && in[1] && strchr("\"\\$`", in[1]))
					*out++ = *++in;
				else
					*out++ = *in;
			} else if (*in == '\'' || *in == '"') {
				quote = *in;
			} else if (*in == '\\' && in[1] && in[1] != '\n') {
				*out++ = *++in;
			} else if (*in == ' ' || *in == '\t' || *in == '\r' || *in == '\n') {
				break;
			} else {
				*out++ = *in;
			}
		}
		if (quote)
			return -2;
		if (*in)
			in++;
		*out++ = '\0';
	}
	words[n] = NULL;
	return n;
}

static int read_list(const char *file, struct add_item **items, size_t *nitems)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	char *line = NULL;
	size_t cap = 0, len = 0, alloc = 0;
	int lineno = 0, r = CLI_OK;

	if (!f) {
		fprintf(stderr, "hubmirror: cannot read '%s': %s\n", file, strerror(errno));
		return CLI_FAILED;
	}
	while (getline(&line, &cap, f) >= 0) {
		char *words[64], where[512];
		struct add_opts o = { .where = where };
		int n;

		lineno++;
		snprintf(where, sizeof(where), "%s:%d: ", file, lineno);
		n = split_words(line, words + 1, 63);
		if (n == 0)
			continue;
		if (n < 0) {
			r = cli_usage_error(NULL, n == -2 ? "%sa quote is not closed" : "%stoo many words", where);
			break;
		}
		words[0] = "add";
		o.include = json_array();
		o.exclude = json_array();
		o.refs_names = json_array();
		optind = 0;
		opterr = 0;
		r = parse_opts(n + 1, words, &o);
		if (r == CLI_OK && optind != n)
			r = cli_usage_error(NULL, "%sexpected one SPEC per line", where);
		if (r == CLI_OK) {
			if (len == alloc) {
				alloc = alloc ? alloc * 2 : 64;
				*items = xreallocarray(*items, alloc, sizeof(**items));
			}
			memset(&(*items)[len], 0, sizeof(**items));
			r = make_item(words[optind], &o, where, &(*items)[len]);
			if (r == CLI_OK)
				len++;
		}
		json_decref(o.include);
		json_decref(o.exclude);
		json_decref(o.refs_names);
		if (r != CLI_OK)
			break;
	}
	opterr = 1;
	free(line);
	if (f != stdin)
		fclose(f);
	*nitems = len;
	return r;
}

/* The items through a running mirror's operator API (its serve holds the catalog). */
static int add_remote(const char *mirror, const struct add_item *items, size_t n, size_t *added, size_t *updated)
{
	for (size_t i = 0; i < n; i++) {
		char *spec = hub_spec_format(&items[i].spec, 1);
		json_t *opts = json_loads(items[i].options, 0, NULL), *refs = json_loads(items[i].refs, 0, NULL);
		json_t *body = json_pack("{s:s, s:o, s:o}", "spec", spec, "include",
					 json_loads(items[i].include, 0, NULL), "exclude",
					 json_loads(items[i].exclude, 0, NULL)),
		       *j;
		const char *k;
		json_t *v;
		long status;

		json_object_set_new(body, "refs", refs ? refs : json_string(items[i].refs));
		json_object_foreach(opts, k, v)
			json_object_set(body, k, v);
		j = cli_admin_call(mirror, "POST", "/api/admin/repos", body, &status);
		json_decref(body);
		json_decref(opts);
		json_decref(j);
		free(spec);
		if (status != 200 && status != 201)
			return CLI_FAILED;
		status == 201 ? (*added)++ : (*updated)++;
	}
	return CLI_OK;
}

/* The repositories the command line names (or --from's list), into *items (*n of them). */
static int gather_items(int argc, char **argv, const struct cli_command *self, struct add_opts *o,
			struct add_item **items, size_t *n)
{
	int r = CLI_OK;

	if (o->from) {
		if (optind < argc || o->revision || json_array_size(o->include) || json_array_size(o->exclude) ||
		    o->prefer_safetensors || o->open || o->preheat || o->refs_word || json_array_size(o->refs_names))
			return cli_usage_error(self, "--from takes no SPEC or options on the command line");
		return read_list(o->from, items, n);
	}
	if (optind >= argc)
		return cli_usage_error(self, "no repository given");
	*items = xcalloc((size_t)(argc - optind), sizeof(**items));
	for (int i = optind; i < argc && r == CLI_OK; i++) {
		r = make_item(argv[i], o, "", &(*items)[*n]);
		if (r == CLI_OK)
			(*n)++;
	}
	return r;
}

/* Record items in the data directory's catalog, in one transaction, and say what changed. */
static int add_local(struct mirror_data *data, const struct add_item *items, size_t n)
{
	size_t added = 0, updated = 0;

	if (catalog_begin(data->catalog))
		goto dberr;
	for (size_t i = 0; i < n; i++) {
		bool created = false;
		int e = catalog_repo_add(data->catalog, hub_kind_name(items[i].spec.hub),
					 hub_type_name(items[i].spec.type), items[i].spec.name, items[i].spec.revision,
					 items[i].include, items[i].exclude, items[i].options, &created);
		if (e == HM_ERR_LOCAL) {
			char *s = hub_spec_format(&items[i].spec, 0);
			catalog_rollback(data->catalog);
			fprintf(stderr, "hubmirror: %s is %s: it cannot be tracked from upstream\n", s, err_str(e));
			free(s);
			return CLI_FAILED;
		}
		if (e ||
		    catalog_repo_set_refs(data->catalog, hub_kind_name(items[i].spec.hub),
					  hub_type_name(items[i].spec.type), items[i].spec.name, items[i].refs)) {
			catalog_rollback(data->catalog);
			goto dberr;
		}
		created ? added++ : updated++;
	}
	if (catalog_commit(data->catalog)) {
		catalog_rollback(data->catalog);
		goto dberr;
	}
	if (n == 1) {
		char *s = hub_spec_format(&items[0].spec, 1);
		printf("%s %s\n", added ? "tracking" : "updated", s);
		free(s);
	} else {
		printf("tracking %zu new, %zu updated\n", added, updated);
	}
	return CLI_OK;
dberr:
	fprintf(stderr, "hubmirror: catalog: %s\n", catalog_errmsg(data->catalog));
	return CLI_FAILED;
}

int cmd_add(int argc, char **argv)
{
	const struct cli_command *self = cli_find("add");
	struct add_opts o = { .where = "" };
	struct add_item *items = NULL;
	struct mirror_data *data = NULL;
	size_t n = 0, added = 0, updated = 0;
	char *local = NULL;
	int r;

	o.include = json_array();
	o.exclude = json_array();
	o.refs_names = json_array();
	r = parse_opts(argc, argv, &o);
	if (r == CLI_OK)
		r = gather_items(argc, argv, self, &o, &items, &n);
	if (r != CLI_OK)
		goto out;
	if (!o.mirror && (local = cli_local_serve(o.data)))
		o.mirror = local; /* the serve running on this directory does it (its log says so) */
	if (o.mirror) {
		r = add_remote(o.mirror, items, n, &added, &updated);
		if (r == CLI_OK)
			printf("tracking %zu new, %zu updated on %s%s\n", added, updated, o.mirror,
			       local ? " (the serve of this data directory)" : "");
		goto out;
	}
	r = cli_create_data(o.data, &data);
	if (r == CLI_OK) {
		r = add_local(data, items, n);
		cli_data_done(&data, r);
	}
out:
	for (size_t i = 0; i < n; i++)
		item_release(&items[i]);
	free(items);
	json_decref(o.include);
	json_decref(o.exclude);
	json_decref(o.refs_names);
	mirror_data_free(&data);
	free(local);
	return r;
}
