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
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/path.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "hub/cache.h"
#include "hub/hub.h"
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
		if (!freopen("/dev/null", "r", stdin) || !freopen("/dev/null", "w", stdout) ||
		    !freopen(log, "a", stderr)) {
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
		if (skip_prefix(line, "State:")) {
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

#define HANDOFF_NONE (-1)
/* agent --http when an agent runs already (mount or pull started it): give it the endpoint, no
 * restart. HANDOFF_NONE when none runs (this command starts one), else the command's exit code. */
static int give_endpoint(const struct agent_config *cfg, const char *token)
{
	long status = 0;
	json_t *st = NULL, *ans = NULL;
	char *e = NULL, *body;
	json_t *req;
	long pid;
	int r;
	bool running = agent_call(cfg->socket_path, "/v1/status", NULL, 10, &status, &st, &e) == 0 && status == 200;

	if (running && token) {
		/* (its token is one of its settings: taken when it starts only) */
		fprintf(stderr, "hubmirror: an agent runs already at %s: --token-file is taken when an agent "
			"starts (agent --stop first)\n", cfg->socket_path);
		json_decref(st);
		free(e);
		return CLI_FAILED;
	}
	if (!running) {
		json_decref(st);
		free(e);
		return HANDOFF_NONE;
	}
	req = json_pack("{s:s}", "listen", cfg->http);
	body = json_dumps(req, JSON_COMPACT);
	pid = (long)json_integer_value(json_object_get(st, "pid"));
	free(e);
	e = NULL;
	json_decref(req);
	r = agent_call(cfg->socket_path, "/v1/http", body, 10, &status, &ans, &e);
	free(body);
	if (!r && status == 200) {
		const char *colon = strrchr(cfg->http, ':');
		printf("the agent (pid %ld) now has its local endpoint: http://%.*s:%lld (its other settings "
		       "stay as they were)\n",
		       pid, colon ? (int)(colon - cfg->http) : (int)strlen(cfg->http), cfg->http,
		       (long long)json_integer_value(json_object_get(ans, "port")));
	} else {
		const char *why = json_string_value(json_object_get(ans, "error"));
		fprintf(stderr, "hubmirror: the agent (pid %ld) at %s runs already: %s\n", pid, cfg->socket_path,
			why ? why : e ? e : "it took no local endpoint");
	}
	json_decref(st);
	json_decref(ans);
	free(e);
	return !r && status == 200 ? CLI_OK : CLI_FAILED;
}

/* --http: HOST:PORT, or a bare PORT for this instance's loopback (the endpoint is the instance's own:
 * another host reaches it only when the operator names an address). */
static int take_http(const struct cli_command *self, const struct cli_flag *f, const char *arg)
{
	static char loopback[32];
	char *end;
	long port = strtol(arg, &end, 10);

	if (*arg && !*end) {
		if (port < 0 || port > 65535)
			return cli_usage_error(self, "--http takes HOST:PORT or a PORT (0 to 65535), not '%s'", arg);
		snprintf(loopback, sizeof(loopback), "127.0.0.1:%ld", port);
		arg = loopback;
	} else if (!strrchr(arg, ':')) {
		return cli_usage_error(self, "--http takes HOST:PORT or a PORT, not '%s'", arg);
	}
	*(const char **)f->dest = arg;
	return CLI_OK;
}

int cmd_agent(int argc, char **argv)
{
	const struct cli_command *self = cli_find("agent");
	struct agent_config cfg = { 0 };
	const char *mirror_opt = NULL, *token_file = NULL;
	bool foreground = false, stop = false, preheat = false;
	char *err = NULL, *token = NULL;
	int r, keep_pulled = -1;
	const struct cli_flag flags[] = {
		CLI_STR("mirror", &mirror_opt, "URL[,URL...]",
			"the mirror(s) for mounts that name none (default $HUBMIRROR_URL);\n"
			"with several, the first that answers (one may be down)"),
		CLI_STR("cache", &cfg.cache_dir, "DIR",
			"where the bytes are kept (default $HUBMIRROR_CACHE or /var/cache/hubmirror);\n"
			"its log is DIR/agent.log"),
		CLI_STR("socket", &cfg.socket_path, "PATH",
			"the control socket (default $HUBMIRROR_AGENT_SOCKET or\n"
			"/run/hubmirror/agent.sock), readable by its owner only"),
		CLI_STR("listen", &cfg.listen, "ADDR", "where this peer listens for other peers (default 0.0.0.0:0)"),
		CLI_SIZE("cache-size", &cfg.cache_size, 1, "SIZE",
			 "keep the cache under SIZE (k/M/G/T: KiB, MiB, GiB, TiB; 500GB: decimal):\n"
			 "the least recently used snapshots neither mounted nor pinned (pull --pin)\n"
			 "are evicted, and a mount's reads make room before their bytes come"),
		CLI_INT("keep-pulled", &keep_pulled, 0, 86400, "S",
			"a pull's files stay at least S seconds (default 60) after it said\n"
			"\"pulled\", whatever --cache-size, so that the job that loads them next finds\n"
			"them; 0: they may be evicted at once"),
		CLI_RATE("upload-limit", &cfg.upload_limit, "R",
			 "cap what it sends to peers (bytes/s, k/M/G suffixes)"),
		CLI_FN("http", &cfg.http, take_http, "HOST:PORT",
		       "the local hub endpoint: the Hugging Face and ModelScope APIs of the mirror\n"
		       "on this instance, file bytes through the swarm and the cache\n"
		       "(HF_ENDPOINT=http://HOST:PORT; a bare PORT is 127.0.0.1:PORT)"),
		CLI_BOOL("preheat", &preheat,
			 "fetch in the background what the mirror marks to preheat (add --preheat),\n"
			 "asking every 300 s or --preheat-every S"),
		CLI_INT("preheat-every", &cfg.preheat_every_s, 1, 86400, "S", "with --preheat: ask every S seconds"),
		CLI_BOOL("no-fill", &cfg.no_fill,
			 "take what only the mirror has from its BitTorrent seed and web seed\n"
			 "instead of over HTTP ranges from its store"),
		CLI_INT("mirror-timeout", &cfg.mirror_timeout_s, 1, 3600, "S",
			"a mirror that sends nothing for S seconds (default 20) is given up and\n"
			"the next one asked; with none left, a held snapshot is used"),
		CLI_RATE("scrub-rate", &cfg.scrub_rate, "R",
			 "read back and hash the verified snapshots in the background at R bytes/s\n"
			 "(k/M/G; default 8M; 0: never), at idle I/O priority: damage (bit rot) is\n"
			 "fetched again from peers and the mirror, and status says what was found"),
		CLI_INT("scrub-every", &cfg.scrub_every_s, 1, 366 * 86400, "S",
			"start a scrub pass at most every S seconds (default 604800: a week)"),
		CLI_STR("token-file", &token_file, "FILE",
			"a token of the mirror for the agent itself (a file only its owner reads):\n"
			"S3 clients of --http show none, so the agent takes the snapshots of\n"
			"guarded repositories they read with it, once the mirror admitted them"),
		CLI_BOOL("foreground", &foreground, "stay in the foreground (for systemd)"),
		CLI_BOOL("stop", &stop,
			 "ask the running agent to unmount everything and end; returns once it\n"
			 "has (SIGHUP is ignored)"),
		CLI_END,
	};

	cfg.cache_dir = getenv("HUBMIRROR_CACHE");
	cfg.socket_path = agent_socket_default();
	cfg.scrub_rate = -1;
	if (cli_parse_flags_only(self, argc, argv, flags))
		return CLI_USAGE;
	if (cfg.scrub_rate < 0)
		cfg.scrub_rate = 8 << 20; /* 8M as the option says it: binary */
	if (stop)
		return stop_agent(cfg.socket_path);
	cfg.keep_pulled_s = keep_pulled < 0 ? 0 : keep_pulled ? keep_pulled : -1;
	cfg.mirror = cli_mirror_url(mirror_opt);
	if (preheat && !cfg.preheat_every_s)
		cfg.preheat_every_s = 300;
	else if (!preheat)
		cfg.preheat_every_s = 0;
	if (!cfg.cache_dir || !*cfg.cache_dir)
		cfg.cache_dir = "/var/cache/hubmirror";
	if (token_file) {
		if (cli_read_token_file(token_file, "agent token file", &token))
			return CLI_FAILED;
		cfg.token = token;
	}
	if (cfg.http && (r = give_endpoint(&cfg, token)) != HANDOFF_NONE) {
		free(token);
		return r;
	}
	if (!foreground) {
		r = run_detached(&cfg);
		free(token);
		return r;
	}
	r = agent_run(&cfg, -1, &err);
	if (r)
		fprintf(stderr, "hubmirror: %s\n", err ? err : err_str(r));
	free(err);
	free(token);
	return r ? CLI_FAILED : CLI_OK;
}

static int64_t jnum(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* A snapshot's state in a few words: complete; its wanted files in (a pull with --include, a mount's
 * prefetch: the rest comes as it is read); or fetching, with how far along of the files it wants
 * (their size does not move as a reader does). */
static void snap_state(json_t *s, char *out, size_t cap)
{
	int64_t want = jnum(s, "wanted_size"), have = jnum(s, "wanted_held");
	bool some = json_is_integer(json_object_get(s, "selected"));
	size_t n;

	if (json_string_value(json_object_get(s, "error")))
		snprintf(out, cap, "error (below)");
	else if (json_is_true(json_object_get(s, "complete")))
		snprintf(out, cap, "complete, seeding");
	else if (have >= want)
		snprintf(out, cap, "%s", some ? "ready" : "complete, checking");
	else
		snprintf(out, cap, "fetching %d%%", want ? (int)(100 * have / want) : 0);
	n = strlen(out);
	if (some)
		snprintf(out + n, cap - n, "; %lld of %lld %s", (long long)jnum(s, "selected"),
			 (long long)jnum(s, "files"), jnum(s, "files") == 1 ? "file" : "files");
	n = strlen(out);
	if (json_is_true(json_object_get(s, "pinned")))
		snprintf(out + n, cap - n, "; pinned");
	n = strlen(out);
	if (json_is_true(json_object_get(s, "over_bound")))
		snprintf(out + n, cap - n, "; bigger than the cache");
}

/* The table's cells of one snapshot row (strings: malloc'd). */
enum { C_SPEC, C_REV, C_COMMIT, C_HELD, C_STATE, C_PEERS, C_MIRROR, C_MOUNTS, C_N };

static void snap_cells(json_t *s, char **c)
{
	const char *rev = json_string_value(json_object_get(s, "revision"));
	const char *mirror = json_string_value(json_object_get(s, "mirror"));
	json_t *mounts = json_object_get(s, "mounts"), *m;
	char h[16], t[16], state[160];
	struct buf b;
	size_t i;

	cli_human_size(jnum(s, "held"), h, sizeof(h));
	cli_human_size(jnum(s, "size"), t, sizeof(t));
	snap_state(s, state, sizeof(state));
	c[C_SPEC] = xstrdup(
		json_string_value(json_object_get(s, "spec")) ? json_string_value(json_object_get(s, "spec")) : "?");
	c[C_REV] = xstrdup(rev ? rev : "-");
	c[C_COMMIT] = xasprintf("%.12s", json_string_value(json_object_get(s, "commit")) ?
						 json_string_value(json_object_get(s, "commit")) : "-");
	c[C_HELD] = xasprintf("%s of %s", h, t);
	c[C_STATE] = xstrdup(state);
	c[C_PEERS] = xasprintf("%lld", (long long)jnum(s, "peers"));
	c[C_MIRROR] = xstrdup(mirror ? mirror : "-");
	buf_init(&b);
	json_array_foreach(mounts, i, m)
		buf_addf(&b, "%s%s", i ? ", " : "", json_string_value(m));
	if (!json_array_size(mounts))
		buf_adds(&b, "-");
	if (jnum(s, "detached_in_use"))
		buf_adds(&b, " (and an unmounted copy still in use: open files or another mount namespace)");
	c[C_MOUNTS] = buf_detach(&b, NULL);
}

/* One cell of status's table, w wide: numbers to the right, the last column ends the line. */
static void print_cell(int c, int w, const char *v)
{
	if (c == C_MOUNTS)
		printf("%s\n", v);
	else if (c == C_PEERS)
		printf("%*s  ", w, v);
	else
		printf("%-*s  ", w, v);
}

/* status's line of the background scrub: how far it got, and the damage it found (the last one). */
static void print_scrub(json_t *sc)
{
	json_t *last = json_array_get(json_object_get(sc, "found"), json_array_size(json_object_get(sc, "found")) - 1);
	char rate[16], read[16], when[32] = "";
	time_t at = (time_t)jnum(last, "at");
	struct tm tm;

	if (!sc)
		return;
	if (jnum(sc, "rate") <= 0) {
		printf("scrub: off (agent --scrub-rate)\n");
		return;
	}
	cli_human_size(jnum(sc, "rate"), rate, sizeof(rate));
	cli_human_size(jnum(sc, "bytes"), read, sizeof(read));
	printf("scrub: %s/s, %lld pass%s done, %s read back; ", rate, (long long)jnum(sc, "passes"),
	       jnum(sc, "passes") == 1 ? "" : "es", read);
	if (!jnum(sc, "damaged")) {
		printf("no damage found\n");
		return;
	}
	if (last && gmtime_r(&at, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
	printf("%lld damaged piece%s found and fetched again (last: %s, %lld at %s)\n", (long long)jnum(sc, "damaged"),
	       jnum(sc, "damaged") == 1 ? "" : "s", json_string_value(json_object_get(last, "spec"))
							? json_string_value(json_object_get(last, "spec"))
							: "?",
	       (long long)jnum(last, "pieces"), when);
}

/* status: the agent (its cache, mirror, endpoint, traffic), then a table of what it holds, one row
 * per name a snapshot is held under, each column as wide as its widest cell; a snapshot's error on a
 * line of its own below its row. */
static void print_status(json_t *st)
{
	static const char *const head[C_N] = { "SPEC", "REVISION", "COMMIT", "HELD", "STATE", "PEERS", "MIRROR",
					       "MOUNTED ON" };
	json_t *snaps = json_object_get(st, "snapshots"), *s;
	char up[16], down[16], http[16], used[16], bound[16];
	const char *ep = json_string_value(json_object_get(st, "http"));
	size_t n = json_array_size(snaps), i;
	char **cells;
	int w[C_N];

	cli_human_size(jnum(st, "uploaded"), up, sizeof(up));
	cli_human_size(jnum(st, "downloaded"), down, sizeof(down));
	cli_human_size(jnum(st, "fetched_over_http"), http, sizeof(http));
	cli_human_size(jnum(st, "cache_used"), used, sizeof(used));
	cli_human_size(jnum(st, "cache_size"), bound, sizeof(bound));
	printf("agent %lld: cache %s (%s used%s%s), mirror %s, peer port %lld\n", (long long)jnum(st, "pid"),
	       json_string_value(json_object_get(st, "cache")), used, jnum(st, "cache_size") > 0 ? " of " : "",
	       jnum(st, "cache_size") > 0 ? bound : "",
	       json_string_value(json_object_get(st, "mirror")) ? json_string_value(json_object_get(st, "mirror"))
								: "-",
	       (long long)jnum(st, "p2p_port"));
	if (ep)
		printf("local endpoint: http://%s (HF_ENDPOINT=http://%s hf download ...)\n", ep, ep);
	printf("sent %s to peers; received %s from peers and %s from the mirror over HTTP\n", up, down, http);
	print_scrub(json_object_get(st, "scrub"));
	if (!n) {
		printf("it holds no snapshot yet (hubmirror pull SPEC, or hubmirror mount SPEC DIR)\n");
		return;
	}
	cells = xcalloc(n * C_N, sizeof(*cells));
	for (int c = 0; c < C_N; c++)
		w[c] = (int)strlen(head[c]);
	json_array_foreach(snaps, i, s) {
		snap_cells(s, cells + i * C_N);
		for (int c = 0; c < C_N; c++)
			if ((int)strlen(cells[i * C_N + c]) > w[c])
				w[c] = (int)strlen(cells[i * C_N + c]);
	}
	putchar('\n');
	/* (the last column is not padded: no trailing blanks) */
	for (int c = 0; c < C_N; c++)
		print_cell(c, w[c], head[c]);
	json_array_foreach(snaps, i, s) {
		const char *err = json_string_value(json_object_get(s, "error"));
		for (int c = 0; c < C_N; c++) {
			print_cell(c, w[c], cells[i * C_N + c]);
			free(cells[i * C_N + c]);
		}
		if (err)
			printf("  error: %s\n", err);
		else if (json_is_string(json_object_get(s, "waiting"))) /* why nothing comes */
			printf("  %s\n", json_string_value(json_object_get(s, "waiting")));
	}
	free(cells);
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
		fprintf(stderr, "hubmirror: %s\n",
			r == -ECONNREFUSED ? "no agent runs"
			: e                ? e
			: err              ? err
					   : "the agent could not verify");
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
				printf("%s %.12s: %d of %d %s damaged in the cache: fetching them again (hubmirror "
				       "pull waits for them)\n",
				       names, json_string_value(json_object_get(s, "btih")), bad, pieces,
				       cli_plural(pieces, "piece", "pieces"));
			else
				printf("%s %.12s: %d %s verified\n", names,
				       json_string_value(json_object_get(s, "btih")), pieces,
				       cli_plural(pieces, "piece", "pieces"));
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
	const struct cli_flag flags[] = {
		CLI_BOOL("json", &as_json,
			 "print the agent's answer as JSON (fields: pid socket mirror cache p2p_port started_at\n"
			 "uploaded downloaded snapshots[spec revision commit btih bytes_have bytes_total\n"
			 "complete mounts peers uploaded downloaded links detached_in_use error mirror size\n"
			 "held wanted_size wanted_held over_bound scrubbed_at scrub_damaged rate waiting\n"
			 "waiting_since sources] scrub[rate every passes bytes pieces damaged found])"),
		CLI_BOOL("verify", &verify,
			 "read back and hash every piece the cache holds (of SPEC's snapshots): damaged ones\n"
			 "(bit rot, another process) are fetched again from the swarm and the mirror; exit 1\n"
			 "when some were damaged"),
		CLI_STR("socket", &socket, "PATH",
			"the agent's socket (default $HUBMIRROR_AGENT_SOCKET or /run/hubmirror/agent.sock)"),
		CLI_END,
	};

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (verify && argc - optind <= 1)
		return verify_cache(socket, optind < argc ? argv[optind] : NULL, as_json);
	if (optind < argc)
		return cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
	r = agent_call(socket, "/v1/status", NULL, 30, &status, &st, &err);
	if (r || status != 200 || !json_is_object(st)) {
		fprintf(stderr, "hubmirror: %s\n",
			r == -ECONNREFUSED ? "no agent runs (start one with 'hubmirror agent' or 'hubmirror mount')"
			: err              ? err
					   : "the agent gave no status");
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

/* `hubmirror drop SPEC[@REV]...`: snapshots out of the agent's cache (like hf cache delete), and their
 * links out of the hub caches this command would link into (the same options as pull). */
int cmd_drop(int argc, char **argv)
{
	const struct cli_command *self = cli_find("drop");
	struct cli_agent_opts o = { .command = "drop", .socket = agent_socket_default() };
	const struct cli_flag flags[] = { CLI_AGENT_FLAGS(&o), CLI_END };
	int r = CLI_OK;

	if (cli_parse_flags(self, argc, argv, flags))
		return CLI_USAGE;
	if (optind >= argc)
		return cli_usage_error(self, "give one or more SPECs");
	for (int k = optind; k < argc; k++) {
		struct hub_spec sp;
		if (hub_spec_parse(argv[k], &sp))
			return cli_spec_error(self, NULL, argv[k]);
		hub_spec_release(&sp);
	}
	for (int k = optind; k < argc; k++) {
		json_t *req = json_pack("{s:s}", "spec", argv[k]), *ans = NULL, *d;
		char *body = json_dumps(req, JSON_COMPACT), *err = NULL, hc[4096], mc[4096], mh[4096];
		long status = 0;
		size_t i;
		int e = agent_call(o.socket, "/v1/drop", body, 60, &status, &ans, &err);

		free(body);
		json_decref(req);
		if (e || status != 200) {
			const char *why = json_string_value(json_object_get(ans, "error"));
			fprintf(stderr, "hubmirror: drop %s: %s\n", argv[k],
				e == -ECONNREFUSED ? "no agent runs" : why ? why : err ? err : "the agent refused");
			free(err);
			json_decref(ans);
			r = CLI_FAILED;
			continue;
		}
		json_array_foreach(json_object_get(ans, "dropped"), i, d) {
			const char *spec = json_string_value(json_object_get(d, "spec"));
			const char *rev = json_string_value(json_object_get(d, "revision"));
			const char *commit = json_string_value(json_object_get(d, "commit"));
			const char *folder = json_string_value(json_object_get(d, "folder"));
			struct hub_spec sp;
			/* (the agent took away the links it made itself: a pull's, a mount's at umount) */
			size_t links = (size_t)json_integer_value(json_object_get(d, "unlinked"));
			if (!spec || !commit || !folder || hub_spec_parse(spec, &sp))
				continue;
			if (sp.hub == HUB_HF && !o.no_hf) {
				const char *cache = o.hf ? o.hf : hub_cache_hf_default(hc, sizeof(hc));
				links += hub_cache_unlink_hf(cache, hub_type_name(sp.type), sp.name, rev, commit,
							     folder);
			} else if (sp.hub == HUB_MS && !o.no_ms) {
				char *dir = hub_cache_ms_dir(o.ms ? o.ms : hub_cache_ms_default(mc, sizeof(mc)),
							     hub_type_name(sp.type), sp.name);
				char *hsnap = rev ? hub_cache_ms_hub_snapshot(hub_cache_ms_hub_default(mh, sizeof(mh)),
									      hub_type_name(sp.type), sp.name, rev)
						  : NULL;
				links += hub_cache_unlink_into(dir, folder, 1);
				if (hsnap)
					links += hub_cache_unlink_into(hsnap, folder, 0);
				free(dir);
				free(hsnap);
			}
			printf("dropped %s @ %.12s from the cache%s", spec, commit, links ? "" : "\n");
			if (links)
				printf(", and its %zu %s from the %s cache\n", links,
				       cli_plural((long long)links, "link", "links"),
				       sp.hub == HUB_HF ? "Hugging Face" : "ModelScope");
			hub_spec_release(&sp);
		}
		json_decref(ans);
		free(err);
	}
	return r;
}
