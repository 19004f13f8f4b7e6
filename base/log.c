/*
 * log.c - one line per message: "2026-11-30T03:00:00Z info  sync: text". Each line is written with a
 * single write() so lines from threads do not interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "err.h"
#include "log.h"

static enum log_level current_level = LOG_LEVEL_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log_get_level(void)
{
	return current_level;
}

int log_parse_level(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcmp(s, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return HM_ERR_USAGE;
}

void log_msg(enum log_level level, const char *topic, const char *fmt, ...)
{
	struct buf line;
	char stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (level > current_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);

	buf_init(&line);
	buf_addf(&line, "%s %-5s %s: ", stamp, level_names[level], topic ? topic : "main");
	va_start(ap, fmt);
	buf_vaddf(&line, fmt, ap);
	va_end(ap);
	buf_addch(&line, '\n');
	if (write(STDERR_FILENO, line.data, line.len) < 0) {
		/* nowhere left to report it */
	}
	buf_release(&line);
}
