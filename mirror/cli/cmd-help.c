/*
 * cmd-help.c - `hubmirror help [COMMAND]`.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Without a command, the list of commands; with one, its help: that command's own `CMD --help`, for
 * its options are in its table (cli_parse_flags prints them and exits). */
int cmd_help(int argc, char **argv)
{
	const struct cli_command *self = cli_find("help");
	size_t width = 0;

	cli_help_if_asked(self, argc, argv, NULL);
	if (argc > 2)
		return cli_usage_error(self, "too many arguments");
	if (argc == 2) {
		const struct cli_command *cmd = cli_find(argv[1]);
		if (!cmd)
			return cli_usage_error(NULL, "'%s' is not a hubmirror command", argv[1]);
		optind = 0; /* glibc: full reinitialisation for the command's getopt_long */
		return cmd->run(2, (char *[]){ (char *)cmd->name, "--help", NULL });
	}
	for (unsigned i = 0; i < cli_command_count; i++)
		if (strlen(cli_commands[i].name) > width)
			width = strlen(cli_commands[i].name);
	printf("usage: hubmirror [--log-level LEVEL] [-v] [-q] COMMAND [ARGS...]\n\n"
	       "hubmirror mirrors Hugging Face and ModelScope repositories into a private network.\n\n"
	       "Commands:\n");
	for (unsigned i = 0; i < cli_command_count; i++)
		printf("  %-*s  %s\n", (int)width, cli_commands[i].name, cli_commands[i].summary);
	printf("\nRun 'hubmirror help COMMAND' for the options of one command.\n");
	return CLI_OK;
}
