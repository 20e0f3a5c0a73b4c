/* test_splitchan.c - SHA-256/HMAC against published vectors and OpenSSL,
 * the split control channel's key files, handshake and frame integrity
 * over a real socketpair: each rejection beside the acceptance it mirrors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sha256.h"
#include "splitchan.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void sha256_matches_fips_vectors(void **state)
{
	(void)state;
	uint8_t md[SHA256_LEN];
	char h[65];
	struct sha256 c;
	sha256_init(&c);
	sha256_update(&c, "abc", 3);
	sha256_final(&c, md);
	hex(md, sizeof(md), h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_init(&c);
	sha256_final(&c, md);
	hex(md, sizeof(md), h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_init(&c);
	sha256_update(&c, two, strlen(two));
	sha256_final(&c, md);
	hex(md, sizeof(md), h);
	assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void hmac_matches_rfc4231_case_2_and_6(void **state)
{
	(void)state;
	uint8_t md[SHA256_LEN], longkey[131];
	char h[65];
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, md);
	hex(md, sizeof(md), h);
	assert_string_equal(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(longkey, 0xaa, sizeof(longkey)); /* longer than a block: hashed first */
	const char *msg = "Test Using Larger Than Block-Size Key - Hash Key First";
	hmac_sha256(longkey, sizeof(longkey), msg, strlen(msg), md);
	hex(md, sizeof(md), h);
	assert_string_equal(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void hmac_agrees_with_openssl_on_random_inputs(void **state)
{
	(void)state;
	uint8_t key[200], msg[1000], ours[SHA256_LEN], theirs[SHA256_LEN];
	for (int round = 0; round < 300; round++) {
		size_t kl = (size_t)round % sizeof(key), ml = (size_t)(round * 7) % sizeof(msg);
		assert_int_equal(getrandom(key, kl, 0), (ssize_t)kl);
		assert_int_equal(getrandom(msg, ml, 0), (ssize_t)ml);
		unsigned n = 0;
		hmac_sha256(key, kl, msg, ml, ours);
		assert_non_null(HMAC(EVP_sha256(), key, (int)kl, msg, ml, theirs, &n));
		assert_memory_equal(ours, theirs, SHA256_LEN);
		SHA256(msg, ml, theirs);
		struct sha256 c;
		sha256_init(&c);
		sha256_update(&c, msg, ml / 2); /* split updates must not matter */
		sha256_update(&c, msg + ml / 2, ml - ml / 2);
		sha256_final(&c, ours);
		assert_memory_equal(ours, theirs, SHA256_LEN);
	}
}

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/test_splitchan_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void key_file_accepts_64_hex_digits_only(void **state)
{
	(void)state;
	const char *good = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF\n";
	const char *bad[] = {
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeef\n", /* 63 */
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeffaa", /* 66 */
		"0g112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", /* not hex */
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n\n",
	};
	uint8_t key[SPLITCHAN_KEY_LEN];
	os_error err = { 0 };
	char *p = write_tmp(good);
	assert_int_equal(splitchan_load_key(p, key, &err), 0);
	assert_int_equal(key[0], 0x00);
	assert_int_equal(key[31], 0xff);
	unlink(p);
	free(p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		p = write_tmp(bad[i]);
		assert_int_equal(splitchan_load_key(p, key, &err), -1);
		assert_int_equal(err.code, EINVAL);
		assert_non_null(strstr(err.msg, "key file"));
		unlink(p);
		free(p);
	}
}

struct peer {
	int fd;
	uint8_t key[SPLITCHAN_KEY_LEN];
	int rc;
	os_error err;
	struct splitchan ch;
};

static void *supervisor_side(void *arg)
{
	struct peer *p = arg;
	splitchan_init(&p->ch, p->fd);
	p->rc = splitchan_handshake_supervisor(&p->ch, p->key, 2000, &p->err);
	return NULL;
}

/* Runs both handshakes over a socketpair; returns the launcher's rc. */
static int handshake(const uint8_t *lkey, const uint8_t *skey, struct peer *sup, struct peer *lau)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(sup, 0, sizeof(*sup));
	memset(lau, 0, sizeof(*lau));
	sup->fd = sv[0];
	lau->fd = sv[1];
	memcpy(sup->key, skey, SPLITCHAN_KEY_LEN);
	memcpy(lau->key, lkey, SPLITCHAN_KEY_LEN);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, supervisor_side, sup), 0);
	splitchan_init(&lau->ch, lau->fd);
	lau->rc = splitchan_handshake_launcher(&lau->ch, lau->key, 2000, &lau->err);
	if (lau->rc < 0)
		shutdown(lau->fd, SHUT_RDWR); /* as the launcher exits: the supervisor sees EOF */
	pthread_join(t, NULL);
	return lau->rc;
}

static void finish(struct peer *a, struct peer *b)
{
	splitchan_release(&a->ch);
	splitchan_release(&b->ch);
	close(a->fd);
	close(b->fd);
}

static void handshake_needs_the_same_key_on_both_sides(void **state)
{
	(void)state;
	uint8_t k1[SPLITCHAN_KEY_LEN], k2[SPLITCHAN_KEY_LEN];
	struct peer sup, lau;
	assert_int_equal(getrandom(k1, sizeof(k1), 0), SPLITCHAN_KEY_LEN);
	assert_int_equal(getrandom(k2, sizeof(k2), 0), SPLITCHAN_KEY_LEN);
	assert_int_equal(handshake(k1, k1, &sup, &lau), 0);
	assert_int_equal(sup.rc, 0);
	finish(&sup, &lau);
	/* A supervisor without the key: the launcher refuses before answering. */
	assert_int_equal(handshake(k1, k2, &sup, &lau), -1);
	assert_int_equal(lau.err.code, EACCES);
	assert_non_null(strstr(lau.err.msg, "supervisor did not prove"));
	assert_int_equal(sup.rc, -1);
	finish(&sup, &lau);
}

static void frames_arrive_intact_and_tampering_is_detected(void **state)
{
	(void)state;
	uint8_t k[SPLITCHAN_KEY_LEN];
	struct peer sup, lau;
	assert_int_equal(getrandom(k, sizeof(k), 0), SPLITCHAN_KEY_LEN);
	assert_int_equal(handshake(k, k, &sup, &lau), 0);
	os_error err = { 0 };
	enum splitchan_type type;
	char *payload = NULL;
	size_t len = 0;
	assert_int_equal(splitchan_send(&sup.ch, SPLITCHAN_SPEC, "{\"a\":1}", 7, &err), 0);
	assert_int_equal(splitchan_recv(&lau.ch, 1000, &type, &payload, &len, &err), 0);
	assert_int_equal(type, SPLITCHAN_SPEC);
	assert_string_equal(payload, "{\"a\":1}");
	free(payload);
	/* A frame forged without the session key (here: tagged with seq 0 again,
	 * i.e. a replay of the first frame) is refused. */
	uint8_t tag[SHA256_LEN];
	uint8_t hdr[5] = { SPLITCHAN_SPEC, 0, 0, 0, 7 };
	splitchan_mac(sup.ch.key_tx, 0, SPLITCHAN_SPEC, "{\"a\":1}", 7, tag);
	assert_int_equal(write(sup.fd, hdr, 5), 5);
	assert_int_equal(write(sup.fd, "{\"a\":1}", 7), 7);
	assert_int_equal(write(sup.fd, tag, sizeof(tag)), (ssize_t)sizeof(tag));
	assert_int_equal(splitchan_recv(&lau.ch, 1000, &type, &payload, &len, &err), -1);
	assert_int_equal(err.code, EBADMSG);
	/* Frames go one way only: a supervisor frame reflected back is refused. */
	finish(&sup, &lau);
	assert_int_equal(handshake(k, k, &sup, &lau), 0);
	uint8_t reflected[SHA256_LEN];
	splitchan_mac(sup.ch.key_tx, 0, SPLITCHAN_REPORT, "{}", 2, reflected);
	uint8_t h2[5] = { SPLITCHAN_REPORT, 0, 0, 0, 2 };
	assert_int_equal(write(lau.fd, h2, 5), 5);
	assert_int_equal(write(lau.fd, "{}", 2), 2);
	assert_int_equal(write(lau.fd, reflected, sizeof(reflected)), (ssize_t)sizeof(reflected));
	assert_int_equal(splitchan_recv(&sup.ch, 1000, &type, &payload, &len, &err), -1);
	assert_int_equal(err.code, EBADMSG);
	finish(&sup, &lau);
}

static void oversized_frames_are_refused_before_reading_them(void **state)
{
	(void)state;
	uint8_t k[SPLITCHAN_KEY_LEN] = { 1 };
	struct peer sup, lau;
	assert_int_equal(handshake(k, k, &sup, &lau), 0);
	os_error err = { 0 };
	enum splitchan_type type;
	char *payload = NULL;
	size_t len = 0;
	uint8_t hdr[5] = { SPLITCHAN_SPEC, 0xff, 0xff, 0xff, 0xff };
	assert_int_equal(write(sup.fd, hdr, 5), 5);
	assert_int_equal(splitchan_recv(&lau.ch, 1000, &type, &payload, &len, &err), -1);
	assert_int_equal(err.code, EMSGSIZE);
	assert_int_equal(
		splitchan_send(&sup.ch, SPLITCHAN_SPEC, "x", SPLITCHAN_MAX_PAYLOAD + 1, &err), -1);
	assert_int_equal(err.code, EMSGSIZE);
	finish(&sup, &lau);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sha256_matches_fips_vectors),
		cmocka_unit_test(hmac_matches_rfc4231_case_2_and_6),
		cmocka_unit_test(hmac_agrees_with_openssl_on_random_inputs),
		cmocka_unit_test(key_file_accepts_64_hex_digits_only),
		cmocka_unit_test(handshake_needs_the_same_key_on_both_sides),
		cmocka_unit_test(frames_arrive_intact_and_tampering_is_detected),
		cmocka_unit_test(oversized_frames_are_refused_before_reading_them),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
