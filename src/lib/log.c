/* log.c - process-wide logger (see log.h). One write() per record so records
 * from several processes sharing a file do not interleave. A record is built
 * in a fixed LOG_LINE_MAX buffer with room for its closing kept in reserve,
 * so the message is what gets cut, never the record's end. Allocates nothing
 * (a forked child may log before it execs). */
#include "log.h"

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

/* What closes a record; the longest one is kept free while the message is copied. */
#define JSON_END "\"}\n"
#define JSON_END_CUT "...\",\"truncated\":true}\n"
#define HUMAN_END "\n"
#define HUMAN_END_CUT "...\n"

struct line {
	char b[LOG_LINE_MAX];
	size_t n;
};

void log_init(const char *component, enum log_level min, enum log_format fmt, int fd)
{
	logger.component = component;
	logger.min = min;
	logger.fd = fd;
	if (fmt == LOG_FMT_AUTO)
		fmt = isatty(fd) ? LOG_FMT_HUMAN : LOG_FMT_JSON;
	logger.fmt = fmt;
}

bool log_is_json(void)
{
	return logger.fmt != LOG_FMT_HUMAN && (logger.fmt == LOG_FMT_JSON || !isatty(logger.fd));
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

/* Appends k bytes when they fit below limit. */
static bool put(struct line *l, size_t limit, const char *s, size_t k)
{
	if (k > limit || l->n > limit - k)
		return false;
	memcpy(l->b + l->n, s, k);
	l->n += k;
	return true;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629), 0 when there is none. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		lo = c == 0xe0 ? 0xa0 : 0x80;
		hi = c == 0xed ? 0x9f : 0xbf;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		lo = c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xf4 ? 0x8f : 0xbf;
	} else
		return 0;
	if (left < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* One unit of s (a byte or a UTF-8 sequence) in its escaped form; returns the
 * bytes of s it stands for. JSON escapes quotes and backslashes too and
 * replaces ill-formed bytes; human lines keep those bytes as they are. */
static size_t escape_unit(const char *s, size_t left, bool json, char out[8], size_t *outlen)
{
	unsigned char c = (unsigned char)s[0];
	static const char short_esc[] = "btn\0fr"; /* \b \t \n (\v has none) \f \r */
	if (c < 0x20 || c == 0x7f) {
		if (c >= 0x08 && c <= 0x0d && short_esc[c - 0x08])
			*outlen = (size_t)snprintf(out, 8, "\\%c", short_esc[c - 0x08]);
		else
			*outlen = (size_t)snprintf(out, 8, "\\u%04x", c);
		return 1;
	}
	if (json && (c == '"' || c == '\\')) {
		out[0] = '\\';
		out[1] = (char)c;
		*outlen = 2;
		return 1;
	}
	size_t n = json ? utf8_len((const unsigned char *)s, left) : 1;
	if (n == 0) {
		memcpy(out, "\\ufffd", 6);
		*outlen = 6;
		return 1;
	}
	memcpy(out, s, n);
	*outlen = n;
	return n;
}

/* Copies s escaped while whole units fit below limit; false when cut. */
static bool put_escaped(struct line *l, size_t limit, const char *s, size_t len, bool json)
{
	while (len > 0) {
		char u[8];
		size_t ulen, used = escape_unit(s, len, json, u, &ulen);
		if (!put(l, limit, u, ulen))
			return false;
		s += used;
		len -= used;
	}
	return true;
}

static void timestamp(char *when, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(when, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* The record up to the message's first byte. */
static void record_head(struct line *l, enum log_level lvl, bool json)
{
	char when[40];
	size_t limit = sizeof l->b - sizeof JSON_END_CUT;
	const char *comp = logger.component;
	timestamp(when, sizeof when);
	if (json) {
		char head[96];
		int k = snprintf(head, sizeof head,
				 "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":\"", when,
				 level_names[lvl]);
		put(l, limit, head, (size_t)k);
		put_escaped(l, limit, comp, strlen(comp), true);
		put(l, limit, "\",\"msg\":\"", 9);
		return;
	}
	char head[64];
	int k = snprintf(head, sizeof head, "%s %s ", when, level_names[lvl]);
	put(l, limit, head, (size_t)k);
	put_escaped(l, limit, comp, strlen(comp), false);
	put(l, limit, ": ", 2);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	if (lvl < logger.min)
		return;
	char msg[LOG_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = snprintf(msg, sizeof msg, "(unformattable log message: %s)", fmt);
	bool cut = (size_t)m >= sizeof msg;
	size_t mlen = cut ? sizeof msg - 1 : (size_t)m;

	bool json = log_is_json();
	struct line l = { .n = 0 };
	const char *end_cut = json ? JSON_END_CUT : HUMAN_END_CUT;
	size_t limit = sizeof l.b - strlen(end_cut); /* the closing always fits */
	record_head(&l, lvl, json);
	if (!put_escaped(&l, limit, msg, mlen, json))
		cut = true;
	const char *end = cut ? end_cut : json ? JSON_END : HUMAN_END;
	put(&l, sizeof l.b, end, strlen(end));
	log_write_line(l.b, l.n);
}
