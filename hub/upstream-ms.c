/*
 * upstream-ms.c - resolving and listing a snapshot on ModelScope (see upstream-int.h).
 *
 * ModelScope: the files listing (models: one answer; datasets: PageNumber/PageSize pages until a short
 * page) is the only way to see a revision, and it names no commit for the revision as a whole. So
 * the snapshot id is a tree id: sha1 over the sorted "path\0sha256\0size\n" lines. It changes exactly
 * when the content does, costs no extra request, and is 40 hex like a commit.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "ms.h"
#include "upstream-int.h"

static int cmp_files(const void *a, const void *b)
{
	return strcmp(((const struct hub_file *)a)->path, ((const struct hub_file *)b)->path);
}

/* The tree id of a ModelScope listing (see the top of upstream-ms.c). */
static void ms_tree_id(struct upstream__fetch *f)
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

static void ms_dataset_page(struct upstream__fetch *f);

static void ms_revisions_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	upstream__tag_answer(ud, result, resp, body, len, true);
}

/* For a revision that may be a tag: ask ModelScope's revisions which it is. */
static void ms_revisions(struct upstream__fetch *f)
{
	char *url = ms_api_url(f->c->ms_base, f->spec.type == HUB_DATASET, f->spec.name, "revisions");

	upstream__request_json(f, url, ms_revisions_done);
	free(url);
}

/* Listed (and its info read, when it was asked): done, unless the revision may be a tag. */
static void ms_listed(struct upstream__fetch *f)
{
	if (!f->snap->unchanged && !f->kind_known && upstream__maybe_tag(f->spec.revision))
		ms_revisions(f);
	else
		upstream__fetch_finish(f, 0);
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
	struct upstream__fetch *f = ud;
	json_t *env = NULL, *vis, *stamp;
	char *keep = f->snap->message ? xstrdup(f->snap->message) : NULL;
	int r = upstream__api_answer(f, result, resp, body, len, &env);

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
			upstream__fetch_finish(f, 0);
			return;
		}
		f->page = 1;
		ms_dataset_page(f);
		return;
	}
	ms_listed(f);
}

static void ms_info(struct upstream__fetch *f)
{
	char *url = ms_api_url(f->c->ms_base, f->spec.type == HUB_DATASET, f->spec.name, NULL);

	upstream__request_json(f, url, ms_info_done);
	free(url);
}

static void ms_list_done(void *ud, int result, const struct hub_http_resp *resp, const char *body, size_t len)
{
	struct upstream__fetch *f = ud;
	json_t *env = NULL, *files, *e;
	size_t i, n = 0;
	int r = upstream__api_answer(f, result, resp, body, len, &env);

	if (r)
		goto fail;
	if (json_integer_value(json_object_get(env, "Code")) != 200 || !json_is_true(json_object_get(env, "Success"))) {
		upstream__set_message(f, json_string_value(json_object_get(env, "Message")));
		r = HM_ERR_UPSTREAM;
		goto fail;
	}
	files = json_object_get(json_object_get(env, "Data"), "Files");
	if (!json_is_array(files)) {
		upstream__set_message(f, "listing has no Data.Files");
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
			upstream__set_message(f, "malformed file entry");
			r = HM_ERR_UPSTREAM;
			goto fail;
		}
		r = upstream__add_file(f, json_string_value(jp), json_string_length(jp), json_integer_value(js), NULL,
				       sha, json_is_true(json_object_get(e, "IsLFS")));
		if (r) {
			upstream__set_message(f, "malformed file entry");
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
	upstream__fetch_finish(f, r);
}

static void ms_dataset_page(struct upstream__fetch *f)
{
	char *rev = hub_url_escape(f->spec.revision, false);
	char *what = xasprintf("repo/tree?Revision=%s&Root=/&Recursive=True&PageNumber=%d&PageSize=%d", rev, f->page,
			       MS_PAGE_SIZE);
	char *url = ms_api_url(f->c->ms_base, true, f->spec.name, what);

	upstream__request_json(f, url, ms_list_done);
	free(url);
	free(what);
	free(rev);
}

static void ms_fetch(struct upstream__fetch *f)
{
	char *rev, *what, *url;

	if (f->spec.type == HUB_DATASET) {
		/* A ModelScope dataset's listing names no commit, and a big one is many pages: its info comes
		 * first, and the listing only when its update time moved (or is not known yet) */
		ms_info(f);
		return;
	}
	rev = hub_url_escape(f->spec.revision, false);
	what = xasprintf("repo/files?Revision=%s&Recursive=True", rev);
	url = ms_api_url(f->c->ms_base, false, f->spec.name, what);
	upstream__request_json(f, url, ms_list_done);
	free(url);
	free(what);
	free(rev);
}

/* ModelScope names a file by revision, not commit */
static char *ms_file_url_of(const struct hub_client *c, const struct hub_spec *spec, const char *commit,
			    const char *path)
{
	(void)commit;
	return ms_file_url(c->ms_base, spec->type == HUB_DATASET, spec->name, spec->revision, path);
}

/* a dataset's revisions are not listed */
static char *ms_refs_url(const struct hub_client *c, const struct hub_spec *spec)
{
	return spec->type == HUB_DATASET ? NULL : ms_api_url(c->ms_base, false, spec->name, "revisions");
}

static int ms_refs_read(struct hub_refs *out, json_t *j)
{
	json_t *map = json_object_get(json_object_get(j, "Data"), "RevisionMap");

	if (!json_is_object(map))
		return -1;
	upstream__refs_add(out, json_object_get(map, "Branches"), "branch", "", true);
	upstream__refs_add(out, json_object_get(map, "Tags"), "tag", "", true);
	return 0;
}

const struct upstream_hub upstream__ms = {
	.token_cookie = "m_session_id",
	.fetch = ms_fetch,
	.file_url = ms_file_url_of,
	.refs_url = ms_refs_url,
	.refs_read = ms_refs_read,
	.forbidden_is_disabled = false,
};
