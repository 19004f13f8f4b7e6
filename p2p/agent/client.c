/*
 * client.c - the agent's clients' side: where its socket is and one call to it (see agent.h).
 */
#include <errno.h>
#include <stdlib.h>

#include <jansson.h>

#include "agent.h"
#include "base/xmalloc.h"
#include "hub/http.h"

const char *agent_socket_default(void)
{
	const char *e = getenv("HUBMIRROR_AGENT_SOCKET");

	return e && *e ? e : "/run/hubmirror/agent.sock";
}

int agent_call(const char *socket, const char *path, const char *body, long timeout_s, long *status,
	       json_t **answer, char **errmsg)
{
	char *url = xasprintf("http://agent%s", path), *resp = NULL;
	struct hub_http_call c = { .url = url, .unix_socket = socket, .body = body, .max = 64 << 20,
				   .timeout_s = timeout_s };
	size_t len = 0;
	int r = hub_http_call_blocking(&c, &resp, &len, status, errmsg);

	free(url);
	if (!r)
		*answer = json_loadb(resp ? resp : "", len, 0, NULL);
	free(resp);
	return r;
}
