/*
 * select.h - which files of a repository a partial fetch takes: the `hf download --include/--exclude`
 * rules, and the small files a library reads before any weight (configs, tokenizers, shard indexes,
 * the card), which come along with any selection.
 *
 * Patterns are shell globs matched against the whole repo-relative path with fnmatch(3) and no flags,
 * as huggingface_hub's filter_repo_objects does with Python's fnmatch: '*' and '?' cross '/', and a
 * pattern ending in a slash takes everything under that folder (a star is added to it).
 */
#ifndef HM_HUB_SELECT_H
#define HM_HUB_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Does path match one of globs[0..n)? Empty patterns match nothing. */
bool hub_glob_match_any(const char *const *globs, size_t n, const char *path);

/* A glob a user may give: 1-1024 bytes, no control characters. 0 or -EINVAL. */
int hub_glob_check(const char *glob);

/* The biggest file counted as metadata (a tokenizer.json of a large vocabulary is ~35 MB). */
#define HUB_META_MAX ((int64_t)64 << 20)

/*
 * Is this file one a library reads first and cheaply: at most HUB_META_MAX bytes and named like a
 * model's or dataset's metadata, at any depth: README.md, *.index.json (a sharded checkpoint's map),
 * config.json and *_config.json, configuration.json (ModelScope), model_index.json, modules.json,
 * tokenizer*, special_tokens_map.json, added_tokens.json, vocab*, merges.txt, *.tiktoken,
 * chat_template*, generation_config.json, dataset_info(s).json; and at the top level *.py (the
 * repo's own code, for trust_remote_code). Only names like these: a dataset's *.json files are data.
 */
bool hub_is_metadata(const char *path, int64_t size);

/*
 * The selection rule of a partial fetch (pull --include/--exclude): a file is taken when it matches
 * an include pattern (or no include is given) or is metadata (hub_is_metadata), and matches no
 * exclude pattern. With neither include nor exclude every file is taken.
 */
bool hub_select(const char *const *include, size_t ninclude, const char *const *exclude, size_t nexclude,
		const char *path, int64_t size);

#endif
