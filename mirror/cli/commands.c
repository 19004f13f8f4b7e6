/*
 * commands.c - the one table of commands. Add a command here and in its own cmd-<name>.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

const struct cli_command cli_commands[] = {
	{ "help", cmd_help, "help [COMMAND]", "show the commands, or the help of one",
	  "Without COMMAND, list every command with a one-line summary. With COMMAND, show its usage\n"
	  "and options. `hubmirror COMMAND --help` shows the same.\n" },
	{ "version", cmd_version, "version [--json]", "print the versions of hubmirror and its libraries",
	  "Print the hubmirror version and the versions of the libraries it was built with.\n"
	  "  --json   print them as a JSON object\n" },
};
const unsigned cli_command_count = sizeof(cli_commands) / sizeof(cli_commands[0]);

const struct cli_command *cli_find(const char *name)
{
	for (unsigned i = 0; i < cli_command_count; i++)
		if (!strcmp(cli_commands[i].name, name))
			return &cli_commands[i];
	return NULL;
}

void cli_print_help(const struct cli_command *cmd)
{
	printf("usage: hubmirror %s\n\n%s\n", cmd->synopsis, cmd->summary);
	if (cmd->help && *cmd->help)
		printf("\n%s", cmd->help);
}

int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("hubmirror: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd)
		fprintf(stderr, "usage: hubmirror %s\n(see 'hubmirror help %s')\n", cmd->synopsis, cmd->name);
	else
		fputs("(see 'hubmirror help')\n", stderr);
	return CLI_USAGE;
}
