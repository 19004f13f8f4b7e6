/*
 * test-hub-grammar.c - the hubs' URL grammars (hub/ms.h, hub/hf.h), both directions: what each path a
 * client sends names, and what names nothing (the mirror's routes and the agent's endpoint parse
 * with them); the URLs the upstream client writes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hf.h"
#include "hub/ms.h"
#include "test.h"

TEST(ms_routes)
{
	struct ms_path p;

	CHECK_INT(ms_parse_path("/api/v1/models/acme/x", "GET", &p), 0);
	CHECK_INT(p.route, MS_ROUTE_INFO);
	CHECK_STR(p.type, "model");
	CHECK_STR(p.name, "acme/x");
	ms_path_release(&p);
	CHECK_INT(ms_parse_path("/api/v1/datasets/acme/d/repo", "GET", &p), 0);
	CHECK_INT(p.route, MS_ROUTE_FILE);
	CHECK_STR(p.type, "dataset");
	CHECK_STR(p.name, "acme/d");
	ms_path_release(&p);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x/revisions", "GET", &p), 0);
	CHECK_INT(p.route, MS_ROUTE_REVISIONS);
	ms_path_release(&p);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x/repo/files", "GET", &p), 0);
	CHECK_INT(p.route, MS_ROUTE_FILES);
	ms_path_release(&p);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x/repo/tree", "GET", &p), 0);
	CHECK_INT(p.route, MS_ROUTE_TREE);
	ms_path_release(&p);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x/download/increase", "POST", &p), 0);
	CHECK_INT(p.route, MS_ROUTE_DOWNLOADED);
	ms_path_release(&p);
	/* segments are percent-decoded, and the name they make must pass hub_check_name */
	CHECK_INT(ms_parse_path("/api/v1/models/ac%6de/x/repo", "GET", &p), 0);
	CHECK_STR(p.name, "acme/x");
	ms_path_release(&p);
}

/* Found by tests/fuzz/fuzz-mspath: a name that decodes to what the hub's rules refuse named a
 * repository, and one with an '@' read as another repository and revision in the agent's spec
 * (ms:acme/x@y@master: acme/x at y@master). */
TEST(ms_names_checked)
{
	struct ms_path p;

	CHECK_INT(ms_parse_path("/api/v1/models/acme/x%40y/repo", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x%2Fy/repo", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/..", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/ms-mo%60el/download/increase", "POST", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/datasets/ac%20me/d/repo/tree", "GET", &p), -1);
}

TEST(ms_names_nothing)
{
	struct ms_path p;

	CHECK_INT(ms_parse_path("/api/v1/models/acme/x", "POST", &p), -1);        /* info is read only */
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x/download", "POST", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x/download/y", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x/repo/other", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/models/acme", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/models//x", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/models/acme/x%zz", "GET", &p), -1);      /* does not decode */
	CHECK_INT(ms_parse_path("/api/v2/models/acme/x", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/acme/x/resolve/main/a", "GET", &p), -1);
}

TEST(ms_dataset_by_numeric_id)
{
	struct ms_path p;

	/* the old SDK's datasets/{Id}/repo/tree */
	CHECK_INT(ms_parse_path("/api/v1/datasets/123/repo/tree", "GET", &p), 0);
	CHECK_INT(p.route, MS_ROUTE_TREE);
	CHECK(p.name == NULL);
	CHECK_INT(p.id, 123);
	ms_path_release(&p);
	/* OWNER/NAME first: 123/repo is a name, and that is its info */
	CHECK_INT(ms_parse_path("/api/v1/datasets/123/repo", "GET", &p), 0);
	CHECK_INT(p.route, MS_ROUTE_INFO);
	CHECK_STR(p.name, "123/repo");
	ms_path_release(&p);
	/* models have no numeric form; 0123 is no id */
	CHECK_INT(ms_parse_path("/api/v1/models/123/repo/tree", "GET", &p), -1);
	CHECK_INT(ms_parse_path("/api/v1/datasets/0123/repo/tree", "GET", &p), -1);
}

TEST(hf_file_urls)
{
	char a[] = "acme", b[] = "x", c[] = "resolve", d[] = "refs", e[] = "pr", f[] = "3", g[] = "sub",
	     h[] = "w%20b.bin";
	char *raw[] = { a, b, c, d, e, f, g, h }, *enc[] = { a, b, c, (char[]){ "refs%2Fpr%2F3" }, g, h };
	const char *type;
	char *org, *name, *rev, *path;

	/* a revision sent raw as refs/pr/N spans three segments, sent encoded one: the same file */
	CHECK_INT(hf_parse_file_url(raw, 8, "resolve", &type, &org, &name, &rev, &path), 0);
	CHECK_STR(type, "model");
	CHECK_STR(rev, "refs/pr/3");
	CHECK_STR(path, "sub/w b.bin");
	free(org), free(name), free(rev), free(path);
	CHECK_INT(hf_parse_file_url(enc, 6, "resolve", &type, &org, &name, &rev, &path), 0);
	CHECK_STR(rev, "refs/pr/3");
	CHECK_STR(path, "sub/w b.bin");
	free(org), free(name), free(rev), free(path);
	CHECK_INT(hf_parse_file_url(raw, 8, "raw", &type, &org, &name, &rev, &path), -1);
}

/* Found by tests/fuzz/fuzz-hfpath: what a file URL names passes the guards the mirror's routes apply
 * (an '@' in a name made the agent's spec hf:a@b/x@main, model "a" at revision "b/x@main"), and a
 * revision the builder writes comes back as the same revision, not as part of the path. */
TEST(hf_file_urls_checked)
{
	const char *type;
	char *org, *name, *rev, *path, *u;
	char a[] = "a%40b", b[] = "x", c[] = "resolve", d[] = "main", e[] = "f.txt", f[] = "..", g[] = "bad%20rev";
	char *at[] = { a, b, c, d, e }, *dots[] = { (char[]){ "acme" }, b, c, d, f, e };
	char *badrev[] = { (char[]){ "acme" }, b, c, g, e };
	struct hf_path s;

	CHECK_INT(hf_parse_file_url(at, 5, "resolve", &type, &org, &name, &rev, &path), -1);
	CHECK_INT(hf_parse_file_url(dots, 6, "resolve", &type, &org, &name, &rev, &path), -1);
	CHECK_INT(hf_parse_file_url(badrev, 5, "resolve", &type, &org, &name, &rev, &path), -1);
	u = hf_resolve_url("http://h", false, "acme/x", "v1/beta", "a b.txt");
	CHECK_STR(u, "http://h/acme/x/resolve/v1%2Fbeta/a%20b.txt");
	hf_path_split(&s, u + strlen("http://h"));
	CHECK_INT(hf_parse_file_url(s.v, s.n, "resolve", &type, &org, &name, &rev, &path), 0);
	CHECK_STR(rev, "v1/beta");
	CHECK_STR(path, "a b.txt");
	free(org), free(name), free(rev), free(path);
	hf_path_release(&s);
	free(u);
}

/* the other direction: the URLs a client of each hub writes */
TEST(urls_out)
{
	char *u;

	u = hf_api_url("http://h", false, "acme/x", "revision/main");
	CHECK_STR(u, "http://h/api/models/acme/x/revision/main");
	free(u);
	u = hf_api_url("http://h", true, "acme/d", "refs");
	CHECK_STR(u, "http://h/api/datasets/acme/d/refs");
	free(u);
	u = hf_resolve_url("http://h", true, "acme/d", "0123", "data/a b#.csv");
	CHECK_STR(u, "http://h/datasets/acme/d/resolve/0123/data/a%20b%23.csv");
	free(u);
	u = ms_api_url("http://m", false, "acme/x", NULL);
	CHECK_STR(u, "http://m/api/v1/models/acme/x");
	free(u);
	u = ms_api_url("http://m", true, "acme/d", "revisions");
	CHECK_STR(u, "http://m/api/v1/datasets/acme/d/revisions");
	free(u);
	u = ms_file_url("http://m", false, "acme/x", "v1.0", "sub/w b.bin");
	CHECK_STR(u, "http://m/api/v1/models/acme/x/repo?Revision=v1.0&FilePath=sub/w%20b.bin");
	free(u);
	u = ms_file_url("http://m", true, "acme/d", "master", "t.csv");
	CHECK_STR(u, "http://m/api/v1/datasets/acme/d/repo?Source=SDK&Revision=master&FilePath=t.csv");
	free(u);
}

int main(void)
{
	RUN(ms_routes);
	RUN(ms_names_nothing);
	RUN(ms_names_checked);
	RUN(ms_dataset_by_numeric_id);
	RUN(hf_file_urls);
	RUN(hf_file_urls_checked);
	RUN(urls_out);
	return test_done();
}
