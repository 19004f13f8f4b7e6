/*
 * main.c - the hubmirror entry point: global options, then dispatch through the command table.
 *
 *   hubmirror [--log-level LEVEL] [-v|--verbose] [-q|--quiet] COMMAND [ARGS...]
 *   hubmirror --version | --help
 */
#include <getopt.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli.h"
#include "config.h"

static void print_global_usage(FILE *f)
{
	fputs("usage: hubmirror [--log-level LEVEL] [-v] [-q] COMMAND [ARGS...]\n"
	      "       hubmirror --version\n"
	      "       hubmirror help [COMMAND]\n", f);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "log-level", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *cmd;
	enum log_level level;
	int c;

	/* What hubmirror writes is its owner's and its group's (data, caches, logs, exports): guarded
	 * content must not become readable by every user of the machine (docs/security.md). */
	umask(umask(0) | 027);
	/* '+': stop at the command name, its options are its own. */
	while ((c = getopt_long(argc, argv, "+hvq", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			optind = 0;
			return cmd_help(1, (char *[]){ "help", NULL });
		case 'V':
			optind = 0;
			return cmd_version(1, (char *[]){ "version", NULL });
		case 'v':
			log_set_level(LOG_LEVEL_DEBUG);
			break;
		case 'q':
			log_set_level(LOG_LEVEL_WARN);
			break;
		case 'L':
			if (log_parse_level(optarg, &level))
				return cli_usage_error(NULL, "unknown log level '%s' (error, warn, info, debug)",
						       optarg);
			log_set_level(level);
			break;
		default:
			print_global_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (optind >= argc) {
		print_global_usage(stderr);
		fputs("(see 'hubmirror help' for the commands)\n", stderr);
		return CLI_USAGE;
	}
	cmd = cli_find(argv[optind]);
	if (!cmd)
		return cli_usage_error(NULL, "'%s' is not a hubmirror command", argv[optind]);

	argc -= optind;
	argv += optind;
	/* `hubmirror CMD --help` is the command's own: cli_parse_flags prints its help from its table */
	config_data_dir(); /* every command finds the data directory the configuration file names */
	/* and the store's bucket (`config check` says itself what is wrong with it) */
	if (strcmp(cmd->name, "config") && strcmp(cmd->name, "help") && strcmp(cmd->name, "version") &&
	    config_store(argc, argv) != CLI_OK)
		return CLI_FAILED;
	optind = 0; /* glibc: full reinitialisation for the command's own getopt_long */
	return cmd->run(argc, argv);
}
