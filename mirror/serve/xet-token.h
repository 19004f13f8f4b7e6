/*
 * xet-token.h - short-lived access tokens for the mirror's Xet CAS (docs/protocols/xet.md).
 *
 * A Xet client reads and writes the CAS with a bearer token it got from the Hub API's xet-read-token
 * or xet-write-token route, not with the caller's own token. The mirror's tokens are self-contained:
 * their claims (scope, repo, revision, expiry) in base64url, then a capability over the claims'
 * digest made by access.h's capabilities (HMAC under the data directory's key, bound to the
 * caller's grant in the tokens file), or, for a caller without a token, an HMAC of the same key over
 * the same digest. Nothing is kept on the server: a token is checked against the tokens file and the
 * repo as they are when it is presented, so removing a grant ends the tokens made under it.
 * Tokens, like every credential, are never logged.
 */
#ifndef HM_MIRROR_XET_TOKEN_H
#define HM_MIRROR_XET_TOKEN_H

#include <stdbool.h>
#include <stdint.h>

struct mirror_access;
struct catalog_repo;

enum mirror_xet_scope {
	MIRROR_XET_READ,   /* reconstructions and xorb reads of the repo's files */
	MIRROR_XET_WRITE,  /* xorb and shard uploads for the repo (implies read) */
	MIRROR_XET_FETCH,  /* one presigned URL: its subject names what it fetches */
};

/* What a token says. Strings are malloc'd, owned by the struct (mirror_xet_claims_release). */
struct mirror_xet_claims {
	enum mirror_xet_scope scope;
	int64_t repo_id;   /* the catalog's id of the repo */
	char *hub;         /* "hf" | "ms" */
	char *type;        /* "model" | "dataset" */
	char *name;        /* "org/name" */
	char *subject;     /* the revision (read, write), or what a fetch URL names */
	int64_t exp;       /* unix seconds: refused from then on */
};
void mirror_xet_claims_release(struct mirror_xet_claims *c);

/* A token for claims c, for the caller who showed token (NULL: anonymous; a token the tokens file
 * does not know reads as anonymous too). The caller has already decided that this caller may have it
 * (the routes' guards); a write scope needs a token whose grant writes the repo. A malloc'd string,
 * or NULL when none can be made (a write scope without a grant in the tokens file). */
char *mirror_xet_token_make(const struct mirror_access *a, const unsigned char key[32], const char *token,
			    const struct mirror_xet_claims *c);

/* The claims of text (untrusted), unchecked: only for finding the repo to check it against. 0 and
 * *out, or -EINVAL. */
int mirror_xet_token_parse(const char *text, struct mirror_xet_claims *out);

/* Does text (untrusted) give scope over repo r at time now? Its MAC checks out, it is of that scope
 * (a write token also reads), bound to r (id, hub, type, name) and to subject (unless NULL: a token
 * of any revision reads the repo's files), not expired, and the grant it was
 * made under still reads r (writes it, for MIRROR_XET_WRITE) in a as it is now; an anonymous read
 * token only while anyone may read r without a token. A fetch token is the server's own, made without
 * a caller's token once a read token was checked (a reconstruction's URLs): its MAC, repo, subject
 * and expiry are what it proves. why (may be NULL) gets a static reason on refusal. The content
 * policy (gated, private, hidden) is the caller's, as for every read. */
bool mirror_xet_token_allows(const struct mirror_access *a, const unsigned char key[32], const char *text,
			     enum mirror_xet_scope scope, const struct catalog_repo *r, const char *subject,
			     int64_t now, const char **why);
#endif
