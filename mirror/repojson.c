/*
 * repojson.c - the JSON shape of a tracked repo (see repojson.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "repojson.h"

json_t *mirror_json_text_or(const char *text, json_t *dflt)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;

	if (!v)
		return dflt;
	json_decref(dflt);
	return v;
}

json_t *mirror_json_str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

json_t *mirror_repo_json(const struct catalog_repo *r, const char *base)
{
	const char *slash = strchr(r->name, '/');
	bool ds = !strcmp(r->type, "dataset");
	char *spec = xasprintf("%s:%s%s", r->hub, ds ? "datasets/" : "", r->name);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:s, s:o, s:o, s:I, s:I, s:b}",
		"spec", spec, "hub", r->hub, "type", r->type, "name", r->name,
		"org", slash ? json_stringn(r->name, (size_t)(slash - r->name)) : json_null(),
		"revision", r->follow_rev, "commit", mirror_json_str_or_null(r->head_commit),
		"sync_status", r->sync_status, "sync_error", mirror_json_str_or_null(r->sync_error),
		"last_sync_at", r->last_sync_at ? json_integer(r->last_sync_at) : json_null(),
		"files", (json_int_t)r->file_count, "size", (json_int_t)r->total_size,
		"gated", r->gated && strcmp(r->gated, "false"));

	json_object_set_new(o, "last_ok_at", r->last_ok_at ? json_integer(r->last_ok_at) : json_null());
	json_object_set_new(o, "gated_mode",
			    mirror_json_str_or_null(r->gated && strcmp(r->gated, "false") ? r->gated : NULL));
	json_object_set_new(o, "pipeline_tag", mirror_json_str_or_null(r->pipeline_tag));
	json_object_set_new(o, "library_name", mirror_json_str_or_null(r->library_name));
	json_object_set_new(o, "license", mirror_json_str_or_null(r->license));
	json_object_set_new(o, "tags", mirror_json_text_or(r->tags, json_array()));
	json_object_set_new(o, "downloads", r->downloads >= 0 ? json_integer(r->downloads) : json_null());
	json_object_set_new(o, "likes", r->likes >= 0 ? json_integer(r->likes) : json_null());
	json_object_set_new(o, "last_modified", mirror_json_str_or_null(r->last_modified));
	json_object_set_new(o, "added_at", json_integer(r->added_at));
	json_object_set_new(o, "include", mirror_json_text_or(r->include_globs, json_array()));
	json_object_set_new(o, "exclude", mirror_json_text_or(r->exclude_globs, json_array()));
	/* the mirror's own (a local namespace's, pushed or uploaded here): no upstream, never synced */
	json_object_set_new(o, "local", json_boolean(r->local));
	/* upstream renamed it: its name there now (the mirror answers to both) */
	json_object_set_new(o, "upstream_name", mirror_json_str_or_null(r->upstream_name));
	/* where it comes from: tier 1 syncs from the Hub, tier N+1 from a hubmirror of tier N; lag_s is
	 * how long ago the Hub itself was last asked about it (by this mirror or up the chain) */
	json_object_set_new(o, "tier", r->tier > 0 ? json_integer(r->tier) : json_null());
	json_object_set_new(o, "upstream", mirror_json_str_or_null(r->upstream));
	json_object_set_new(o, "origin_checked_at",
			    r->origin_checked_at > 0 ? json_integer(r->origin_checked_at) : json_null());
	json_object_set_new(o, "lag_s",
			    r->origin_checked_at > 0
				    ? json_integer(time(NULL) > r->origin_checked_at
							   ? (json_int_t)(time(NULL) - r->origin_checked_at)
							   : 0)
				    : json_null());
	/* which refs besides the followed one: "tags", "default", "all", or the names */
	json_object_set_new(o, "refs_policy",
			    r->refs_policy && r->refs_policy[0] == '['
				    ? mirror_json_text_or(r->refs_policy, json_array())
				    : json_string(r->refs_policy ? r->refs_policy : "tags"));
	if (base) {
		/* what a user copies to use this repo from here */
		json_object_set_new(o, "mount_command", json_sprintf("hubmirror mount --mirror %s %s", base, spec));
		if (!strcmp(r->hub, "hf"))
			json_object_set_new(o, "endpoint_env", json_sprintf("HF_ENDPOINT=%s", base));
		else
			json_object_set_new(o, "endpoint_env", json_sprintf("MODELSCOPE_ENDPOINT=%s", base));
	}
	free(spec);
	return o;
}


static int ref_json(void *ud, const char *name, const char *kind, const char *commit)
{
	json_array_append_new(ud, json_pack("{s:s, s:s, s:s}", "name", name, "kind", kind, "commit", commit));
	return 0;
}

json_t *mirror_refs_json(struct catalog *c, int64_t repo_id)
{
	json_t *refs = json_array();

	if (catalog_refs_each(c, repo_id, ref_json, refs))
		json_decref(refs), refs = NULL;
	return refs;
}

static int snapshot_json(void *ud, const struct catalog_snapshot *sn)
{
	json_array_append_new(ud, json_pack("{s:s, s:I, s:I, s:I, s:b}", "commit", sn->commit, "synced_at",
					    (json_int_t)sn->synced_at, "files", (json_int_t)sn->file_count, "size",
					    (json_int_t)sn->total_size, "pinned", sn->pinned_at != 0));
	return 0;
}

json_t *mirror_snapshots_json(struct catalog *c, int64_t repo_id)
{
	json_t *snaps = json_array();

	if (catalog_snapshots_each(c, repo_id, snapshot_json, snaps))
		json_decref(snaps), snaps = NULL;
	return snaps;
}
