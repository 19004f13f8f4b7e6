/*
 * log.h - leveled logging with a module topic, to stderr.
 *
 * Library code reports failures by return value and logs at debug level, with one exception: an engine
 * that goes on past trouble it cannot return (sync, gc and verify, one item of many failing: a catalog
 * write, a blob that cannot be deleted or is damaged) warns about it. Commands, the server and the
 * agent log above debug (docs/CODING.md). The level is process-wide state set once by main (parsed
 * options are the only globals we keep).
 */
#ifndef HM_LOG_H
#define HM_LOG_H

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parse "error", "warn", "info" or "debug". Returns 0, or HM_ERR_USAGE for anything else. */
int log_parse_level(const char *s, enum log_level *out);
void log_msg(enum log_level level, const char *topic, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_error(topic, ...) log_msg(LOG_LEVEL_ERROR, topic, __VA_ARGS__)
#define log_warn(topic, ...)  log_msg(LOG_LEVEL_WARN, topic, __VA_ARGS__)
#define log_info(topic, ...)  log_msg(LOG_LEVEL_INFO, topic, __VA_ARGS__)
#define log_debug(topic, ...) \
	do { if (log_get_level() >= LOG_LEVEL_DEBUG) log_msg(LOG_LEVEL_DEBUG, topic, __VA_ARGS__); } while (0)

#endif
