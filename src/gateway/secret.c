/* secret.c - AES-256-GCM sealing of provider secrets and random tokens (see
 * secret.h). Key and token files are created 0600 and refused when wider:
 * a key others can read protects nothing. */
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

#define NONCE_LEN 12
#define TAG_LEN 16
#define SEALED_MAX (1u << 20)

bool secret_file_private(const struct stat *st)
{
	if (st->st_mode & (S_IRWXO | S_IWGRP | S_IXGRP))
		return false;
	if (!(st->st_mode & S_IRGRP))
		return true;
	return geteuid() != 0 && st->st_uid == 0 && st->st_gid == getegid();
}

/* Files the gateway made itself are 0600; mounted ones (mounted = true)
 * may also have the shape secret_file_private allows for a Secret. */
static int read_private_file(const char *path, size_t cap, bool mounted, char **out, size_t *len,
			     os_error *err)
{
	/* A Secret's files are symlinks into its ..data dir; our own never are. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | (mounted ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return os_error_errno(err, "opening %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return os_error_errno(err, "stat %s", path);
	bool ok = mounted ? secret_file_private(&st) : (st.st_mode & 077) == 0;
	if (!ok || !S_ISREG(st.st_mode))
		return os_error_set(err, EPERM,
				    "%s: must be a regular file of mode 0600 (is %03o)%s; fix with "
				    "chmod 600",
				    path, st.st_mode & 0777,
				    mounted ? " or a Secret mounted with fsGroup (root-owned 0440)"
					    : "");
	return fd_read_all(fd, cap, out, len, err);
}

int secret_key_load_or_create(const char *path, struct secret_key *key, os_error *err)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (access(path, F_OK) == 0) {
		if (read_private_file(path, 64, false, &data, &len, err) < 0)
			return -1;
		if (len != SECRET_KEY_LEN)
			return os_error_set(err, EINVAL, "%s: expected %d bytes of key, found %zu",
					    path, SECRET_KEY_LEN, len);
		memcpy(key->k, data, SECRET_KEY_LEN);
		OPENSSL_cleanse(data, len);
		return 0;
	}
	if (RAND_bytes(key->k, SECRET_KEY_LEN) != 1)
		return os_error_set(err, EIO, "no random bytes for the secrets key");
	if (file_write_atomic(path, key->k, SECRET_KEY_LEN, 0600, err) < 0)
		return os_error_prefix(err, "writing secrets key %s", path);
	return 0;
}

static int gcm(const struct secret_key *key, int enc, const uint8_t *nonce, const uint8_t *in,
	       size_t len, uint8_t *out, uint8_t *tag, os_error *err)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int n = 0, fin = 0, ok = 0;
	if (!ctx)
		return os_error_set(err, ENOMEM, "cipher context");
	ok = EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, key->k, nonce, enc) == 1 &&
	     (enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) == 1) &&
	     (len == 0 || EVP_CipherUpdate(ctx, out, &n, in, (int)len) == 1) &&
	     EVP_CipherFinal_ex(ctx, out + n, &fin) == 1 &&
	     (!enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag) == 1);
	EVP_CIPHER_CTX_free(ctx);
	if (!ok)
		return os_error_set(err, EBADMSG,
				    enc ? "encrypting a secret failed"
					: "a stored secret failed authentication (wrong key or "
					  "tampered database)");
	return 0;
}

int secret_seal(const struct secret_key *key, const void *plain, size_t len, char **out,
		os_error *err)
{
	if (len > SEALED_MAX)
		return os_error_set(err, EMSGSIZE, "secret too large (%zu bytes)", len);
	size_t raw_len = NONCE_LEN + len + TAG_LEN;
	_cleanup_free_ uint8_t *raw = malloc(raw_len);
	_cleanup_free_ char *b64 = malloc(4 * ((raw_len + 2) / 3) + 4);
	if (!raw || !b64)
		return os_error_set(err, ENOMEM, "sealing a secret");
	if (RAND_bytes(raw, NONCE_LEN) != 1)
		return os_error_set(err, EIO, "no random bytes for a nonce");
	if (gcm(key, 1, raw, plain, len, raw + NONCE_LEN, raw + NONCE_LEN + len, err) < 0)
		return -1;
	memcpy(b64, "v1:", 3);
	EVP_EncodeBlock((unsigned char *)b64 + 3, raw, (int)raw_len);
	*out = steal_ptr(b64);
	return 0;
}

int secret_open(const struct secret_key *key, const char *sealed, char **out, size_t *out_len,
		os_error *err)
{
	if (!str_has_prefix(sealed, "v1:"))
		return os_error_set(err, EINVAL, "stored secret has an unknown format");
	const char *b64 = sealed + 3;
	size_t blen = strlen(b64);
	if (blen % 4 != 0 || blen > 2 * SEALED_MAX)
		return os_error_set(err, EINVAL, "stored secret is not valid base64");
	_cleanup_free_ uint8_t *raw = malloc(blen / 4 * 3 + 1);
	if (!raw)
		return os_error_set(err, ENOMEM, "opening a secret");
	int n = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)blen);
	if (n < 0)
		return os_error_set(err, EINVAL, "stored secret is not valid base64");
	size_t pad = (blen >= 1 && b64[blen - 1] == '=') + (blen >= 2 && b64[blen - 2] == '=');
	size_t raw_len = (size_t)n - pad;
	if (raw_len < NONCE_LEN + TAG_LEN)
		return os_error_set(err, EINVAL, "stored secret is truncated");
	size_t len = raw_len - NONCE_LEN - TAG_LEN;
	_cleanup_free_ char *plain = malloc(len + 1);
	if (!plain)
		return os_error_set(err, ENOMEM, "opening a secret");
	if (gcm(key, 0, raw, raw + NONCE_LEN, len, (uint8_t *)plain, raw + NONCE_LEN + len, err) <
	    0)
		return -1;
	plain[len] = '\0';
	*out = steal_ptr(plain);
	if (out_len)
		*out_len = len;
	return 0;
}

int secret_random_hex(char out[SECRET_TOKEN_HEX + 1], os_error *err)
{
	uint8_t raw[SECRET_TOKEN_HEX / 2];
	static const char hex[] = "0123456789abcdef";
	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return os_error_set(err, EIO, "no random bytes for a token");
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[SECRET_TOKEN_HEX] = '\0';
	return 0;
}

void secret_sha256_hex(const char *s, size_t len, char out[SECRET_SHA256_HEX + 1])
{
	uint8_t md[32];
	unsigned int mdlen = 0;
	static const char hex[] = "0123456789abcdef";
	EVP_Digest(s, len, md, &mdlen, EVP_sha256(), NULL);
	for (size_t i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[SECRET_SHA256_HEX] = '\0';
}

int secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la != lb)
		return 0;
	return CRYPTO_memcmp(a, b, la) == 0;
}

static int token_read(const char *path, bool mounted, char out[SECRET_TOKEN_HEX + 1], os_error *err)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (read_private_file(path, 256, mounted, &data, &len, err) < 0)
		return -1;
	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		data[--len] = '\0';
	if (len != SECRET_TOKEN_HEX || strspn(data, "0123456789abcdef") != len)
		return os_error_set(err, EINVAL,
				    "%s: not a token (%zu characters; expected %d lower-case hex)",
				    path, len, SECRET_TOKEN_HEX);
	memcpy(out, data, SECRET_TOKEN_HEX + 1);
	return 0;
}

int secret_token_load(const char *path, char out[SECRET_TOKEN_HEX + 1], os_error *err)
{
	return token_read(path, true, out, err);
}

int secret_token_load_or_create(const char *path, char out[SECRET_TOKEN_HEX + 1], os_error *err)
{
	if (access(path, F_OK) == 0)
		return token_read(path, false, out, err);
	if (secret_random_hex(out, err) < 0)
		return -1;
	char line[SECRET_TOKEN_HEX + 2];
	memcpy(line, out, SECRET_TOKEN_HEX);
	line[SECRET_TOKEN_HEX] = '\n';
	if (file_write_atomic(path, line, sizeof(line) - 1, 0600, err) < 0)
		return os_error_prefix(err, "writing token %s", path);
	return 0;
}
