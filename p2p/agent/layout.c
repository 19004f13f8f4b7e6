/*
 * layout.c - the agent's cache on disk, every path of it (see agent-int.h, "the cache's layout"):
 * the other files ask here and never spell a path of the cache themselves.
 */
#include "agent-int.h"
#include "base/xmalloc.h"

char *agent_path_snap(const struct agent *a, const char *btih)
{
	return xasprintf("%s/%s", a->cfg->cache_dir, btih);
}

char *agent_path_kept(const struct agent *a, const char *sha256)
{
	return xasprintf("%s/%s/%s", a->cfg->cache_dir, AGENT_KEPT_DIR, sha256);
}

char *agent_path_state(const struct agent *a)
{
	return xasprintf("%s/agent", a->cfg->cache_dir);
}

char *agent_path_torrent(const struct agent *a, const char *btih)
{
	return xasprintf("%s/agent/%.40s.torrent", a->cfg->cache_dir, btih);
}

char *agent_path_desc(const struct agent *a, const char *btih)
{
	return xasprintf("%s/agent/%.40s.json", a->cfg->cache_dir, btih);
}

char *agent_path_lock(const struct agent *a)
{
	return xasprintf("%s/agent/lock", a->cfg->cache_dir);
}

char *agent_path_http(const struct agent *a, const char *key)
{
	return key ? xasprintf("%s/agent/http/%s", a->cfg->cache_dir, key)
		   : xasprintf("%s/agent/http", a->cfg->cache_dir);
}

char *agent_path_oci(const struct agent *a, const char *key)
{
	return key ? xasprintf("%s/agent/oci/%s", a->cfg->cache_dir, key)
		   : xasprintf("%s/agent/oci", a->cfg->cache_dir);
}

char *agent_path_trash(const struct agent *a)
{
	return xasprintf("%s/.dropped", a->cfg->cache_dir);
}
