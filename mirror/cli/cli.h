/*
 * cli.h - the command table of the hubmirror binary.
 *
 * One file per command (cmd-<name>.c with cmd_<name>), registered in commands.c with its synopsis,
 * summary and prose; each option's help is beside it in the command's table of struct cli_flag.
 * Exit status: 0 success, 1 the command failed, 2 bad usage.
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
	const char *help;      /* the prose of `hubmirror help CMD`, before its options (those are its table's) */
};

extern const struct cli_command cli_commands[];
extern const unsigned cli_command_count;

const struct cli_command *cli_find(const char *name);
/* Print a usage error about cmd to stderr ("hubmirror: <msg>" plus a hint); returns CLI_USAGE. */
int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* While to is set, cli_usage_error (and the option parser's refusals) print nothing and keep the
 * first message's words in *to (malloc'd) instead: config_apply says them as the file's line. */
void cli_usage_capture(char **to);

/* ---- options (flags.c) ---- */

/* What a command's option takes, and where it goes. */
enum cli_flag_kind {
	CLI_FLAG_BOOL,  /* --name: *(bool *)dest = true */
	CLI_FLAG_NO,    /* --name: *(bool *)dest = false (--no-progress after --progress) */
	CLI_FLAG_STR,   /* --name ARG: *(const char **)dest = ARG (borrowed from argv) */
	CLI_FLAG_INT,   /* --name N: *(int *)dest = N, a whole number from min to max */
	CLI_FLAG_RATE,  /* --name RATE: *(int64_t *)dest, bytes per second by cli_parse_rate */
	CLI_FLAG_SIZE,  /* --name SIZE: *(int64_t *)dest, bytes by cli_parse_size, at least min */
	CLI_FLAG_FN,    /* --name ARG: fn(cmd, flag, ARG) parses it into dest */
};

/* One option of a command: a table of them ends with CLI_END. Write them with the macros below. */
struct cli_flag {
	const char *name;          /* "data" for --data (getopt_long: a unique prefix works too) */
	enum cli_flag_kind kind;
	void *dest;                /* what kind says; CLI_FLAG_FN: whatever fn wants */
	int64_t min, max;          /* CLI_FLAG_INT: the range; CLI_FLAG_SIZE: the least */
	/* The usage error for a bad value: "--NAME takes TAKES" (INT), "--NAME takes TAKES, not 'ARG'"
	 * (RATE, SIZE). NULL: "MIN to MAX", "bytes per second (k, M, G)", "bytes (k, M, G, T)". */
	const char *takes;
	/* CLI_FLAG_FN: CLI_OK, or CLI_USAGE after cli_usage_error. */
	int (*fn)(const struct cli_command *cmd, const struct cli_flag *f, const char *arg);
	/* Its line in the command's help: "--NAME ARG  HELP". arg names the value ("DIR", "URL", "N");
	 * NULL for CLI_FLAG_BOOL and CLI_FLAG_NO, which take none. help may hold '\n' between lines. */
	const char *arg;
	const char *help;
};

/* The table's entries, each ending with its help (and before it, for an option that takes a value,
 * the name of that value); dest is type-checked (a mismatch is a compiler warning, so an error). */
#define CLI_BOOL(name, p, help) { (name), CLI_FLAG_BOOL, (1 ? (p) : (bool *)NULL), 0, 0, NULL, NULL, NULL, (help) }
#define CLI_NO(name, p, help) { (name), CLI_FLAG_NO, (1 ? (p) : (bool *)NULL), 0, 0, NULL, NULL, NULL, (help) }
#define CLI_STR(name, p, arg, help) \
	{ (name), CLI_FLAG_STR, (1 ? (p) : (const char **)NULL), 0, 0, NULL, NULL, (arg), (help) }
#define CLI_INT(name, p, lo, hi, arg, help) \
	{ (name), CLI_FLAG_INT, (1 ? (p) : (int *)NULL), (lo), (hi), NULL, NULL, (arg), (help) }
#define CLI_INT_TAKES(name, p, lo, hi, takes, arg, help) \
	{ (name), CLI_FLAG_INT, (1 ? (p) : (int *)NULL), (lo), (hi), (takes), NULL, (arg), (help) }
#define CLI_RATE(name, p, arg, help) \
	{ (name), CLI_FLAG_RATE, (1 ? (p) : (int64_t *)NULL), 0, 0, NULL, NULL, (arg), (help) }
#define CLI_SIZE(name, p, least, arg, help) \
	{ (name), CLI_FLAG_SIZE, (1 ? (p) : (int64_t *)NULL), (least), 0, NULL, NULL, (arg), (help) }
#define CLI_FN(name, p, fn, arg, help) { (name), CLI_FLAG_FN, (p), 0, 0, NULL, (fn), (arg), (help) }
/* --store URL, which every command working on a data directory takes: config_store (config.h) has
 * read it before the command's table is parsed; the table takes it into cli_store_url, unused. */
extern const char *cli_store_url;
#define CLI_STORE \
	CLI_STR("store", &cli_store_url, "URL", \
		"the store's S3 bucket, s3://BUCKET[/PREFIX], in place of [store] url\n" \
		"(its endpoint, region and keys as [store] and the environment say)")
#define CLI_END { NULL, CLI_FLAG_BOOL, NULL, 0, 0, NULL, NULL, NULL, NULL }

/* Parse the options of argv (argv[0] the command name; getopt_long underneath, so options and
 * operands may mix, and "--" ends the options) into the destinations of flags, in order. Returns
 * CLI_OK with optind at the first operand, or CLI_USAGE at the first bad option after saying why
 * with cli_usage_error(cmd, ...): "unknown option" for one flags does not have or one missing its
 * argument (getopt_long has named it already unless opterr is 0). --help or -h anywhere before a
 * "--" prints cmd's help, with flags as its options, and exits 0 (cli_help_if_asked). */
int cli_parse_flags(const struct cli_command *cmd, int argc, char **argv, const struct cli_flag *flags);
/* cli_parse_flags for a command that takes options only: an operand is a usage error. */
int cli_parse_flags_only(const struct cli_command *cmd, int argc, char **argv, const struct cli_flag *flags);
/* The same for words that come from elsewhere: where ("FILE:LINE: ") starts each message it prints,
 * and a --help among them is not asked of the command line. */
int cli_parse_flags_in(const struct cli_command *cmd, const char *where, int argc, char **argv,
		       const struct cli_flag *flags);
/* When argv holds --help or -h before a "--", print cmd's help (cli_print_help) and exit 0. For a
 * command that reads something before it parses its options (serve and sync their configuration
 * file), and one without options. */
void cli_help_if_asked(const struct cli_command *cmd, int argc, char **argv, const struct cli_flag *flags);
/* Print cmd's help to stdout: "usage: hubmirror SYNOPSIS", its summary, its prose, then one line or
 * more per option of flags (NULL: none), the help in a column beside "--NAME ARG". */
void cli_print_help(const struct cli_command *cmd, const struct cli_flag *flags);
/* "50M", "1.5G", "800k", "1000": bytes per second (decimal units) into *out; 0, or -1 when malformed. */
int cli_parse_rate(const char *arg, int64_t *out);
/* "50G", "1.5T", "800M": bytes (decimal units k M G T) into *out; 0, or -1 when malformed. */
int cli_parse_size(const char *arg, int64_t *out);

int cmd_help(int argc, char **argv);
int cmd_version(int argc, char **argv);

/* ---- helpers shared by commands (util.c) ---- */

struct mirror_data;

/* Open the data directory (dir NULL: the default), printing "hubmirror: ..." on failure: one that
 * holds no mirror is refused. cli_create_data makes it (add, init, import). Returns CLI_OK or
 * CLI_FAILED. */
int cli_open_data(const char *dir, struct mirror_data **out);
int cli_create_data(const char *dir, struct mirror_data **out);
/* The end of a command that opened its data directory with cli_create_data: a mirror it made is
 * said (stderr: a mistyped --data shows), or, when the command failed with the mirror still empty,
 * taken back (mirror_data_unmake). *d is freed either way. */
void cli_data_done(struct mirror_data **d, int r);

/* arg is not a repository spec cmd takes: say why in one line (the name, the revision, a slip of
 * "hf/" for "hf:"), after where (a file's "FILE:LINE: ", or NULL), and where help is. CLI_USAGE. */
int cli_spec_error(const struct cli_command *cmd, const char *where, const char *arg);

/* The operands from argv[first] on are repository specs (with one_at_least, there is one); with
 * no_revision (the words after "'SPEC': "), none names a revision. CLI_OK, or CLI_USAGE after saying
 * which operand is not. */
int cli_check_specs(const struct cli_command *self, int first, int argc, char **argv, bool one_at_least,
		    const char *no_revision);

/* Take the data directory's sync lock (waiting with wait), printing why on failure.
 * Returns CLI_OK or CLI_FAILED. */
int cli_lock_data(struct mirror_data *d, bool wait);

/* one for a count of 1, else many: "%lld %s", n, cli_plural(n, "file", "files") ("1 file", "3 files") */
const char *cli_plural(long long n, const char *one, const char *many);
/* "1.5 GiB", "312 B": binary units, one decimal. out holds at least 16 bytes. */
void cli_human_size(int64_t bytes, char *out, size_t outlen);
/* "2026-11-30 03:00" (UTC) or "never" for 0. */
void cli_human_time(int64_t unix_seconds, char *out, size_t outlen);
/* "5m ago", "3h ago", "12d ago", "just now", or the date for a year and more ("2025-11-30");
 * "never" for 0. At most 10 columns. */
void cli_human_age(int64_t unix_seconds, char *out, size_t outlen);
/* "2m41s", "1h05m", "12s" (at most 999h59m), for waits and ETAs. */
void cli_human_secs(double secs, char *out, size_t cap);
/* Seconds on the monotonic clock, for rates. */
double cli_mono_s(void);

/* A terminal's progress line for a long operation (verify, export, import): on only when stderr is
 * a terminal and not -q; drawn at most 4 times a second: "verify: 1200 of 45000 contents, 1.2 GiB
 * of 3.4 GiB (35%), 850 MiB/s, ETA 1h02m". cli_progress_fn is a struct mirror_progress's fn with
 * the struct cli_progress as ud; cli_progress_end clears the line. */
struct cli_progress {
	const char *what;
	double started, last;
	bool on, drawn;
};
void cli_progress_start(struct cli_progress *p, const char *what);
void cli_progress_fn(void *ud, int64_t done_n, int64_t total_n, int64_t done_bytes, int64_t total_bytes);
void cli_progress_end(struct cli_progress *p);

/* Columns to fit: $COLUMNS when set (as GNU ls), else the width of the terminal on stdout, else 0
 * (not a terminal: no limit). */
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
/* method path (with body, may be NULL) on the mirror, with token (may be NULL): its JSON answer, or
 * NULL when it could not be reached or did not answer JSON (said). *status: the HTTP status (0
 * when unreached); an answer >= 300 is said too. */
struct json_t *cli_mirror_call(const char *mirror, const char *method, const char *path, struct json_t *body,
			       const char *token, long *status);
/* A serve of data directory dir (NULL: the default) with the operator API, on this machine, whose
 * admin token this account can read (or $HUBMIRROR_ADMIN_TOKEN gives): its URL (malloc'd), and
 * cli_admin_call then uses that token. NULL when there is none (or $HUBMIRROR_NO_SERVE_ROUTE is set):
 * work on the directory itself. */
char *cli_local_serve(const char *dir);
/* A call to a mirror's operator API (/api/admin/..., docs/http-api.md) with $HUBMIRROR_ADMIN_TOKEN:
 * method (GET, POST, DELETE), body (NULL: none). The answer's JSON (NULL when none came; a refusal is
 * printed and its JSON still returned), *status its HTTP status (0 when none). */
struct json_t *cli_admin_call(const char *mirror, const char *method, const char *path, struct json_t *body,
			      long *status);

int cmd_add(int argc, char **argv);
int cmd_backup(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_git_hook(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_pin(int argc, char **argv);
int cmd_request(int argc, char **argv);
int cmd_requests(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_drop(int argc, char **argv);
int cmd_pull(int argc, char **argv);

/* ---- the instance agent's clients: mount and pull (cmd-mount.c) ---- */

struct cli_agent_opts {
	const char *command;                    /* "mount", "pull": for messages */
	const char *socket;                     /* the agent's socket */
	const char *mirror, *cache, *listen;    /* mirror for the request; cache and listen for a new agent */
	const char *hf, *ms;                    /* hub caches to link into (NULL: the defaults) */
	bool no_hf, no_ms;
};
/* Their options, into *o: entries of a struct cli_flag table. */
#define CLI_AGENT_FLAGS(o) \
	CLI_STR("mirror", &(o)->mirror, "URL[,URL...]", \
		"the mirror, or several of one deployment: the first that answers\n" \
		"(default $HUBMIRROR_URL, else the running agent's)"), \
	CLI_STR("cache", &(o)->cache, "DIR", \
		"for a new agent: where the bytes are kept (default $HUBMIRROR_CACHE or\n/var/cache/hubmirror)"), \
	CLI_STR("hf-cache", &(o)->hf, "DIR", \
		"the Hugging Face hub cache (default $HF_HUB_CACHE, $HF_HOME/hub or\n~/.cache/huggingface/hub)"), \
	CLI_BOOL("no-hf-cache", &(o)->no_hf, "no links in the Hugging Face hub cache"), \
	CLI_STR("ms-cache", &(o)->ms, "DIR", \
		"the ModelScope cache of ms: repos (default $MODELSCOPE_CACHE, or\n" \
		"~/.cache/modelscope/hub and ~/.cache/modelscope)"), \
	CLI_BOOL("no-ms-cache", &(o)->no_ms, "no links in the ModelScope caches"), \
	CLI_STR("listen", &(o)->listen, "ADDR", \
		"for a new agent: where it listens for other peers (default 0.0.0.0:0)"), \
	CLI_STR("socket", &(o)->socket, "PATH", \
		"the agent's socket (default $HUBMIRROR_AGENT_SOCKET or /run/hubmirror/agent.sock)")
/* The body of a request about spec: mirror, token, and the hub caches to link into. New reference. */
struct json_t *cli_agent_request(const char *spec, const struct cli_agent_opts *o);
/* A CLI_FN for a repeatable pattern option (pull --include, mount --prefetch): f->dest is the
 * json_t array the pattern goes to; a bad pattern is a usage error. */
int cli_take_pattern(const struct cli_command *cmd, const struct cli_flag *f, const char *arg);
/* POST req to the agent (starting one when none answers, if o->mirror is set): CLI_OK with *ans (a new
 * reference), or CLI_FAILED / CLI_USAGE after saying why on stderr (*ans may be set; release it). */
int cli_agent_post(const struct cli_agent_opts *o, const char *path, struct json_t *req, struct json_t **ans);
/* When the agent's answer ans (to a mount or pull of spec) says the mirror did not answer, say on
 * stderr which snapshot held is used instead: "offline: using main @ bb8dd88c (synced ...)". */
void cli_agent_offline_note(const char *spec, struct json_t *ans);
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

/* A token from a file readable by its owner only (mode 600; a token is a password), one line of
 * printable characters, whitespace around it ignored. *out is malloc'd. Returns 0, or -1 after
 * saying why, with what ("Hugging Face token file") in the message. */
int cli_read_token_file(const char *path, const char *what, char **out);

#endif
