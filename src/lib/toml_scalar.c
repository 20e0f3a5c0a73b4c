/* toml_scalar.c - TOML scalars that are not strings: booleans, integers
 * (decimal, hex, octal, binary), floats and the four date/time kinds.
 * Never wraps an integer or accepts a date that is not on the calendar. */
#include "toml_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"

/* A scalar is at most this long; longer runs are rejected, not truncated. */
#define TOML_SCALAR_MAX 128

struct tok {
	const char *s;
	size_t len;
	size_t i;
};

static bool tok_is(const struct tok *t, const char *lit)
{
	return t->len == strlen(lit) && memcmp(t->s, lit, t->len) == 0;
}

static bool is_scalar_char(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       ch == '_' || ch == '+' || ch == '-' || ch == '.' || ch == ':';
}

static bool is_digit(unsigned char ch)
{
	return ch >= '0' && ch <= '9';
}

/* Extends the token over "date time" written with a space separator. */
static size_t token_end(const struct toml_cur *c)
{
	size_t j = c->i;
	while (j < c->len && is_scalar_char((unsigned char)c->p[j]))
		j++;
	const char *s = c->p + c->i;
	size_t n = j - c->i;
	if (n == 10 && s[4] == '-' && s[7] == '-' && j + 3 < c->len && c->p[j] == ' ' &&
	    is_digit((unsigned char)c->p[j + 1]) && is_digit((unsigned char)c->p[j + 2]) &&
	    c->p[j + 3] == ':') {
		j++;
		while (j < c->len && is_scalar_char((unsigned char)c->p[j]))
			j++;
	}
	return j;
}

/* ---- integers and floats ---- */

static int digit_value(unsigned char ch, int base)
{
	int d = hex_digit_value(ch);
	return d >= 0 && d < base ? d : -1;
}

/* Consumes digits of base with single underscores between digits; returns
 * the number of digits, or -1 for a misplaced underscore. */
static int scan_digits(struct tok *t, int base)
{
	int n = 0;
	while (t->i < t->len) {
		unsigned char ch = (unsigned char)t->s[t->i];
		if (ch == '_') {
			if (n == 0 || t->i + 1 >= t->len ||
			    digit_value((unsigned char)t->s[t->i + 1], base) < 0)
				return -1;
			t->i++;
			continue;
		}
		if (digit_value(ch, base) < 0)
			break;
		n++;
		t->i++;
	}
	return n;
}

/* Accumulates the digits s[from..to) (underscores skipped) in base. */
static int accumulate(const struct tok *t, size_t from, size_t to, int base, bool neg, int64_t *out)
{
	int64_t v = 0;
	for (size_t k = from; k < to; k++) {
		if (t->s[k] == '_')
			continue;
		int d = digit_value((unsigned char)t->s[k], base);
		if (__builtin_mul_overflow(v, base, &v) ||
		    (neg ? __builtin_sub_overflow(v, d, &v) : __builtin_add_overflow(v, d, &v)))
			return -1;
	}
	*out = v;
	return 0;
}

static int parse_radix(struct toml_cur *c, struct tok *t, struct toml_value *v)
{
	char p = t->s[t->i + 1];
	int base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
	t->i += 2;
	size_t from = t->i;
	int n = scan_digits(t, base);
	if (n <= 0 || t->i != t->len)
		return toml_fail(c, "invalid %s integer '%.*s'",
				 base == 16  ? "hexadecimal"
				 : base == 8 ? "octal"
					     : "binary",
				 (int)t->len, t->s);
	if (accumulate(t, from, t->len, base, false, &v->u.integer) < 0)
		return toml_fail(c, "integer '%.*s' does not fit in 64 bits", (int)t->len, t->s);
	v->type = TOML_INTEGER;
	return 0;
}

static int parse_float(struct toml_cur *c, const struct tok *t, struct toml_value *v)
{
	char clean[TOML_SCALAR_MAX + 1];
	size_t n = 0;
	for (size_t k = 0; k < t->len; k++)
		if (t->s[k] != '_')
			clean[n++] = t->s[k];
	clean[n] = '\0';
	char *end = NULL;
	errno = 0;
	double d = strtod(clean, &end);
	if (end != clean + n)
		return toml_fail(c, "invalid float '%.*s'", (int)t->len, t->s);
	if (errno == ERANGE && isinf(d))
		return toml_fail(c, "float '%.*s' is out of range", (int)t->len, t->s);
	v->type = TOML_FLOAT;
	v->u.flt = d;
	return 0;
}

static int parse_number(struct toml_cur *c, struct tok *t, struct toml_value *v)
{
	bool neg = t->s[0] == '-', sign = neg || t->s[0] == '+';
	t->i = sign ? 1 : 0;
	const char *rest = t->s + t->i;
	size_t rest_len = t->len - t->i;
	if (rest_len == 3 && (memcmp(rest, "inf", 3) == 0 || memcmp(rest, "nan", 3) == 0)) {
		v->type = TOML_FLOAT;
		v->u.flt = rest[0] == 'i' ? INFINITY : NAN;
		if (neg)
			v->u.flt = -v->u.flt;
		return 0;
	}
	if (rest_len > 2 && rest[0] == '0' &&
	    (rest[1] == 'x' || rest[1] == 'o' || rest[1] == 'b')) {
		if (sign)
			return toml_fail(c, "a sign is not allowed on '%.*s'", (int)t->len, t->s);
		return parse_radix(c, t, v);
	}
	size_t int_from = t->i;
	int n = scan_digits(t, 10);
	if (n <= 0)
		return toml_fail(c, "invalid value '%.*s'", (int)t->len, t->s);
	if (t->s[int_from] == '0' && n > 1)
		return toml_fail(c, "leading zeros are not allowed in '%.*s'", (int)t->len, t->s);
	size_t int_to = t->i;
	bool is_float = false;
	if (t->i < t->len && t->s[t->i] == '.') {
		t->i++;
		is_float = true;
		if (scan_digits(t, 10) <= 0)
			return toml_fail(c, "invalid float '%.*s'", (int)t->len, t->s);
	}
	if (t->i < t->len && (t->s[t->i] == 'e' || t->s[t->i] == 'E')) {
		t->i++;
		is_float = true;
		if (t->i < t->len && (t->s[t->i] == '+' || t->s[t->i] == '-'))
			t->i++;
		if (scan_digits(t, 10) <= 0)
			return toml_fail(c, "invalid float exponent in '%.*s'", (int)t->len, t->s);
	}
	if (t->i != t->len)
		return toml_fail(c, "invalid number '%.*s'", (int)t->len, t->s);
	if (is_float)
		return parse_float(c, t, v);
	if (accumulate(t, int_from, int_to, 10, neg, &v->u.integer) < 0)
		return toml_fail(c, "integer '%.*s' does not fit in 64 bits", (int)t->len, t->s);
	v->type = TOML_INTEGER;
	return 0;
}

/* ---- dates and times ---- */

/* Reads exactly n decimal digits. */
static bool fixed_digits(struct tok *t, size_t n, int *out)
{
	int v = 0;
	if (t->len - t->i < n)
		return false;
	for (size_t k = 0; k < n; k++) {
		unsigned char ch = (unsigned char)t->s[t->i + k];
		if (!is_digit(ch))
			return false;
		v = v * 10 + (ch - '0');
	}
	t->i += n;
	*out = v;
	return true;
}

static bool expect(struct tok *t, char ch)
{
	if (t->i < t->len && t->s[t->i] == ch) {
		t->i++;
		return true;
	}
	return false;
}

static int days_in_month(int year, int month)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
	return month == 2 && leap ? 29 : days[month - 1];
}

static bool parse_date(struct tok *t, struct toml_datetime *dt)
{
	if (!fixed_digits(t, 4, &dt->year) || !expect(t, '-') || !fixed_digits(t, 2, &dt->month) ||
	    !expect(t, '-') || !fixed_digits(t, 2, &dt->day))
		return false;
	return dt->month >= 1 && dt->month <= 12 && dt->day >= 1 &&
	       dt->day <= days_in_month(dt->year, dt->month);
}

static bool parse_time(struct tok *t, struct toml_datetime *dt)
{
	if (!fixed_digits(t, 2, &dt->hour) || !expect(t, ':') || !fixed_digits(t, 2, &dt->minute) ||
	    !expect(t, ':') || !fixed_digits(t, 2, &dt->second))
		return false;
	/* 60 is a leap second (RFC 3339). */
	if (dt->hour > 23 || dt->minute > 59 || dt->second > 60)
		return false;
	if (!expect(t, '.'))
		return true;
	size_t n = 0;
	for (; t->i < t->len && is_digit((unsigned char)t->s[t->i]); t->i++, n++) {
		if (n < 9) /* extra precision is truncated, as the spec allows */
			dt->nanosecond = dt->nanosecond * 10 + (uint32_t)(t->s[t->i] - '0');
	}
	if (n == 0)
		return false;
	dt->frac_digits = (uint8_t)(n < 9 ? n : 9);
	for (size_t k = dt->frac_digits; k < 9; k++)
		dt->nanosecond *= 10;
	return true;
}

static bool parse_offset(struct tok *t, struct toml_datetime *dt)
{
	int h, m;
	if (expect(t, 'Z') || expect(t, 'z')) {
		dt->offset_z = true;
		return true;
	}
	bool neg = expect(t, '-');
	if (!neg && !expect(t, '+'))
		return false;
	if (!fixed_digits(t, 2, &h) || !expect(t, ':') || !fixed_digits(t, 2, &m) || h > 23 ||
	    m > 59)
		return false;
	dt->offset_minutes = (neg ? -1 : 1) * (h * 60 + m);
	return true;
}

static int parse_datetime(struct toml_cur *c, struct tok *t, struct toml_value *v)
{
	struct toml_datetime *dt = &v->u.dt;
	memset(dt, 0, sizeof *dt);
	t->i = 0;
	if (t->len >= 3 && t->s[2] == ':') {
		v->type = TOML_TIME_LOCAL;
		if (!parse_time(t, dt) || t->i != t->len)
			return toml_fail(c, "invalid local time '%.*s'", (int)t->len, t->s);
		return 0;
	}
	if (!parse_date(t, dt))
		return toml_fail(c, "invalid date '%.*s'", (int)t->len, t->s);
	v->type = TOML_DATE_LOCAL;
	if (t->i == t->len)
		return 0;
	char sep = t->s[t->i++];
	if ((sep != 'T' && sep != 't' && sep != ' ') || !parse_time(t, dt))
		return toml_fail(c, "invalid date-time '%.*s'", (int)t->len, t->s);
	v->type = TOML_DATETIME_LOCAL;
	if (t->i == t->len)
		return 0;
	if (!parse_offset(t, dt) || t->i != t->len)
		return toml_fail(c, "invalid date-time offset in '%.*s'", (int)t->len, t->s);
	v->type = TOML_DATETIME;
	return 0;
}

static bool looks_like_datetime(const struct tok *t)
{
	if (memchr(t->s, ':', t->len))
		return true;
	return t->len >= 5 && is_digit((unsigned char)t->s[0]) &&
	       is_digit((unsigned char)t->s[1]) && is_digit((unsigned char)t->s[2]) &&
	       is_digit((unsigned char)t->s[3]) && t->s[4] == '-';
}

int toml_scan_scalar(struct toml_cur *c, struct toml_value *v)
{
	size_t end = token_end(c);
	struct tok t = { c->p + c->i, end - c->i, 0 };
	int rc;
	if (t.len == 0)
		return toml_fail(c, "expected a value");
	if (t.len > TOML_SCALAR_MAX)
		return toml_fail(c, "value is longer than %d bytes", TOML_SCALAR_MAX);
	if (tok_is(&t, "true") || tok_is(&t, "false")) {
		v->type = TOML_BOOL;
		v->u.boolean = t.s[0] == 't';
		rc = 0;
	} else if (looks_like_datetime(&t)) {
		rc = parse_datetime(c, &t, v);
	} else {
		rc = parse_number(c, &t, v);
	}
	if (rc == 0)
		c->i = end;
	return rc;
}
