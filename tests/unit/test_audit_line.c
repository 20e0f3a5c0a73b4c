/* test_audit_line.c - the proxy's audit records (audit.c writes them by hand
 * for speed) are byte for byte what the jansson dump wrote before, for every
 * key and hostile values: quotes, backslashes, controls, DEL, non-ASCII up
 * to surrogate pairs, and invalid UTF-8 (the key is left out, as jansson
 * refused such a string); a record that could outgrow the line is dropped
 * whole, never written cut. */
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit.h"
#include "fdutil.h"

/* The record as the old audit_write built it, minus "ts". */
static char *jansson_line(const char *sandbox, const struct audit_record *r)
{
	json_t *o = json_object();
	const char *keys[] = { "sandbox", "event", "decision", "reason", "policy",
			       "rule",	  "proto", "host",     "dst",	 NULL };
	const char *vals[] = { sandbox, r->event, r->decision, r->reason, r->policy,
			       r->rule, r->proto, r->host,     r->dst };
	for (size_t i = 0; keys[i]; i++)
		if (vals[i])
			json_object_set_new(o, keys[i], json_string(vals[i]));
	if (r->port)
		json_object_set_new(o, "dport", json_integer(r->port));
	if (r->method)
		json_object_set_new(o, "method", json_string(r->method));
	if (r->path)
		json_object_set_new(o, "path", json_string(r->path));
	if (r->binary)
		json_object_set_new(o, "binary", json_string(r->binary));
	if (r->pid > 0)
		json_object_set_new(o, "pid", json_integer(r->pid));
	if (r->uid >= 0 && (r->pid > 0 || r->uid > 0))
		json_object_set_new(o, "uid", json_integer(r->uid));
	if (r->detail)
		json_object_set_new(o, "detail", json_string(r->detail));
	if (r->generation)
		json_object_set_new(o, "generation", json_integer((json_int_t)r->generation));
	char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	return line;
}

/* Writes r through audit.c and returns the line without "ts":...," so it
 * compares with jansson_line (NULL when nothing was written). */
static char *ours_line(const char *sandbox, const struct audit_record *r)
{
	char path[] = "/tmp/audit-line.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	struct audit *a = NULL;
	os_error err = { 0 };
	assert_int_equal(audit_open(path, sandbox, &a, &err), 0);
	audit_write(a, r);
	uint64_t n = audit_count(a);
	audit_close(a);
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(file_read_all(path, 1u << 20, &text, &len, &err), 0);
	unlink(path);
	if (n == 0) {
		assert_int_equal(len, 0);
		free(text);
		return NULL;
	}
	assert_true(len > 0 && text[len - 1] == '\n');
	text[len - 1] = '\0';
	/* {"ts":1796193072.0709558,"sandbox":... -> {"sandbox":... */
	assert_true(!strncmp(text, "{\"ts\":", 6));
	char *comma = strchr(text, ',');
	assert_non_null(comma);
	json_t *whole = json_loads(text, 0, NULL);
	assert_non_null(whole); /* the whole line parses */
	assert_true(json_is_real(json_object_get(whole, "ts")));
	json_decref(whole);
	char *out = NULL;
	assert_true(asprintf(&out, "{%s", comma + 1) > 0);
	free(text);
	return out;
}

static void same_as_jansson(const char *sandbox, const struct audit_record *r)
{
	char *want = jansson_line(sandbox, r), *got = ours_line(sandbox, r);
	assert_non_null(want);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(want);
	free(got);
}

static void every_key_in_order(void **state)
{
	(void)state;
	struct audit_record r = { .event = "http",
				  .decision = "allow",
				  .reason = "allowed",
				  .policy = "bench",
				  .rule = "r1",
				  .proto = "tcp",
				  .host = "a.test",
				  .dst = "198.19.0.1",
				  .port = 8080,
				  .method = "GET",
				  .path = "/x/y",
				  .binary = "/usr/bin/wrk",
				  .pid = 42,
				  .uid = 1000,
				  .detail = "d",
				  .generation = 7 };
	same_as_jansson("sb", &r);
	struct audit_record few = { .event = "policy", .decision = "allow", .uid = -1 };
	same_as_jansson("", &few);
	struct audit_record uid0 = { .event = "connect", .pid = 0, .uid = 0 };
	same_as_jansson("sb", &uid0);
}

static void hostile_strings(void **state)
{
	(void)state;
	const char *vals[] = {
		"q\"uote\\back/slash",
		"\x01\b\f\n\r\t\x1f\x7f",
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", /* é € 😀 (a surrogate pair) */
		"",
	};
	for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
		struct audit_record r = { .event = "http",
					  .host = vals[i],
					  .path = vals[i],
					  .detail = vals[i],
					  .uid = -1 };
		same_as_jansson(vals[i], &r);
	}
	/* Invalid UTF-8 (a lone continuation, an overlong '/', a surrogate):
	 * jansson left such keys out; so do we, and the rest stays. */
	const char *bad[] = { "a\x80z", "\xc0\xaf", "\xed\xa0\x80" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct audit_record r = {
			.event = "http", .host = "ok.test", .path = bad[i], .uid = -1
		};
		same_as_jansson("sb", &r);
		char *got = ours_line("sb", &r);
		assert_null(strstr(got, "\"path\""));
		free(got);
	}
}

static void oversized_record_is_dropped_whole(void **state)
{
	(void)state;
	size_t n = 200u << 10;
	char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, '\n', n); /* 6 bytes each once escaped: over the line cap */
	big[n] = '\0';
	struct audit_record r = { .event = "http", .detail = big, .uid = -1 };
	assert_null(ours_line("sb", &r));
	memset(big, 'a', n); /* 200 KiB that stay 200 KiB: written whole */
	same_as_jansson("sb", &r);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_key_in_order),
		cmocka_unit_test(hostile_strings),
		cmocka_unit_test(oversized_record_is_dropped_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
