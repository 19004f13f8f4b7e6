/*
 * access.h - who may read what from `serve`: operator bearer tokens.
 *
 * A tokens file has one token a line, followed by what it grants: `*` (everything), repository specs
 * (hf:org/name, ms:datasets/org/name) or namespaces' ("hf:acme/" then '*': every model under acme; a
 * namespace spec guards its repos as a repository spec does), each with ":write" to grant writes too
 * (local namespaces, docs/uploads.md); '#' starts a comment. Only sha256 digests of the tokens
 * are kept in memory, and a presented token is compared with every digest in constant time, so
 * neither timing nor a memory dump gives one away. Tokens are never logged.
 *
 * Modes: ACCESS_OPEN (no token needed), ACCESS_LISTED (repos named in the file need a token that
 * grants them; the rest is open), ACCESS_ALL (every request but /healthz needs a valid token, and repos
 * named in the file one that grants them).
 */
#ifndef HM_MIRROR_ACCESS_H
#define HM_MIRROR_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

enum mirror_access_mode { ACCESS_OPEN, ACCESS_LISTED, ACCESS_ALL };

struct mirror_access;

/* Load path (NULL with ACCESS_OPEN). Returns 0 and *out, or an error with *errmsg naming the line. */
int mirror_access_load(const char *path, enum mirror_access_mode mode, struct mirror_access **out, char **errmsg);
/* Reference counted (atomically): a reload swaps a new object in on the loop while a worker thread
 * may still read the old one. ref adds a holder; free drops one (the last frees) and NULLs *a. */
struct mirror_access *mirror_access_ref(const struct mirror_access *a);
void mirror_access_free(struct mirror_access **a);

enum mirror_access_mode mirror_access_mode(const struct mirror_access *a);
/* The tokens file a was loaded from, as an absolute path (NULL without one): for the git hook, a
 * process of its own that reads it again (mirror/gitpush.h). */
const char *mirror_access_path(const struct mirror_access *a);

/* Does token (may be NULL) give any access at all (ACCESS_ALL's gate)? */
bool mirror_access_token_valid(const struct mirror_access *a, const char *token);

/* May token (may be NULL) read repo (hub "hf"/"ms", type "model"/"dataset", name)? */
bool mirror_access_allows(const struct mirror_access *a, const char *token, const char *hub, const char *type,
			  const char *name);

/* The repos token (may be NULL) may not read, as a malloc'd JSON array of "hub:type:name" keys for
 * the catalog's listings to leave out (catalog_search.hidden); NULL when there are none. Listings,
 * search and metrics show a guarded repo only to those who may read it (docs/security.md). */
char *mirror_access_hidden(const struct mirror_access *a, const char *token);

/* Is repo named in the tokens file (so only tokens that grant it read it)? */
bool mirror_access_names(const struct mirror_access *a, const char *hub, const char *type, const char *name);

/*
 * Content policy (docs/security.md). A gated or private upstream repo is closed on the mirror unless
 * the operator opened it (`add --open`) or names it in the tokens file (then the tokens that grant it
 * read it); a is NULL-safe. mirror_access_content_open: may the repo's files be served at all, to a
 * request that passed mirror_access_allows? mirror_access_public: may anyone, without a token, read
 * them? Only public repos are seeded and announced openly over BitTorrent, where nobody shows a token.
 */
struct catalog_repo;
bool mirror_access_content_open(const struct mirror_access *a, const struct catalog_repo *r);
bool mirror_access_public(const struct mirror_access *a, const struct catalog_repo *r);
/* A private repo of the mirror's own (docs/uploads.md) is its grantees' alone: may token read r? True for
 * every other repo (the usual rules apply to it); for a private local one only when token's grant
 * covers it ('*', or a spec of it or its namespace, read or write). Never without a tokens file. */
bool mirror_access_private_allows(const struct mirror_access *a, const char *token, const struct catalog_repo *r);
/* May token (may be NULL) see the repo at all (its name, listings, card, metrics, any answer that
 * tells it is here)? Not a private upstream repo the operator neither opened nor named in the tokens
 * file (nobody may read it here), nor a private repo of the mirror's own that token's grant does not
 * cover (mirror_access_private_allows): the Hub shows a private repo to nobody else, so every route
 * answers for it as for a repo the mirror does not have. */
bool mirror_access_visible(const struct mirror_access *a, const char *token, const struct catalog_repo *r);

/* May everyone who may read anything here read r: anonymous readers where the mirror takes them, any
 * valid token under --auth all? Not a private repo of the mirror's own, not a gated or private
 * upstream repo the operator did not open (add --open: naming it in the tokens file opens it to its
 * grantees only), not a repo a read spec of the tokens file guards (a repo's, or a namespace's: a
 * local namespace under a read grant too). a is NULL-safe. */
bool mirror_access_everyones(const struct mirror_access *a, const struct catalog_repo *r);
/* May repo repo_id name content sha256 without its bytes being uploaded for it (docs/uploads.md)? The
 * one rule of the write side: the commit API's lfsFile, the Git LFS batch's "already there" and its
 * verify, the quota's count of what a commit adds, git push's LFS pointers (the hook, in a process of
 * its own, with the same tokens file). Yes when the repo has it already (fetched or uploaded for it,
 * or named by one of its complete snapshots), or a repo everyone may read here
 * (mirror_access_everyones) fetched it; anything else must be uploaded once: a sha256 is public
 * metadata, and naming a guarded repo's would publish its bytes under the writer's repo.
 * (catalog_blob_public_or_own with this rule.) a is NULL-safe. */
struct catalog;
bool mirror_access_may_name(const struct mirror_access *a, struct catalog *c, const char *sha256, int64_t repo_id);
/* The same rule as a catalog_repo_test_fn (ud: the const struct mirror_access *, may be NULL). */
bool mirror_access_everyones_fn(void *ud, const struct catalog_repo *r);

/*
 * Capabilities for BitTorrent clients, whose web seed and tracker requests carry no Authorization:
 * the mirror puts one in the URLs of a torrent it hands to a token holder. A capability names the
 * token's grant and proves, with an HMAC under the data directory's secret key, that it was made for
 * this torrent (btih, 40 hex digits): "<grant>.<mac>". It stops working when the token is removed
 * from the tokens file or no longer grants the repo.
 *
 * mirror_access_capability: for a token that may read the repo, a malloc'd capability; NULL otherwise.
 * mirror_access_capability_allows: does cap (untrusted text) let its holder read repo r through btih (a
 * private repo of the mirror's own only while the grant still covers it)?
 */
char *mirror_access_capability(const struct mirror_access *a, const unsigned char key[32], const char *token,
			       const char *btih);
bool mirror_access_capability_allows(const struct mirror_access *a, const unsigned char key[32], const char *cap,
				     const char *btih, const struct catalog_repo *r);
/* The same, and the grant still writes r (mirror_access_may_write): for a write capability (xet-token.h). */
bool mirror_access_capability_writes(const struct mirror_access *a, const unsigned char key[32], const char *cap,
				     const char *btih, const struct catalog_repo *r);

/* May token write repo (the mirror's own repos: docs/uploads.md)? Only a token whose grant says so:
 * "*:write", or a spec of the repo or of its namespace with ":write". Never without a
 * token, or without a tokens file (a is NULL): an open mirror takes no writes. */
bool mirror_access_may_write(const struct mirror_access *a, const char *token, const char *hub, const char *type,
			     const char *name);
/* A name for the log of whom token is, that gives nothing of it away: "token@LINE" (its line in the
 * tokens file), or "anonymous". Malloc'd. */
char *mirror_access_who(const struct mirror_access *a, const char *token);
#endif
