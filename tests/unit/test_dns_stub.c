/* test_dns_stub.c - the question reader of the sandbox's DNS stub
 * (src/supervisor/egress/dns_stub.c) against hostile queries: answers,
 * other opcodes, several questions, compression pointers, labels past the
 * packet, names over 253 bytes and odd bytes are refused with the right
 * RCODE; each refusal has its well-formed twin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dns_stub.h"

struct q {
	uint8_t b[1024];
	size_t n;
};

static void query(struct q *q, uint16_t flags, uint16_t qd, const char *name, uint16_t type,
		  uint16_t klass)
{
	const uint8_t h[12] = { 0xab, 0xcd, flags >> 8, flags & 0xff, qd >> 8, qd & 0xff };
	memcpy(q->b, h, 12);
	q->n = 12;
	for (const char *p = name; *p;) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);
		q->b[q->n++] = (uint8_t)l;
		memcpy(q->b + q->n, p, l);
		q->n += l;
		p += l + (dot ? 1 : 0);
	}
	q->b[q->n++] = 0;
	const uint8_t t[4] = { type >> 8, type & 0xff, klass >> 8, klass & 0xff };
	memcpy(q->b + q->n, t, 4);
	q->n += 4;
}

static int parse(const struct q *q, char *name, uint16_t *type)
{
	size_t end = 0;
	return dns_stub_parse_question(q->b, q->n, name, 256, type, &end);
}

static void good_question(void **state)
{
	(void)state;
	struct q q;
	char name[256];
	uint16_t type = 0;
	size_t end = 0;
	query(&q, 0x0100, 1, "Upstream.TEST", 1, 1);
	assert_int_equal(dns_stub_parse_question(q.b, q.n, name, sizeof name, &type, &end), 0);
	assert_string_equal(name, "upstream.test");
	assert_int_equal(type, 1);
	assert_int_equal(end, q.n);
	/* An EDNS OPT record after the question is no reason to refuse. */
	q.b[11] = 1;
	assert_int_equal(parse(&q, name, &type), 0);
}

static void refused_questions(void **state)
{
	(void)state;
	struct q q;
	char name[256];
	uint16_t type;
	query(&q, 0x8180, 1, "a.test", 1, 1); /* an answer: never answered */
	assert_int_equal(parse(&q, name, &type), -2);
	query(&q, 0x2800, 1, "a.test", 1, 1); /* UPDATE */
	assert_int_equal(parse(&q, name, &type), -4);
	query(&q, 0x0100, 2, "a.test", 1, 1); /* two questions */
	assert_int_equal(parse(&q, name, &type), -1);
	query(&q, 0x0100, 0, "a.test", 1, 1);
	assert_int_equal(parse(&q, name, &type), -1);
	query(&q, 0x0100, 1, "a.test", 1, 3); /* CHAOS */
	assert_int_equal(parse(&q, name, &type), -4);
	query(&q, 0x0100, 1, "a.test", 1, 1);
	q.b[12] = 0xc0; /* a compression pointer in the question */
	assert_int_equal(parse(&q, name, &type), -1);
	query(&q, 0x0100, 1, "a.test", 1, 1);
	q.b[12] = 60; /* a label running past the packet */
	assert_int_equal(parse(&q, name, &type), -1);
	query(&q, 0x0100, 1, "a.test", 1, 1);
	q.n -= 2; /* no class */
	assert_int_equal(parse(&q, name, &type), -1);
	query(&q, 0x0100, 1, "a.test", 1, 1);
	q.b[13] = '.'; /* a dot inside a label would change the name */
	assert_int_equal(parse(&q, name, &type), -1);
	query(&q, 0x0100, 1, "a.test", 1, 1);
	q.b[13] = 0; /* NUL inside a label */
	assert_int_equal(parse(&q, name, &type), -1);
	query(&q, 0x0100, 1, "", 1, 1); /* the root */
	assert_int_equal(parse(&q, name, &type), -1);
	assert_int_equal(dns_stub_parse_question(q.b, 11, name, 256, &type, &(size_t){ 0 }), -2);
}

static void name_length_is_bounded(void **state)
{
	(void)state;
	char label[64], name[600], out[256];
	memset(label, 'a', 63);
	label[63] = '\0';
	/* 3 x 63 + 61 + 3 dots = 253 bytes: the longest name */
	char last[62];
	memset(last, 'b', 61);
	last[61] = '\0';
	snprintf(name, sizeof name, "%s.%s.%s.%s", label, label, label, last);
	struct q q;
	uint16_t type;
	query(&q, 0x0100, 1, name, 1, 1);
	assert_int_equal(parse(&q, out, &type), 0);
	assert_int_equal(strlen(out), 253);
	snprintf(name, sizeof name, "%s.%s.%s.%sb", label, label, label, last);
	query(&q, 0x0100, 1, name, 1, 1);
	assert_int_equal(parse(&q, out, &type), -1);
	snprintf(name, sizeof name, "%sa.b", label); /* a 64-byte label */
	query(&q, 0x0100, 1, name, 1, 1);
	assert_int_equal(parse(&q, out, &type), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_question),
		cmocka_unit_test(refused_questions),
		cmocka_unit_test(name_length_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
