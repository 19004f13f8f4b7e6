/*
 * err.c - one place that turns error codes into text.
 */
#include <string.h>

#include "err.h"

static const char *const project_msgs[] = {
	[HM_ERR_USAGE - HM_ERR_FIRST] = "bad usage",
	[HM_ERR_PATH_UNSAFE - HM_ERR_FIRST] = "unsafe path",
	[HM_ERR_BAD_SPEC - HM_ERR_FIRST] = "malformed repository spec",
	[HM_ERR_HASH_MISMATCH - HM_ERR_FIRST] = "content hash mismatch",
	[HM_ERR_SIZE_MISMATCH - HM_ERR_FIRST] = "content size mismatch",
	[HM_ERR_JSON - HM_ERR_FIRST] = "malformed JSON",
	[HM_ERR_SQLITE - HM_ERR_FIRST] = "catalog database error",
	[HM_ERR_CURL - HM_ERR_FIRST] = "transfer error",
	[HM_ERR_HTTP - HM_ERR_FIRST] = "unexpected HTTP status",
	[HM_ERR_TORRENT - HM_ERR_FIRST] = "BitTorrent error",
	[HM_ERR_NOT_FOUND - HM_ERR_FIRST] = "not found",
	[HM_ERR_SCHEMA - HM_ERR_FIRST] = "catalog schema is newer than this program",
	[HM_ERR_LOCKED - HM_ERR_FIRST] = "locked by another process",
	[HM_ERR_GATED - HM_ERR_FIRST] = "gated repository: access not granted",
	[HM_ERR_AUTH - HM_ERR_FIRST] = "not authorized (private repository or bad token)",
	[HM_ERR_DISABLED - HM_ERR_FIRST] = "repository disabled upstream",
	[HM_ERR_UPSTREAM - HM_ERR_FIRST] = "unusable upstream answer",
	[HM_ERR_TIMEOUT - HM_ERR_FIRST] = "query took too long",
	[HM_ERR_QUOTA - HM_ERR_FIRST] = "the store quota leaves no room",
	[HM_ERR_GIT - HM_ERR_FIRST] = "a git command failed",
	[HM_ERR_EXISTS - HM_ERR_FIRST] = "a repository of that name exists",
	[HM_ERR_CONFLICT - HM_ERR_FIRST] = "the branch moved: its head is not the parent commit given",
	[HM_ERR_LOCAL - HM_ERR_FIRST] = "a repository of a local namespace (pushed to this mirror, never synced)",
};

const char *err_str(int code)
{
	if (code == 0)
		return "success";
	if (code >= HM_ERR_FIRST && code < HM_ERR_LAST) {
		const char *m = project_msgs[code - HM_ERR_FIRST];
		return m ? m : "unknown error";
	}
	if (code < 0 && code > -4096)
		{
		const char *m = strerrordesc_np(-code); /* thread-safe, unlike strerror */
		return m ? m : "unknown error";
	}
	return "unknown error";
}
