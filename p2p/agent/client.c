/*
 * client.c - the agent's clients' side: where its socket is and one call to it (see agent.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/http/http.h"

const char *agent_socket_default(void)
{
	const char *e = getenv("HUBMIRROR_AGENT_SOCKET");

	return e && *e ? e : "/run/hubmirror/agent.sock";
}

/* A socket this user may not connect to is not "no agent": say whose it is. 0, or -EACCES with
 * *errmsg. */
static int socket_reachable(const char *socket, char **errmsg)
{
	struct stat st;
	char *who;
	int e;

	if (stat(socket, &st) == 0 ? access(socket, W_OK) == 0 : errno == ENOENT)
		return 0;
	e = errno;
	if (e != EACCES && e != EPERM)
		return 0; /* the call says what it is */
	who = path_owner_name(socket);
	if (errmsg)
		*errmsg = xasprintf("cannot reach the agent at %s: %s; it belongs to %s (run this as that user or with "
				    "sudo, or set HUBMIRROR_AGENT_SOCKET for an agent of your own)",
				    socket, strerror(e), who);
	free(who);
	return -EACCES;
}

int agent_call(const char *socket, const char *path, const char *body, long timeout_s, long *status,
	       json_t **answer, char **errmsg)
{
	char *url = xasprintf("http://agent%s", path), *resp = NULL;
	struct hub_http_call c = { .url = url, .unix_socket = socket, .body = body, .max = 64 << 20,
				   .timeout_s = timeout_s };
	size_t len = 0;
	int r = socket_reachable(socket, errmsg);

	if (!r)
		r = hub_http_call_blocking(&c, &resp, &len, status, errmsg);
	free(url);
	if (!r)
		*answer = json_loadb(resp ? resp : "", len, 0, NULL);
	free(resp);
	return r;
}
