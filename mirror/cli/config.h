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

/* Which command a key is for. */
enum { CONFIG_SERVE = 1, CONFIG_SYNC = 2 };

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

/* Call fn for every known key: its section, key, the option it stands for, the commands it is for,
 * and the file's value (NULL when the file does not set it). */
void config_each_key(const struct config *c,
		     void (*fn)(void *ud, const char *section, const char *key, const char *option, unsigned which,
				const char *value),
		     void *ud);

#endif
