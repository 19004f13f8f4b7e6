/*
 * select.c - the files a partial fetch takes (see select.h).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "select.h"

bool hub_glob_match_any(const char *const *globs, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++) {
		const char *pat = globs[i];
		size_t len = pat ? strlen(pat) : 0;
		bool hit;
		if (!len)
			continue;
		if (pat[len - 1] == '/') { /* a folder: everything under it */
			char *full = xasprintf("%s*", pat);
			hit = fnmatch(full, path, 0) == 0;
			free(full);
		} else {
			hit = fnmatch(pat, path, 0) == 0;
		}
		if (hit)
			return true;
	}
	return false;
}

int hub_glob_check(const char *glob)
{
	size_t n = glob ? strlen(glob) : 0;

	if (n == 0 || n > 1024)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)glob[i] < 0x20 || glob[i] == 0x7f)
			return -EINVAL;
	return 0;
}

/* File names (the last component) that are metadata at any depth. */
static const char *const meta_names[] = {
	"README.md", "*.index.json", "config.json", "*_config.json", "configuration.json", "model_index.json",
	"modules.json", "tokenizer*", "special_tokens_map.json", "added_tokens.json", "vocab*", "merges.txt",
	"*.tiktoken", "chat_template*", "dataset_info.json", "dataset_infos.json",
};

bool hub_is_metadata(const char *path, int64_t size)
{
	const char *base = strrchr(path, '/');

	if (size < 0 || size > HUB_META_MAX)
		return false;
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(meta_names) / sizeof(*meta_names); i++)
		if (fnmatch(meta_names[i], base, 0) == 0)
			return true;
	/* the repo's own code, top level only (transformers' trust_remote_code) */
	return base == path && fnmatch("*.py", base, 0) == 0;
}

bool hub_select(const char *const *include, size_t ninclude, const char *const *exclude, size_t nexclude,
		const char *path, int64_t size)
{
	if (hub_glob_match_any(exclude, nexclude, path))
		return false;
	return !ninclude || hub_glob_match_any(include, ninclude, path) || hub_is_metadata(path, size);
}
