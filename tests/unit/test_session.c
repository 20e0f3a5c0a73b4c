/* test_session.c - the supervisor's gateway session inputs: the stream
 * reader (HTTP head, chunked framing, NDJSON messages, caps), the --gateway
 * URL parser and the token-file checks. Each refusal sits beside a
 * positive control. */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "session.h"
#include "session_stream.h"

struct seen {
	int hello, policy, ping;
	uint64_t last_rev;
	char policy_text[256];
	int fail_on_policy;
};

static int collect(void *user, const struct session_msg *m, os_error *err)
{
	struct seen *s = user;
	if (m->type == SESSION_MSG_HELLO) {
		s->hello++;
		s->last_rev = m->revision;
	} else if (m->type == SESSION_MSG_POLICY) {
		if (s->fail_on_policy)
			return os_error_set(err, EINVAL, "refused by the test");
		s->policy++;
		s->last_rev = m->revision;
		snprintf(s->policy_text, sizeof(s->policy_text), "%s", m->policy);
	} else {
		s->ping++;
	}
	return 0;
}

#define HEAD_OK                                                                                    \
	"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"                                \
	"Transfer-Encoding: chunked\r\n\r\n"

/* Chunk-encodes body into out (one chunk per line) and ends the stream. */
static void chunked(struct buf *out, const char *const lines[], bool end)
{
	for (size_t i = 0; lines[i]; i++)
		buf_printf(out, NULL, "%zx\r\n%s\r\n", strlen(lines[i]), lines[i]);
	if (end)
		buf_append_str(out, "0\r\n\r\n", NULL);
}

static int feed_split(const char *data, size_t len, size_t step, struct seen *seen, os_error *err)
{
	struct session_stream s;
	int r = 0;
	session_stream_init(&s);
	for (size_t off = 0; off < len && r == 0; off += step) {
		size_t n = len - off < step ? len - off : step;
		r = session_stream_feed(&s, data + off, n, collect, seen, err);
	}
	session_stream_free(&s);
	return r;
}

static void test_valid_stream_gives_the_same_messages_however_split(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"hello\",\"sandbox\":\"abc\",\"policy_revision\":3}\n",
		"{\"type\":\"policy\",\"revision\":3,\"policy\":\"version: 1\\n\"}\n",
		"{\"type\":\"ping\"}\n{\"type\":\"ping\"}\n", NULL
	};
	struct buf b;
	buf_init(&b, 1 << 20);
	buf_append_str(&b, HEAD_OK, NULL);
	chunked(&b, lines, true);
	for (size_t step = 1; step <= b.len; step += step < 8 ? 1 : 37) {
		struct seen seen = { 0 };
		os_error err = { 0 };
		assert_int_equal(feed_split(b.data, b.len, step, &seen, &err), 1);
		assert_int_equal(seen.hello, 1);
		assert_int_equal(seen.policy, 1);
		assert_int_equal(seen.ping, 2);
		assert_int_equal(seen.last_rev, 3);
		assert_string_equal(seen.policy_text, "version: 1\n");
	}
	buf_free(&b);
}

static void test_a_line_split_across_chunks_is_one_message(void **state)
{
	static const char *const lines[] = { "{\"type\":\"hel", "lo\",\"sandbox\":\"x\",",
					     "\"policy_revision\":0}\n", NULL };
	struct buf b;
	buf_init(&b, 1 << 16);
	buf_append_str(&b, HEAD_OK, NULL);
	chunked(&b, lines, false);
	struct seen seen = { 0 };
	os_error err = { 0 };
	assert_int_equal(feed_split(b.data, b.len, b.len, &seen, &err), 0); /* still open */
	assert_int_equal(seen.hello, 1);
	buf_free(&b);
}

static void test_refused_session_carries_the_gateway_words(void **state)
{
	const char *r401 = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 27\r\n\r\n"
			   "{\"error\":\"unauthenticated\"}";
	struct seen seen = { 0 };
	os_error err = { 0 };
	/* Byte by byte: the body is waited for, then reported. */
	assert_int_equal(feed_split(r401, strlen(r401), 1, &seen, &err), -1);
	assert_int_equal(err.code, EACCES);
	assert_non_null(strstr(err.msg, "401"));
	assert_non_null(strstr(err.msg, "unauthenticated"));
	const char *r500 = "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n";
	assert_int_equal(feed_split(r500, strlen(r500), 4, &seen, &err), -1);
	assert_int_equal(err.code, EPROTO);
	assert_int_equal(seen.hello, 0);
}

static void test_unframed_or_badly_framed_bodies_are_refused(void **state)
{
	struct seen seen = { 0 };
	os_error err = { 0 };
	const char *plain = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	assert_int_equal(feed_split(plain, strlen(plain), 64, &seen, &err), -1);
	assert_non_null(strstr(err.msg, "chunked"));
	const char *badsize = HEAD_OK "zz\r\n{}\r\n";
	assert_int_equal(feed_split(badsize, strlen(badsize), 64, &seen, &err), -1);
	const char *barelf = "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n";
	assert_int_equal(feed_split(barelf, strlen(barelf), 64, &seen, &err), -1);
	assert_int_equal(seen.hello + seen.policy + seen.ping, 0);
}

static void check_line(const char *line, int want, const char *msg_part)
{
	struct buf b;
	const char *const lines[] = { line, NULL };
	buf_init(&b, 1 << 16);
	buf_append_str(&b, HEAD_OK, NULL);
	chunked(&b, lines, false);
	struct seen seen = { 0 };
	os_error err = { 0 };
	int r = feed_split(b.data, b.len, b.len, &seen, &err);
	if (r != want)
		fail_msg("line %s: got %d (%s), want %d", line, r, err.msg, want);
	if (msg_part && !strstr(err.msg, msg_part))
		fail_msg("line %s: error \"%s\" lacks \"%s\"", line, err.msg, msg_part);
	buf_free(&b);
}

static void test_known_messages_are_checked_field_by_field(void **state)
{
	/* Positive controls first. */
	check_line("{\"type\":\"ping\"}\n", 0, NULL);
	check_line("{\"type\":\"policy\",\"revision\":1,\"policy\":\"\"}\n", 0, NULL);
	check_line("{\"type\":\"ping\",\"extra\":1}\n", -1, "extra");
	check_line("{\"type\":\"policy\",\"revision\":0,\"policy\":\"x\"}\n", -1, "revision");
	check_line("{\"type\":\"policy\",\"revision\":\"1\",\"policy\":\"x\"}\n", -1, "revision");
	check_line("{\"type\":\"policy\",\"revision\":2}\n", -1, "policy");
	check_line("{\"type\":\"policy\",\"revision\":2,\"policy\":\"a\\u0000b\"}\n", -1, "NUL");
	check_line("{\"type\":\"hello\",\"sandbox\":\"\",\"policy_revision\":1}\n", -1, "sandbox");
	check_line("{\"type\":\"ping\",\"type\":\"ping\"}\n", -1, NULL); /* duplicate key */
	check_line("[1,2]\n", -1, "type");
	check_line("{\"type\":\"ping\"\n", -1, NULL);
	/* exec: an id of 16..63 lowercase hex digits and 1..256 argv strings. */
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"/bin/true\"],\"tty\":true,\"rows\":24,\"cols\":80}\n",
		   0, NULL);
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"/bin/true\"]}\n",
		   0, NULL);
	check_line("{\"type\":\"exec\",\"id\":\"../../x\",\"argv\":[\"/bin/true\"]}\n", -1, "id");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899AABBCCDDEEFF\","
		   "\"argv\":[\"/bin/true\"]}\n",
		   -1, "id");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[]}\n",
		   -1, "argv");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[1]}\n",
		   -1, "argv");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"a\\u0000b\"]}\n",
		   -1, "NUL");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"x\"],\"rows\":70000}\n",
		   -1, "rows");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"x\"],\"shell\":true}\n",
		   -1, "shell");
	/* term: the client's TERM, a terminfo name, only with a tty. */
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"x\"],\"tty\":true,\"term\":\"xterm-256color\"}\n",
		   0, NULL);
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"x\"],\"term\":\"xterm\"}\n",
		   -1, "term");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"x\"],\"tty\":true,\"term\":\"x;y\"}\n",
		   -1, "term");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"argv\":[\"x\"],\"tty\":true,\"term\":7}\n",
		   -1, "term");
	/* agent: the agent's own stdio, set up when it started; nothing of a
	 * command may ride along (a gateway cannot turn an attach into a run). */
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"agent\":true}\n",
		   0, NULL);
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"agent\":true,\"argv\":[\"/bin/sh\"]}\n",
		   -1, "agent");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"agent\":true,\"tty\":true}\n",
		   -1, "agent");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"agent\":true,\"rows\":3}\n",
		   -1, "agent");
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"agent\":\"yes\"}\n",
		   -1, "agent");
	/* Without agent, argv is still required (positive control of the rule). */
	check_line("{\"type\":\"exec\",\"id\":\"00112233445566778899aabbccddeeff\","
		   "\"agent\":false}\n",
		   -1, "argv");
}

#define ID "\"id\":\"00112233445566778899aabbccddeeff\""

static void test_transfer_and_forward_messages_are_checked(void **state)
{
	check_line("{\"type\":\"transfer\"," ID ",\"op\":\"upload\",\"path\":\"a/b\"}\n", 0, NULL);
	check_line("{\"type\":\"transfer\"," ID ",\"op\":\"download\",\"path\":\".\"}\n", 0, NULL);
	check_line("{\"type\":\"transfer\"," ID ",\"op\":\"delete\",\"path\":\"a\"}\n", -1, "op");
	check_line("{\"type\":\"transfer\"," ID ",\"op\":\"upload\",\"path\":\"\"}\n", -1, "path");
	check_line("{\"type\":\"transfer\"," ID ",\"op\":\"upload\",\"path\":\"a\\u0000b\"}\n", -1,
		   "NUL");
	check_line("{\"type\":\"transfer\",\"id\":\"../x\",\"op\":\"upload\",\"path\":\"a\"}\n", -1,
		   "id");
	check_line("{\"type\":\"transfer\"," ID ",\"op\":\"upload\",\"path\":\"a\",\"uid\":0}\n",
		   -1, "uid");
	check_line("{\"type\":\"forward\"," ID ",\"port\":8080}\n", 0, NULL);
	check_line("{\"type\":\"forward\"," ID ",\"port\":0}\n", -1, "port");
	check_line("{\"type\":\"forward\"," ID ",\"port\":65536}\n", -1, "port");
	check_line("{\"type\":\"forward\"," ID ",\"port\":80,\"host\":\"10.0.0.1\"}\n", -1, "host");
	check_line("{\"type\":\"forward\",\"port\":80}\n", -1, "id");
}

static void test_unknown_types_are_skipped_not_fatal(void **state)
{
	static const char *const lines[] = { "{\"type\":\"resize-all\",\"id\":7}\n",
					     "{\"type\":\"ping\"}\n", NULL };
	struct buf b;
	buf_init(&b, 1 << 16);
	buf_append_str(&b, HEAD_OK, NULL);
	chunked(&b, lines, true);
	struct seen seen = { 0 };
	os_error err = { 0 };
	assert_int_equal(feed_split(b.data, b.len, 3, &seen, &err), 1);
	assert_int_equal(seen.ping, 1);
	buf_free(&b);
}

static void test_a_line_over_the_cap_is_refused(void **state)
{
	size_t n = SESSION_LINE_MAX + 16;
	char *big = malloc(n + 256);
	assert_non_null(big);
	int h = snprintf(big, 256, "%s%zx\r\n", HEAD_OK, n);
	assert_true(h > 0 && h < 256);
	memset(big + (h & 0xff), 'a', n);
	struct seen seen = { 0 };
	os_error err = { 0 };
	assert_int_equal(feed_split(big, (size_t)h + n, 65536, &seen, &err), -1);
	assert_int_equal(err.code, EMSGSIZE);
	free(big);
}

static void test_callback_error_ends_the_stream(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"policy\",\"revision\":4,\"policy\":\"version: 1\\n\"}\n",
		"{\"type\":\"ping\"}\n", NULL
	};
	struct buf b;
	buf_init(&b, 1 << 16);
	buf_append_str(&b, HEAD_OK, NULL);
	chunked(&b, lines, true);
	struct seen seen = { .fail_on_policy = 1 };
	os_error err = { 0 };
	assert_int_equal(feed_split(b.data, b.len, b.len, &seen, &err), -1);
	assert_string_equal(err.msg, "refused by the test");
	assert_int_equal(seen.ping, 0);
	buf_free(&b);
}

static bool hosts_lists(const char *name)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/etc/hosts", "re");
	while (f && !found && fgets(line, sizeof line, f)) {
		if (line[0] == '#')
			continue;
		for (const char *t = line + strspn(line, " \t\n"); *t && !found;) {
			size_t n = strcspn(t, " \t\n");
			found = n == strlen(name) && !strncmp(t, name, n);
			t += n;
			t += strspn(t, " \t\n");
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void test_gateway_urls(void **state)
{
	struct gw_endpoint ep;
	os_error err = { 0 };
	assert_int_equal(gw_session_parse_url("unix:/run/gw.sock", &ep, &err), 0);
	assert_int_equal(ep.addr.ss_family, AF_UNIX);
	assert_string_equal(((struct sockaddr_un *)&ep.addr)->sun_path, "/run/gw.sock");
	assert_false(ep.tls);
	assert_int_equal(gw_session_parse_url("http://127.0.0.1:17670", &ep, &err), 0);
	assert_int_equal(ep.addr.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ep.addr)->sin_port), 17670);
	assert_string_equal(ep.host, "127.0.0.1:17670");
	assert_false(ep.tls);
	assert_int_equal(gw_session_parse_url("http://[::1]:80/", &ep, &err), 0);
	assert_int_equal(ep.addr.ss_family, AF_INET6);
	/* https: TLS, port 443 by default, and the name the certificate must
	 * carry is the host as written (localhost still dials 127.0.0.1). */
	assert_int_equal(gw_session_parse_url("https://127.0.0.1:8443", &ep, &err), 0);
	assert_true(ep.tls);
	assert_string_equal(ep.name, "127.0.0.1");
	assert_string_equal(ep.host, "127.0.0.1:8443");
	assert_int_equal(gw_session_parse_url("https://[::1]/", &ep, &err), 0);
	assert_true(ep.tls);
	assert_int_equal(ep.addr.ss_family, AF_INET6);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&ep.addr)->sin6_port), 443);
	assert_string_equal(ep.name, "::1");
	assert_int_equal(gw_session_parse_url("https://localhost:9", &ep, &err), 0);
	assert_string_equal(ep.name, "localhost");
	assert_int_equal(ep.addr.ss_family, AF_INET);
	assert_int_equal(ntohl(((struct sockaddr_in *)&ep.addr)->sin_addr.s_addr), 0x7f000001);
	/* A name is resolved once, at start (a Kubernetes Service): this host's
	 * own name when /etc/hosts lists it (no DNS query leaves the machine). */
	char self[64], url[128];
	if (gethostname(self, sizeof self) == 0 && hosts_lists(self)) {
		snprintf(url, sizeof url, "http://%s:17670", self);
		assert_int_equal(gw_session_parse_url(url, &ep, &err), 0);
		assert_int_equal(ntohs(((struct sockaddr_in *)&ep.addr)->sin_port), 17670);
	}
	const char *bad[] = { "unix:relative.sock",	"ftp://127.0.0.1:1",
			      "http://127.0.0.1:80/v1", "127.0.0.1:80",
			      "http://127.0.0.1:0",	"https://127.0.0.1:443/v1",
			      "https://[zz::1]:443" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (gw_session_parse_url(bad[i], &ep, &err) == 0)
			fail_msg("accepted %s", bad[i]);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	unlink(path);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_token_file_must_be_private_and_well_formed(void **state)
{
	char dir[] = "/tmp/test_session_XXXXXX", path[128], link[128],
	     tok[GW_SESSION_TOKEN_MAX + 1];
	os_error err = { 0 };
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	write_file(path, "0123abcd\n", 0600);
	assert_int_equal(gw_session_read_token(path, tok, sizeof(tok), &err), 0);
	assert_string_equal(tok, "0123abcd");
	/* A link is followed (a Kubernetes Secret volume is links): the file it
	 * reaches is what must be private. */
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(gw_session_read_token(link, tok, sizeof(tok), &err), 0);
	write_file(path, "0123abcd\n", 0640);
	assert_int_equal(gw_session_read_token(link, tok, sizeof(tok), &err), -1);
	assert_int_equal(err.code, EPERM);
	/* Group-readable is refused for a root supervisor (root's group may hold
	 * others); only a non-root one reading root's fsGroup Secret takes it. */
	assert_int_equal(gw_session_read_token(path, tok, sizeof(tok), &err), geteuid() ? 0 : -1);
	write_file(path, "0123abcd\n", 0604);
	assert_int_equal(gw_session_read_token(path, tok, sizeof(tok), &err), -1);
	write_file(path, "0123abcd\n", 0620);
	assert_int_equal(gw_session_read_token(path, tok, sizeof(tok), &err), -1);
	write_file(path, "0123abcd\n", 0400);
	assert_int_equal(gw_session_read_token(path, tok, sizeof(tok), &err), 0);
	write_file(path, "abc\r\nX-Injected: 1\n", 0600);
	assert_int_equal(gw_session_read_token(path, tok, sizeof(tok), &err), -1);
	write_file(path, "", 0600);
	assert_int_equal(gw_session_read_token(path, tok, sizeof(tok), &err), -1);
	unlink(link);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_stream_gives_the_same_messages_however_split),
		cmocka_unit_test(test_a_line_split_across_chunks_is_one_message),
		cmocka_unit_test(test_refused_session_carries_the_gateway_words),
		cmocka_unit_test(test_unframed_or_badly_framed_bodies_are_refused),
		cmocka_unit_test(test_known_messages_are_checked_field_by_field),
		cmocka_unit_test(test_transfer_and_forward_messages_are_checked),
		cmocka_unit_test(test_unknown_types_are_skipped_not_fatal),
		cmocka_unit_test(test_a_line_over_the_cap_is_refused),
		cmocka_unit_test(test_callback_error_ends_the_stream),
		cmocka_unit_test(test_gateway_urls),
		cmocka_unit_test(test_token_file_must_be_private_and_well_formed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
