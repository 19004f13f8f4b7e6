/*
 * cmd-agent.c - `hubmirror agent` (the instance agent: p2p/agent/agent.h) and `hubmirror status`
 * (what it holds).
 *
 * `agent` forks the agent's own process and returns once it listens (or says why it could not);
 * --foreground runs it in this process, for systemd. `agent --stop` asks a running one to end.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "base/err.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "cli.h"
#include "p2p/agent/agent.h"

/* Fork the agent's process: no terminal, stderr to <cache>/agent.log; wait until it listens. */
static int run_detached(const struct agent_config *cfg)
{
	int pipefd[2];
	char msg[512], *log;
	ssize_t n;
	pid_t pid;

	if (path_mkdirs_private(cfg->cache_dir, 0750) || pipe(pipefd) < 0) {
		fprintf(stderr, "hubmirror: cannot prepare %s: %s\n", cfg->cache_dir, strerror(errno));
		return CLI_FAILED;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "hubmirror: fork: %s\n", strerror(errno));
		return CLI_FAILED;
	}
	if (pid == 0) {
		char *err = NULL;
		int r;
		close(pipefd[0]);
		setsid();
		log = xasprintf("%s/agent.log", cfg->cache_dir);
		if (!freopen("/dev/null", "r", stdin) || !freopen("/dev/null", "w", stdout) || !freopen(log, "a", stderr)) {
		}
		setvbuf(stderr, NULL, _IOLBF, 0);
		free(log);
		r = agent_run(cfg, pipefd[1], &err);
		if (r) {
			char *m = xasprintf("%s\n", err ? err : err_str(r));
			if (write(pipefd[1], m, strlen(m)) < 0) {
			}
			free(m);
		}
		exit(r ? 1 : 0); /* not _exit: the sanitizer build checks for leaks at exit */
	}
	close(pipefd[1]);
	n = read(pipefd[0], msg, sizeof(msg) - 1);
	close(pipefd[0]);
	msg[n > 0 ? n : 0] = '\0';
	if (n <= 0 || strcmp(msg, "ok\n")) {
		waitpid(pid, NULL, 0);
		fprintf(stderr, "hubmirror: the agent did not start: %s", n > 0 ? msg : "its process ended\n");
		return CLI_FAILED;
	}
	printf("agent %ld listening on %s (cache %s)\n", (long)pid, cfg->socket_path, cfg->cache_dir);
	return CLI_OK;
}

/* Has process pid ended? (A zombie has: it waits only for its parent to read its status.) */
static bool process_gone(pid_t pid)
{
	char path[64], line[256];
	bool zombie = false;
	FILE *f;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (!(f = fopen(path, "r")))
		return errno == ENOENT;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "State:", 6)) {
			zombie = strchr(line, 'Z') != NULL;
			break;
		}
	fclose(f);
	return zombie;
}

/* Ask the agent at socket to end, and wait until its process has (its mounts are then released and
 * its files closed: the cache's file system can be unmounted). */
static int stop_agent(const char *socket)
{
	long status = 0;
	json_t *j = NULL;
	char *err = NULL;
	struct stat st;
	pid_t pid;
	int r = agent_call(socket, "/v1/stop", "{}", 10, &status, &j, &err);

	pid = (pid_t)json_integer_value(json_object_get(j, "pid"));
	json_decref(j);
	if (r == -ECONNREFUSED) {
		fprintf(stderr, "hubmirror: no agent runs at %s\n", socket);
		free(err);
		return CLI_FAILED;
	}
	if (r || status != 200) {
		fprintf(stderr, "hubmirror: the agent at %s did not take the stop: %s\n", socket, err ? err : "?");
		free(err);
		return CLI_FAILED;
	}
	/* libtorrent says goodbye to its trackers as it ends: seconds at most */
	for (int i = 0; i < 3000; i++) {
		if (pid > 0 ? process_gone(pid) : stat(socket, &st) != 0)
			return CLI_OK;
		if (i == 250)
			fprintf(stderr, "hubmirror: waiting for the agent (pid %ld) to end\n", (long)pid);
		usleep(20 * 1000);
	}
	fprintf(stderr, "hubmirror: the agent (pid %ld) is still stopping after 60 s\n", (long)pid);
	return CLI_FAILED;
}

int cmd_agent(int argc, char **argv)
{
	const struct cli_command *self = cli_find("agent");
	struct agent_config cfg = { 0 };
	const char *mirror_opt = NULL;
	bool foreground = false, stop = false, preheat = false;
	char *err = NULL;
	int r;
	const struct cli_flag flags[] = {
		CLI_STR("mirror", &mirror_opt),
		CLI_STR("cache", &cfg.cache_dir),
		CLI_STR("socket", &cfg.socket_path),
		CLI_STR("listen", &cfg.listen),
		CLI_RATE("upload-limit", &cfg.upload_limit),
		CLI_SIZE("cache-size", &cfg.cache_size, 1),
		CLI_STR("http", &cfg.http),
		CLI_BOOL("preheat", &preheat),
		CLI_INT("preheat-every", &cfg.preheat_every_s, 1, 86400),
		CLI_BOOL("no-fill", &cfg.no_fill),
		CLI_INT("mirror-timeout", &cfg.mirror_timeout_s, 1, 3600),
		CLI_BOOL("foreground", &foreground),
		CLI_BOOL("stop", &stop),
		CLI_END,
	};

	cfg.cache_dir = getenv("HUBMIRROR_CACHE");
	cfg.socket_path = agent_socket_default();
	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (optind < argc)
		return cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
	if (stop)
		return stop_agent(cfg.socket_path);
	cfg.mirror = cli_mirror_url(mirror_opt);
	if (preheat && !cfg.preheat_every_s)
		cfg.preheat_every_s = 300;
	else if (!preheat)
		cfg.preheat_every_s = 0;
	if (!cfg.cache_dir || !*cfg.cache_dir)
		cfg.cache_dir = "/var/cache/hubmirror";
	if (!foreground)
		return run_detached(&cfg);
	r = agent_run(&cfg, -1, &err);
	if (r)
		fprintf(stderr, "hubmirror: %s\n", err ? err : err_str(r));
	free(err);
	return r ? CLI_FAILED : CLI_OK;
}

static void print_status(json_t *st)
{
	json_t *snaps = json_object_get(st, "snapshots"), *s;
	char up[16], down[16];
	size_t i;

	cli_human_size(json_integer_value(json_object_get(st, "uploaded")), up, sizeof(up));
	cli_human_size(json_integer_value(json_object_get(st, "downloaded")), down, sizeof(down));
	printf("agent %lld, cache %s, mirror %s, peer port %lld; sent %s, received %s\n",
	       (long long)json_integer_value(json_object_get(st, "pid")),
	       json_string_value(json_object_get(st, "cache")),
	       json_string_value(json_object_get(st, "mirror")) ? json_string_value(json_object_get(st, "mirror")) : "-",
	       (long long)json_integer_value(json_object_get(st, "p2p_port")), up, down);
	json_array_foreach(snaps, i, s) {
		int64_t have = json_integer_value(json_object_get(s, "bytes_have"));
		int64_t total = json_integer_value(json_object_get(s, "bytes_total"));
		json_t *mounts = json_object_get(s, "mounts");
		json_int_t elsewhere = json_integer_value(json_object_get(s, "detached_in_use"));
		char h[16], t[16], part[160] = "";
		cli_human_size(have, h, sizeof(h));
		cli_human_size(total, t, sizeof(t));
		if (json_is_integer(json_object_get(s, "selected"))) {
			/* some files of it: which, and what the cache holds of the whole */
			char held[16], size[16];
			cli_human_size(json_integer_value(json_object_get(s, "held")), held, sizeof(held));
			cli_human_size(json_integer_value(json_object_get(s, "size")), size, sizeof(size));
			snprintf(part, sizeof(part), " (%lld of %lld files; holds %s of %s)",
				 (long long)json_integer_value(json_object_get(s, "selected")),
				 (long long)json_integer_value(json_object_get(s, "files")), held, size);
		}
		printf("%s @ %.12s  %s / %s%s%s  %lld peers  %s%s%s\n", json_string_value(json_object_get(s, "spec")),
		       json_string_value(json_object_get(s, "commit")), h, t, part,
		       json_is_true(json_object_get(s, "complete")) ? " (complete, seeding)" : "",
		       (long long)json_integer_value(json_object_get(s, "peers")),
		       json_array_size(mounts) ? "mounted on " : "not mounted",
		       json_array_size(mounts) ? json_string_value(json_array_get(mounts, 0)) : "",
		       elsewhere ? "; an unmounted copy still in use (open files or another mount namespace)" : "");
		if (json_string_value(json_object_get(s, "error")))
			printf("  error: %s\n", json_string_value(json_object_get(s, "error")));
	}
}

/* status --verify [SPEC]: the agent reads back and hashes every piece it holds (of SPEC's snapshots);
 * damaged ones are fetched again. Exit 0 when all were sound, 1 when some were not (or on an error). */
static int verify_cache(const char *socket, const char *spec, bool as_json)
{
	json_t *req = spec ? json_pack("{s:s}", "spec", spec) : json_object(), *ans = NULL, *s;
	char *body = json_dumps(req, JSON_COMPACT), *err = NULL;
	long status = 0;
	size_t i;
	int r = agent_call(socket, "/v1/verify", body, 7 * 86400, &status, &ans, &err);

	free(body);
	json_decref(req);
	if (r || status != 200) {
		const char *e = json_string_value(json_object_get(ans, "error"));
		fprintf(stderr, "hubmirror: %s\n", r == -ECONNREFUSED ? "no agent runs" : e ? e : err ? err : "the agent could not verify");
		free(err);
		json_decref(ans);
		return CLI_FAILED;
	}
	if (as_json) {
		cli_print_json(ans);
	} else {
		json_array_foreach(json_object_get(ans, "snapshots"), i, s) {
			json_t *specs = json_object_get(s, "specs");
			int pieces = (int)json_integer_value(json_object_get(s, "pieces"));
			int bad = (int)json_integer_value(json_object_get(s, "damaged"));
			char *names = json_dumps(specs, JSON_COMPACT);
			if (bad)
				printf("%s %.12s: %d of %d pieces damaged in the cache: fetching them again (hubmirror pull waits for them)\n",
				       names, json_string_value(json_object_get(s, "btih")), bad, pieces);
			else
				printf("%s %.12s: %d pieces verified\n", names, json_string_value(json_object_get(s, "btih")), pieces);
			free(names);
		}
	}
	r = json_integer_value(json_object_get(ans, "damaged")) ? CLI_FAILED : CLI_OK;
	json_decref(ans);
	return r;
}

int cmd_status(int argc, char **argv)
{
	const struct cli_command *self = cli_find("status");
	const char *socket = agent_socket_default();
	bool as_json = false, verify = false;
	json_t *st = NULL;
	char *err = NULL;
	long status = 0;
	int r;
	const struct cli_flag flags[] = { CLI_STR("socket", &socket), CLI_BOOL("json", &as_json),
					  CLI_BOOL("verify", &verify), CLI_END };

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (verify && argc - optind <= 1)
		return verify_cache(socket, optind < argc ? argv[optind] : NULL, as_json);
	if (optind < argc)
		return cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
	r = agent_call(socket, "/v1/status", NULL, 30, &status, &st, &err);
	if (r || status != 200 || !json_is_object(st)) {
		fprintf(stderr, "hubmirror: %s\n", r == -ECONNREFUSED ? "no agent runs (start one with 'hubmirror agent' or 'hubmirror mount')"
					   : err ? err : "the agent gave no status");
		free(err);
		json_decref(st);
		return CLI_FAILED;
	}
	if (as_json)
		cli_print_json(st);
	else
		print_status(st);
	json_decref(st);
	return CLI_OK;
}
