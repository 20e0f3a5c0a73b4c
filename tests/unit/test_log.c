/* test_log.c - the logger's record shape: whatever the message, a record is
 * exactly one line, valid JSON ending with "}\n" (JSON mode), at most
 * LOG_LINE_MAX bytes; an over-long message is cut inside its field and marked.
 * Each case reads back the bytes really written to a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "log.h"

#define READ_MAX (4 * LOG_LINE_MAX)

/* Logs one record of msg through a fresh file; returns the bytes written (NUL-terminated). */
static char *log_one(enum log_format fmt, const char *msg, size_t *len)
{
	int fd = memfd_create("test-log", MFD_CLOEXEC);
	assert_true(fd >= 0);
	log_init("test-log", LOG_LVL_DEBUG, fmt, fd);
	log_info("%s", msg);
	char *out = calloc(1, READ_MAX + 1);
	assert_non_null(out);
	ssize_t n = pread(fd, out, READ_MAX, 0);
	assert_true(n > 0);
	close(fd);
	*len = (size_t)n;
	return out;
}

/* The one record's JSON object; asserts one line, "}\n", the cap. */
static json_t *one_json_record(const char *msg, char **raw)
{
	size_t len = 0;
	char *out = log_one(LOG_FMT_JSON, msg, &len);
	assert_true(len <= LOG_LINE_MAX);
	assert_true(len >= 2);
	assert_memory_equal(out + len - 2, "}\n", 2);
	assert_ptr_equal(memchr(out, '\n', len), out + len - 1); /* exactly one line */
	json_error_t jerr;
	json_t *rec = json_loadb(out, len, 0, &jerr);
	if (!rec)
		fail_msg("not JSON: %s in %s", jerr.text, out);
	assert_string_equal(json_string_value(json_object_get(rec, "component")), "test-log");
	assert_string_equal(json_string_value(json_object_get(rec, "level")), "info");
	*raw = out;
	return rec;
}

static void short_message_is_whole_and_unmarked(void **state)
{
	char *raw;
	json_t *rec = one_json_record("sandbox x running", &raw);
	assert_string_equal(json_string_value(json_object_get(rec, "msg")), "sandbox x running");
	assert_null(json_object_get(rec, "truncated")); /* control for the cases below */
	json_decref(rec);
	free(raw);
}

static void overlong_message_is_cut_inside_its_field(void **state)
{
	size_t big = 10 * LOG_LINE_MAX;
	char *msg = malloc(big + 1);
	assert_non_null(msg);
	memset(msg, 'x', big);
	msg[big] = '\0';
	char *raw;
	json_t *rec = one_json_record(msg, &raw);
	const char *m = json_string_value(json_object_get(rec, "msg"));
	assert_non_null(m);
	assert_true(json_is_true(json_object_get(rec, "truncated")));
	size_t n = strlen(m);
	assert_true(n > 1000 && n < LOG_MSG_MAX + 3);
	assert_string_equal(m + n - 3, "...");
	assert_true(strspn(m, "x") == n - 3);
	json_decref(rec);
	free(raw);
	free(msg);
}

/* Under LOG_MSG_MAX raw, but its escapes are over the line: cut between
 * escapes, never inside one. */
static void escapes_over_the_cap_are_cut_whole(void **state)
{
	char msg[LOG_MSG_MAX - 1];
	for (size_t i = 0; i < sizeof msg - 1; i++)
		msg[i] = i % 2 ? '"' : '\n';
	msg[sizeof msg - 1] = '\0';
	char *raw;
	json_t *rec = one_json_record(msg, &raw);
	const char *m = json_string_value(json_object_get(rec, "msg"));
	assert_true(json_is_true(json_object_get(rec, "truncated")));
	size_t n = strlen(m);
	assert_string_equal(m + n - 3, "...");
	assert_memory_equal(m, msg, n - 3); /* a prefix of the message, decoded back */
	json_decref(rec);
	free(raw);
}

static void control_chars_quotes_and_bad_utf8_are_escaped(void **state)
{
	const char *msg = "a\"b\\c\nd\re\tf\x01g\x7fh \xc3\xa9 \xff\xc3 end";
	char *raw;
	json_t *rec = one_json_record(msg, &raw);
	assert_string_equal(json_string_value(json_object_get(rec, "msg")),
			    "a\"b\\c\nd\re\tf\x01g\x7fh \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd end");
	assert_null(json_object_get(rec, "truncated"));
	assert_non_null(strstr(raw, "a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u007fh"));
	json_decref(rec);
	free(raw);
}

static void human_lines_are_one_line_too(void **state)
{
	size_t big = 3 * LOG_LINE_MAX;
	char *msg = malloc(big + 1);
	assert_non_null(msg);
	memset(msg, 'y', big);
	msg[10] = '\n';
	msg[big] = '\0';
	size_t len = 0;
	char *out = log_one(LOG_FMT_HUMAN, msg, &len);
	assert_true(len <= LOG_LINE_MAX);
	assert_ptr_equal(memchr(out, '\n', len), out + len - 1);
	assert_memory_equal(out + len - 4, "...\n", 4);
	assert_non_null(strstr(out, " info test-log: yyyyyyyyyy\\nyyy"));
	free(out);
	free(msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(short_message_is_whole_and_unmarked),
		cmocka_unit_test(overlong_message_is_cut_inside_its_field),
		cmocka_unit_test(escapes_over_the_cap_are_cut_whole),
		cmocka_unit_test(control_chars_quotes_and_bad_utf8_are_escaped),
		cmocka_unit_test(human_lines_are_one_line_too),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
