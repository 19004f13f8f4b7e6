/*
 * test-mirror-xet-token.c - the Xet CAS's access tokens (mirror/serve/xet-token.h): bound to a repo,
 * a scope, a subject and an expiry; signed for the caller's grant or for anyone; refused forged,
 * altered, expired, for another repo, or once the grant is gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "mirror/serve/access.h"
#include "mirror/serve/xet-token.h"
#include "test.h"

static char dir[] = "/tmp/hm-test-xet-token-XXXXXX";
static const unsigned char key[32] = "0123456789abcdef0123456789abcde";
static const unsigned char other_key[32] = "fedcba9876543210fedcba987654321";

static struct mirror_access *load(const char *text)
{
	char *path = xasprintf("%s/tokens", dir), *err = NULL;
	FILE *f = fopen(path, "w");
	struct mirror_access *a = NULL;

	fputs(text, f);
	fclose(f);
	chmod(path, 0600);
	if (mirror_access_load(path, ACCESS_LISTED, &a, &err))
		printf("# %s\n", err);
	free(err);
	free(path);
	return a;
}

static struct catalog_repo repo(int64_t id, const char *name)
{
	struct catalog_repo r = {0};

	r.id = id;
	r.hub = "hf";
	r.type = "model";
	r.name = (char *)name;
	r.private_ = -1;
	return r;
}

static struct mirror_xet_claims claims(enum mirror_xet_scope s, const struct catalog_repo *r, const char *subject,
				       int64_t exp)
{
	struct mirror_xet_claims c = { .scope = s, .repo_id = r->id, .exp = exp };

	c.hub = r->hub;
	c.type = r->type;
	c.name = r->name;
	c.subject = (char *)subject;
	return c;
}

static const char tokens[] = "writer-0000001 hf:acme/*:write\n"
			     "reader-0000002 hf:acme/*\n";

TEST(a_grants_token_reads_its_repo_only)
{
	struct mirror_access *a = load(tokens);
	struct catalog_repo r = repo(7, "acme/a"), other = repo(8, "acme/b"), open = repo(9, "free/c");
	struct mirror_xet_claims c = claims(MIRROR_XET_READ, &r, "main", 2000);
	struct mirror_xet_claims parsed = {0};
	char *t = mirror_xet_token_make(a, key, "reader-0000002", &c);
	const char *why = NULL;

	CHECK(t && !strncmp(t, "hmxet1.", 7));
	CHECK(!strstr(t, "reader-0000002"));   /* the caller's token is not in it */
	CHECK(mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &r, NULL, 1000, &why));
	CHECK(mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &r, "main", 1999, &why));
	CHECK(!mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &r, "dev", 1000, &why));
	CHECK(!mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &other, NULL, 1000, &why));
	CHECK_STR(why, "the token is for another repo or object");
	CHECK(!mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &open, NULL, 1000, &why));
	CHECK(!mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &r, NULL, 2000, &why));
	CHECK_STR(why, "the token has expired");
	CHECK(!mirror_xet_token_allows(a, key, t, MIRROR_XET_WRITE, &r, NULL, 1000, &why));
	CHECK(!mirror_xet_token_allows(a, key, t, MIRROR_XET_FETCH, &r, NULL, 1000, &why));
	CHECK(!mirror_xet_token_allows(a, other_key, t, MIRROR_XET_READ, &r, NULL, 1000, &why));
	CHECK_INT(mirror_xet_token_parse(t, &parsed), 0);
	CHECK_INT(parsed.repo_id, 7);
	CHECK_STR(parsed.name, "acme/a");
	CHECK_STR(parsed.subject, "main");
	CHECK_INT(parsed.exp, 2000);
	mirror_xet_claims_release(&parsed);
	free(t);
	mirror_access_free(&a);
}

TEST(write_scope_needs_a_write_grant)
{
	struct mirror_access *a = load(tokens);
	struct catalog_repo r = repo(7, "acme/a");
	struct mirror_xet_claims c = claims(MIRROR_XET_WRITE, &r, "main", 2000);
	char *t = mirror_xet_token_make(a, key, "writer-0000001", &c);
	char *t2 = mirror_xet_token_make(a, key, "reader-0000002", &c);
	char *t3 = mirror_xet_token_make(a, key, NULL, &c);

	CHECK(t != NULL);
	CHECK(mirror_xet_token_allows(a, key, t, MIRROR_XET_WRITE, &r, NULL, 1000, NULL));
	CHECK(mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &r, NULL, 1000, NULL));  /* a write token reads */
	/* made under a read grant, it is refused when used: the grant is asked again */
	CHECK(t2 == NULL || !mirror_xet_token_allows(a, key, t2, MIRROR_XET_WRITE, &r, NULL, 1000, NULL));
	CHECK(t3 == NULL);   /* nobody writes anonymously */
	free(t);
	free(t2);
	free(t3);
	mirror_access_free(&a);
}

TEST(anonymous_tokens_read_only_what_anyone_reads)
{
	struct mirror_access *a = load(tokens);
	struct catalog_repo open = repo(9, "free/c"), guarded = repo(7, "acme/a");
	struct mirror_xet_claims c = claims(MIRROR_XET_READ, &open, "main", 2000);
	struct mirror_xet_claims g = claims(MIRROR_XET_READ, &guarded, "main", 2000);
	char *t = mirror_xet_token_make(a, key, NULL, &c);
	char *u = mirror_xet_token_make(a, key, "not-in-the-file", &c);  /* reads as anonymous */
	char *tg = mirror_xet_token_make(a, key, NULL, &g);
	char *open_mirror = mirror_xet_token_make(NULL, key, "hf_whatever", &c);
	const char *why = NULL;

	CHECK(mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &open, NULL, 1000, NULL));
	CHECK(mirror_xet_token_allows(a, key, u, MIRROR_XET_READ, &open, NULL, 1000, NULL));
	CHECK(mirror_xet_token_allows(NULL, key, open_mirror, MIRROR_XET_READ, &open, NULL, 1000, NULL));
	/* an anonymous token for a guarded repo (the routes would not give one) does not read it */
	CHECK(!mirror_xet_token_allows(a, key, tg, MIRROR_XET_READ, &guarded, NULL, 1000, &why));
	CHECK_STR(why, "the repo needs a token");
	/* a fetch token is the server's own (a reconstruction's URL, made after a read token was checked):
	 * bound to its repo and subject, not to a caller */
	{
		struct mirror_xet_claims f = claims(MIRROR_XET_FETCH, &guarded, "sha/0", 2000);
		char *ft = mirror_xet_token_make(a, key, NULL, &f);
		CHECK(mirror_xet_token_allows(a, key, ft, MIRROR_XET_FETCH, &guarded, "sha/0", 1000, NULL));
		CHECK(!mirror_xet_token_allows(a, key, ft, MIRROR_XET_FETCH, &guarded, "sha/1", 1000, NULL));
		CHECK(!mirror_xet_token_allows(a, key, ft, MIRROR_XET_READ, &guarded, NULL, 1000, NULL));
		free(ft);
	}
	free(t);
	free(u);
	free(tg);
	free(open_mirror);
	mirror_access_free(&a);
}

/* Every claim is under the MAC: change one and the token fails; forge one and it fails. */
TEST(altered_and_forged_tokens_are_refused)
{
	struct mirror_access *a = load(tokens);
	struct catalog_repo r = repo(7, "acme/a"), open = repo(9, "free/c");
	struct mirror_xet_claims c = claims(MIRROR_XET_READ, &r, "main", 2000);
	struct mirror_xet_claims longer = claims(MIRROR_XET_READ, &r, "main", 999999);
	char *t = mirror_xet_token_make(a, key, "reader-0000002", &c);
	char *l = mirror_xet_token_make(a, key, "reader-0000002", &longer);
	char *mix = NULL, *dot;
	const char *why = NULL;

	/* the claims of one token with the capability of another */
	dot = strrchr(strchr(t + 7, '.'), '.');
	mix = xasprintf("%.*s%s", (int)(strchr(l + 7, '.') - l), l, strchr(t + 7, '.'));
	CHECK(!mirror_xet_token_allows(a, key, mix, MIRROR_XET_READ, &r, NULL, 3000, &why));
	free(mix);
	/* a flipped bit in the MAC */
	dot[1] = dot[1] == '0' ? '1' : '0';
	CHECK(!mirror_xet_token_allows(a, key, t, MIRROR_XET_READ, &r, NULL, 1000, &why));
	CHECK(!mirror_xet_token_allows(a, key, "hmxet1.", MIRROR_XET_READ, &r, NULL, 1000, &why));
	CHECK(!mirror_xet_token_allows(a, key, "hmxet1.!!!.-.00", MIRROR_XET_READ, &r, NULL, 1000, &why));
	CHECK(!mirror_xet_token_allows(a, key, "reader-0000002", MIRROR_XET_READ, &r, NULL, 1000, &why));
	CHECK(!mirror_xet_token_allows(a, key, NULL, MIRROR_XET_READ, &r, NULL, 1000, &why));
	/* an anonymous-looking token with a made-up MAC, for an open repo */
	{
		struct mirror_xet_claims co = claims(MIRROR_XET_READ, &open, "main", 2000);
		char *ok = mirror_xet_token_make(a, key, NULL, &co), *forged = xstrdup(ok);
		char *m = strrchr(forged, '.') + 1;
		memset(m, 'a', 32);
		CHECK(mirror_xet_token_allows(a, key, ok, MIRROR_XET_READ, &open, NULL, 1000, NULL));
		CHECK(!mirror_xet_token_allows(a, key, forged, MIRROR_XET_READ, &open, NULL, 1000, &why));
		CHECK_STR(why, "the token's signature does not check out");
		free(ok);
		free(forged);
	}
	free(t);
	free(l);
	mirror_access_free(&a);
}

/* A grant taken out of the tokens file ends the tokens made under it. */
TEST(a_removed_grant_ends_its_tokens)
{
	struct mirror_access *a = load(tokens), *b;
	struct catalog_repo r = repo(7, "acme/a");
	struct mirror_xet_claims c = claims(MIRROR_XET_WRITE, &r, "main", 2000);
	char *t = mirror_xet_token_make(a, key, "writer-0000001", &c);

	CHECK(mirror_xet_token_allows(a, key, t, MIRROR_XET_WRITE, &r, NULL, 1000, NULL));
	b = load("writer-0000001 hf:acme/*\nreader-0000002 hf:acme/*\n");   /* narrowed to reads */
	CHECK(!mirror_xet_token_allows(b, key, t, MIRROR_XET_WRITE, &r, NULL, 1000, NULL));
	CHECK(mirror_xet_token_allows(b, key, t, MIRROR_XET_READ, &r, NULL, 1000, NULL));
	mirror_access_free(&b);
	b = load("reader-0000002 hf:acme/*\n");   /* gone */
	CHECK(!mirror_xet_token_allows(b, key, t, MIRROR_XET_READ, &r, NULL, 1000, NULL));
	mirror_access_free(&b);
	free(t);
	mirror_access_free(&a);
}

/* A claim that could not be read back (a newline in it) makes no token. */
TEST(unreadable_claims_make_no_token)
{
	struct catalog_repo r = repo(7, "acme/a");
	struct mirror_xet_claims c = claims(MIRROR_XET_READ, &r, "ma\nin", 2000);

	CHECK(mirror_xet_token_make(NULL, key, NULL, &c) == NULL);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(a_grants_token_reads_its_repo_only);
	RUN(write_scope_needs_a_write_grant);
	RUN(anonymous_tokens_read_only_what_anyone_reads);
	RUN(altered_and_forged_tokens_are_refused);
	RUN(a_removed_grant_ends_its_tokens);
	RUN(unreadable_claims_make_no_token);
	{
		char *p = xasprintf("%s/tokens", dir);
		unlink(p);
		free(p);
		rmdir(dir);
	}
	return test_done();
}
