/*
 * test-mirror-access.c - the tokens file's grammar and what each grant allows: repository and
 * namespace specs, ':write', the log's names for tokens, and the errors that name the line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/serve/access.h"
#include "test.h"

static char dir[] = "/tmp/hm-test-access-XXXXXX";

/* Load text as a tokens file of mode; *errmsg on failure. */
static int load(const char *text, unsigned mode, struct mirror_access **a, char **errmsg)
{
	char *path = xasprintf("%s/tokens", dir);
	FILE *f = fopen(path, "w");
	int r;

	fputs(text, f);
	fclose(f);
	chmod(path, mode);
	*errmsg = NULL;
	r = mirror_access_load(path, ACCESS_LISTED, a, errmsg);
	free(path);
	return r;
}

static const char tokens[] =
	"admin-00000001 *:write\n"
	"ops-000000002 *          # reads everything, writes nothing\n"
	"team-00000003 hf:acme/*:write hf:datasets/acme/*:write ms:acme/*\n"
	"reader-000004 hf:acme/*\n"
	"one-000000005 hf:acme/model-a:write hf:other/x\n";

TEST(grants_read_and_write)
{
	struct mirror_access *a = NULL;
	char *err = NULL;

	CHECK_INT(load(tokens, 0600, &a, &err), 0);
	if (!a)
		return;
	/* writes */
	CHECK(mirror_access_may_write(a, "admin-00000001", "hf", "model", "anyone/anything"));
	CHECK(!mirror_access_may_write(a, "ops-000000002", "hf", "model", "acme/x"));
	CHECK(mirror_access_may_write(a, "team-00000003", "hf", "model", "acme/x"));
	CHECK(mirror_access_may_write(a, "team-00000003", "hf", "dataset", "acme/d"));
	CHECK(!mirror_access_may_write(a, "team-00000003", "ms", "model", "acme/x")); /* a read grant there */
	CHECK(!mirror_access_may_write(a, "team-00000003", "hf", "model", "acmeX/x")); /* not a prefix match */
	CHECK(!mirror_access_may_write(a, "team-00000003", "hf", "model", "acme/x/y"));
	CHECK(!mirror_access_may_write(a, "reader-000004", "hf", "model", "acme/x"));
	CHECK(mirror_access_may_write(a, "one-000000005", "hf", "model", "acme/model-a"));
	CHECK(!mirror_access_may_write(a, "one-000000005", "hf", "model", "acme/model-b"));
	CHECK(!mirror_access_may_write(a, NULL, "hf", "model", "acme/x"));
	CHECK(!mirror_access_may_write(a, "nobody-000006", "hf", "model", "acme/x"));
	CHECK(!mirror_access_may_write(NULL, "admin-00000001", "hf", "model", "acme/x"));
	/* reads: a namespace spec guards its repos, and its holders read them */
	CHECK(mirror_access_names(a, "hf", "model", "acme/anything"));
	CHECK(!mirror_access_names(a, "hf", "dataset", "zed/free"));
	CHECK(!mirror_access_allows(a, NULL, "hf", "model", "acme/x"));
	CHECK(mirror_access_allows(a, "reader-000004", "hf", "model", "acme/x"));
	CHECK(mirror_access_allows(a, "team-00000003", "hf", "model", "acme/x")); /* a write grant reads */
	/* a write grant guards nothing: acme's datasets (written, never read-named) are open */
	CHECK(mirror_access_allows(a, NULL, "hf", "dataset", "acme/d"));
	CHECK(!mirror_access_names(a, "hf", "dataset", "acme/d"));
	CHECK(mirror_access_allows(a, NULL, "hf", "model", "zed/open")); /* named nowhere: open */
	CHECK(!mirror_access_allows(a, "reader-000004", "hf", "model", "other/x"));
	mirror_access_free(&a);
}

TEST(private_local_repos_are_their_grantees)
{
	struct mirror_access *a = NULL;
	char *err = NULL;
	struct catalog_repo r = { .hub = "hf", .type = "dataset", .name = "acme/secret", .local = true, .private_ = 1 };
	struct catalog_repo up = { .hub = "hf", .type = "dataset", .name = "acme/secret", .private_ = 1 };

	CHECK_INT(load(tokens, 0600, &a, &err), 0);
	if (!a)
		return;
	CHECK(mirror_access_private_allows(a, "team-00000003", &r));  /* its writer */
	CHECK(mirror_access_private_allows(a, "admin-00000001", &r)); /* '*' */
	CHECK(!mirror_access_private_allows(a, "reader-000004", &r)); /* acme's models, not its datasets */
	CHECK(!mirror_access_private_allows(a, NULL, &r));
	CHECK(!mirror_access_private_allows(NULL, "team-00000003", &r));
	CHECK(mirror_access_private_allows(a, NULL, &up)); /* not the mirror's own: the usual rules */
	CHECK(!mirror_access_public(a, &r));                  /* never seeded openly */
	CHECK(mirror_access_content_open(a, &r));
	/* seen by its grantees only: to everyone else it is not there */
	CHECK(mirror_access_visible(a, "team-00000003", &r));
	CHECK(mirror_access_visible(a, "admin-00000001", &r));
	CHECK(!mirror_access_visible(a, "reader-000004", &r));
	CHECK(!mirror_access_visible(a, NULL, &r));
	CHECK(!mirror_access_visible(NULL, "team-00000003", &r));
	mirror_access_free(&a);
}

TEST(capabilities_follow_a_narrowed_grant)
{
	static const unsigned char key[32] = { 7 };
	static const char btih[] = "0123456789abcdef0123456789abcdef01234567";
	struct catalog_repo r = { .hub = "hf", .type = "dataset", .name = "acme/secret", .local = true, .private_ = 1 };
	struct catalog_repo pub = { .hub = "hf", .type = "dataset", .name = "acme/open", .local = true };
	struct mirror_access *a = NULL;
	char *err = NULL, *cap;

	CHECK_INT(load(tokens, 0600, &a, &err), 0);
	if (!a)
		return;
	cap = mirror_access_capability(a, key, "team-00000003", btih);
	CHECK(cap && mirror_access_capability_allows(a, key, cap, btih, &r));
	CHECK(cap && mirror_access_capability_allows(a, key, cap, btih, &pub));
	mirror_access_free(&a);
	/* the same token on the same line, its datasets' grant taken away: its capability no longer opens
	 * the private one (the public one stays everyone's) */
	CHECK_INT(load("admin-00000001 *:write\nops-000000002 *\nteam-00000003 hf:acme/*:write\n", 0600, &a, &err), 0);
	if (a) {
		CHECK(cap && !mirror_access_capability_allows(a, key, cap, btih, &r));
		CHECK(cap && mirror_access_capability_allows(a, key, cap, btih, &pub));
		mirror_access_free(&a);
	}
	free(cap);
}

TEST(who_names_the_line_not_the_token)
{
	struct mirror_access *a = NULL;
	char *err = NULL, *w;

	CHECK_INT(load(tokens, 0600, &a, &err), 0);
	if (!a)
		return;
	w = mirror_access_who(a, "team-00000003");
	CHECK_STR(w, "token@3");
	CHECK(!strstr(w, "team"));
	free(w);
	w = mirror_access_who(a, "wrong-0000009");
	CHECK_STR(w, "anonymous");
	free(w);
	w = mirror_access_who(a, NULL);
	CHECK_STR(w, "anonymous");
	free(w);
	mirror_access_free(&a);
}

TEST(hidden_lists_namespaces)
{
	struct mirror_access *a = NULL;
	char *err = NULL, *h;

	CHECK_INT(load(tokens, 0600, &a, &err), 0);
	if (!a)
		return;
	h = mirror_access_hidden(a, NULL);
	CHECK(h && strstr(h, "\"hf:model:acme/*\"") && strstr(h, "\"ms:model:acme/*\"") && !strstr(h, "model-a") &&
	      !strstr(h, "hf:dataset:acme"));
	free(h);
	h = mirror_access_hidden(a, "reader-000004");
	CHECK(h && !strstr(h, "\"hf:model:acme/*\"") && strstr(h, "ms:model:acme/*") && strstr(h, "hf:model:other/x"));
	free(h);
	mirror_access_free(&a);
}

TEST(errors_name_the_line)
{
	static const char *const bad[] = {"tok-0000001 hf:acme/x:wrte\n", "tok-0000001 hf:ac*/x\n",
					  "tok-0000001 hf:acme/*/x\n", "tok-0000001 hf:*\n",
					  "tok-0000001 hf:a/b@main\n"};
	struct mirror_access *a = NULL;
	char *err = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = xasprintf("# comment\n%s", bad[i]);
		CHECK(load(text, 0600, &a, &err) != 0);
		CHECK(err && strstr(err, ":2:"));
		free(err);
		free(text);
	}
	CHECK(load(tokens, 0644, &a, &err) != 0); /* others may read it */
	CHECK(err && strstr(err, "chmod 600"));
	free(err);
}

/* Whose contents a writer may name without uploading them: repos everyone may read, and no other. */
TEST(everyones_repos_are_the_only_nameable_ones)
{
	struct mirror_access *a = NULL;
	char *err = NULL;
	struct catalog_repo open_up = { .hub = "hf", .type = "model", .name = "zed/open" };
	struct catalog_repo guarded_up = { .hub = "hf", .type = "model", .name = "other/x" };   /* one-000000005's */
	struct catalog_repo guarded_local = { .hub = "hf", .type = "model", .name = "acme/m", .local = true };
	struct catalog_repo written_local = { .hub = "hf", .type = "dataset", .name = "acme/d", .local = true };
	struct catalog_repo private_local = { .hub = "hf", .type = "dataset", .name = "acme/d", .local = true,
					      .private_ = 1 };
	struct catalog_repo gated = { .hub = "hf", .type = "model", .name = "zed/gated", .gated = "manual" };
	struct catalog_repo gated_open = { .hub = "hf", .type = "model", .name = "zed/gated", .gated = "manual",
					   .options = "{\"open\": true}" };
	struct catalog_repo private_up = { .hub = "hf", .type = "model", .name = "zed/priv", .private_ = 1 };

	CHECK_INT(load(tokens, 0600, &a, &err), 0);
	if (!a)
		return;
	CHECK(mirror_access_everyones(a, &open_up));
	CHECK(mirror_access_everyones(a, &written_local));  /* a write grant guards nothing */
	CHECK(mirror_access_everyones(a, &gated_open));
	CHECK(!mirror_access_everyones(a, &guarded_up));    /* a token line's read spec */
	CHECK(!mirror_access_everyones(a, &guarded_local)); /* a namespace under a read grant */
	CHECK(!mirror_access_everyones(a, &private_local));
	CHECK(!mirror_access_everyones(a, &gated));
	CHECK(!mirror_access_everyones(a, &private_up));
	/* without a tokens file, upstream's rule only */
	CHECK(mirror_access_everyones(NULL, &guarded_up));
	CHECK(!mirror_access_everyones(NULL, &private_local));
	CHECK(!mirror_access_everyones(NULL, &gated));
	mirror_access_free(&a);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(grants_read_and_write);
	RUN(private_local_repos_are_their_grantees);
	RUN(capabilities_follow_a_narrowed_grant);
	RUN(who_names_the_line_not_the_token);
	RUN(hidden_lists_namespaces);
	RUN(errors_name_the_line);
	RUN(everyones_repos_are_the_only_nameable_ones);
	{
		char *p = xasprintf("%s/tokens", dir);
		unlink(p);
		free(p);
		rmdir(dir);
	}
	return test_done();
}
