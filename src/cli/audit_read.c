/* audit_read.c - see audit_read.h. */
#include "audit_read.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "parse.h"

/* Exactly n digits at *p into [min, max]; advances *p. */
static int digits(const char **p, size_t n, uint64_t min, uint64_t max, uint64_t *out)
{
	if (strspn(*p, "0123456789") < n || parse_u64(*p, n, min, max, out, NULL) < 0)
		return -1;
	*p += n;
	return 0;
}

/* One of the characters in set (not NUL) at *p; advances *p. */
static int expect_one(const char **p, const char *set)
{
	if (!**p || !strchr(set, **p))
		return -1;
	(*p)++;
	return 0;
}

static int expect(const char **p, char c)
{
	return expect_one(p, (const char[]){ c, '\0' });
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
 * days_from_civil), so no time zone of this machine is involved. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int time_fields(const char *s, double *out)
{
	const char *p = s;
	uint64_t y, mo, d, h, mi, sec, oh = 0, om = 0;
	if (digits(&p, 4, 1970, 9999, &y) < 0 || expect(&p, '-') < 0 ||
	    digits(&p, 2, 1, 12, &mo) < 0 || expect(&p, '-') < 0 || digits(&p, 2, 1, 31, &d) < 0 ||
	    expect_one(&p, "Tt") < 0 || digits(&p, 2, 0, 23, &h) < 0 || expect(&p, ':') < 0 ||
	    digits(&p, 2, 0, 59, &mi) < 0 || expect(&p, ':') < 0 || digits(&p, 2, 0, 60, &sec) < 0)
		return -1;
	double frac = 0, scale = 0.1;
	if (expect(&p, '.') == 0) {
		if (!(*p >= '0' && *p <= '9'))
			return -1;
		for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += (*p - '0') * scale;
	}
	int sign = 0;
	if (expect_one(&p, "Zz") == 0) {
		/* UTC */
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '+' ? 1 : -1;
		if (digits(&p, 2, 0, 23, &oh) < 0 || expect(&p, ':') < 0 ||
		    digits(&p, 2, 0, 59, &om) < 0)
			return -1;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	int64_t days = days_from_civil((int64_t)y, (unsigned)mo, (unsigned)d);
	double t = (double)(days * 86400 + (int64_t)(h * 3600 + mi * 60 + sec)) + frac;
	*out = t - sign * (double)(oh * 3600 + om * 60);
	return 0;
}

int audit_time_parse(const char *s, double *out, os_error *err)
{
	if (time_fields(s, out) < 0)
		return os_error_set(err, EINVAL,
				    "%s: expected a time such as 2026-12-02T01:30:00Z "
				    "(RFC 3339, Z or an offset such as +02:00)",
				    s);
	return 0;
}

/* "1h30m": digit runs each followed by s, m, h or d. */
static int duration(const char *s, double *out)
{
	double total = 0;
	const char *p = s;
	if (!*p)
		return -1;
	while (*p) {
		size_t n = strspn(p, "0123456789");
		uint64_t v;
		if (n == 0 || n > 9 || parse_u64(p, n, 0, 999999999, &v, NULL) < 0)
			return -1;
		p += n;
		const char *unit = strchr("smhd", *p);
		if (!*p || !unit)
			return -1;
		static const double secs[] = { 1, 60, 3600, 86400 };
		total += (double)v * secs[unit - "smhd"];
		p++;
	}
	*out = total;
	return 0;
}

int audit_since_parse(const char *s, double now, double *out, os_error *err)
{
	double d;
	if (duration(s, &d) == 0) {
		*out = now - d;
		return 0;
	}
	if (time_fields(s, out) == 0)
		return 0;
	return os_error_set(err, EINVAL,
			    "--since %s: expected a duration (30s, 10m, 2h, 1d, 1h30m) or a time "
			    "(2026-12-02T01:30:00Z)",
			    s);
}

bool audit_record_time(const json_t *rec, double *out)
{
	const json_t *ts = json_object_get(rec, "ts");
	if (json_is_number(ts)) {
		*out = json_number_value(ts);
		return true;
	}
	return json_is_string(ts) && time_fields(json_string_value(ts), out) == 0;
}

static const char *field(const json_t *rec, const char *key)
{
	const char *v = json_string_value(json_object_get(rec, key));
	return v && *v ? v : "-";
}

void audit_fields_of(const json_t *rec, struct audit_fields *f)
{
	f->decision = field(rec, "decision");
	f->reason = field(rec, "reason");
	f->event = field(rec, "event");
	f->host = field(rec, "host");
	if (!strcmp(f->host, "-")) /* a bypass names only the address */
		f->host = field(rec, "dst");
	f->method = field(rec, "method");
	f->path = field(rec, "path");
	f->binary = field(rec, "binary");
	f->proto = field(rec, "proto");
	const json_t *port = json_object_get(rec, "dport");
	f->port = json_is_integer(port) ? json_integer_value(port) : 0;
}

void audit_time_format(const json_t *rec, char *out, size_t cap)
{
	double t;
	struct tm tm;
	time_t secs;
	if (!audit_record_time(rec, &t) || (secs = (time_t)t, !gmtime_r(&secs, &tm)) ||
	    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, cap, "-");
}
