/* log.h - logging: human lines on a terminal, JSON lines otherwise.
 * Never logs secrets: callers pass only redacted values. */
#ifndef OS_LOG_H
#define OS_LOG_H

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERROR };
enum log_format { LOG_FMT_AUTO, LOG_FMT_HUMAN, LOG_FMT_JSON };

/* Configures the process-wide logger; component names the program. */
void log_init(const char *component, enum log_level min, enum log_format fmt, int fd);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses "debug|info|warn|error"; returns -1 if unknown. */
int log_level_parse(const char *s, enum log_level *out);

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)

#endif
