/* test_tls_sni.c - the ClientHello server-name reader of L4 tunnels
 * (src/supervisor/egress/tls_sni.c) against hostile inputs: every prefix of
 * a good hello waits for more, records fragmented down to one byte still
 * give the name, and truncated lengths, oversized messages, several names,
 * duplicate or overlapping extensions and odd name bytes are refused. Each
 * refusal has its well-formed twin beside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tls_sni.h"

#define BIG 70000

struct bytes {
	uint8_t b[BIG];
	size_t n;
};

static void put(struct bytes *o, const void *p, size_t n)
{
	assert_true(o->n + n <= sizeof o->b);
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void put8(struct bytes *o, unsigned v)
{
	uint8_t b = (uint8_t)v;
	put(o, &b, 1);
}

static void put16(struct bytes *o, size_t v)
{
	put8(o, (unsigned)(v >> 8) & 0xff);
	put8(o, (unsigned)v & 0xff);
}

/* A server_name extension body with one entry of this type. */
static void sni_ext(struct bytes *o, unsigned type, const char *name, size_t len)
{
	put16(o, 0x0000);
	put16(o, len + 5);
	put16(o, len + 3);
	put8(o, type);
	put16(o, len);
	put(o, name, len);
}

static void other_ext(struct bytes *o, unsigned type, size_t len)
{
	put16(o, type);
	put16(o, len);
	for (size_t i = 0; i < len; i++)
		put8(o, 0xaa);
}

/* A ClientHello handshake message around an extensions block (NULL: none). */
static void hello(struct bytes *hs, const struct bytes *ext)
{
	struct bytes body = { .n = 0 };
	put16(&body, 0x0303);
	for (int i = 0; i < 32; i++)
		put8(&body, (unsigned)i);
	put8(&body, 32);
	for (int i = 0; i < 32; i++)
		put8(&body, 0x11);
	put16(&body, 4);
	put16(&body, 0x1301);
	put16(&body, 0x1302);
	put8(&body, 1);
	put8(&body, 0);
	if (ext) {
		put16(&body, ext->n);
		put(&body, ext->b, ext->n);
	}
	hs->n = 0;
	put8(hs, 0x01);
	put8(hs, (unsigned)(body.n >> 16) & 0xff);
	put16(hs, body.n & 0xffff);
	put(hs, body.b, body.n);
}

/* The handshake bytes in records of at most frag bytes. */
static void records(struct bytes *out, const struct bytes *hs, size_t frag)
{
	out->n = 0;
	for (size_t i = 0; i < hs->n; i += frag) {
		size_t k = hs->n - i < frag ? hs->n - i : frag;
		put8(out, 0x16);
		put16(out, 0x0301);
		put16(out, k);
		put(out, hs->b + i, k);
	}
}

static enum tls_sni_result parse(const struct bytes *in, char *name)
{
	return tls_sni_parse(in->b, in->n, name, TLS_SNI_NAME_MAX);
}

/* A well-formed hello for name with a few extensions around it. */
static void good(struct bytes *wire, const char *name, size_t frag)
{
	static struct bytes ext, hs;
	ext.n = 0;
	other_ext(&ext, 0x000a, 8);
	sni_ext(&ext, 0, name, strlen(name));
	other_ext(&ext, 0x002b, 3);
	hello(&hs, &ext);
	records(wire, &hs, frag);
}

static void name_found_and_every_prefix_waits(void **state)
{
	(void)state;
	static struct bytes w;
	char name[TLS_SNI_NAME_MAX];
	good(&w, "api.example.com", 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_FOUND);
	assert_string_equal(name, "api.example.com");
	for (size_t k = 0; k < w.n; k++)
		assert_int_equal(tls_sni_parse(w.b, k, name, sizeof name), TLS_SNI_NEED_MORE);
	/* Bytes after the ClientHello's records (early data) do not matter. */
	put8(&w, 0x17);
	put16(&w, 0x0303);
	assert_int_equal(parse(&w, name), TLS_SNI_FOUND);
}

static void fragmented_records_are_reassembled(void **state)
{
	(void)state;
	static struct bytes w;
	char name[TLS_SNI_NAME_MAX];
	size_t frags[] = { 1, 2, 3, 7, 40, 100 };
	for (size_t i = 0; i < sizeof frags / sizeof frags[0]; i++) {
		good(&w, "front.example", frags[i]);
		assert_int_equal(parse(&w, name), TLS_SNI_FOUND);
		assert_string_equal(name, "front.example");
		for (size_t k = 0; k < w.n; k += 5)
			assert_int_equal(tls_sni_parse(w.b, k, name, sizeof name),
					 TLS_SNI_NEED_MORE);
	}
}

static void plain_protocols_are_not_tls(void **state)
{
	(void)state;
	char name[TLS_SNI_NAME_MAX];
	const char *plain[] = { "GET / HTTP/1.1\r\n", "SSH-2.0-OpenSSH_9.6\r\n", "\x80\x2e\x01",
				"\x15\x03\x03\x00\x02" };
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
		assert_int_equal(tls_sni_parse((const uint8_t *)plain[i], strlen(plain[i]), name,
					       sizeof name),
				 TLS_SNI_NOT_TLS);
	assert_int_equal(tls_sni_parse((const uint8_t *)"", 0, name, sizeof name),
			 TLS_SNI_NEED_MORE);
}

static void hello_without_server_name(void **state)
{
	(void)state;
	static struct bytes ext, hs, w;
	char name[TLS_SNI_NAME_MAX];
	other_ext(&ext, 0x000a, 8);
	hello(&hs, &ext);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_NONE);
	hello(&hs, NULL); /* no extensions block at all */
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_NONE);
	/* An extension whose length swallows the next one: every server sees
	 * one unknown extension, so no server name. */
	ext.n = 0;
	put16(&ext, 0x0015);
	put16(&ext, 2 + 2 + 2 + 1 + 2 + 9); /* exactly the server_name below */
	sni_ext(&ext, 0, "evil.test", 9);
	hello(&hs, &ext);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_NONE);
}

/* With ECH (or its ESNI predecessor) the readable name is the outer one:
 * the server acts on the encrypted inner name, so such a hello is its own
 * result whatever its outer name. An unknown extension beside the name is
 * the control. */
static void encrypted_names_are_reported(void **state)
{
	(void)state;
	static struct bytes ext, hs, w;
	char name[TLS_SNI_NAME_MAX];
	const unsigned types[] = { 0xfe0d, 0xffce, 0xfe0c };
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		bool encrypted = types[i] != 0xfe0c;
		ext.n = 0;
		sni_ext(&ext, 0, "api.example.com", 15);
		other_ext(&ext, types[i], 40);
		hello(&hs, &ext);
		records(&w, &hs, 16384);
		assert_int_equal(parse(&w, name), encrypted ? TLS_SNI_ENCRYPTED : TLS_SNI_FOUND);
		assert_string_equal(name, "api.example.com"); /* the outer name */
		ext.n = 0;
		other_ext(&ext, types[i], 40);
		hello(&hs, &ext);
		records(&w, &hs, 16384);
		assert_int_equal(parse(&w, name), encrypted ? TLS_SNI_ENCRYPTED : TLS_SNI_NONE);
	}
	assert_string_equal(tls_sni_result_name(TLS_SNI_ENCRYPTED), "client_hello_encrypted");
}

static void several_names_or_duplicate_extensions_refused(void **state)
{
	(void)state;
	static struct bytes ext, hs, w;
	char name[TLS_SNI_NAME_MAX];
	/* two host_name entries in one list */
	put16(&ext, 0);
	put16(&ext, 2 + 2 * (3 + 6));
	put16(&ext, 2 * (3 + 6));
	for (int i = 0; i < 2; i++) {
		put8(&ext, 0);
		put16(&ext, 6);
		put(&ext, i ? "b.test" : "a.test", 6);
	}
	hello(&hs, &ext);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
	/* two server_name extensions */
	ext.n = 0;
	sni_ext(&ext, 0, "a.test", 6);
	sni_ext(&ext, 0, "b.test", 6);
	hello(&hs, &ext);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
	/* positive control: one of them */
	ext.n = 0;
	sni_ext(&ext, 0, "a.test", 6);
	hello(&hs, &ext);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_FOUND);
	assert_string_equal(name, "a.test");
}

static void odd_names_refused(void **state)
{
	(void)state;
	static struct bytes ext, hs, w;
	char name[TLS_SNI_NAME_MAX], long_name[300];
	memset(long_name, 'a', sizeof long_name);
	struct {
		unsigned type;
		const char *name;
		size_t len;
	} bad[] = {
		{ 1, "a.test", 6 }, /* not host_name */
		{ 0, "", 0 }, /* empty */
		{ 0, "good.test\0evil.test", 19 }, /* NUL */
		{ 0, "a b.test", 8 }, /* space */
		{ 0, "caf\xc3\xa9.test", 10 }, /* not ASCII */
		{ 0, long_name, 256 }, /* over TLS_SNI_NAME_MAX - 1 */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ext.n = 0;
		sni_ext(&ext, bad[i].type, bad[i].name, bad[i].len);
		hello(&hs, &ext);
		records(&w, &hs, 16384);
		assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
	}
	ext.n = 0;
	sni_ext(&ext, 0, long_name, 255); /* the longest name */
	hello(&hs, &ext);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_FOUND);
	assert_int_equal(strlen(name), 255);
}

/* Corrupts one length field of a good hello at off (from the record start). */
static enum tls_sni_result with_byte(size_t off, uint8_t v)
{
	static struct bytes w;
	char name[TLS_SNI_NAME_MAX];
	good(&w, "a.test", 16384);
	w.b[off] = v;
	return parse(&w, name);
}

static void truncated_and_inconsistent_lengths_refused(void **state)
{
	(void)state;
	/* offsets: record 0..4, handshake header 5..8, version 9..10, random
	 * 11..42, session id length 43, id 44..75, suites length 76..77 */
	assert_int_equal(with_byte(1, 0x02), TLS_SNI_MALFORMED); /* record version */
	assert_int_equal(with_byte(5, 0x02), TLS_SNI_MALFORMED); /* ServerHello */
	assert_int_equal(with_byte(43, 33), TLS_SNI_MALFORMED); /* session id > 32 */
	assert_int_equal(with_byte(43, 0xff), TLS_SNI_MALFORMED);
	assert_int_equal(with_byte(77, 3), TLS_SNI_MALFORMED); /* odd suites length */
	assert_int_equal(with_byte(77, 0xff), TLS_SNI_MALFORMED); /* past the end */
	/* record shorter than its handshake: waits, then refuses what follows */
	static struct bytes ext, hs, w;
	char name[TLS_SNI_NAME_MAX];
	sni_ext(&ext, 0, "a.test", 6);
	hello(&hs, &ext);
	hs.b[3] += 1; /* handshake claims one byte more than sent */
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_NEED_MORE);
	put8(&w, 0x17); /* an application-data record before the hello is complete */
	put16(&w, 0x0303);
	put16(&w, 1);
	put8(&w, 0);
	assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
	/* a zero-length record */
	w.n = 0;
	put8(&w, 0x16);
	put16(&w, 0x0301);
	put16(&w, 0);
	assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
	/* handshake shorter than its record (a second message follows) */
	hello(&hs, &ext);
	put8(&hs, 0x01);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
	/* extensions block longer or shorter than the rest of the hello */
	for (int delta = -1; delta <= 1; delta += 2) {
		hello(&hs, &ext);
		size_t at = hs.n - ext.n - 1; /* low byte of the block length */
		hs.b[at] = (uint8_t)(hs.b[at] + delta);
		records(&w, &hs, 16384);
		assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
	}
	/* server_name list length disagreeing with the extension */
	ext.n = 0;
	sni_ext(&ext, 0, "a.test", 6);
	ext.b[5] += 1;
	hello(&hs, &ext);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
}

static void oversized_hellos_refused(void **state)
{
	(void)state;
	static struct bytes ext, hs, w;
	char name[TLS_SNI_NAME_MAX];
	/* a padding extension pushing the hello past the cap */
	other_ext(&ext, 0x0015, 20000);
	sni_ext(&ext, 0, "a.test", 6);
	hello(&hs, &ext);
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_TOO_LARGE);
	/* a record claiming more than TLS allows */
	w.n = 0;
	put8(&w, 0x16);
	put16(&w, 0x0303);
	put16(&w, 16385);
	assert_int_equal(parse(&w, name), TLS_SNI_MALFORMED);
	/* a hello within the cap, cut in one-byte records that are not */
	ext.n = 0;
	other_ext(&ext, 0x0015, 3000);
	sni_ext(&ext, 0, "a.test", 6);
	hello(&hs, &ext);
	records(&w, &hs, 1);
	assert_true(w.n > TLS_SNI_INPUT_MAX);
	assert_int_equal(tls_sni_parse(w.b, TLS_SNI_INPUT_MAX, name, sizeof name),
			 TLS_SNI_TOO_LARGE);
	/* positive control: the same hello in one record */
	records(&w, &hs, 16384);
	assert_int_equal(parse(&w, name), TLS_SNI_FOUND);
}

static void random_bytes_never_crash(void **state)
{
	(void)state;
	static struct bytes w;
	char name[TLS_SNI_NAME_MAX];
	uint32_t x = 12345;
	for (int round = 0; round < 20000; round++) {
		good(&w, "r.test", (size_t)(round % 50) + 1);
		for (int k = 0; k < 3; k++) {
			x = x * 1103515245u + 12345u;
			w.b[(x >> 8) % w.n] = (uint8_t)(x >> 24);
		}
		enum tls_sni_result r = parse(&w, name);
		if (r == TLS_SNI_FOUND)
			assert_true(strlen(name) > 0 && strlen(name) < TLS_SNI_NAME_MAX);
	}
}

static void sni_compared_case_insensitively_trailing_dot_ignored(void **state)
{
	(void)state;
	assert_true(tls_sni_matches("api.example.com", "api.example.com"));
	assert_true(tls_sni_matches("API.Example.COM.", "api.example.com"));
	assert_false(tls_sni_matches("api.example.com..", "api.example.com"));
	assert_false(tls_sni_matches("example.com", "api.example.com"));
	assert_false(tls_sni_matches("api.example.com.evil", "api.example.com"));
	assert_false(tls_sni_matches(".", ""));
	assert_false(tls_sni_matches("", ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(name_found_and_every_prefix_waits),
		cmocka_unit_test(fragmented_records_are_reassembled),
		cmocka_unit_test(plain_protocols_are_not_tls),
		cmocka_unit_test(hello_without_server_name),
		cmocka_unit_test(encrypted_names_are_reported),
		cmocka_unit_test(several_names_or_duplicate_extensions_refused),
		cmocka_unit_test(odd_names_refused),
		cmocka_unit_test(truncated_and_inconsistent_lengths_refused),
		cmocka_unit_test(oversized_hellos_refused),
		cmocka_unit_test(random_bytes_never_crash),
		cmocka_unit_test(sni_compared_case_insensitively_trailing_dot_ignored),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
