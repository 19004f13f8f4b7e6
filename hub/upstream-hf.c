/*
 * upstream-hf.c - resolving and listing a snapshot on Hugging Face (see upstream-int.h).
 *
 * Hugging Face: GET /api/{models,datasets}/{repo}/revision/{rev} gives the commit (sha) and the
 * metadata; when the commit is new, GET .../tree/{commit}?recursive=true, following Link rel="next"
 * (same origin only, so a hostile Link cannot send our token elsewhere).
 *
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "hf.h"
#include "upstream-int.h"

static void hf_meta(struct upstream__fetch *f, json_t *info)
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

static void hf_tree_page(struct upstream__fetch *f, const char *url);

static void hf_refs_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	upstream__tag_answer(ud, result, resp, body, len, false);
}

/* The listing is in: for a revision that may be a tag, ask which it is (GET .../refs). */
static void hf_listed(struct upstream__fetch *f)
{
	char *url;

	if (f->kind_known || !upstream__maybe_tag(f->spec.revision)) {
		upstream__fetch_finish(f, 0);
		return;
	}
	url = hf_api_url(f->c->hf_base, f->spec.type == HUB_DATASET, f->spec.name, "refs");
	upstream__request_json(f, url, hf_refs_done);
	free(url);
}

static void hf_tree_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct upstream__fetch *f = ud;
	json_t *arr = NULL, *e;
	size_t i;
	char *next = NULL;
	int r = upstream__api_answer(f, result, resp, body, len, &arr);

	if (r)
		goto fail;
	if (!json_is_array(arr)) {
		r = HM_ERR_UPSTREAM;
		upstream__set_message(f, "tree listing is not a JSON array");
		goto fail;
	}
	json_array_foreach(arr, i, e) {
		const char *type = json_string_value(json_object_get(e, "type"));
		json_t *jp = json_object_get(e, "path"), *lfs = json_object_get(e, "lfs");
		json_t *jsize = json_object_get(e, "size"), *jxet = json_object_get(e, "xetHash");
		const char *oid = json_string_value(json_object_get(e, "oid")), *sha = NULL;
		size_t had = f->snap->nfiles;

		if (json_is_null(jxet))
			jxet = NULL;
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
		if (jxet && (!json_is_string(jxet) || !hex_is_lower(json_string_value(jxet), 64))) {
			r = HM_ERR_UPSTREAM;
			break;
		}
		r = upstream__add_file(f, json_string_value(jp), json_string_length(jp), json_integer_value(jsize), oid,
				       sha, sha != NULL);
		if (r)
			break;
		if (jxet && f->snap->nfiles > had)   /* (not when the path was skipped) */
			memcpy(f->snap->files[had].xet_hash, json_string_value(jxet), 65);
	}
	if (r) {
		upstream__set_message(f, "malformed tree entry");
		goto fail;
	}
	json_decref(arr);
	arr = NULL;
	next = resp->link ? hub_link_next(resp->link) : NULL;
	if (next) {
		if (strncmp(next, f->origin_prefix, strlen(f->origin_prefix)) || ++f->page > MAX_PAGES) {
			free(next);
			upstream__set_message(f, "tree pagination leaves the upstream host");
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
	upstream__fetch_finish(f, r);
}

static void hf_tree_page(struct upstream__fetch *f, const char *url)
{
	upstream__request_json(f, url, hf_tree_done);
}

static void hf_info_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct upstream__fetch *f = ud;
	json_t *info = NULL;
	const char *sha;
	char *url, *what;
	int r = upstream__api_answer(f, result, resp, body, len, &info);

	if (r) {
		upstream__fetch_finish(f, r);
		return;
	}
	sha = json_string_value(json_object_get(info, "sha"));
	if (!sha || !hex_is_lower(sha, 40)) {
		json_decref(info);
		upstream__set_message(f, "repo info has no valid sha");
		upstream__fetch_finish(f, HM_ERR_UPSTREAM);
		return;
	}
	memcpy(f->snap->commit, sha, 41);
	hf_meta(f, info);
	json_decref(info);
	if (f->known && !strcmp(f->known, f->snap->commit)) {
		f->snap->unchanged = true;
		upstream__fetch_finish(f, 0);
		return;
	}
	what = xasprintf("tree/%s?recursive=true&expand=false", f->snap->commit);
	url = hf_api_url(f->c->hf_base, f->spec.type == HUB_DATASET, f->spec.name, what);
	hf_tree_page(f, url);
	free(url);
	free(what);
}

static void hf_fetch(struct upstream__fetch *f)
{
	char *rev = hub_url_escape(f->spec.revision, false), *what = xasprintf("revision/%s", rev);
	char *url = hf_api_url(f->c->hf_base, f->spec.type == HUB_DATASET, f->spec.name, what);

	f->origin_prefix = xasprintf("%s/", f->c->hf_base);
	upstream__request_json(f, url, hf_info_done);
	free(url);
	free(what);
	free(rev);
}

static char *hf_file_url(const struct hub_client *c, const struct hub_spec *spec, const char *commit, const char *path)
{
	return hf_resolve_url(c->hf_base, spec->type == HUB_DATASET, spec->name, commit, path);
}

static char *hf_refs_url(const struct hub_client *c, const struct hub_spec *spec)
{
	return hf_api_url(c->hf_base, spec->type == HUB_DATASET, spec->name, "refs");
}

static int hf_refs_read(struct hub_refs *out, json_t *j)
{
	if (!json_is_object(j))
		return -1;
	upstream__refs_add(out, json_object_get(j, "branches"), "branch", "", false);
	upstream__refs_add(out, json_object_get(j, "tags"), "tag", "", false);
	upstream__refs_add(out, json_object_get(j, "converts"), "convert", "refs/convert/", false);
	return 0;
}

const struct upstream_hub upstream__hf = {
	.token_cookie = NULL,
	.fetch = hf_fetch,
	.file_url = hf_file_url,
	.refs_url = hf_refs_url,
	.refs_read = hf_refs_read,
	.forbidden_is_disabled = true,
};
