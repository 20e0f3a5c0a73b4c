/* k8s_keys.c - per-sandbox key material: an Ed25519 pair whose private half
 * goes only into the supervisor's Secret and whose public half lets the
 * workload's launcher verify its own supervisor. Never logs either half. */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <string.h>

#include "k8s_render.h"

static char *bio_string(BIO *b)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *out = n > 0 ? malloc((size_t)n + 1) : NULL;
	if (out) {
		memcpy(out, data, (size_t)n);
		out[n] = '\0';
	}
	return out;
}

int k8s_keypair_new(char **priv_pem, char **pub_pem, os_error *err)
{
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	BIO *priv = BIO_new(BIO_s_secmem()), *pub = BIO_new(BIO_s_mem());
	int r = -1;
	*priv_pem = *pub_pem = NULL;
	if (!key || !priv || !pub ||
	    !PEM_write_bio_PrivateKey(priv, key, NULL, NULL, 0, NULL, NULL) ||
	    !PEM_write_bio_PUBKEY(pub, key)) {
		os_error_set(err, EIO, "generating the sandbox's Ed25519 key pair failed");
		goto out;
	}
	*priv_pem = bio_string(priv);
	*pub_pem = bio_string(pub);
	if (!*priv_pem || !*pub_pem) {
		free(*priv_pem);
		free(*pub_pem);
		*priv_pem = *pub_pem = NULL;
		os_error_set(err, ENOMEM, "sandbox key pair: out of memory");
		goto out;
	}
	r = 0;
out:
	EVP_PKEY_free(key);
	BIO_free(priv);
	BIO_free(pub);
	return r;
}
