/*
 * xet-token.c - short-lived Xet access tokens (see xet-token.h).
 *
 * A token is "hmxet1." then the claims in base64url (no padding), then '.' and a capability:
 *   claims: "<scope>\n<repo id>\n<hub>\n<type>\n<name>\n<subject>\n<exp>" (scope r, w or f)
 *   capability: over the claims' digest (the first 20 bytes of their sha256, 40 hex digits, the
 *   shape of the subject access.h's capabilities take): "<grant>.<mac>" from
 *   mirror_access_capability for a caller with a token, or "-.<mac>" for one without, mac being
 *   HMAC-SHA256(key, ANON_DOMAIN || digest) cut to 16 bytes in hex.
 * The digest covers every claim, so no claim changes without the MAC failing; a torrent's btih
 * (SHA-1 of its info dictionary) cannot be made to equal one, so a torrent's capability is no token.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "access.h"
#include "xet-token.h"
#include "base/hex.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"

#define TOKEN_PREFIX "hmxet1."
#define CLAIMS_MAX 2048                         /* decoded: a name and a revision fit with room */
static const char ANON_DOMAIN[] = "hubmirror xet token, anonymous\n";
static const char SCOPES[] = "rwf";             /* enum mirror_xet_scope's letters, in order */

void mirror_xet_claims_release(struct mirror_xet_claims *c)
{
	free(c->hub);
	free(c->type);
	free(c->name);
	free(c->subject);
	memset(c, 0, sizeof(*c));
}

/* The claims' text; NULL when a field could not be read back (a newline in a string). */
static char *claims_text(const struct mirror_xet_claims *c)
{
	const char *s[] = { c->hub, c->type, c->name, c->subject };

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (!s[i] || strchr(s[i], '\n'))
			return NULL;
	if ((unsigned)c->scope >= sizeof(SCOPES) - 1)
		return NULL;
	return xasprintf("%c\n%" PRId64 "\n%s\n%s\n%s\n%s\n%" PRId64, SCOPES[c->scope], c->repo_id, c->hub, c->type,
			 c->name, c->subject, c->exp);
}

/* The claims' digest as a capability's subject: 40 lowercase hex digits. */
static void claims_digest(const char *text, char out[41])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL);
	hex_encode(md, 20, out);
}

static void anon_mac(const unsigned char key[32], const char digest[41], char out[33])
{
	unsigned char msg[sizeof(ANON_DOMAIN) - 1 + 40], mac[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	memcpy(msg, ANON_DOMAIN, sizeof(ANON_DOMAIN) - 1);
	memcpy(msg + sizeof(ANON_DOMAIN) - 1, digest, 40);
	HMAC(EVP_sha256(), key, 32, msg, sizeof(msg), mac, &n);
	hex_encode(mac, 16, out);
}

static char *b64url(const char *s)
{
	size_t n = strlen(s);
	char *out = xmalloc(4 * ((n + 2) / 3) + 1);
	int len = EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);

	while (len > 0 && out[len - 1] == '=')
		len--;
	out[len] = '\0';
	for (char *p = out; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	return out;
}

/* s[0..n) in base64url without padding, decoded into a NUL-terminated malloc'd string; NULL when it
 * is not that or holds a NUL. */
static char *unb64url(const char *s, size_t n)
{
	char *in, *out = NULL;
	size_t m = (n + 3) / 4 * 4;
	int len;

	if (!n || n > CLAIMS_MAX * 4 / 3 + 4 || n % 4 == 1)
		return NULL;
	in = xmalloc(m + 1);
	for (size_t i = 0; i < m; i++) {
		char ch = i < n ? s[i] : '=';
		if (i < n && !(ch == '-' || ch == '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
			       (ch >= 'A' && ch <= 'Z')))
			goto out;
		in[i] = ch == '-' ? '+' : ch == '_' ? '/' : ch;
	}
	in[m] = '\0';
	out = xmalloc(m / 4 * 3 + 1);
	len = EVP_DecodeBlock((unsigned char *)out, (unsigned char *)in, (int)m);
	if (len < 0) {
		free(out);
		out = NULL;
		goto out;
	}
	len -= (int)(m - n);   /* EVP_DecodeBlock counts the padding's bytes as zeros */
	out[len] = '\0';
	if (strlen(out) != (size_t)len) {
		free(out);
		out = NULL;
	}
out:
	free(in);
	return out;
}

char *mirror_xet_token_make(const struct mirror_access *a, const unsigned char key[32], const char *token,
			    const struct mirror_xet_claims *c)
{
	char *text = claims_text(c), *cap = NULL, *b = NULL, *out = NULL, digest[41], mac[33];

	if (!text)
		return NULL;
	claims_digest(text, digest);
	/* a token the tokens file does not know (an open mirror, a client that always sends its Hub
	 * token) reads as anonymous: the caller let it through the same guards an anonymous one passes */
	cap = token && *token && a ? mirror_access_capability(a, key, token, digest) : NULL;
	if (!cap) {
		if (c->scope == MIRROR_XET_WRITE)
			goto out;
		anon_mac(key, digest, mac);
		cap = xasprintf("-.%s", mac);
	}
	b = b64url(text);
	out = xasprintf(TOKEN_PREFIX "%s.%s", b, cap);
out:
	free(text);
	free(cap);
	free(b);
	return out;
}

/* "<digits>" (an optional '-' first when sign) as an int64_t, wholly; -EINVAL otherwise. */
static int take_i64(const char *s, bool sign, int64_t *out)
{
	char *end;
	long long v;

	if (!*s || (*s == '-' && !sign) || (*s != '-' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_claims(char *text, struct mirror_xet_claims *out)
{
	char *f[7], *p = text;
	const char *sc;
	struct mirror_xet_claims c = {0};
	size_t n = 0;

	for (char *nl; n < 7; n++, p = nl + 1) {
		f[n] = p;
		nl = strchr(p, '\n');
		if (!nl) {
			n++;
			break;
		}
		*nl = '\0';
	}
	if (n != 7 || strlen(f[0]) != 1 || !(sc = strchr(SCOPES, f[0][0])))
		return -EINVAL;
	c.scope = (enum mirror_xet_scope)(sc - SCOPES);
	if (take_i64(f[1], false, &c.repo_id) || take_i64(f[6], false, &c.exp) || !*f[2] || !*f[3] || !*f[4])
		return -EINVAL;
	c.hub = xstrdup(f[2]);
	c.type = xstrdup(f[3]);
	c.name = xstrdup(f[4]);
	c.subject = xstrdup(f[5]);
	*out = c;
	return 0;
}

/* text's claims and, in *cap (pointing into text), its capability. */
static int split_token(const char *text, struct mirror_xet_claims *out, const char **cap, char **claims)
{
	const char *b = text ? skip_prefix(text, TOKEN_PREFIX) : NULL, *dot;
	char *plain;
	int r;

	if (!b || !(dot = strchr(b, '.')))
		return -EINVAL;
	plain = unb64url(b, (size_t)(dot - b));
	if (!plain)
		return -EINVAL;
	*claims = xstrdup(plain);
	r = parse_claims(plain, out);
	free(plain);
	if (r) {
		free(*claims);
		*claims = NULL;
		return r;
	}
	*cap = dot + 1;
	return 0;
}

int mirror_xet_token_parse(const char *text, struct mirror_xet_claims *out)
{
	const char *cap;
	char *claims = NULL;
	int r = split_token(text, out, &cap, &claims);

	free(claims);
	return r;
}

/* Do c's repo fields name r? */
static bool names_repo(const struct mirror_xet_claims *c, const struct catalog_repo *r)
{
	return c->repo_id == r->id && !strcmp(c->hub, r->hub) && !strcmp(c->type, r->type) && !strcmp(c->name, r->name);
}

bool mirror_xet_token_allows(const struct mirror_access *a, const unsigned char key[32], const char *text,
			     enum mirror_xet_scope scope, const struct catalog_repo *r, const char *subject,
			     int64_t now, const char **why)
{
	struct mirror_xet_claims c = {0};
	const char *cap, *w = NULL;
	char *claims = NULL, digest[41], mac[33];
	bool anon, ok = false;

	if (split_token(text, &c, &cap, &claims)) {
		w = "not a token of this mirror";
		goto out;
	}
	claims_digest(claims, digest);
	anon = cap[0] == '-' && cap[1] == '.';
	if (anon) {
		anon_mac(key, digest, mac);
		if (!hex_is_lower(cap + 2, 32) || CRYPTO_memcmp(mac, cap + 2, 32)) {
			w = "the token's signature does not check out";
			goto out;
		}
	}
	/* the MAC first: the claims of a forged token say nothing */
	if (!anon && !mirror_access_capability_allows(a, key, cap, digest, r)) {
		w = "the token's signature does not check out, or its grant no longer reads the repo";
		goto out;
	}
	if (!names_repo(&c, r) || (subject && strcmp(subject, c.subject)))
		w = "the token is for another repo or object";
	else if (now >= c.exp)
		w = "the token has expired";
	else if (!(c.scope == scope || (c.scope == MIRROR_XET_WRITE && scope == MIRROR_XET_READ)))
		w = "the token is not of this scope";
	else if (anon && (scope == MIRROR_XET_WRITE ||
			  (scope == MIRROR_XET_READ && a && !mirror_access_allows(a, NULL, r->hub, r->type, r->name))))
		w = "the repo needs a token";
	else if (!anon && scope == MIRROR_XET_WRITE && !mirror_access_capability_writes(a, key, cap, digest, r))
		w = "the token's grant no longer writes the repo";
	else
		ok = true;
out:
	if (!ok && why)
		*why = w;
	mirror_xet_claims_release(&c);
	free(claims);
	return ok;
}
