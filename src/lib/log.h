/* log.h - logging: one stream per process, human lines on a terminal, JSON
 * lines otherwise. A record is one write() of at most LOG_LINE_MAX bytes that
 * always ends with a newline (JSON: with "}\n"): an over-long message is cut
 * inside its field and marked, never the record. Never logs secrets: callers
 * pass only redacted values. */
#ifndef OS_LOG_H
#define OS_LOG_H

#include <stdbool.h>

/* Longest record written, newline included. */
#define LOG_LINE_MAX 4096
/* Longest formatted message kept before escaping; longer ones are cut. */
#define LOG_MSG_MAX 2048

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERROR };
enum log_format { LOG_FMT_AUTO, LOG_FMT_HUMAN, LOG_FMT_JSON };

/* Configures the process-wide logger; component names the program. */
void log_init(const char *component, enum log_level min, enum log_format fmt, int fd);
/* JSON: {"ts","level","component","msg"} plus "truncated":true when the
 * message was cut (it then ends with "..."). Control characters, quotes and
 * backslashes are escaped, invalid UTF-8 becomes U+FFFD. Human: the same
 * message after "TS LEVEL COMPONENT: ", control characters escaped. */
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses "debug|info|warn|error"; returns -1 if unknown. */
int log_level_parse(const char *s, enum log_level *out);
/* True when records are JSON lines (the stream is no terminal, or asked). */
bool log_is_json(void);

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)

#endif
