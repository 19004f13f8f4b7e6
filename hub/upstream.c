/*
 * upstream.c - resolving and listing snapshots on Hugging Face and ModelScope.
 *
 * Hugging Face: GET /api/{models,datasets}/{repo}/revision/{rev} gives the commit (sha) and the
 * metadata; when the commit is new, GET .../tree/{commit}?recursive=true, following Link rel="next"
 * (same origin only, so a hostile Link cannot send our token elsewhere).
 *
 * ModelScope: the files listing (models: one answer; datasets: PageNumber/PageSize pages until a short
 * page) is the only way to see a revision, and it names no commit for the revision as a whole. So
 * the snapshot id is a tree id: sha1 over the sorted "path\0sha256\0size\n" lines. It changes exactly
 * when the content does, costs no extra request, and is 40 hex like a commit.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "upstream.h"

#define MAX_JSON (256u << 20)   /* one listing page or info answer */
#define MAX_PAGES 100000
#define MS_PAGE_SIZE 200

struct hub_client {
	struct hub_http *http;
	char *hf_base;
	char *ms_base;
	char *hf_token;
	char *ms_token;
};

/* One hub_snapshot_fetch in flight. */
struct fetch {
	struct hub_client *c;
	struct hub_spec spec;
	char *known;
	bool need_meta;        /* ask for the repo's info even when unchanged (ModelScope) */
	bool kind_known;       /* the caller knows whether the revision is a tag: do not ask */
	hub_snapshot_cb cb;
	void *ud;
	struct hub_snapshot *snap;
	size_t cap;
	char *origin_prefix;   /* HF: pages must start with this (scheme://host[:port]/) */
	int page;              /* ModelScope dataset pages */
	char *known_stamp;     /* ModelScope dataset: its info's last update time at the last listing */
	bool info_done;        /* ModelScope: the info was asked already (meta in snap) */
	hub_refs_cb refs_cb;   /* hub_refs_fetch: cb is unused, snap only carries message and requests */
	struct hub_refs *refs; /* its answer so far */
};

static char *strip_slash(const char *s)
{
	size_t n = strlen(s);
	while (n && s[n - 1] == '/')
		n--;
	return xstrndup(s, n);
}

char *hub_file_url(const struct hub_client *c, const struct hub_spec *spec, const char *commit, const char *path)
{
	char *p = hub_url_escape(path, true), *url;

	if (spec->hub == HUB_HF) {
		url = xasprintf("%s/%s%s/resolve/%s/%s", c->hf_base, spec->type == HUB_DATASET ? "datasets/" : "",
				spec->name, commit, p);
	} else {
		char *rev = hub_url_escape(spec->revision, false);
		url = spec->type == HUB_DATASET
			? xasprintf("%s/api/v1/datasets/%s/repo?Source=SDK&Revision=%s&FilePath=%s", c->ms_base,
				    spec->name, rev, p)
			: xasprintf("%s/api/v1/models/%s/repo?Revision=%s&FilePath=%s", c->ms_base, spec->name, rev, p);
		free(rev);
	}
	free(p);
	return url;
}

int hub_client_new(struct hub_http *http, const struct hub_client_config *cfg, struct hub_client **out)
{
	struct hub_client *c;
	const char *bases[2] = { cfg ? cfg->hf_base : NULL, cfg ? cfg->ms_base : NULL };

	/* Checked here so that no request built from them can fail to start later. */
	for (int i = 0; i < 2; i++)
		if (bases[i] && strncmp(bases[i], "http://", 7) && strncmp(bases[i], "https://", 8))
			return -EINVAL;
	c = xcalloc(1, sizeof(*c));
	c->http = http;
	c->hf_base = strip_slash(cfg && cfg->hf_base ? cfg->hf_base : "https://huggingface.co");
	c->ms_base = strip_slash(cfg && cfg->ms_base ? cfg->ms_base : "https://www.modelscope.cn");
	c->hf_token = cfg && cfg->hf_token && *cfg->hf_token ? xstrdup(cfg->hf_token) : NULL;
	c->ms_token = cfg && cfg->ms_token && *cfg->ms_token ? xstrdup(cfg->ms_token) : NULL;
	*out = c;
	return 0;
}

void hub_client_free(struct hub_client **cp)
{
	struct hub_client *c = cp ? *cp : NULL;

	if (!c)
		return;
	free(c->hf_base);
	free(c->ms_base);
	free(c->hf_token);
	free(c->ms_token);
	free(c);
	*cp = NULL;
}

char *hub_client_base(const struct hub_client *c, enum hub_kind hub)
{
	const char *b = hub == HUB_MS ? c->ms_base : c->hf_base;
	const char *host = strstr(b, "://"), *at, *slash;

	if (!host)
		return xstrdup(b);
	host += 3;
	slash = strchr(host, '/');
	at = memchr(host, '@', slash ? (size_t)(slash - host) : strlen(host));
	if (!at)
		return xstrdup(b);
	return xasprintf("%.*s%s", (int)(host - b), b, at + 1);
}

const char *hub_client_token(const struct hub_client *c, enum hub_kind hub)
{
	return hub == HUB_MS ? c->ms_token : c->hf_token;
}

bool hub_token_valid(const char *t)
{
	size_t n = 0;

	if (!t)
		return true;
	for (; t[n]; n++)
		if (t[n] <= ' ' || t[n] > '~' || t[n] == ';' || t[n] == ',' || n >= 4096)
			return false;
	return n > 0;
}

void hub_snapshot_free(struct hub_snapshot **sp)
{
	struct hub_snapshot *s = sp ? *sp : NULL;

	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++) {
		free(s->files[i].path);
		free(s->files[i].url);
	}
	free(s->files);
	json_decref(s->meta);
	free(s->message);
	free(s);
	*sp = NULL;
}

int hub_classify_error(enum hub_kind hub, long status, const char *code)
{
	if (code && !strcmp(code, "GatedRepo"))
		return HM_ERR_GATED;
	if (code && (!strcmp(code, "RepoNotFound") || !strcmp(code, "RevisionNotFound") ||
		     !strcmp(code, "EntryNotFound")))
		return HM_ERR_NOT_FOUND;
	if (status == 404 || status == 410)
		return HM_ERR_NOT_FOUND;
	if (status == 401)
		return HM_ERR_AUTH;
	if (status == 403)
		return hub == HUB_HF && !code ? HM_ERR_DISABLED : HM_ERR_AUTH;
	return HM_ERR_HTTP;
}

static int by_path(const void *a, const void *b)
{
	return strcmp((*(const struct hub_file *const *)a)->path, (*(const struct hub_file *const *)b)->path);
}

/* A file whose path is also a folder of other files ("a" next to "a/b") cannot be laid out as a tree
 * (the store's snapshots, the torrent, a mount, the HF cache): leave it out, counted with the unsafe
 * paths, and keep the folder. Also drops exact duplicates (the second one). */
static void drop_conflicts(struct hub_snapshot *s)
{
	struct hub_file **v = xcalloc(s->nfiles ? s->nfiles : 1, sizeof(*v));
	bool *drop = xcalloc(s->nfiles ? s->nfiles : 1, sizeof(*drop));
	size_t keep = 0;

	for (size_t i = 0; i < s->nfiles; i++)
		v[i] = &s->files[i];
	qsort(v, s->nfiles, sizeof(*v), by_path);
	for (size_t i = 0; i + 1 < s->nfiles; i++)
		if (!strcmp(v[i]->path, v[i + 1]->path))
			drop[v[i + 1] - s->files] = true;
	for (size_t i = 0; i < s->nfiles; i++) {
		const char *p = s->files[i].path;
		for (const char *slash = strchr(p, '/'); slash; slash = strchr(slash + 1, '/')) {
			/* a copy: the sorted array points at the paths themselves */
			struct hub_file key = { .path = xstrndup(p, (size_t)(slash - p)) }, *kp = &key, **hit;
			hit = bsearch(&kp, v, s->nfiles, sizeof(*v), by_path);
			free(key.path);
			if (hit)
				drop[*hit - s->files] = true;
		}
	}
	for (size_t i = 0; i < s->nfiles; i++) {
		if (drop[i]) {
			free(s->files[i].path);
			free(s->files[i].url);
			s->skipped_unsafe++;
		} else {
			s->files[keep++] = s->files[i];
		}
	}
	s->nfiles = keep;
	free(drop);
	free(v);
}

static void fetch_finish(struct fetch *f, int result)
{
	if (!result && f->snap && !f->snap->unchanged)
		drop_conflicts(f->snap);
	if (f->refs_cb) {
		struct hub_refs *refs = f->refs ? f->refs : xcalloc(1, sizeof(*refs));
		refs->requests = f->snap->requests;
		refs->message = f->snap->message ? xstrdup(f->snap->message) : NULL;
		hub_snapshot_free(&f->snap);
		f->refs_cb(f->ud, result, refs);
	} else {
		f->cb(f->ud, result, f->snap);
	}
	hub_spec_release(&f->spec);
	free(f->known);
	free(f->known_stamp);
	free(f->origin_prefix);
	free(f);
}

static void set_message(struct fetch *f, const char *m)
{
	free(f->snap->message);
	f->snap->message = m ? xstrdup(m) : NULL;
}

/* Add a file entry after checking it. Returns 0, or HM_ERR_UPSTREAM for a malformed entry. */
static int add_file(struct fetch *f, const char *path, size_t pathlen, json_int_t size, const char *git_oid,
		    const char *sha256, bool lfs)
{
	struct hub_file *hf;

	if (size < 0 || (git_oid && !hex_is_lower(git_oid, 40)))
		return HM_ERR_UPSTREAM;
	if (path_check(path, pathlen)) {
		f->snap->skipped_unsafe++;
		return 0;
	}
	if (f->snap->nfiles == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->snap->files = xreallocarray(f->snap->files, f->cap, sizeof(*f->snap->files));
	}
	hf = &f->snap->files[f->snap->nfiles];
	memset(hf, 0, sizeof(*hf));
	hf->path = xstrndup(path, pathlen);
	hf->size = size;
	hf->lfs = lfs;
	if (git_oid)
		memcpy(hf->git_oid, git_oid, 41);
	if (sha256) {
		for (int i = 0; i < 64; i++) /* ModelScope has been seen to send upper case */
			hf->sha256[i] = (char)((sha256[i] >= 'A' && sha256[i] <= 'F') ? sha256[i] - 'A' + 'a' : sha256[i]);
		hf->sha256[64] = '\0';
	}
	hf->url = hub_file_url(f->c, &f->spec, f->snap->commit, hf->path);
	f->snap->nfiles++;
	return 0;
}

/* An upstream that is itself a hubmirror says its tier and when it last asked the Hub about the repo
 * (docs/deployment.md); the first answer that says so counts. Anything malformed reads as not said. */
static void mirror_headers(struct hub_snapshot *snap, const struct hub_http_resp *resp)
{
	char *end;
	long long v;

	if (snap->upstream_tier || !resp->mirror_tier)
		return;
	errno = 0;
	v = strtoll(resp->mirror_tier, &end, 10);
	if (errno || end == resp->mirror_tier || *end || v < 1 || v > 100)
		return;
	snap->upstream_tier = (int)v;
	if (resp->origin_checked) {
		errno = 0;
		v = strtoll(resp->origin_checked, &end, 10);
		if (!errno && end != resp->origin_checked && !*end && v > 0)
			snap->origin_checked_at = v;
	}
}

/* Common handling of a finished API request: transport errors, error statuses, JSON parse.
 * Returns 0 with *json set, or an error (message recorded). */
static int api_answer(struct fetch *f, int result, const struct hub_http_resp *resp, const char *body,
		      size_t len, json_t **json)
{
	json_error_t jerr;

	f->snap->requests += (uint64_t)resp->tries + (uint64_t)resp->redirects;
	if (result) {
		char *m = xasprintf("%s%s%s", err_str(result), resp->transport_error ? ": " : "",
				    resp->transport_error ? resp->transport_error : "");
		set_message(f, m);
		free(m);
		return result;
	}
	if (resp->status != 200) {
		set_message(f, resp->error_message);
		if (resp->status == 429 || resp->status >= 500)
			return HM_ERR_HTTP;
		return hub_classify_error(f->spec.hub, resp->status, resp->error_code);
	}
	mirror_headers(f->snap, resp);
	/* JSON_ALLOW_NUL: a hostile or broken upstream may put "\u0000" in a path. Without it that one
	 * entry fails the whole answer, so the repo could never sync; with it the entry reaches
	 * add_file(), whose path_check() sees the full length (json_string_length) and skips it. Other
	 * strings are read with json_string_value() and so end at the NUL, or are checked as hex. */
	*json = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!*json) {
		char *m = xasprintf("bad JSON from upstream: %s (line %d)", jerr.text, jerr.line);
		set_message(f, m);
		free(m);
		return HM_ERR_JSON;
	}
	return 0;
}

static void request_json(struct fetch *f, const char *url,
			 void (*done)(void *, int, const struct hub_http_resp *, const char *, size_t))
{
	struct hub_http_req_opts o = {
		.url = url,
		.token = hub_client_token(f->c, f->spec.hub),
		.token_cookie = f->spec.hub == HUB_MS ? "m_session_id" : NULL,
		.max_body = MAX_JSON,
		.on_done = done,
		.ud = f,
	};

	if (!hub_http_request(f->c->http, &o)) {
		set_message(f, "bad upstream URL");
		fetch_finish(f, -EINVAL);
	}
}

/* ---- Hugging Face ---------------------------------------------------------------------------- */

static void hf_meta(struct fetch *f, json_t *info)
{
	json_t *m = json_object(), *v, *card = json_object_get(info, "cardData");
	static const char *const copy[] = { "private", "tags", "pipeline_tag", "library_name", "downloads",
					    "likes", "lastModified", "disabled", "createdAt" };

	v = json_object_get(info, "gated");
	json_object_set_new(m, "gated", json_is_string(v) ? json_copy(v) : json_string("false"));
	/* the name upstream answers with: another one when the repo was renamed (the request followed
	 * a redirect from the old name) */
	v = json_object_get(info, "id");
	if (json_is_string(v) && !hub_check_name(HUB_HF, json_string_value(v)))
		json_object_set(m, "upstream_name", v);
	for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++)
		if ((v = json_object_get(info, copy[i])) && !json_is_null(v))
			json_object_set(m, !strcmp(copy[i], "lastModified") ? "last_modified"
					   : !strcmp(copy[i], "createdAt") ? "created_at" : copy[i], v);
	if (json_is_object(card)) {
		json_object_set(m, "card_data", card);
		if (json_is_string(json_object_get(card, "license")))
			json_object_set(m, "license", json_object_get(card, "license"));
	}
	f->snap->meta = m;
}

static void hf_tree_page(struct fetch *f, const char *url);

/* Is the revision a name that may be a tag (not main/master, not a commit id, not refs/...)? */
static bool maybe_tag(const char *rev)
{
	return strcmp(rev, "main") && strcmp(rev, "master") && !hex_is_lower(rev, 40) && strncmp(rev, "refs/", 5);
}

/* The answer to "is the revision a tag?" (HF refs, ModelScope revisions): tags is the answer's list of
 * tags, whose entries name the tag under key. One that fails or is odd leaves the revision a branch:
 * the snapshot stands, and so does the listing's message. */
static void tag_answer(struct fetch *f, int result, const struct hub_http_resp *resp, const char *body, size_t len,
		       bool ms)
{
	json_t *j = NULL, *tags, *it;
	size_t i;
	char *keep = f->snap->message ? xstrdup(f->snap->message) : NULL;
	const char *key = ms ? "Revision" : "name";

	if (!api_answer(f, result, resp, body, len, &j)) {
		tags = ms ? json_object_get(json_object_get(json_object_get(j, "Data"), "RevisionMap"), "Tags")
			  : json_object_get(j, "tags");
		json_array_foreach(tags, i, it)
			if (json_is_string(json_object_get(it, key)) &&
			    !strcmp(json_string_value(json_object_get(it, key)), f->spec.revision))
				f->snap->is_tag = true;
	}
	json_decref(j);
	free(f->snap->message);
	f->snap->message = keep;
	fetch_finish(f, 0);
}

static void hf_refs_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	tag_answer(ud, result, resp, body, len, false);
}

/* The listing is in: for a revision that may be a tag, ask which it is (GET .../refs). */
static void hf_listed(struct fetch *f)
{
	char *url;

	if (f->kind_known || !maybe_tag(f->spec.revision)) {
		fetch_finish(f, 0);
		return;
	}
	url = xasprintf("%s/api/%ss/%s/refs", f->c->hf_base, hub_type_name(f->spec.type), f->spec.name);
	request_json(f, url, hf_refs_done);
	free(url);
}

static void hf_tree_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct fetch *f = ud;
	json_t *arr = NULL, *e;
	size_t i;
	char *next = NULL;
	int r = api_answer(f, result, resp, body, len, &arr);

	if (r)
		goto fail;
	if (!json_is_array(arr)) {
		r = HM_ERR_UPSTREAM;
		set_message(f, "tree listing is not a JSON array");
		goto fail;
	}
	json_array_foreach(arr, i, e) {
		const char *type = json_string_value(json_object_get(e, "type"));
		json_t *jp = json_object_get(e, "path"), *lfs = json_object_get(e, "lfs");
		json_t *jsize = json_object_get(e, "size");
		const char *oid = json_string_value(json_object_get(e, "oid")), *sha = NULL;

		if (!type || strcmp(type, "file"))
			continue; /* directories */
		if (!json_is_string(jp) || !json_is_integer(jsize)) {
			r = HM_ERR_UPSTREAM;
			break;
		}
		if (json_is_object(lfs)) {
			sha = json_string_value(json_object_get(lfs, "oid"));
			if (!sha || !hex_is_lower(sha, 64) ||
			    json_integer_value(json_object_get(lfs, "size")) != json_integer_value(jsize)) {
				r = HM_ERR_UPSTREAM;
				break;
			}
		}
		r = add_file(f, json_string_value(jp), json_string_length(jp), json_integer_value(jsize), oid, sha,
			     sha != NULL);
		if (r)
			break;
	}
	if (r) {
		set_message(f, "malformed tree entry");
		goto fail;
	}
	json_decref(arr);
	arr = NULL;
	next = resp->link ? hub_link_next(resp->link) : NULL;
	if (next) {
		if (strncmp(next, f->origin_prefix, strlen(f->origin_prefix)) || ++f->page > MAX_PAGES) {
			free(next);
			set_message(f, "tree pagination leaves the upstream host");
			r = HM_ERR_UPSTREAM;
			goto fail;
		}
		hf_tree_page(f, next);
		free(next);
		return;
	}
	hf_listed(f);
	return;
fail:
	json_decref(arr);
	fetch_finish(f, r);
}

static void hf_tree_page(struct fetch *f, const char *url)
{
	request_json(f, url, hf_tree_done);
}

static void hf_info_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct fetch *f = ud;
	json_t *info = NULL;
	const char *sha;
	char *url;
	int r = api_answer(f, result, resp, body, len, &info);

	if (r) {
		fetch_finish(f, r);
		return;
	}
	sha = json_string_value(json_object_get(info, "sha"));
	if (!sha || !hex_is_lower(sha, 40)) {
		json_decref(info);
		set_message(f, "repo info has no valid sha");
		fetch_finish(f, HM_ERR_UPSTREAM);
		return;
	}
	memcpy(f->snap->commit, sha, 41);
	hf_meta(f, info);
	json_decref(info);
	if (f->known && !strcmp(f->known, f->snap->commit)) {
		f->snap->unchanged = true;
		fetch_finish(f, 0);
		return;
	}
	url = xasprintf("%s/api/%ss/%s/tree/%s?recursive=true&expand=false", f->c->hf_base,
			hub_type_name(f->spec.type), f->spec.name, f->snap->commit);
	hf_tree_page(f, url);
	free(url);
}

/* ---- ModelScope ------------------------------------------------------------------------------ */

static int cmp_files(const void *a, const void *b)
{
	return strcmp(((const struct hub_file *)a)->path, ((const struct hub_file *)b)->path);
}

/* The tree id of a ModelScope listing (see the top of this file). */
static void ms_tree_id(struct fetch *f)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[20];
	unsigned int n = 0;
	char line[96];

	qsort(f->snap->files, f->snap->nfiles, sizeof(*f->snap->files), cmp_files);
	EVP_DigestInit_ex(ctx, EVP_sha1(), NULL);
	for (size_t i = 0; i < f->snap->nfiles; i++) {
		const struct hub_file *x = &f->snap->files[i];
		int k = snprintf(line, sizeof(line), "%c%s%c%lld\n", 0, x->sha256, 0, (long long)x->size);
		EVP_DigestUpdate(ctx, x->path, strlen(x->path));
		EVP_DigestUpdate(ctx, line, (size_t)k);
	}
	EVP_DigestFinal_ex(ctx, md, &n);
	EVP_MD_CTX_free(ctx);
	hex_encode(md, 20, f->snap->commit);
}

static void ms_dataset_page(struct fetch *f);

static void ms_revisions_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	tag_answer(ud, result, resp, body, len, true);
}

/* For a revision that may be a tag: ask ModelScope's revisions which it is. */
static void ms_revisions(struct fetch *f)
{
	char *url = xasprintf("%s/api/v1/%ss/%s/revisions", f->c->ms_base, hub_type_name(f->spec.type), f->spec.name);

	request_json(f, url, ms_revisions_done);
	free(url);
}

/* Listed (and its info read, when it was asked): done, unless the revision may be a tag. */
static void ms_listed(struct fetch *f)
{
	if (!f->snap->unchanged && !f->kind_known && maybe_tag(f->spec.revision))
		ms_revisions(f);
	else
		fetch_finish(f, 0);
}

static bool is_hex64_any_case(const char *s)
{
	if (!s || strlen(s) != 64)
		return false;
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

/* The repo's info, for what the listing does not say: whether it is private (Visibility 5 is public;
 * 1 private, 3 internal). A private upstream repo is closed on the mirror like a gated one
 * (docs/security.md), so a repo whose info upstream refuses counts as private; another failure leaves
 * it unknown and does not fail the sync. Asked once the listing is in, when it changed or when the
 * caller does not know the repo's visibility (HUB_FETCH_NEED_META). */
static void ms_info_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct fetch *f = ud;
	json_t *env = NULL, *vis, *stamp;
	char *keep = f->snap->message ? xstrdup(f->snap->message) : NULL;
	int r = api_answer(f, result, resp, body, len, &env);

	if (!f->snap->meta)
		f->snap->meta = json_object();
	if (r == HM_ERR_AUTH || r == HM_ERR_GATED) {
		json_object_set_new(f->snap->meta, "private", json_true());
	} else if (!r && json_is_integer(vis = json_object_get(json_object_get(env, "Data"), "Visibility"))) {
		json_object_set_new(f->snap->meta, "private", json_boolean(json_integer_value(vis) != 5));
	}
	if (!r && json_is_integer(stamp = json_object_get(json_object_get(env, "Data"), "LastUpdatedTime")) &&
	    json_integer_value(stamp) > 0) {
		/* ISO 8601 like the Hub's lastModified; for a dataset also what tells a change */
		time_t t = (time_t)json_integer_value(stamp);
		char iso[32];
		strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%S.000Z", gmtime(&t));
		json_object_set_new(f->snap->meta, "last_modified", json_string(iso));
	}
	if (!r && json_is_integer(stamp = json_object_get(json_object_get(env, "Data"), "CreatedTime")) &&
	    json_integer_value(stamp) > 0) {
		time_t t = (time_t)json_integer_value(stamp);
		char iso[32];
		strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%S.000Z", gmtime(&t));
		json_object_set_new(f->snap->meta, "created_at", json_string(iso));
	}
	free(f->snap->message); /* the listing's outcome stands, not the info's */
	f->snap->message = keep;
	json_decref(env);
	if (!f->info_done && f->spec.type == HUB_DATASET) {
		/* asked first (see hub_snapshot_fetch): unchanged when the update time is the one of the
		 * last listing; else list */
		const char *now = json_string_value(json_object_get(f->snap->meta, "last_modified"));
		f->info_done = true;
		if (f->known && f->known_stamp && now && !strcmp(now, f->known_stamp)) {
			memcpy(f->snap->commit, f->known, 41);
			f->snap->unchanged = true;
			fetch_finish(f, 0);
			return;
		}
		f->page = 1;
		ms_dataset_page(f);
		return;
	}
	ms_listed(f);
}

static void ms_info(struct fetch *f)
{
	char *url = xasprintf("%s/api/v1/%ss/%s", f->c->ms_base, hub_type_name(f->spec.type), f->spec.name);

	request_json(f, url, ms_info_done);
	free(url);
}

static void ms_list_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct fetch *f = ud;
	json_t *env = NULL, *files, *e;
	size_t i, n = 0;
	int r = api_answer(f, result, resp, body, len, &env);

	if (r)
		goto fail;
	if (json_integer_value(json_object_get(env, "Code")) != 200 || !json_is_true(json_object_get(env, "Success"))) {
		set_message(f, json_string_value(json_object_get(env, "Message")));
		r = HM_ERR_UPSTREAM;
		goto fail;
	}
	files = json_object_get(json_object_get(env, "Data"), "Files");
	if (!json_is_array(files)) {
		set_message(f, "listing has no Data.Files");
		r = HM_ERR_UPSTREAM;
		goto fail;
	}
	n = json_array_size(files);
	json_array_foreach(files, i, e) {
		const char *type = json_string_value(json_object_get(e, "Type"));
		json_t *jp = json_object_get(e, "Path"), *js = json_object_get(e, "Size");
		const char *sha = json_string_value(json_object_get(e, "Sha256"));

		if (!type || strcmp(type, "blob"))
			continue;
		if (!json_is_string(jp) || !json_is_integer(js) || !is_hex64_any_case(sha)) {
			set_message(f, "malformed file entry");
			r = HM_ERR_UPSTREAM;
			goto fail;
		}
		r = add_file(f, json_string_value(jp), json_string_length(jp), json_integer_value(js), NULL, sha,
			     json_is_true(json_object_get(e, "IsLFS")));
		if (r) {
			set_message(f, "malformed file entry");
			goto fail;
		}
	}
	json_decref(env);
	env = NULL;
	if (f->spec.type == HUB_DATASET && n >= MS_PAGE_SIZE && ++f->page <= MAX_PAGES) {
		ms_dataset_page(f);
		return;
	}
	ms_tree_id(f);
	if (f->known && !strcmp(f->known, f->snap->commit))
		f->snap->unchanged = true;
	if (f->info_done || (f->snap->unchanged && !f->need_meta)) {
		ms_listed(f);  /* one request for a model that did not change */
		return;
	}
	ms_info(f);
	return;
fail:
	json_decref(env);
	fetch_finish(f, r);
}

static void ms_dataset_page(struct fetch *f)
{
	char *rev = hub_url_escape(f->spec.revision, false);
	char *url = xasprintf("%s/api/v1/datasets/%s/repo/tree?Revision=%s&Root=/&Recursive=True&PageNumber=%d&PageSize=%d",
			      f->c->ms_base, f->spec.name, rev, f->page, MS_PAGE_SIZE);

	request_json(f, url, ms_list_done);
	free(url);
	free(rev);
}

/* ---- entry ------------------------------------------------------------------------------------- */

int hub_snapshot_fetch(struct hub_client *c, const struct hub_spec *spec, const char *known_commit,
		       const char *known_stamp, unsigned flags, hub_snapshot_cb cb, void *ud)
{
	struct fetch *f;
	char *url, *rev;

	if (!spec->name || !spec->revision || hub_check_name(spec->hub, spec->name) ||
	    hub_check_revision(spec->revision))
		return -EINVAL;
	f = xcalloc(1, sizeof(*f));
	f->c = c;
	f->spec.hub = spec->hub;
	f->spec.type = spec->type;
	f->spec.name = xstrdup(spec->name);
	f->spec.revision = xstrdup(spec->revision);
	f->known = known_commit ? xstrdup(known_commit) : NULL;
	f->need_meta = flags & HUB_FETCH_NEED_META;
	f->kind_known = flags & HUB_FETCH_KIND_KNOWN;
	f->cb = cb;
	f->ud = ud;
	f->snap = xcalloc(1, sizeof(*f->snap));
	rev = hub_url_escape(spec->revision, false);
	if (spec->hub == HUB_HF) {
		f->origin_prefix = xasprintf("%s/", c->hf_base);
		url = xasprintf("%s/api/%ss/%s/revision/%s", c->hf_base, hub_type_name(spec->type), spec->name, rev);
		request_json(f, url, hf_info_done);
	} else if (spec->type == HUB_DATASET) {
		/* A ModelScope dataset's listing names no commit, and a big one is many pages: its info comes
		 * first, and the listing only when its update time moved (or is not known yet) */
		free(rev);
		f->known_stamp = known_stamp ? xstrdup(known_stamp) : NULL;
		ms_info(f);
		return 0;
	} else {
		url = xasprintf("%s/api/v1/models/%s/repo/files?Revision=%s&Recursive=True", c->ms_base, spec->name, rev);
		request_json(f, url, ms_list_done);
	}
	free(url);
	free(rev);
	return 0;
}

/* ---- refs -------------------------------------------------------------------------------------- */

void hub_refs_free(struct hub_refs **rp)
{
	struct hub_refs *r = rp ? *rp : NULL;

	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].name);
	free(r->v);
	free(r->message);
	free(r);
	*rp = NULL;
}

/* Add the entries of arr (HF: {name, targetCommit}; ModelScope: {Revision}) as kind; names under
 * prefix ("refs/convert/" for HF's conversions). Odd entries are left out. */
static void refs_add(struct hub_refs *out, json_t *arr, const char *kind, const char *prefix, bool ms)
{
	size_t i;
	json_t *it;

	json_array_foreach(arr, i, it) {
		json_t *jname = json_object_get(it, ms ? "Revision" : "name");
		const char *name = json_string_value(jname);
		const char *commit = ms ? NULL : json_string_value(json_object_get(it, "targetCommit"));
		char *full;

		if (!name || (!ms && (!commit || !hex_is_lower(commit, 40))))
			continue;
		full = xasprintf("%s%s", prefix, name);
		if (hub_check_revision(full) || strlen(name) != json_string_length(jname)) { /* no NUL inside */
			free(full);
			continue;
		}
		out->v = xreallocarray(out->v, out->n + 1, sizeof(*out->v));
		out->v[out->n].name = full;
		out->v[out->n].kind = kind;
		snprintf(out->v[out->n].commit, sizeof(out->v[out->n].commit), "%s", commit ? commit : "");
		out->n++;
	}
}

static void refs_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct fetch *f = ud;
	struct hub_refs *refs = f->refs = xcalloc(1, sizeof(*refs));
	json_t *j = NULL, *map;
	bool ms = f->spec.hub == HUB_MS;
	int r = api_answer(f, result, resp, body, len, &j);

	if (!r) {
		map = ms ? json_object_get(json_object_get(j, "Data"), "RevisionMap") : j;
		if (!json_is_object(map)) {
			r = HM_ERR_UPSTREAM;
			set_message(f, "refs answer is not an object");
		} else {
			refs_add(refs, json_object_get(map, ms ? "Branches" : "branches"), "branch", "", ms);
			refs_add(refs, json_object_get(map, ms ? "Tags" : "tags"), "tag", "", ms);
			if (!ms)
				refs_add(refs, json_object_get(map, "converts"), "convert", "refs/convert/", false);
		}
	}
	json_decref(j);
	fetch_finish(f, r);
}

int hub_refs_fetch(struct hub_client *c, const struct hub_spec *spec, hub_refs_cb cb, void *ud)
{
	struct fetch *f;
	char *url;

	if (!spec->name || hub_check_name(spec->hub, spec->name))
		return -EINVAL;
	if (spec->hub == HUB_MS && spec->type == HUB_DATASET)
		return -ENOTSUP;
	f = xcalloc(1, sizeof(*f));
	f->c = c;
	f->spec.hub = spec->hub;
	f->spec.type = spec->type;
	f->spec.name = xstrdup(spec->name);
	f->refs_cb = cb;
	f->ud = ud;
	f->snap = xcalloc(1, sizeof(*f->snap));
	url = spec->hub == HUB_HF ? xasprintf("%s/api/%ss/%s/refs", c->hf_base, hub_type_name(spec->type), spec->name)
				  : xasprintf("%s/api/v1/models/%s/revisions", c->ms_base, spec->name);
	request_json(f, url, refs_done);
	free(url);
	return 0;
}
