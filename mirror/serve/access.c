/*
 * access.c - operator bearer tokens (see access.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "access.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "base/str.h"
#include "hub/hub.h"

struct grant {
	unsigned char digest[32];  /* sha256 of the token */
	bool all;
	bool all_write;            /* "*:write" */
	char **specs;              /* "hf:model:org/name" keys; a namespace's ends in '*' ("hf:model:org/" '*') */
	size_t nspecs;
	char **wspecs;             /* the ones it writes too (":write") */
	size_t nwspecs;
	int line;                  /* in the tokens file: what the log names it by */
};

struct mirror_access {
	atomic_int refs;           /* a reload swaps in a new object; a worker still using the old holds it */
	enum mirror_access_mode mode;
	struct grant *grants;
	size_t ngrants;
	char **protected;          /* every repo key named in the file */
	size_t nprotected;
	char *path;                /* the file's, absolute; NULL without one */
};

static void digest(const char *token, unsigned char out[32])
{
	unsigned int n;

	EVP_Digest(token, strlen(token), out, &n, EVP_sha256(), NULL);
}

static char *repo_key(const char *hub, const char *type, const char *name)
{
	return xasprintf("%s:%s:%s", hub, type, name);
}

static bool in_list(char **list, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], key))
			return true;
	return false;
}

/* Does a key of list cover repo key: the same, or the key of a namespace it is under? */
static bool covers(char **list, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(list[i]);
		if (!strcmp(list[i], key) || (l >= 2 && !strcmp(list[i] + l - 2, "/*") &&
					      !strncmp(list[i], key, l - 1) && !strchr(key + l - 1, '/')))
			return true;
	}
	return false;
}

/* A namespace spec, "hf:acme/", "hf:datasets/acme/", "ms:acme/" or "acme/" (Hugging Face's) followed by a
 * '*': its key, "hf:model:acme/" and the '*'; NULL when w is not one. */
static char *namespace_key(const char *w)
{
	const char *rest = w, *t, *hub = "hf", *type = "model";
	size_t n;
	char *ns, *probe, *key = NULL;

	if ((t = skip_prefix(w, "hf:")))
		rest = t;
	else if ((t = skip_prefix(w, "ms:"))) {
		rest = t;
		hub = "ms";
	}
	if ((t = skip_prefix(rest, "datasets/"))) {
		rest = t;
		type = "dataset";
	}
	n = strlen(rest);
	if (n < 3 || strcmp(rest + n - 2, "/*"))
		return NULL;
	ns = xstrndup(rest, n - 2);
	probe = xasprintf("%s/x", ns);
	if (!strchr(ns, '/') && !strchr(ns, '*') && !hub_check_name(strcmp(hub, "ms") ? HUB_HF : HUB_MS, probe))
		key = xasprintf("%s:%s:%s/*", hub, type, ns);
	free(probe);
	free(ns);
	return key;
}

/* Opens the tokens file at path for reading, into *out. It must be a regular file that others may
 * not read: the tokens are the mirror's keys, and a file every user may read gives them away. */
static int open_tokens_file(const char *path, FILE **out, char **errmsg)
{
	struct stat st;
	FILE *f = fopen(path, "r");
	int r;

	if (!f) {
		r = -errno;
		if (errmsg)
			*errmsg = xasprintf("cannot read tokens file '%s': %s", path, strerror(errno));
		return r;
	}
	if (fstat(fileno(f), &st) < 0 || (st.st_mode & 007) || !S_ISREG(st.st_mode)) {
		if (errmsg)
			*errmsg = xasprintf("tokens file '%s' can be read by others: make it the owner's "
					    "(chmod 600, or 640 for a group)", path);
		fclose(f);
		return HM_ERR_USAGE;
	}
	*out = f;
	return 0;
}

/* Adds the repository of spec w (one without a revision) to g's, and to the repos the file protects.
 * False when w is no such spec. */
static bool grant_repo(struct mirror_access *a, struct grant *g, const char *word)
{
	struct hub_spec s;
	char *w = xstrdup(word), *key;
	size_t n = strlen(w);
	bool write = n > 6 && !strcmp(w + n - 6, ":write");
	int pr;

	if (write)
		w[n - 6] = '\0';
	if (!(key = namespace_key(w))) {
		if ((pr = hub_spec_parse(w, &s)) || s.revision || strchr(w, '*')) {
			if (!pr)
				hub_spec_release(&s);
			free(w);
			return false;
		}
		key = repo_key(hub_kind_name(s.hub), hub_type_name(s.type), s.name);
		hub_spec_release(&s);
	}
	free(w);
	g->specs = xreallocarray(g->specs, g->nspecs + 1, sizeof(*g->specs));
	g->specs[g->nspecs++] = xstrdup(key);
	if (write) {
		/* a write grant guards nothing: the public repos it writes are everyone's to read, as on
		 * the Hub (a read spec of them guards them; a private one is its grantees' alone) */
		g->wspecs = xreallocarray(g->wspecs, g->nwspecs + 1, sizeof(*g->wspecs));
		g->wspecs[g->nwspecs++] = key;
		return true;
	}
	if (!in_list(a->protected, a->nprotected, key)) {
		a->protected = xreallocarray(a->protected, a->nprotected + 1, sizeof(*a->protected));
		a->protected[a->nprotected++] = key;
	} else {
		free(key);
	}
	return true;
}

/* Reads one line of the tokens file (line lineno of path, for the messages): a token, then what it
 * grants, '*' or repository specs; a comment or a blank line grants nothing. The grant goes to a, a bad
 * one too (a's release frees it), and the token is wiped from line once digested. Returns 0, or
 * HM_ERR_USAGE after saying why. */
static int read_grant(struct mirror_access *a, char *line, const char *path, int lineno, char **errmsg)
{
	char *save = NULL, *tok, *w;
	struct grant g = { 0 };
	int r = 0;

	if (strchr(line, '#'))
		*strchr(line, '#') = '\0';
	tok = strtok_r(line, " \t\r\n", &save);
	if (!tok)
		return 0;
	if (strlen(tok) < 8) {
		if (errmsg)
			*errmsg = xasprintf("%s:%d: a token must have at least 8 characters", path, lineno);
		return HM_ERR_USAGE;
	}
	digest(tok, g.digest);
	memset(tok, 0, strlen(tok)); /* do not keep the token itself around */
	g.line = lineno;
	while ((w = strtok_r(NULL, " \t\r\n", &save))) {
		if (!strcmp(w, "*") || !strcmp(w, "*:write")) {
			g.all = true;
			g.all_write |= w[1] != '\0';
			continue;
		}
		if (!grant_repo(a, &g, w)) {
			if (errmsg)
				*errmsg = xasprintf("%s:%d: '%s' is not '*', a repository spec (hf:org/name) or a "
						    "namespace's (hf:org/*), with ':write' or without",
						    path, lineno, w);
			r = HM_ERR_USAGE;
			break;
		}
	}
	if (!r && !g.all && !g.nspecs) {
		if (errmsg)
			*errmsg = xasprintf("%s:%d: the token grants nothing (add '*' or repository specs)", path,
					    lineno);
		r = HM_ERR_USAGE;
	}
	a->grants = xreallocarray(a->grants, a->ngrants + 1, sizeof(*a->grants));
	a->grants[a->ngrants++] = g;
	return r;
}

int mirror_access_load(const char *path, enum mirror_access_mode mode, struct mirror_access **out, char **errmsg)
{
	struct mirror_access *a = xcalloc(1, sizeof(*a));
	FILE *f = NULL;
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, r = 0;

	atomic_init(&a->refs, 1);
	a->mode = mode;
	if (!path) {
		if (mode != ACCESS_OPEN) {
			if (errmsg)
				*errmsg = xstrdup("a tokens file is needed to require tokens");
			r = HM_ERR_USAGE;
		}
		goto out;
	}
	r = open_tokens_file(path, &f, errmsg);
	if (r)
		goto out;
	a->path = realpath(path, NULL);
	if (!a->path)
		a->path = xstrdup(path);
	while (!r && getline(&line, &cap, f) >= 0)
		r = read_grant(a, line, path, ++lineno, errmsg);
	if (line)
		memset(line, 0, cap);
	free(line);
	fclose(f);
out:
	if (r)
		mirror_access_free(&a);
	else
		*out = a;
	return r;
}

struct mirror_access *mirror_access_ref(const struct mirror_access *ca)
{
	struct mirror_access *a = (struct mirror_access *)ca;

	if (a)
		atomic_fetch_add(&a->refs, 1);
	return a;
}

void mirror_access_free(struct mirror_access **ap)
{
	struct mirror_access *a = ap ? *ap : NULL;

	if (!a)
		return;
	*ap = NULL;
	if (atomic_fetch_sub(&a->refs, 1) > 1)
		return; /* someone still holds it */
	for (size_t i = 0; i < a->ngrants; i++) {
		for (size_t j = 0; j < a->grants[i].nspecs; j++)
			free(a->grants[i].specs[j]);
		free(a->grants[i].specs);
		for (size_t j = 0; j < a->grants[i].nwspecs; j++)
			free(a->grants[i].wspecs[j]);
		free(a->grants[i].wspecs);
	}
	free(a->grants);
	for (size_t i = 0; i < a->nprotected; i++)
		free(a->protected[i]);
	free(a->protected);
	free(a->path);
	free(a);
	*ap = NULL;
}

enum mirror_access_mode mirror_access_mode(const struct mirror_access *a)
{
	return a->mode;
}

const char *mirror_access_path(const struct mirror_access *a)
{
	return a ? a->path : NULL;
}

/* The grant of token, or NULL. Every grant is compared, in constant time, whatever matches. */
static const struct grant *find_grant(const struct mirror_access *a, const char *token)
{
	unsigned char d[32];
	const struct grant *hit = NULL;

	if (!token || !*token)
		return NULL;
	digest(token, d);
	for (size_t i = 0; i < a->ngrants; i++)
		if (!CRYPTO_memcmp(d, a->grants[i].digest, 32) && !hit)
			hit = &a->grants[i];
	return hit;
}

bool mirror_access_token_valid(const struct mirror_access *a, const char *token)
{
	return find_grant(a, token) != NULL;
}

bool mirror_access_allows(const struct mirror_access *a, const char *token, const char *hub, const char *type,
			  const char *name)
{
	const struct grant *g;
	char *key;
	bool listed, ok;

	if (a->mode == ACCESS_OPEN)
		return true;
	key = repo_key(hub, type, name);
	listed = covers(a->protected, a->nprotected, key);
	g = find_grant(a, token);
	/* A repo named in the file needs a token that grants it; any other is open (listed) or open to
	 * every valid token (all). */
	if (!listed)
		ok = a->mode == ACCESS_LISTED || g;
	else
		ok = g && (g->all || covers(g->specs, g->nspecs, key));
	free(key);
	return ok;
}

/* HMAC-SHA256(key, grant digest || btih), the first 16 bytes in hex. */
static void cap_mac(const unsigned char key[32], const struct grant *g, const char *btih, char out[33])
{
	unsigned char msg[32 + 40], mac[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	memcpy(msg, g->digest, 32);
	memcpy(msg + 32, btih, 40);
	HMAC(EVP_sha256(), key, 32, msg, sizeof(msg), mac, &n);
	hex_encode(mac, 16, out);
}

static bool grant_allows(const struct mirror_access *a, const struct grant *g, const char *hub, const char *type,
			 const char *name)
{
	char *key = repo_key(hub, type, name);
	bool ok = !covers(a->protected, a->nprotected, key) || g->all || covers(g->specs, g->nspecs, key);

	free(key);
	return ok;
}

char *mirror_access_capability(const struct mirror_access *a, const unsigned char key[32], const char *token,
			       const char *btih)
{
	const struct grant *g = a ? find_grant(a, token) : NULL;
	char mac[33];

	if (!g || !hex_is_lower(btih, 40))
		return NULL;
	cap_mac(key, g, btih, mac);
	return xasprintf("%zx.%s", (size_t)(g - a->grants), mac);
}

bool mirror_access_capability_allows(const struct mirror_access *a, const unsigned char key[32], const char *cap,
				     const char *btih, const struct catalog_repo *r)
{
	char *end, mac[33];
	unsigned long i;

	if (!a || !cap || !hex_is_lower(btih, 40) || !isxdigit((unsigned char)cap[0]))
		return false;
	i = strtoul(cap, &end, 16);
	if (*end != '.' || i >= a->ngrants || !hex_is_lower(end + 1, 32))
		return false;
	cap_mac(key, &a->grants[i], btih, mac);
	if (CRYPTO_memcmp(mac, end + 1, 32) || !grant_allows(a, &a->grants[i], r->hub, r->type, r->name))
		return false;
	/* a private repo of the mirror's own: the grant must cover it still (narrowed, it no longer does) */
	if (r->local && r->private_ == 1) {
		char *k = repo_key(r->hub, r->type, r->name);
		bool yes = a->grants[i].all || covers(a->grants[i].specs, a->grants[i].nspecs, k);
		free(k);
		return yes;
	}
	return true;
}

bool mirror_access_capability_writes(const struct mirror_access *a, const unsigned char key[32], const char *cap,
				     const char *btih, const struct catalog_repo *r)
{
	unsigned long i;
	char *rkey;
	bool yes;

	if (!mirror_access_capability_allows(a, key, cap, btih, r))
		return false;
	i = strtoul(cap, NULL, 16);   /* checked by the call above */
	rkey = repo_key(r->hub, r->type, r->name);
	yes = a->grants[i].all_write || covers(a->grants[i].wspecs, a->grants[i].nwspecs, rkey);
	free(rkey);
	return yes;
}

bool mirror_access_names(const struct mirror_access *a, const char *hub, const char *type, const char *name)
{
	char *key;
	bool yes;

	if (!a || !a->nprotected)
		return false;
	key = repo_key(hub, type, name);
	yes = covers(a->protected, a->nprotected, key);
	free(key);
	return yes;
}

bool mirror_access_may_write(const struct mirror_access *a, const char *token, const char *hub, const char *type,
			     const char *name)
{
	const struct grant *g = a ? find_grant(a, token) : NULL;
	char *key;
	bool yes;

	if (!g)
		return false;
	key = repo_key(hub, type, name);
	yes = g->all_write || covers(g->wspecs, g->nwspecs, key);
	free(key);
	return yes;
}

char *mirror_access_who(const struct mirror_access *a, const char *token)
{
	const struct grant *g = a ? find_grant(a, token) : NULL;

	return g ? xasprintf("token@%d", g->line) : xstrdup("anonymous");
}

/* Did the operator open the repo (`add --open`: options {"open": true})? */
static bool opened(const struct catalog_repo *r)
{
	json_t *o = json_loads(r->options ? r->options : "{}", 0, NULL);
	bool open = json_is_true(json_object_get(o, "open"));

	json_decref(o);
	return open;
}

bool mirror_access_content_open(const struct mirror_access *a, const struct catalog_repo *r)
{
	bool guarded_upstream = (r->gated && strcmp(r->gated, "false")) || r->private_ == 1;

	/* the mirror's own: no upstream's gate; a private one's readers are its grantees
	 * (mirror_access_private_allows, checked with the token) */
	return r->local || !guarded_upstream || opened(r) || mirror_access_names(a, r->hub, r->type, r->name);
}

bool mirror_access_visible(const struct mirror_access *a, const char *token, const struct catalog_repo *r)
{
	if (r->local && r->private_ == 1)
		return mirror_access_private_allows(a, token, r);
	return r->private_ != 1 || mirror_access_content_open(a, r);
}

bool mirror_access_public(const struct mirror_access *a, const struct catalog_repo *r)
{
	return !(r->local && r->private_ == 1) && mirror_access_content_open(a, r) &&
	       (!a || mirror_access_allows(a, NULL, r->hub, r->type, r->name));
}

bool mirror_access_everyones(const struct mirror_access *a, const struct catalog_repo *r)
{
	bool guarded_upstream = (r->gated && strcmp(r->gated, "false")) || r->private_ == 1;

	/* (not mirror_access_public: under --auth all nobody reads without a token, but every token reads
	 * a repo no line guards, the writer's public repo as much as the one that holds the content) */
	if (r->local && r->private_ == 1)
		return false;
	if (mirror_access_names(a, r->hub, r->type, r->name))
		return false;
	return r->local || !guarded_upstream || opened(r);
}

bool mirror_access_everyones_fn(void *ud, const struct catalog_repo *r)
{
	return mirror_access_everyones(ud, r);
}

bool mirror_access_may_name(const struct mirror_access *a, struct catalog *c, const char *sha256, int64_t repo_id)
{
	return catalog_blob_public_or_own(c, sha256, repo_id, mirror_access_everyones_fn, (void *)a);
}

bool mirror_access_private_allows(const struct mirror_access *a, const char *token, const struct catalog_repo *r)
{
	const struct grant *g;
	char *key;
	bool yes;

	if (!r->local || r->private_ != 1)
		return true;
	if (!(g = a ? find_grant(a, token) : NULL))
		return false;
	key = repo_key(r->hub, r->type, r->name);
	yes = g->all || covers(g->specs, g->nspecs, key);
	free(key);
	return yes;
}

char *mirror_access_hidden(const struct mirror_access *a, const char *token)
{
	const struct grant *g;
	json_t *arr;
	char *out;

	if (!a || a->mode == ACCESS_OPEN || !a->nprotected)
		return NULL;
	g = find_grant(a, token);
	arr = json_array();
	for (size_t i = 0; i < a->nprotected; i++)
		if (!g || (!g->all && !in_list(g->specs, g->nspecs, a->protected[i]) &&
			   !covers(g->specs, g->nspecs, a->protected[i])))
			json_array_append_new(arr, json_string(a->protected[i]));
	out = json_array_size(arr) ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	return out;
}
