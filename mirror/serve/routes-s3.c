/*
 * routes-s3.c - the S3 API, read-only (docs/protocols/s3.md): ListBuckets, GetBucketLocation,
 * HeadBucket, ListObjects (v1 and v2), HeadObject and GetObject over the catalog and the store, for
 * object-storage clients (model streamers, aws, boto3, s3cmd, rclone). The grammar, the XML and
 * Signature Version 4 are hub/s3.c's; this file maps them onto repos, revisions and files, and onto the
 * same access rules as the Hub's API: a request signed with an access key acts with the token the
 * operator mapped that key to (serve --s3-keys), an unsigned one is anonymous.
 *
 * Reached under /s3 always, at the root when the request is signed (an AWS Authorization header or a
 * presigned URL's X-Amz-Credential: a client whose endpoint is the mirror's bare URL signs), and on the
 * operator's S3 host name (serve --s3-domain), path-style or with the bucket in the host name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hub.h"
#include "hub/s3.h"
#include "mirror/data.h"
#include "access.h"
#include "ondemand.h"
#include "routes-int.h"

#define S3_CLOCK_SKEW 900 /* seconds a signed header's X-Amz-Date may be off (AWS's 15 minutes) */

struct mirror_s3_key {
	char *id, *secret, *token; /* token NULL: the key acts as anonymous would, signed */
};

struct mirror_s3_keys {
	struct mirror_s3_key *v;
	size_t n;
};

/* The S3 front's own part of the routes (rt->s3): its keys and its host name. */
struct mirror__s3 {
	struct mirror_s3_keys *keys;  /* serve --s3-keys: access key pairs and their tokens; NULL: none */
	const char *domain;           /* serve --s3-domain (borrowed); NULL: none */
};

/* ---- the keys file ---- */

static void keys_free(struct mirror_s3_keys *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++) {
		OPENSSL_cleanse(k->v[i].secret, strlen(k->v[i].secret));
		free(k->v[i].id);
		free(k->v[i].secret);
		free(k->v[i].token);
	}
	free(k->v);
	free(k);
}

/* One line: ACCESS_KEY_ID SECRET_ACCESS_KEY [TOKEN]; '#' starts a comment. */
static int keys_line(struct mirror_s3_keys *k, char *line, const char *path, int lineno, char **errmsg)
{
	char **w = str_split(line, " \t\r\n", NULL);
	size_t n = 0;
	int r = 0;

	while (w[n])
		n++;
	if (n == 0 || w[0][0] == '#')
		goto out;
	if (n < 2 || n > 3 || strlen(w[0]) > 128 || strlen(w[1]) > 128 || strlen(w[0]) < 3 ||
	    strspn(w[0], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != strlen(w[0])) {
		*errmsg = xasprintf("%s:%d: a line is ACCESS_KEY_ID SECRET_ACCESS_KEY [TOKEN] (an id of 3 to 128 "
				    "letters and digits, a secret of at most 128 characters)", path, lineno);
		r = HM_ERR_USAGE;
		goto out;
	}
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(k->v[i].id, w[0])) {
			*errmsg = xasprintf("%s:%d: access key %s is there twice", path, lineno, w[0]);
			r = HM_ERR_USAGE;
			goto out;
		}
	k->v = xreallocarray(k->v, k->n + 1, sizeof(*k->v));
	k->v[k->n].id = xstrdup(w[0]);
	k->v[k->n].secret = xstrdup(w[1]);
	k->v[k->n++].token = n == 3 ? xstrdup(w[2]) : NULL;
out:
	for (size_t i = 0; i < n; i++)
		OPENSSL_cleanse(w[i], strlen(w[i]));
	str_split_free(w);
	return r;
}

int mirror_routes_set_s3_keys(struct mirror_routes *rt, const char *path, char **errmsg)
{
	struct mirror_s3_keys *k;
	struct stat st;
	char line[1024];
	int lineno = 0, r = 0;
	FILE *f;

	if (!path)
		return 0;
	f = fopen(path, "r");
	if (!f) {
		*errmsg = xasprintf("cannot read S3 keys file '%s': %s", path, strerror(errno));
		return HM_ERR_USAGE;
	}
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		*errmsg = xasprintf("S3 keys file '%s' can be read by others: make it the owner's only (chmod 600)",
				    path);
		fclose(f);
		return HM_ERR_USAGE;
	}
	k = xcalloc(1, sizeof(*k));
	while (!r && fgets(line, sizeof(line), f)) {
		lineno++;
		r = keys_line(k, line, path, lineno, errmsg);
	}
	OPENSSL_cleanse(line, sizeof(line));
	fclose(f);
	if (r) {
		keys_free(k);
		return r;
	}
	keys_free(rt->s3->keys);
	rt->s3->keys = k;
	return 0;
}

struct mirror__s3 *mirror__s3_new(void)
{
	return xcalloc(1, sizeof(struct mirror__s3));
}

void mirror__s3_free(struct mirror__s3 **s3)
{
	if (!s3 || !*s3)
		return;
	keys_free((*s3)->keys);
	free(*s3);
	*s3 = NULL;
}

/* ---- answers ---- */

struct s3req {
	struct mirror_routes *rt;
	struct httpd_req *req;
	char request_id[17];
	char *token;            /* what the request acts with (the key's token), NULL: anonymous */
	const char *hub, *type; /* the bucket's */
	char *bucket, *key;
};

static void s3_error(struct s3req *s, int status, const char *code, const char *msg)
{
	char *resource = s->bucket ? xasprintf("/%s%s%s", s->bucket, s->key ? "/" : "", s->key ? s->key : "") : NULL;
	char *xml = s3_error_xml(code, msg, resource, s->request_id);

	httpd_respond(s->req, status, "application/xml", xml, strlen(xml));
	free(xml);
	free(resource);
}

static const char *get_header(void *ud, const char *name)
{
	return httpd_header(ud, name);
}

/* Check the request's signature, if any; fill s->token. Answers a refusal and returns -1. */
static int s3_auth(struct s3req *s)
{
	struct httpd_req *req = s->req;
	const char *why = NULL, *query = httpd_query(req);
	struct s3_sig sig;
	const struct mirror_s3_key *key = NULL;
	char expect[65];
	int64_t now = (int64_t)time(NULL), at;
	int r = s3_sig_parse(httpd_header(req, "Authorization"), query, httpd_header(req, "X-Amz-Date"), &sig, &why);

	if (r == 1) {
		if (s->rt->access && mirror_access_mode(s->rt->access) == ACCESS_ALL) {
			s3_error(s, 403, "AccessDenied", "This mirror serves no one without an access key.");
			return -1;
		}
		return 0;
	}
	if (r < 0) {
		s3_error(s, 400, httpd_header(req, "Authorization") ? "AuthorizationHeaderMalformed"
								  : "AuthorizationQueryParametersError", why);
		return -1;
	}
	for (size_t i = 0; s->rt->s3->keys && i < s->rt->s3->keys->n; i++)
		if (!strcmp(s->rt->s3->keys->v[i].id, sig.access_key))
			key = &s->rt->s3->keys->v[i];
	if (!key) {
		s3_error(s, 403, "InvalidAccessKeyId",
			 "The AWS Access Key Id you provided does not exist in our records.");
		goto bad;
	}
	if (strcmp(sig.service, "s3") ||
	    s3_sig_expected(&sig, key->secret, httpd_method(req), httpd_path(req), query, get_header, req,
			    httpd_header(req, "x-amz-content-sha256"), expect) ||
	    CRYPTO_memcmp(expect, sig.signature, 64)) {
		s3_error(s, 403, "SignatureDoesNotMatch",
			 "The request signature we calculated does not match the signature you provided. Check your "
			 "key and signing method.");
		goto bad;
	}
	at = s3_amz_time(sig.amz_date);
	if (sig.presigned ? (now > at + sig.expires || at > now + S3_CLOCK_SKEW)
			  : (at > now + S3_CLOCK_SKEW || at < now - S3_CLOCK_SKEW)) {
		if (sig.presigned)
			s3_error(s, 403, "AccessDenied", "Request has expired");
		else
			s3_error(s, 403, "RequestTimeTooSkewed",
				 "The difference between the request time and the current time is too large.");
		goto bad;
	}
	if (s->rt->access && mirror_access_mode(s->rt->access) == ACCESS_ALL &&
	    !mirror_access_token_valid(s->rt->access, key->token)) {
		/* under --auth all a key reads what its token reads, and one without a valid token nothing */
		s3_error(s, 403, "AccessDenied", "This access key's token gives no access on this mirror.");
		goto bad;
	}
	s->token = key->token ? xstrdup(key->token) : NULL;
	s3_sig_release(&sig);
	return 0;
bad:
	s3_sig_release(&sig);
	return -1;
}

/* ---- GetObject, HeadObject ---- */

/* If-Match / If-None-Match / If-(Un)Modified-Since, as S3 evaluates them: 0 to go on, else answered. */
static int s3_conditions(struct s3req *s, const char *etag, int64_t mtime)
{
	const char *im = httpd_header(s->req, "If-Match"), *inm = httpd_header(s->req, "If-None-Match");
	const char *ius = httpd_header(s->req, "If-Unmodified-Since"), *ims = httpd_header(s->req, "If-Modified-Since");
	int64_t t;

	if ((im && !httpd_etag_matches(im, etag)) || (!im && ius && (t = s3_parse_http_date(ius)) >= 0 && mtime > t)) {
		s3_error(s, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
		return -1;
	}
	if ((inm && httpd_etag_matches(inm, etag)) ||
	    (!inm && ims && (t = s3_parse_http_date(ims)) >= 0 && mtime <= t)) {
		httpd_respond_str(s->req, 304, NULL, "");
		return -1;
	}
	return 0;
}

static void s3_send(struct s3req *s, const struct catalog_repo *repo, const struct catalog_snapshot *snap,
		    const struct catalog_entry *e)
{
	struct mirror_routes *rt = s->rt;
	char etag[80], date[30];
	int64_t a, b;

	s3_etag(e->sha256, etag);
	s3_http_date(snap->synced_at, date);
	httpd_add_header(s->req, "ETag", etag);
	httpd_add_header(s->req, "Last-Modified", date);
	httpd_add_header(s->req, "x-amz-version-id", snap->commit);
	httpd_add_header(s->req, "X-Repo-Commit", snap->commit);
	if (s3_conditions(s, etag, snap->synced_at))
		return;
	if (httpd_header(s->req, "X-Hubmirror-Head")) {
		/* an agent's GetObject (docs/protocols/s3.md): the answer's headers, the bytes from the swarm.
		 * Nothing more: a client that sends the header itself reads this answer, so it carries no
		 * capability (the agent takes a guarded snapshot with a token of its own) */
		httpd_add_headerf(s->req, "X-Linked-Size", "%" PRId64, e->size);
		httpd_respond(s->req, 200, "application/octet-stream", "", 0);
		return;
	}
	if (e->size > 0 && httpd_header(s->req, "Range") &&
	    httpd_parse_range(httpd_header(s->req, "Range"), e->size, &a, &b) < 0) {
		httpd_add_headerf(s->req, "Content-Range", "bytes */%" PRId64, e->size);
		s3_error(s, 416, "InvalidRange", "The requested range is not satisfiable");
		return;
	}
	{
		struct mirror_ondemand_file of = {repo->hub, s->type,   repo->name, snap->commit,  repo->follow_rev,
						  e->path,   e->sha256, e->size,    snap->repo_id, false};
		if (mirror__send_file(rt, s->req, snap->id, &of))
			s3_error(s, 503, "ServiceUnavailable", "The file is temporarily unavailable on this mirror.");
	}
}

static void s3_object(struct s3req *s)
{
	struct mirror_routes *rt = s->rt;
	struct s3_key k;
	struct catalog_repo repo;
	struct catalog_snapshot snap;
	struct catalog_entry e;
	bool found = false;
	int r;

	if (s3_key_parse(s->key, &k) || hub_check_name(strcmp(s->hub, "ms") ? HUB_HF : HUB_MS, k.name)) {
		/* (a name the hub could not have reaches no lookup) */
		if (k.name)
			s3_key_release(&k);
		s3_error(s, 404, "NoSuchKey", "The specified key does not exist.");
		return;
	}
	r = catalog_resolve_lite(rt->data->catalog, s->hub, s->type, k.name, k.rev, &repo, &snap, &found);
	if (found && !mirror_access_visible(rt->access, s->token, &repo)) {
		/* a private repo the key's token may not see is one the mirror lacks (the answer below) */
		r = HM_ERR_NOT_FOUND;
	} else if (found && rt->access && !mirror_access_allows(rt->access, s->token, s->hub, s->type, k.name)) {
		/* a guarded one is refused, saying what would open it */
		s3_error(s, 403, "AccessDenied",
			 s->token ? "Access Denied: this access key's token does not cover this "
				    "repository on this mirror"
				  : "Access Denied: this repository needs a signed request with an access key "
				    "whose token covers it");
		goto out_repo;
	} else if (found && !mirror_access_content_open(rt->access, &repo)) {
		s3_error(s, 403, "AccessDenied",
			 "Access Denied: the repository is gated upstream, and its operator has not "
			 "opened it on this mirror");
		goto out_repo;
	}
	if (r) {
		s3_error(s, r == HM_ERR_NOT_FOUND ? 404 : 500, r == HM_ERR_NOT_FOUND ? "NoSuchKey" : "InternalError",
			 r == HM_ERR_NOT_FOUND ? "The specified key does not exist." : "catalog error");
		goto out_repo;
	}
	if (!*k.path || path_check_str(k.path) || catalog_snapshot_file(rt->data->catalog, snap.id, k.path, &e)) {
		s3_error(s, 404, "NoSuchKey", "The specified key does not exist.");
		goto out_repo;
	}
	s3_send(s, &repo, &snap, &e);
	catalog_entry_release(&e);
out_repo:
	if (found)
		catalog_repo_release(&repo);
	s3_key_release(&k);
}

/* ---- ListBuckets, GetBucketLocation ---- */

static void s3_respond_xml(struct s3req *s, struct buf *b)
{
	httpd_respond(s->req, 200, "application/xml", b->data, b->len);
	buf_release(b);
}

static void s3_list_buckets(struct s3req *s)
{
	static const char *const names[] = { "hf", "hf-datasets", "ms", "ms-datasets" };
	char iso[25];
	struct buf b;

	s3_iso_date(0, iso);
	buf_init(&b);
	buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		     "<Owner><ID>hubmirror</ID><DisplayName>hubmirror</DisplayName></Owner><Buckets>");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		buf_addf(&b, "<Bucket><Name>%s</Name><CreationDate>%s</CreationDate></Bucket>", names[i], iso);
	buf_adds(&b, "</Buckets></ListAllMyBucketsResult>\n");
	s3_respond_xml(s, &b);
}

static void s3_location(struct s3req *s)
{
	struct buf b;

	buf_init(&b);
	/* empty: us-east-1, the region every client signs for by default */
	buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"></LocationConstraint>\n");
	s3_respond_xml(s, &b);
}

/* ---- the router ---- */

static void s3_bucket_request(struct s3req *s)
{
	const char *q = httpd_query(s->req);
	static const char *const unsupported[] = { "acl", "policy", "versioning", "versions", "uploads", "lifecycle",
						   "cors", "tagging", "website", "logging", "notification",
						   "replication", "encryption", "object-lock", "uploadId" };

	if (s3_query_has(q, "location")) {
		s3_location(s);
		return;
	}
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
		if (s3_query_has(q, unsupported[i])) {
			s3_error(s, 501, "NotImplemented",
				 "This mirror's S3 API reads buckets, listings and objects; it has no such "
				 "subresource.");
			return;
		}
	if (!strcmp(httpd_method(s->req), "HEAD")) {
		httpd_respond_str(s->req, 200, "application/xml", "");
		return;
	}
	mirror__s3_list(s->rt, s->req, s->bucket, s->hub, s->type, s->token, s->request_id);
}

static int s3_handle(struct mirror_routes *rt, struct httpd_req *req, const char *path)
{
	struct s3req s = { rt, req, "", NULL, NULL, NULL, NULL, NULL };
	const char *m = httpd_method(req);
	unsigned char id[8];

	httpd_set_route(req, "s3");
	if (RAND_bytes(id, sizeof(id)) != 1)
		memset(id, 0, sizeof(id));
	hex_encode(id, sizeof(id), s.request_id);
	for (char *p = s.request_id; *p; p++)
		*p = (char)(*p >= 'a' ? *p - 32 : *p);
	httpd_add_header(req, "x-amz-request-id", s.request_id);
	if (s3_path_parse(path, &s.bucket, &s.key)) {
		s3_error(&s, 400, "InvalidURI", "Couldn't parse the specified URI.");
		goto out;
	}
	if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
		httpd_add_header(req, "Allow", "GET, HEAD");
		s3_error(&s, 405, "MethodNotAllowed", "This mirror's S3 API is read-only.");
		goto out;
	}
	if (s3_auth(&s))
		goto out;
	if (!s.bucket) {
		s3_list_buckets(&s);
	} else if (s3_bucket(s.bucket, &s.hub, &s.type)) {
		s3_error(&s, 404, "NoSuchBucket", "The specified bucket does not exist");
	} else if (!s.key) {
		s3_bucket_request(&s);
	} else {
		s3_object(&s);
	}
out:
	free(s.token);
	free(s.bucket);
	free(s.key);
	return 0;
}

int mirror__route_s3(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	char *path;
	int r;

	(void)arg;
	path = xasprintf("/%s", rest);
	r = s3_handle(rt, req, path);
	free(path);
	return r;
}

void mirror_routes_set_s3_domain(struct mirror_routes *rt, const char *domain)
{
	rt->s3->domain = domain && *domain ? domain : NULL;
}

/* With --s3-domain D: a Host of D (path-style) or of BUCKET.D (virtual-host style; *bucket, malloc'd).
 * Returns false for any other Host. */
static bool s3_host(const struct mirror_routes *rt, const struct httpd_req *req, char **bucket)
{
	return s3_host_bucket(httpd_header(req, "Host"), rt->s3->domain, bucket);
}

int mirror__route_s3_host(struct mirror_routes *rt, struct httpd_req *req)
{
	char *bucket = NULL, *path;
	int r;

	if (!rt->s3->domain || !s3_host(rt, req, &bucket))
		return HTTPD_PASS;
	/* the S3 host: all its paths are S3's; a bucket in the host name is the path's first segment */
	path = bucket ? xasprintf("/%s%s", bucket, httpd_path(req)) : NULL;
	r = s3_handle(rt, req, path ? path : httpd_path(req));
	free(path);
	free(bucket);
	return r;
}

int mirror__route_s3_signed(struct mirror_routes *rt, struct httpd_req *req, const char *rest, const char *arg)
{
	(void)rest;
	(void)arg;
	if (!s3_signed(httpd_header(req, "Authorization"), httpd_query(req)))
		return HTTPD_PASS;
	return s3_handle(rt, req, httpd_path(req));
}
