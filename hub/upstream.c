/*
 * upstream.c - resolving and listing snapshots on Hugging Face and ModelScope: the client, what both
 * hubs' answers share (checking entries, errors, JSON), the entry points and the refs listing. Each
 * hub's own requests and answers: upstream-hf.c, upstream-ms.c (upstream-int.h between them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "upstream-int.h"

static char *strip_slash(const char *s)
{
	size_t n = strlen(s);
	while (n && s[n - 1] == '/')
		n--;
	return xstrndup(s, n);
}

const struct upstream_hub *upstream__hub(enum hub_kind hub)
{
	return hub == HUB_MS ? &upstream__ms : &upstream__hf;
}

char *hub_file_url(const struct hub_client *c, const struct hub_spec *spec, const char *commit, const char *path)
{
	return upstream__hub(spec->hub)->file_url(c, spec, commit, path);
}

int hub_client_new(struct hub_http *http, const struct hub_client_config *cfg, struct hub_client **out)
{
	struct hub_client *c;
	const char *bases[2] = { cfg ? cfg->hf_base : NULL, cfg ? cfg->ms_base : NULL };

	/* Checked here so that no request built from them can fail to start later. */
	for (int i = 0; i < 2; i++)
		if (bases[i] && !skip_prefix(bases[i], "http://") && !skip_prefix(bases[i], "https://"))
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
		return upstream__hub(hub)->forbidden_is_disabled && !code ? HM_ERR_DISABLED : HM_ERR_AUTH;
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

void upstream__fetch_finish(struct upstream__fetch *f, int result)
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

void upstream__set_message(struct upstream__fetch *f, const char *m)
{
	free(f->snap->message);
	f->snap->message = m ? xstrdup(m) : NULL;
}

/* Add a file entry after checking it. Returns 0, or HM_ERR_UPSTREAM for a malformed entry. */
int upstream__add_file(struct upstream__fetch *f, const char *path, size_t pathlen, json_int_t size,
		       const char *git_oid, const char *sha256, bool lfs)
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
			hf->sha256[i] =
				(char)((sha256[i] >= 'A' && sha256[i] <= 'F') ? sha256[i] - 'A' + 'a' : sha256[i]);
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
int upstream__api_answer(struct upstream__fetch *f, int result, const struct hub_http_resp *resp, const char *body,
		      size_t len, json_t **json)
{
	json_error_t jerr;

	f->snap->requests += (uint64_t)resp->tries + (uint64_t)resp->redirects;
	if (result) {
		char *m = xasprintf("%s%s%s", err_str(result), resp->transport_error ? ": " : "",
				    resp->transport_error ? resp->transport_error : "");
		upstream__set_message(f, m);
		free(m);
		return result;
	}
	if (resp->status != 200) {
		upstream__set_message(f, resp->error_message);
		if (resp->status == 429 || resp->status >= 500)
			return HM_ERR_HTTP;
		return hub_classify_error(f->spec.hub, resp->status, resp->error_code);
	}
	mirror_headers(f->snap, resp);
	/* JSON_ALLOW_NUL: a hostile or broken upstream may put "\u0000" in a path. Without it that one
	 * entry fails the whole answer, so the repo could never sync; with it the entry reaches
	 * upstream__add_file(), whose path_check() sees the full length (json_string_length) and skips it. Other
	 * strings are read with json_string_value() and so end at the NUL, or are checked as hex. */
	*json = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!*json) {
		char *m = xasprintf("bad JSON from upstream: %s (line %d)", jerr.text, jerr.line);
		upstream__set_message(f, m);
		free(m);
		return HM_ERR_JSON;
	}
	return 0;
}

void upstream__request_json(struct upstream__fetch *f, const char *url,
			 void (*done)(void *, int, const struct hub_http_resp *, const char *, size_t))
{
	struct hub_http_req_opts o = {
		.url = url,
		.token = hub_client_token(f->c, f->spec.hub),
		.token_cookie = upstream__hub(f->spec.hub)->token_cookie,
		.max_body = MAX_JSON,
		.on_done = done,
		.ud = f,
	};

	if (!hub_http_request(f->c->http, &o)) {
		upstream__set_message(f, "bad upstream URL");
		upstream__fetch_finish(f, -EINVAL);
	}
}

/* Is the revision a name that may be a tag (not main/master, not a commit id, not refs/...)? */
bool upstream__maybe_tag(const char *rev)
{
	return strcmp(rev, "main") && strcmp(rev, "master") && !hex_is_lower(rev, 40) && !skip_prefix(rev, "refs/");
}

/* The answer to "is the revision a tag?" (HF refs, ModelScope revisions): tags is the answer's list of
 * tags, whose entries name the tag under key. One that fails or is odd leaves the revision a branch:
 * the snapshot stands, and so does the listing's message. */
void upstream__tag_answer(struct upstream__fetch *f, int result, const struct hub_http_resp *resp, const char *body,
			  size_t len, bool ms)
{
	json_t *j = NULL, *tags, *it;
	size_t i;
	char *keep = f->snap->message ? xstrdup(f->snap->message) : NULL;
	const char *key = ms ? "Revision" : "name";

	if (!upstream__api_answer(f, result, resp, body, len, &j)) {
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
	upstream__fetch_finish(f, 0);
}

/* ---- entry ------------------------------------------------------------------------------------- */

int hub_snapshot_fetch(struct hub_client *c, const struct hub_spec *spec, const char *known_commit,
		       const char *known_stamp, unsigned flags, hub_snapshot_cb cb, void *ud)
{
	struct upstream__fetch *f;

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
	f->known_stamp = known_stamp ? xstrdup(known_stamp) : NULL; /* read by ModelScope's */
	upstream__hub(spec->hub)->fetch(f);
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

void upstream__refs_add(struct hub_refs *out, json_t *arr, const char *kind, const char *prefix, bool ms)
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
	struct upstream__fetch *f = ud;
	struct hub_refs *refs = f->refs = xcalloc(1, sizeof(*refs));
	json_t *j = NULL;
	int r = upstream__api_answer(f, result, resp, body, len, &j);

	if (!r && upstream__hub(f->spec.hub)->refs_read(refs, j)) {
		r = HM_ERR_UPSTREAM;
		upstream__set_message(f, "refs answer is not an object");
	}
	json_decref(j);
	upstream__fetch_finish(f, r);
}

int hub_refs_fetch(struct hub_client *c, const struct hub_spec *spec, hub_refs_cb cb, void *ud)
{
	struct upstream__fetch *f;
	char *url;

	if (!spec->name || hub_check_name(spec->hub, spec->name))
		return -EINVAL;
	url = upstream__hub(spec->hub)->refs_url(c, spec);
	if (!url)
		return -ENOTSUP;
	f = xcalloc(1, sizeof(*f));
	f->c = c;
	f->spec.hub = spec->hub;
	f->spec.type = spec->type;
	f->spec.name = xstrdup(spec->name);
	f->refs_cb = cb;
	f->ud = ud;
	f->snap = xcalloc(1, sizeof(*f->snap));
	upstream__request_json(f, url, refs_done);
	free(url);
	return 0;
}
