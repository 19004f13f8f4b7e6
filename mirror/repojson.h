/*
 * repojson.h - one JSON shape of a tracked repo, for every place that shows one: the catalog API
 * (list, search, detail), `hubmirror ls --json`, `search --json` and `info --json`, locally or
 * through --mirror (which prints what the API answered), so a script reads the same fields either way.
 * docs/http-api.md lists the fields.
 */
#ifndef HM_MIRROR_REPOJSON_H
#define HM_MIRROR_REPOJSON_H

#include <stdint.h>

#include <jansson.h>

struct catalog_repo;

/* The repo as a JSON object (a new reference). With base (the mirror's URL as a client reaches it),
 * also what a user copies to use it from there: mount_command and endpoint_env. */
json_t *mirror_repo_json(const struct catalog_repo *r, const char *base);

struct catalog;
/* A repo's refs, [{name, kind, commit}], and the snapshots the mirror holds of it, [{commit, synced_at,
 * files, size, pinned}], as the catalog API, `info --json` and a bundle's manifest write them (new
 * references; NULL on a catalog error). */
json_t *mirror_refs_json(struct catalog *c, int64_t repo_id);
json_t *mirror_snapshots_json(struct catalog *c, int64_t repo_id);

/* JSON text kept in the catalog (a card, tags, globs) as a value; dflt (consumed) when text is NULL or
 * not JSON. */
json_t *mirror_json_text_or(const char *text, json_t *dflt);
/* s as a JSON string, or null. */
json_t *mirror_json_str_or_null(const char *s);

#endif
