/*
 * config.h - the configuration file (INI, read with inih): settings of `serve` and `sync` kept in
 * one place. Every key is one of their options, so its value means and is checked exactly as on
 * the command line: [serve] listen = X is --listen X. Precedence: the command line, then the file,
 * then the environment (HUBMIRROR_DATA, ...), then the built-in defaults. docs/configuration.md
 * lists every key.
 */
#ifndef HM_CLI_CONFIG_H
#define HM_CLI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"

#define CONFIG_DEFAULT_PATH "/etc/hubmirror/hubmirror.conf"

/* Which command a key is for; CONFIG_STORE: read by the store's own settings (config_s3), no
 * command's option. */
enum { CONFIG_SERVE = 1, CONFIG_SYNC = 2, CONFIG_STORE = 4 };

struct config_entry {
	char *section;
	char *key;          /* '_' written as '-' */
	char *value;
	int line;
};

struct config {
	char *path;         /* NULL: no file */
	struct config_entry *v;
	size_t n;
};

/* "--NAME VALUE" or "--NAME=VALUE" in argv (before a "--"): VALUE, borrowed; NULL when absent. The
 * file is read before the options are, so --config is looked for first. */
const char *config_option(int argc, char **argv, const char *name);

/* The file to read: opt (a --config value) if set, else $HUBMIRROR_CONFIG, else the default path when
 * it exists; NULL when none. Static or borrowed. */
const char *config_path(const char *opt);

/* The data directory the configuration file (config_path(NULL)) names in [serve] data becomes
 * $HUBMIRROR_DATA, so that every command (add, ls, gc, backup...) works on the one serve and sync
 * use; the file wins over the environment, as for serve and sync. A file that does not load is left
 * to the commands that read it to report. */
void config_data_dir(void);

/* Read path (NULL: no file, an empty config) into *out; every section and key must be known.
 * Returns CLI_OK, or CLI_USAGE / CLI_FAILED after printing "hubmirror: FILE:LINE: ...". */
int config_load(const char *path, struct config *out);
void config_release(struct config *c);

/* Give the file's settings for cmd (CONFIG_SERVE or CONFIG_SYNC) to its options as if they came
 * first on its command line (the real one is parsed after, so it wins). Resets getopt. Returns
 * CLI_OK or CLI_USAGE after naming the file and line. */
int config_apply(const struct config *c, const struct cli_command *cmd, unsigned which,
		 const struct cli_flag *flags);

/* [store] url = s3://BUCKET[/PREFIX]: the bucket, its endpoint and region, and the keys to it, from
 * the credentials file [store] credentials-file names (AWS's format: [default], or $AWS_PROFILE's
 * section, with aws_access_key_id, aws_secret_access_key and aws_session_token) or else from
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN. The keys are never printed. */
struct config_s3 {
	char *url;                  /* as written */
	char *bucket, *prefix;      /* the URL's parts */
	char *endpoint;             /* [store] s3-endpoint; NULL: AWS's for the region */
	char *region;               /* [store] region; NULL: us-east-1 */
	char *access_key, *secret_key, *session_token;
	char *keys_from;            /* where the keys came from, for messages: a file or "the environment" */
	int url_line, endpoint_line, keys_line; /* the file's lines that said them (0: none) */
};
/* Fill *out from c: 1 when [store] url names a bucket, 0 when it names none (the data directory's
 * store), -1 after saying every mistake ("hubmirror: FILE:LINE: [store] KEY: ..."). Release *out
 * after 1 (NULL-safe fields; the keys are wiped). */
int config_s3(const struct config *c, struct config_s3 *out);
void config_s3_release(struct config_s3 *s);

/* The store's bucket for this process (store_bucket_configure) from the configuration file (--config in
 * argv, else config_path(NULL)) when its [store] url names one, with [store] cache-size. Returns CLI_OK
 * (also when there is no file, or none that loads: the command reading it says so), or CLI_FAILED
 * after saying what is wrong with the store's settings. */
int config_store(int argc, char **argv);

/* Call fn for every known key: its section, key, the option it stands for, the commands it is for,
 * and the file's value (NULL when the file does not set it). option is NULL for CONFIG_STORE's. */
void config_each_key(const struct config *c,
		     void (*fn)(void *ud, const char *section, const char *key, const char *option, unsigned which,
				const char *value),
		     void *ud);

#endif
