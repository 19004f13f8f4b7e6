/*
 * test-cli-flags.c - the commands' option parser (mirror/cli/flags.c): each kind of flag, operands
 * mixed with options, and the usage error (exit status 2, message) for each way an option is bad.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mirror/cli/cli.h"
#include "test.h"

static const struct cli_command cmd_t = { "t", NULL, "t [--x]", "a command to test with", "" };

/* What the last parse said on stderr, and the first operand it left (NULL: none). */
static char said[1024];
static const char *operand;

/* Parse the words (a NULL-terminated list after argv[0] "t") by flags, with where unless it is NULL,
 * catching stderr into said. */
static int parse_in(const char *where, const char *const *words, const struct cli_flag *flags)
{
	char *argv[32];
	int argc = 0, saved, r;
	FILE *f = tmpfile();
	size_t n;

	argv[argc++] = "t";
	while (*words)
		argv[argc++] = (char *)*words++;
	argv[argc] = NULL;
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fileno(f), STDERR_FILENO);
	optind = 0;
	r = where ? cli_parse_flags_in(&cmd_t, where, argc, argv, flags) : cli_parse_flags(&cmd_t, argc, argv, flags);
	operand = optind < argc ? argv[optind] : NULL;
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(said, 1, sizeof(said) - 1, f);
	said[n] = '\0';
	fclose(f);
	return r;
}

static int parse(const char *const *words, const struct cli_flag *flags)
{
	return parse_in(NULL, words, flags);
}

/* A flag parsed by its own function: "even" numbers only, counted. */
static int take_even(const struct cli_command *cmd, const struct cli_flag *f, const char *arg)
{
	int *count = f->dest;

	if (strlen(arg) % 2)
		return cli_usage_error(cmd, "--%s takes an even word, not '%s'", f->name, arg);
	(*count)++;
	return CLI_OK;
}

TEST(each_kind_of_flag)
{
	bool json = false, progress = true;
	const char *dir = NULL;
	int keep = 2, evens = 0;
	int64_t rate = 0, size = 0;
	const struct cli_flag flags[] = {
		CLI_BOOL("json", &json, "j"), CLI_NO("no-progress", &progress, "p"), CLI_STR("data", &dir, "DIR", "d"),
		CLI_INT("keep", &keep, 1, 1000, "N", "k"), CLI_RATE("rate", &rate, "R", "r"),
		CLI_SIZE("size", &size, 1, "SIZE", "s"), CLI_FN("even", &evens, take_even, "W", "e"), CLI_END,
	};

	CHECK_INT(parse((const char *[]){ "--json", "op", "--no-progress", "--data", "d", "--keep=7", "--rate", "1.5M",
					  "--size", "2G", "--even", "ab", "--even=cdef", NULL }, flags), CLI_OK);
	CHECK(json);
	CHECK(!progress);
	CHECK_STR(dir, "d");
	CHECK_INT(keep, 7);
	CHECK_INT(rate, 3 << 19);
	CHECK_INT(size, 2LL << 30);
	CHECK_INT(evens, 2);
	CHECK_STR(said, "");
	/* getopt_long moves the operand after the options */
	CHECK_STR(operand, "op");
}

TEST(operands_and_the_end_of_options)
{
	bool json = false;
	const struct cli_flag flags[] = { CLI_BOOL("json", &json, "j"), CLI_END };

	CHECK_INT(parse((const char *[]){ NULL }, flags), CLI_OK);
	CHECK(operand == NULL);
	CHECK_INT(parse((const char *[]){ "--", "--json", NULL }, flags), CLI_OK);
	CHECK(!json);
	CHECK_STR(operand, "--json");
	/* a unique prefix is the option */
	CHECK_INT(parse((const char *[]){ "--js", "op", NULL }, flags), CLI_OK);
	CHECK(json);
	CHECK_STR(operand, "op");
}

TEST(bad_options_are_usage_errors)
{
	const char *dir = NULL;
	int keep = 2, age = 168, evens = 0;
	int64_t rate = 0, size = 0;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "d"), CLI_INT("keep", &keep, 1, 1000, "N", "k"),
		CLI_INT_TAKES("age", &age, 0, 1000000, "hours (0 or more)", "H", "a"),
		CLI_RATE("rate", &rate, "R", "r"),
		CLI_SIZE("size", &size, 1, "SIZE", "s"), CLI_FN("even", &evens, take_even, "W", "e"), CLI_END,
	};

	/* one line naming the option (and the near one), and where help is: not getopt's words, no usage */
	CHECK_INT(parse((const char *[]){ "--frob", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: t: unknown option --frob\n(see 'hubmirror help t' for its options)\n"));
	CHECK(!strstr(said, "unrecognized") && !strstr(said, "usage:"));
	CHECK_INT(parse((const char *[]){ "--kep", "3", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: t: unknown option --kep (did you mean --keep?)\n"));
	CHECK_INT(parse((const char *[]){ "--data", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: t: --data needs a value\n"));
	CHECK_INT(parse((const char *[]){ "--keep", "0", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: --keep takes 1 to 1000\n"));
	CHECK_INT(parse((const char *[]){ "--keep", "5x", NULL }, flags), CLI_USAGE);
	CHECK_INT(parse((const char *[]){ "--keep", "", NULL }, flags), CLI_USAGE);
	CHECK_INT(parse((const char *[]){ "--keep", "4294967297", NULL }, flags), CLI_USAGE);
	CHECK_INT(keep, 2);
	CHECK_INT(parse((const char *[]){ "--age", "-1", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: --age takes hours (0 or more)\n"));
	CHECK_INT(parse((const char *[]){ "--rate", "5Q", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: --rate takes bytes per second (k, M, G), not '5Q'\n"));
	CHECK_INT(parse((const char *[]){ "--size", "0", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: --size takes bytes (k, M, G, T), not '0'\n"));
	CHECK_INT(parse((const char *[]){ "--even", "abc", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: --even takes an even word, not 'abc'\n"));
	/* the first bad option stops the parse */
	CHECK_INT(parse((const char *[]){ "--keep", "0", "--data", "d", NULL }, flags), CLI_USAGE);
	CHECK(dir == NULL);
}

TEST(where_starts_each_message)
{
	int keep = 2;
	const struct cli_flag flags[] = { CLI_INT("keep", &keep, 1, 1000, "N", "k"), CLI_END };

	CHECK_INT(parse_in("list:4: ", (const char *[]){ "--keep", "0", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: list:4: --keep takes 1 to 1000\n"));
	CHECK_INT(parse_in("list:4: ", (const char *[]){ "--frob", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: list:4: unknown option --frob\n"));
}

/* Run argv (after "t") through cli_parse_flags in a child, its stdout into out; its exit status, or -1
 * when the parse returned instead of exiting (then 100 + what it returned). */
static int help_child(const char *const *words, const struct cli_flag *flags, char *out, size_t cap)
{
	FILE *f = tmpfile();
	int status = 0;
	size_t n;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *argv[16];
		int argc = 0;

		dup2(fileno(f), STDOUT_FILENO);
		argv[argc++] = "t";
		while (*words)
			argv[argc++] = (char *)*words++;
		argv[argc] = NULL;
		optind = 0;
		_exit(100 + cli_parse_flags(&cmd_t, argc, argv, flags));
	}
	waitpid(pid, &status, 0);
	rewind(f);
	n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	fclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Each option's help is beside it: "--NAME ARG" in a column as wide as the widest (up to 20), the
 * help's further lines under its first; a wider option overflows. --help prints it and exits 0. */
TEST(help_beside_each_option)
{
	bool json = false;
	const char *dir = NULL;
	int keep = 2;
	const struct cli_flag flags[] = {
		CLI_STR("data", &dir, "DIR", "data directory"),
		CLI_INT("keep", &keep, 1, 1000, "N", "snapshots kept,\nper repository"),
		CLI_BOOL("json", &json, "print JSON"),
		CLI_STR("a-very-long-option", &dir, "FILE", "overflows\nits column"),
		CLI_END,
	};
	const char *want =
		"usage: hubmirror t [--x]\n"
		"\n"
		"a command to test with\n"
		"\n"
		"Prose.\n"
		"  --data DIR  data directory\n"
		"  --keep N    snapshots kept,\n"
		"              per repository\n"
		"  --json      print JSON\n"
		"  --a-very-long-option FILE  overflows\n"
		"              its column\n";
	static const struct cli_command cmd_p = { "t", NULL, "t [--x]", "a command to test with", "Prose.\n" };
	char out[2048];

	CHECK_INT(help_child((const char *[]){ "--data", "d", "--help", NULL }, flags, out, sizeof(out)), 0);
	CHECK(strstr(out, "  --data DIR  data directory\n"
			  "  --keep N    snapshots kept,\n"
			  "              per repository\n"));
	CHECK(strstr(out, "  --a-very-long-option FILE  overflows\n              its column\n"));
	CHECK_INT(help_child((const char *[]){ "op", "-h", NULL }, flags, out, sizeof(out)), 0);
	CHECK(!strncmp(out, "usage: hubmirror t [--x]\n\na command to test with\n\n  --data DIR", 62));
	/* after "--" it is an operand */
	CHECK_INT(help_child((const char *[]){ "--", "--help", NULL }, flags, out, sizeof(out)), 100 + CLI_OK);
	CHECK_STR(out, "");
	/* in a file (where is set) it is an unknown option */
	CHECK_INT(parse_in("list:4: ", (const char *[]){ "--help", NULL }, flags), CLI_USAGE);
	CHECK(strstr(said, "hubmirror: list:4: unknown option --help\n"));
	/* the prose goes before the options */
	{
		FILE *f = tmpfile();
		int saved;
		size_t n;

		fflush(stdout);
		saved = dup(STDOUT_FILENO);
		dup2(fileno(f), STDOUT_FILENO);
		cli_print_help(&cmd_p, flags);
		fflush(stdout);
		dup2(saved, STDOUT_FILENO);
		close(saved);
		rewind(f);
		n = fread(out, 1, sizeof(out) - 1, f);
		out[n] = '\0';
		fclose(f);
	}
	CHECK_STR(out, want);
}

/* Sizes as people write them: k M G T alone binary (as du and dd read them, and as sizes are shown),
 * with B decimal, KiB..TiB binary, any case, a space. */
TEST(sizes_in_the_units_people_write)
{
	static const struct { const char *in; int64_t want; } ok[] = {
		{ "0", 0 }, { "512", 512 }, { "4k", 4096 }, { "700M", 700LL << 20 }, { "2T", 2LL << 40 },
		{ "2TB", 2000000000000LL }, { "2 TB", 2000000000000LL }, { "2tb", 2000000000000LL },
		{ "500GB", 500000000000LL }, { "1.5T", 3LL << 39 }, { "1KiB", 1024 }, { "4GiB", 4LL << 30 },
		{ "2TiB", 2LL << 40 }, { "64 MiB", 64LL << 20 }, { "1PB", 1000000000000000LL }, { "4kB", 4000 },
		{ "100M", 100LL << 20 }, { "100MB", 100000000 },
	};
	static const char *const bad[] = { "", "T", "2X", "2TBs", "-1G", "2 T B", "2Gi", "abc", "1e30" };
	int64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = -1;
		CHECK_INT(cli_parse_size(ok[i].in, &v), 0);
		CHECK_INT(v, ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(cli_parse_size(bad[i], &v) != 0);
}

int main(void)
{
	RUN(each_kind_of_flag);
	RUN(operands_and_the_end_of_options);
	RUN(bad_options_are_usage_errors);
	RUN(where_starts_each_message);
	RUN(help_beside_each_option);
	RUN(sizes_in_the_units_people_write);
	return test_done();
}
