/* test_resolver.c - the proxy's resolver on the real event loop: IP literals
 * and the operator hosts map answer asynchronously without DNS, unknown
 * names fail, cancelled queries never call back; the audit sink writes one
 * JSON line per record with only the fields given. */
#include <arpa/inet.h>
#include <errno.h>
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
#include "resolver.h"

struct answer {
	int calls, status;
	size_t n;
	char first[64];
};

static void on_answer(void *data, int status, const struct ip_addr *addrs, size_t n,
		      const char *errmsg)
{
	struct answer *a = data;
	a->calls++;
	a->status = status;
	a->n = n;
	if (n)
		ip_addr_format(&addrs[0], a->first, sizeof a->first);
}

static void run_until(struct loop *l, struct answer *a, int calls)
{
	for (int i = 0; i < 200 && a->calls < calls; i++)
		loop_run_once(l, 50, NULL);
}

static void literal_and_hosts_map_resolve_without_dns(void **state)
{
	char hosts[] = "/tmp/resolver-hosts-XXXXXX";
	int fd = mkstemp(hosts);
	assert_true(fd >= 0);
	const char *text = "# test names\n198.51.100.7 Upstream.Test alias.test\n::1 six.test\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct loop *l;
	os_error err = { 0 };
	assert_int_equal(loop_new(&l, &err), 0);
	struct resolver *r;
	/* 192.0.2.53 is a TEST-NET address nobody answers: only the map may answer. */
	struct resolver_config cfg = { .dns_servers = "192.0.2.53",
				       .hosts_file = hosts,
				       .timeout_ms = 200 };
	assert_int_equal(resolver_new(l, &cfg, &r, &err), 0);
	struct answer lit = { 0 }, mapped = { 0 }, six = { 0 }, cancelled = { 0 };
	assert_non_null(resolver_lookup(r, "203.0.113.9", on_answer, &lit, &err));
	assert_int_equal(lit.calls, 0); /* never synchronous */
	assert_non_null(resolver_lookup(r, "upstream.test", on_answer, &mapped, &err));
	assert_non_null(resolver_lookup(r, "six.test", on_answer, &six, &err));
	resolver_cancel(resolver_lookup(r, "alias.test", on_answer, &cancelled, &err));
	run_until(l, &six, 1);
	assert_int_equal(lit.calls, 1);
	assert_string_equal(lit.first, "203.0.113.9");
	assert_int_equal(mapped.status, 0);
	assert_string_equal(mapped.first, "198.51.100.7");
	assert_string_equal(six.first, "::1");
	assert_int_equal(cancelled.calls, 0);
	resolver_free(r);
	loop_free(l);
	unlink(hosts);
}

static void bad_hosts_file_names_the_line(void **state)
{
	char hosts[] = "/tmp/resolver-hosts-XXXXXX";
	int fd = mkstemp(hosts);
	const char *text = "198.51.100.7 ok.test\n0177.0.0.1 octal.test\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct loop *l;
	os_error err = { 0 };
	assert_int_equal(loop_new(&l, &err), 0);
	struct resolver *r;
	struct resolver_config cfg = { .hosts_file = hosts };
	assert_int_equal(resolver_new(l, &cfg, &r, &err), -1);
	char want[128];
	snprintf(want, sizeof want, "%s:2", hosts);
	assert_non_null(strstr(err.msg, want));
	loop_free(l);
	unlink(hosts);
}

static void audit_writes_one_json_line_per_record(void **state)
{
	char path[] = "/tmp/audit-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	struct audit *a;
	os_error err = { 0 };
	assert_int_equal(audit_open(path, "sbx", &a, &err), 0);
	struct audit_record r = { .event = "connect",
				  .decision = "deny",
				  .reason = "no_matching_policy",
				  .host = "x.test",
				  .port = 443,
				  .uid = -1 };
	audit_write(a, &r);
	r.decision = "allow";
	audit_write(a, &r);
	assert_int_equal(audit_count(a), 2);
	audit_close(a);
	char *text;
	assert_int_equal(file_read_all(path, 65536, &text, NULL, &err), 0);
	char *nl = strchr(text, '\n');
	assert_non_null(nl);
	assert_non_null(strchr(nl + 1, '\n'));
	assert_non_null(strstr(text, "\"reason\":\"no_matching_policy\""));
	assert_non_null(strstr(text, "\"dport\":443"));
	assert_null(strstr(text, "\"uid\"")); /* unknown fields are omitted */
	assert_null(strstr(text, "\"policy\""));
	free(text);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(literal_and_hosts_map_resolve_without_dns),
		cmocka_unit_test(bad_hosts_file_names_the_line),
		cmocka_unit_test(audit_writes_one_json_line_per_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
