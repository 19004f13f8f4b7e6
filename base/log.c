/*
 * log.c - one line per message: "2026-11-30T03:00:00Z info  sync: text". Each line is written with a
 * single write() so lines from threads do not interleave, and a message's control bytes (a newline
 * among them) are escaped, so no text from the network can forge a line.
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
	struct buf line, text;
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
	buf_init(&text);
	buf_addf(&line, "%s %-5s %s: ", stamp, level_names[level], topic ? topic : "main");
	va_start(ap, fmt);
	buf_vaddf(&text, fmt, ap);
	va_end(ap);
	/* one message, one line: what came from the network (a name with a %0a in it) cannot start a
	 * line of its own, nor move the terminal's cursor; control bytes are written as \xNN */
	for (size_t i = 0; i < text.len; i++) {
		unsigned char ch = (unsigned char)text.data[i];
		if (ch < 0x20 || ch == 0x7f)
			buf_addf(&line, "\\x%02x", ch);
		else
			buf_addch(&line, (char)ch);
	}
	buf_release(&text);
	buf_addch(&line, '\n');
	if (write(STDERR_FILENO, line.data, line.len) < 0) {
		/* nowhere left to report it */
	}
	buf_release(&line);
}
