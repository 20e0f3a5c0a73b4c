/* log.c - process-wide logger (see log.h). One write() per line so lines from
 * several processes sharing a file do not interleave. */
#include "log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
	const char *component;
	enum log_level min;
	enum log_format fmt;
	int fd;
} logger = { "openshell", LOG_LVL_INFO, LOG_FMT_AUTO, 2 };

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_init(const char *component, enum log_level min, enum log_format fmt, int fd)
{
	logger.component = component;
	logger.min = min;
	logger.fd = fd;
	if (fmt == LOG_FMT_AUTO)
		fmt = isatty(fd) ? LOG_FMT_HUMAN : LOG_FMT_JSON;
	logger.fmt = fmt;
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return -1;
}

static void log_write_line(const char *line, size_t len)
{
	while (len > 0) {
		ssize_t n = write(logger.fd, line, len);
		if (n <= 0)
			return; /* logging must never take the process down */
		line += n;
		len -= (size_t)n;
	}
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	if (lvl < logger.min)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);

	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[40];
	snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);

	if (logger.fmt == LOG_FMT_JSON) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "ts", when, "level", level_names[lvl],
				      "component", logger.component, "msg", msg);
		char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		if (s) {
			char line[4096];
			int m = snprintf(line, sizeof line, "%s\n", s);
			if (m > 0)
				log_write_line(line, (size_t)m < sizeof line ? (size_t)m
									     : sizeof line - 1);
		}
		free(s);
		json_decref(o);
		return;
	}
	char line[2200];
	int m = snprintf(line, sizeof line, "%s %s %s: %s\n", when, level_names[lvl],
			 logger.component, msg);
	if (m > 0)
		log_write_line(line, (size_t)m < sizeof line ? (size_t)m : sizeof line - 1);
}
