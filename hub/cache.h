/*
 * cache.h - the hubs' client caches, as their libraries read them offline: a mounted or pulled
 * snapshot is linked into them so that code which loads a model by name finds it without a network.
 *
 * Hugging Face (huggingface_hub, transformers, datasets with HF_HUB_OFFLINE=1):
 *   <hub_cache>/<type>s--<org>--<name>/refs/<revision>     the commit, 40 hex digits, no newline
 *   <hub_cache>/<type>s--<org>--<name>/snapshots/<commit>/<path> -> the file
 * ModelScope, for both of its SDKs (read offline with local_files_only=True):
 *   classic `modelscope`: <ms_cache>/<type>s/<owner>/<name, '.' as '___'>/<path> -> the file, with the
 *     SDK's index beside them: .msc (a pickle of [{'Path': path, 'Revision': commit}, ...], what
 *     snapshot_download and model_file_download look up), .mdl (a pickle of {'id': 'owner/name'}) and
 *     .mv ("Revision:<commit>,CreatedAt:<unix time>"); <ms_cache> is $MODELSCOPE_CACHE or
 *     ~/.cache/modelscope/hub.
 *   `modelscope_hub`: <root>/<type>s/<owner>--<name>/snapshots/<revision>/<path> -> the file; <root> is
 *     $MODELSCOPE_CACHE or ~/.cache/modelscope.
 */
#ifndef HM_HUB_CACHE_H
#define HM_HUB_CACHE_H

#include <stddef.h>

/* The Hugging Face cache folder a process on this machine uses: $HF_HUB_CACHE, $HF_HOME/hub, or
 * ~/.cache/huggingface/hub. Written into buf (cap bytes); returns buf or the environment's string. */
const char *hub_cache_hf_default(char *buf, size_t cap);

/*
 * Link a snapshot into the Hugging Face cache at hub_cache: type "model"/"dataset", name "org/name",
 * revision (the ref, checked with hub_check_revision), commit (40 lowercase hex digits), and the n
 * files paths[i] (relative, each checked with path_check) found under target_dir. An existing link of
 * the same path is replaced (a mount of the same snapshot elsewhere before). Returns 0, or an error
 * with *errmsg (malloc'd, if errmsg) naming what could not be written; HM_ERR_PATH_UNSAFE for a bad name,
 * revision, commit or path (nothing is written outside hub_cache).
 */
int hub_cache_link_hf(const char *hub_cache, const char *type, const char *name, const char *revision,
		      const char *commit, const char *target_dir, const char *const *paths, size_t n, char **errmsg);

/* Where hub_cache_link_hf puts a snapshot's files: <hub_cache>/<type>s--<org>--<name>/snapshots/<commit>;
 * and hub_cache_link_ms in the classic SDK's layout: <ms_cache>/<type>s/<owner>/<name, masked>. For
 * saying where; malloc'd. */
char *hub_cache_hf_snapshot(const char *hub_cache, const char *type, const char *name, const char *commit);
char *hub_cache_ms_dir(const char *ms_cache, const char *type, const char *name);
/* modelscope_hub's: <root>/<type>s/<owner>--<name>/snapshots/<revision> */
char *hub_cache_ms_hub_snapshot(const char *ms_hub_cache, const char *type, const char *name, const char *revision);

/* Take out of dir (a hub cache's snapshot folder) the links that point into target (an agent's
 * folder of a snapshot it dropped), and the folders that leaves empty, dir too; what is not such a
 * link stays (a file the user put there, a link elsewhere). With ms_index, also the classic
 * ModelScope SDK's index files (.msc .mdl .mv) once nothing else is left. Returns the links taken. */
size_t hub_cache_unlink_into(const char *dir, const char *target, int ms_index);
/* The same for a snapshot's folder in the Hugging Face cache at hub_cache (type, name, commit as
 * hub_cache_link_hf): its links into target go; once that leaves the folder gone, the ref revision
 * too when it names commit (huggingface_hub then finds nothing rather than a folder without files),
 * and the repo's folders left empty. Returns the links taken. */
size_t hub_cache_unlink_hf(const char *hub_cache, const char *type, const char *name, const char *revision,
			   const char *commit, const char *target);

/* The classic ModelScope SDK's cache folder ($MODELSCOPE_CACHE or ~/.cache/modelscope/hub), and the
 * newer modelscope_hub's ($MODELSCOPE_CACHE or ~/.cache/modelscope), as hub_cache_hf_default. */
const char *hub_cache_ms_default(char *buf, size_t cap);
const char *hub_cache_ms_hub_default(char *buf, size_t cap);

/*
 * Link a snapshot into both ModelScope layouts: ms_cache (the classic SDK's, with its .msc/.mdl/.mv
 * index, written to a temporary name and renamed) and ms_hub_cache (modelscope_hub's; NULL: not made).
 * Arguments and errors as hub_cache_link_hf; name is "owner/name".
 */
int hub_cache_link_ms(const char *ms_cache, const char *ms_hub_cache, const char *type, const char *name,
		      const char *revision, const char *commit, const char *target_dir, const char *const *paths,
		      size_t n, char **errmsg);

#endif
