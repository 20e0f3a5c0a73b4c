/* sha256.h - SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), self-contained
 * so the static launcher needs no crypto library. Used only to authenticate
 * the split backend's control channel; never for anything secret-at-rest. */
#ifndef OS_SHA256_H
#define OS_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_BLOCK 64

struct sha256 {
	uint32_t h[8];
	uint64_t total; /* bytes hashed so far */
	uint8_t block[SHA256_BLOCK];
	size_t used; /* bytes waiting in block */
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_final(struct sha256 *c, uint8_t out[SHA256_LEN]);

struct hmac_sha256 {
	struct sha256 inner, outer;
};

void hmac_sha256_init(struct hmac_sha256 *h, const void *key, size_t key_len);
void hmac_sha256_update(struct hmac_sha256 *h, const void *data, size_t len);
void hmac_sha256_final(struct hmac_sha256 *h, uint8_t out[SHA256_LEN]);
/* One-shot convenience. */
void hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		 uint8_t out[SHA256_LEN]);

/* Compares n bytes in time independent of where they differ. */
bool ct_equal(const void *a, const void *b, size_t n);

/* Overwrites n bytes in a way the compiler may not drop. */
void secure_zero(void *p, size_t n);

#endif
