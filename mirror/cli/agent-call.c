/*
 * agent-call.c - the CLI's side of the instance agent (p2p/agent/agent.h), which mount, pull, status
 * and umount share: asking the agent on its socket, starting one when none answers, and what the
 * answers say about a mirror that was not reached.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "cli.h"
#include "hub/cache.h"
#include "hub/hub.h"
#include "hub/select.h"
#include "p2p/agent/agent.h"

/* Start an agent for socket with this mirror, cache and listen address: `hubmirror agent` in a child
 * (it returns once the agent listens). Returns CLI_OK or CLI_FAILED (said on stderr). */
static int start_agent(const char *socket, const char *mirror, const char *cache, const char *listen)
{
	const char *argv[12];
	int n = 0, st;
	pid_t pid;

	argv[n++] = "hubmirror";
	argv[n++] = "agent";
	argv[n++] = "--socket";
	argv[n++] = socket;
	if (mirror) {
		argv[n++] = "--mirror";
		argv[n++] = mirror;
	}
	if (cache) {
		argv[n++] = "--cache";
		argv[n++] = cache;
	}
	if (listen) {
		argv[n++] = "--listen";
		argv[n++] = listen;
	}
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* the agent says where it listens: not part of this command's output */
		if (!freopen("/dev/null", "w", stdout)) {
		}
		execv("/proc/self/exe", (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return CLI_FAILED;
	return CLI_OK;
}

json_t *cli_agent_request(const char *spec, const struct cli_agent_opts *o)
{
	char hc[4096], mc[4096], mh[4096];
	json_t *j = json_pack("{s:s}", "spec", spec);
	struct hub_spec sp;

	if (o->mirror)
		json_object_set_new(j, "mirror", json_string(o->mirror));
	if (cli_mirror_token())
		json_object_set_new(j, "token", json_string(cli_mirror_token()));
	if (hub_spec_parse(spec, &sp))
		return j;
	if (sp.hub == HUB_HF && !o->no_hf)
		json_object_set_new(j, "hf_cache", json_string(o->hf ? o->hf : hub_cache_hf_default(hc, sizeof(hc))));
	if (sp.hub == HUB_MS && !o->no_ms) {
		json_object_set_new(j, "ms_cache", json_string(o->ms ? o->ms : hub_cache_ms_default(mc, sizeof(mc))));
		json_object_set_new(j, "ms_hub_cache",
				    json_string(o->ms ? o->ms : hub_cache_ms_hub_default(mh, sizeof(mh))));
	}
	hub_spec_release(&sp);
	return j;
}

int cli_take_pattern(const struct cli_command *cmd, const struct cli_flag *f, const char *arg)
{
	if (hub_glob_check(arg))
		return cli_usage_error(cmd, "--%s takes a pattern (1-1024 characters, no control characters), not '%s'",
				       f->name, arg);
	json_array_append_new(f->dest, json_string(arg));
	return CLI_OK;
}

int cli_agent_post(const struct cli_agent_opts *o, const char *path, json_t *req, json_t **ans)
{
	char *body = json_dumps(req, JSON_COMPACT), *err = NULL;
	long status = 0;
	int r = agent_call(o->socket, path, body, 600, &status, ans, &err);

	if (r == -ECONNREFUSED) {
		/* no agent yet: start one, then ask it */
		free(err);
		err = NULL;
		if (!o->mirror) {
			free(body);
			return cli_usage_error(cli_find(o->command),
					       "which mirror? give --mirror URL or set HUBMIRROR_URL");
		}
		if (start_agent(o->socket, o->mirror, o->cache, o->listen)) {
			free(body);
			return CLI_FAILED;
		}
		r = agent_call(o->socket, path, body, 600, &status, ans, &err);
	}
	/* 503: the mirror fetched the repository on demand and is completing it for instances: ask
	 * again until it is whole (it says how long to wait; each try is cheap) */
	for (int waited = 0; !r && status == 503 && waited < 3600; waited += 2) {
		if (!waited)
			fprintf(stderr,
				"hubmirror: %s: the mirror is fetching this repository on demand; waiting for it\n",
				o->command);
		json_decref(*ans);
		*ans = NULL;
		free(err);
		err = NULL;
		sleep(2);
		r = agent_call(o->socket, path, body, 600, &status, ans, &err);
	}
	free(body);
	if (r || status != 200) {
		const char *e = json_string_value(json_object_get(*ans, "error"));
		fprintf(stderr, "hubmirror: %s failed: %s\n", o->command, e ? e : err ? err : err_str(r));
		free(err);
		return CLI_FAILED;
	}
	return CLI_OK;
}

void cli_agent_offline_note(const char *spec, json_t *ans)
{
	const char *why = json_string_value(json_object_get(ans, "offline"));
	json_t *u = json_object_get(ans, "offline_using");
	json_int_t synced = json_integer_value(json_object_get(u, "synced_at"));
	json_int_t taken = json_integer_value(json_object_get(u, "taken_at"));
	char when[64] = "";
	time_t t = (time_t)(synced ? synced : taken);
	struct tm tm;

	if (!why)
		return;
	if (t && localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	fprintf(stderr, "hubmirror: %s: offline: using %s @ %.8s%s%s%s (the mirror did not answer: %s)\n", spec,
		json_string_value(json_object_get(u, "revision")) ? json_string_value(json_object_get(u, "revision"))
								  : "?",
		json_string_value(json_object_get(u, "commit")) ? json_string_value(json_object_get(u, "commit")) : "?",
		*when ? (synced ? " (synced " : " (held since ") : "", when, *when ? ")" : "", why);
}
