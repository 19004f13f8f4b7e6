/*
 * cli.h - the command table of the hubmirror binary.
 *
 * One file per command (cmd-<name>.c with cmd_<name>), registered in commands.c. Help text is
 * generated from the table. Exit status: 0 success, 1 the command failed, 2 bad usage.
 */
#ifndef HM_CLI_H
#define HM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

struct cli_command {
	const char *name;
	/* argv[0] is the command name; getopt state is reset before the call. Returns CLI_*. */
	int (*run)(int argc, char **argv);
	const char *synopsis;  /* "serve [--data DIR] [--listen HOST:PORT]" */
	const char *summary;   /* one line for `hubmirror help` */
	const char *help;      /* the body of `hubmirror help CMD` */
};

extern const struct cli_command cli_commands[];
extern const unsigned cli_command_count;

const struct cli_command *cli_find(const char *name);
/* Print "usage: hubmirror SYNOPSIS" and the help of cmd to stdout. */
void cli_print_help(const struct cli_command *cmd);
/* Print a usage error about cmd to stderr ("hubmirror: <msg>" plus a hint); returns CLI_USAGE. */
int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

int cmd_help(int argc, char **argv);
int cmd_version(int argc, char **argv);

/* ---- helpers shared by commands (util.c) ---- */

struct mirror_data;

/* Open the data directory (dir NULL: the default), printing "hubmirror: ..." on failure.
 * Returns CLI_OK or CLI_FAILED. */
int cli_open_data(const char *dir, struct mirror_data **out);

/* Take the data directory's sync lock (waiting with wait), printing why on failure.
 * Returns CLI_OK or CLI_FAILED. */
int cli_lock_data(struct mirror_data *d, bool wait);

/* "1.5 GiB", "312 B": binary units, one decimal. out holds at least 16 bytes. */
void cli_human_size(int64_t bytes, char *out, size_t outlen);
/* "2026-11-30 03:00" (UTC) or "never" for 0. */
void cli_human_time(int64_t unix_seconds, char *out, size_t outlen);
/* "50M", "1.5G", "800k", "1000": bytes per second (decimal units) into *out; 0, or -1 when malformed. */
int cli_parse_rate(const char *arg, int64_t *out);
/* "50G", "1.5T", "800M": bytes (decimal units k M G T) into *out; 0, or -1 when malformed. */
int cli_parse_size(const char *arg, int64_t *out);
/* Width of the terminal on stdout, or 0 when stdout is not a terminal. */
int cli_term_width(void);


/* The mirror to ask: opt if set, else $HUBMIRROR_URL, else NULL (use the local data directory). */
const char *cli_mirror_url(const char *opt);
/* The operator token for a mirror that asks for one: $HUBMIRROR_TOKEN (NULL when unset or malformed). */
const char *cli_mirror_token(void);
/* GET mirror + path from its catalog API; NULL (message printed) unless a 200 with JSON came. */
struct json_t *cli_mirror_get(const char *mirror, const char *path_and_query);
/* Print repos (a JSON array of catalog repo objects: spec revision sync_status files size
 * last_sync_at) as a table, the spec column fitted to the terminal. */
void cli_print_repo_table(struct json_t *repos);

int cmd_add(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_pull(int argc, char **argv);

/* ---- the instance agent's clients: mount and pull (cmd-mount.c) ---- */

struct cli_agent_opts {
	const char *command;                    /* "mount", "pull": for messages */
	const char *socket;                     /* the agent's socket */
	const char *mirror, *cache, *listen;    /* mirror for the request; cache and listen for a new agent */
	const char *hf, *ms;                    /* hub caches to link into (NULL: the defaults) */
	bool no_hf, no_ms;
};
/* Their getopt entries (short codes m c H N S n l s), and cli_agent_opt to take one (1 if it did). */
#define CLI_AGENT_OPTIONS \
	{ "mirror", required_argument, NULL, 'm' }, { "cache", required_argument, NULL, 'c' }, \
	{ "hf-cache", required_argument, NULL, 'H' }, { "no-hf-cache", no_argument, NULL, 'N' }, \
	{ "ms-cache", required_argument, NULL, 'S' }, { "no-ms-cache", no_argument, NULL, 'n' }, \
	{ "listen", required_argument, NULL, 'l' }, { "socket", required_argument, NULL, 's' }
int cli_agent_opt(struct cli_agent_opts *o, int c, const char *arg);
/* The body of a request about spec: mirror, token, and the hub caches to link into. New reference. */
struct json_t *cli_agent_request(const char *spec, const struct cli_agent_opts *o);
/* POST req to the agent (starting one when none answers, if o->mirror is set): CLI_OK with *ans (a new
 * reference), or CLI_FAILED / CLI_USAGE after saying why on stderr (*ans may be set; release it). */
int cli_agent_post(const struct cli_agent_opts *o, const char *path, struct json_t *req, struct json_t **ans);
int cmd_sync(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_info(int argc, char **argv);

/* ---- more helpers shared by commands (util.c) ---- */

/* cli_open_data, then cli_lock_data: *out is set only when both succeed (a failure is printed and
 * closes the directory again). Returns CLI_OK or CLI_FAILED. */
int cli_open_locked(const char *dir, bool wait, struct mirror_data **out);
/* Print o to stdout as indented JSON and a newline; o stays the caller's. */
void cli_print_json(struct json_t *o);
/* Print why a catalog call about the repository named spec failed with e (HM_ERR_NOT_FOUND: it is
 * not tracked; else the catalog's own message). Returns CLI_FAILED. */
int cli_repo_error(struct mirror_data *d, const char *spec, int e);

#endif
