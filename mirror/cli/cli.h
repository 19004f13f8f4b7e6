/*
 * cli.h - the command table of the hubmirror binary.
 *
 * One file per command (cmd-<name>.c with cmd_<name>), registered in commands.c. Help text is
 * generated from the table. Exit status: 0 success, 1 the command failed, 2 bad usage.
 */
#ifndef HM_CLI_H
#define HM_CLI_H

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

#endif
