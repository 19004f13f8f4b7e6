/*
 * flags.c - the commands' option parser (a table of struct cli_flag over getopt_long), their usage
 * errors, and their help (`CMD --help`: the command's prose, then each option of its table).
 */
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "base/str.h"
#include "cli.h"

const char *cli_store_url;

/* getopt_long's value for flags[i]: above every character, so never a short option's. */
#define FLAG_VAL0 0x1000

/* Where a usage error's words go instead of stderr (cli_usage_capture), the first one only. */
static char **captured;

void cli_usage_capture(char **to)
{
	captured = to;
}

int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	if (captured) {
		if (!*captured) {
			va_start(ap, fmt);
			*captured = xvasprintf(fmt, ap);
			va_end(ap);
		}
		return CLI_USAGE;
	}
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

/* A number with an optional unit, at most max. k M G T P alone, and KiB MiB GiB TiB PiB, are binary
 * (1M is 1 MiB, as du, dd and truncate read it, and as status and every message show sizes); kB MB GB
 * TB PB are decimal (1 MB is 1,000,000 bytes). Any case, a space before allowed: "2T", "2 TiB", "1.5G",
 * "500GB". */
static int parse_units(const char *arg, double max, int64_t *out)
{
	static const char units[] = "kmgtp";
	char *end;
	double v = strtod(arg, &end), mult = 1;

	if (end == arg || v < 0)
		return -1;
	while (*end == ' ')
		end++;
	if (*end) {
		const char *u = strchr(units, tolower((unsigned char)*end));
		int k;
		if (!u)
			return -1;
		k = (int)(u - units) + 1;
		end++;
		if (!*end ||
		    (tolower((unsigned char)end[0]) == 'i' && tolower((unsigned char)end[1]) == 'b' && !end[2]))
			mult = (double)(1ULL << (10 * k));
		else if (tolower((unsigned char)end[0]) == 'b' && !end[1])
			for (mult = 1; k > 0; k--)
				mult *= 1000;
		else
			return -1;
	}
	if (v * mult > max)
		return -1;
	*out = (int64_t)(v * mult);
	return 0;
}

int cli_parse_rate(const char *arg, int64_t *out)
{
	return parse_units(arg, 1e12, out);
}

int cli_parse_size(const char *arg, int64_t *out)
{
	return parse_units(arg, 1e18, out);
}

/* A whole number from f->min to f->max into *out; -1 when it is not. */
static int parse_int(const struct cli_flag *f, const char *arg, int *out)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (end == arg || *end || v < f->min || v > f->max)
		return -1;
	*out = (int)v;
	return 0;
}

/* Take one option's argument (NULL for a bool) into f->dest. Returns CLI_OK or CLI_USAGE (said). */
static int take(const struct cli_command *cmd, const char *where, const struct cli_flag *f, const char *arg)
{
	switch (f->kind) {
	case CLI_FLAG_BOOL:
		*(bool *)f->dest = true;
		break;
	case CLI_FLAG_NO:
		*(bool *)f->dest = false;
		break;
	case CLI_FLAG_STR:
		*(const char **)f->dest = arg;
		break;
	case CLI_FLAG_INT:
		if (parse_int(f, arg, f->dest)) {
			if (f->takes)
				return cli_usage_error(cmd, "%s--%s takes %s", where, f->name, f->takes);
			return cli_usage_error(cmd, "%s--%s takes %lld to %lld", where, f->name, (long long)f->min,
					       (long long)f->max);
		}
		break;
	case CLI_FLAG_RATE:
		if (cli_parse_rate(arg, f->dest))
			return cli_usage_error(cmd, "%s--%s takes %s, not '%s'", where, f->name,
					       f->takes ? f->takes : "bytes per second (k, M, G)", arg);
		break;
	case CLI_FLAG_SIZE:
		if (cli_parse_size(arg, f->dest) || *(int64_t *)f->dest < f->min)
			return cli_usage_error(cmd, "%s--%s takes %s, not '%s'", where, f->name,
					       f->takes ? f->takes : "bytes (k, M, G, T)", arg);
		break;
	case CLI_FLAG_FN:
		return f->fn(cmd, f, arg);
	}
	return CLI_OK;
}

/* One line for an option getopt refused (arg as written: "--jsn", "--data=x"), with the nearest
 * option the command has when one is close, and where help is; no usage block. */
static int option_error(const struct cli_command *cmd, const char *where, const char *arg, bool missing,
			const struct cli_flag *flags)
{
	const char *name = arg, *best = NULL;
	char *bare;
	size_t bd = 99, len;

	while (*name == '-')
		name++;
	len = strcspn(name, "=");
	bare = xstrndup(name, len);
	for (size_t i = 0; flags[i].name; i++) {
		size_t d = str_distance(bare, flags[i].name);
		if (d < bd) {
			bd = d;
			best = flags[i].name;
		}
	}
	if (captured) {
		if (!*captured)
			*captured =
				missing ? xasprintf("--%s needs a value", bare) : xasprintf("unknown option %s", arg);
		free(bare);
		return CLI_USAGE;
	}
	/* "hubmirror: ls: ..." on the command line, "hubmirror: list:4: ..." in a file */
	fprintf(stderr, "hubmirror: %s%s", *where ? where : cmd ? cmd->name : "", *where ? "" : cmd ? ": " : "");
	if (missing)
		fprintf(stderr, "--%s needs a value\n", bare);
	else if (best && bd <= (len > 4 ? 2 : 1))
		fprintf(stderr, "unknown option --%s (did you mean --%s?)\n", bare, best);
	else
		fprintf(stderr, "unknown option %s\n", arg);
	if (cmd)
		fprintf(stderr, "(see 'hubmirror help %s' for its options)\n", cmd->name);
	free(bare);
	return CLI_USAGE;
}

/* The width of "--NAME ARG", an option's left column in the help. */
static size_t option_width(const struct cli_flag *f)
{
	return 2 + strlen(f->name) + (f->arg ? 1 + strlen(f->arg) : 0);
}

/* The options' lines of a help: "  --NAME ARG" in a column as wide as the widest of them up to 20
 * (a wider one overflows it), two spaces, then the help, its further lines indented to its column. */
static void print_options(const struct cli_flag *flags)
{
	size_t w = 0;

	for (size_t i = 0; flags[i].name; i++)
		if (option_width(&flags[i]) <= 20 && option_width(&flags[i]) > w)
			w = option_width(&flags[i]);
	for (size_t i = 0; flags[i].name; i++) {
		const struct cli_flag *f = &flags[i];
		const char *h = f->help ? f->help : "";
		size_t n = option_width(f);

		printf("  --%s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");
		if (!*h) {
			putchar('\n');
			continue;
		}
		printf("%*s", (int)(n < w ? w - n : 0) + 2, "");
		for (;;) {
			size_t len = strcspn(h, "\n");
			printf("%.*s\n", (int)len, h);
			if (!h[len] || !h[len + 1])
				break;
			h += len + 1;
			printf("%*s", (int)w + 4, "");
		}
	}
}

void cli_print_help(const struct cli_command *cmd, const struct cli_flag *flags)
{
	bool options = flags && flags[0].name;

	printf("usage: hubmirror %s\n\n%s\n", cmd->synopsis, cmd->summary);
	if ((cmd->help && *cmd->help) || options)
		printf("\n%s", cmd->help ? cmd->help : "");
	if (options)
		print_options(flags);
}

void cli_help_if_asked(const struct cli_command *cmd, int argc, char **argv, const struct cli_flag *flags)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			cli_print_help(cmd, flags);
			exit(CLI_OK);
		}
	}
}

int cli_parse_flags_in(const struct cli_command *cmd, const char *where, int argc, char **argv,
		       const struct cli_flag *flags)
{
	struct option *opts;
	size_t n = 0;
	int c, r = CLI_OK;

	if (cmd && !*where)
		cli_help_if_asked(cmd, argc, argv, flags); /* as git's parse-options: the help, then exit 0 */
	while (flags[n].name)
		n++;
	opts = xcalloc(n + 1, sizeof(*opts));
	for (size_t i = 0; i < n; i++) {
		bool bare = flags[i].kind == CLI_FLAG_BOOL || flags[i].kind == CLI_FLAG_NO;

		opts[i].name = flags[i].name;
		opts[i].has_arg = bare ? no_argument : required_argument;
		opts[i].val = FLAG_VAL0 + (int)i;
	}
	opterr = 0; /* getopt's own message reads like another program's: ours names the option */
	while (r == CLI_OK && (c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			r = option_error(cmd, where, optind > 0 && optind <= argc ? argv[optind - 1] : "?", c == ':',
					 flags);
		else if (c < FLAG_VAL0 || c >= FLAG_VAL0 + (int)n)
			r = cli_usage_error(cmd, "%sunknown option", where);
		else
			r = take(cmd, where, &flags[c - FLAG_VAL0], optarg);
	}
	free(opts);
	return r;
}

int cli_parse_flags(const struct cli_command *cmd, int argc, char **argv, const struct cli_flag *flags)
{
	return cli_parse_flags_in(cmd, "", argc, argv, flags);
}

int cli_parse_flags_only(const struct cli_command *cmd, int argc, char **argv, const struct cli_flag *flags)
{
	if (cli_parse_flags(cmd, argc, argv, flags))
		return CLI_USAGE;
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return CLI_OK;
}
