/* k8s_keys.c - per-sandbox key material: the 32-byte pre-shared key of the
 * split backend's control channel (splitchan.h), as the 64 hex digits its key
 * files hold. It authenticates one supervisor and its launcher to each other
 * and nothing else. Never logged. */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "k8s_render.h"

int k8s_sandbox_key_new(char hex[K8S_KEY_HEX_LEN + 1], os_error *err)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char key[K8S_KEY_HEX_LEN / 2];
	if (RAND_bytes(key, sizeof key) != 1)
		return os_error_set(err, EIO, "generating the sandbox key: no randomness");
	for (size_t i = 0; i < sizeof key; i++) {
		hex[2 * i] = digits[key[i] >> 4];
		hex[2 * i + 1] = digits[key[i] & 15];
	}
	hex[K8S_KEY_HEX_LEN] = '\0';
	OPENSSL_cleanse(key, sizeof key);
	return 0;
}
