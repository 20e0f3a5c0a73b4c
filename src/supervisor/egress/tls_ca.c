/* tls_ca.c - per-sandbox CA and leaf minting (see tls_ca.h). Leaves are cached
 * per host in a small LRU so a busy agent does not pay a signature per
 * connection; the CA and leaf keys never leave memory. */
#include "tls_ca.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

struct leaf_entry {
	char host[256];
	SSL_CTX *ctx;
	unsigned long last_use;
};

struct tls_ca {
	EVP_PKEY *ca_key;
	X509 *ca_cert;
	EVP_PKEY *leaf_key;
	char *ca_pem;
	struct leaf_entry leaves[TLS_CA_LEAF_CACHE];
	unsigned long clock;
};

const char *tls_last_error(void)
{
	static __thread char buf[256];
	unsigned long e = ERR_get_error();
	if (!e)
		return "no OpenSSL error recorded";
	ERR_error_string_n(e, buf, sizeof buf);
	ERR_clear_error();
	return buf;
}

static EVP_PKEY *new_ec_key(void)
{
	return EVP_EC_gen("P-256");
}

static int set_serial(X509 *x)
{
	unsigned char rnd[16];
	if (RAND_bytes(rnd, sizeof rnd) != 1)
		return -1;
	rnd[0] &= 0x7f; /* positive */
	BIGNUM *bn = BN_bin2bn(rnd, sizeof rnd, NULL);
	int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	if (!ext)
		return -1;
	int ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* A certificate skeleton: version 3, random serial, validity window, subject CN. */
static X509 *new_cert(const char *cn, long not_before_s, long valid_s)
{
	X509 *x = X509_new();
	if (!x)
		return NULL;
	X509_NAME *name = X509_get_subject_name(x);
	if (X509_set_version(x, 2) != 1 || set_serial(x) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), not_before_s) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), valid_s) ||
	    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"OpenShell",
				       -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
				       0) != 1) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static int make_ca_cert(struct tls_ca *ca, const char *sandbox_id)
{
	char cn[128];
	snprintf(cn, sizeof cn, "OpenShell sandbox %.80s CA", sandbox_id);
	X509 *x = new_cert(cn, -3600, 30L * 24 * 3600);
	if (!x)
		return -1;
	if (X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
	    X509_set_pubkey(x, ca->ca_key) != 1 ||
	    add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
	    X509_sign(x, ca->ca_key, EVP_sha256()) == 0) {
		X509_free(x);
		return -1;
	}
	ca->ca_cert = x;
	return 0;
}

static char *cert_to_pem(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	if (!b || PEM_write_bio_X509(b, x) != 1) {
		BIO_free(b);
		return NULL;
	}
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *out = str_ndup(data, (size_t)n);
	BIO_free(b);
	return out;
}

int tls_ca_new(const char *sandbox_id, struct tls_ca **out, os_error *err)
{
	struct tls_ca *ca = calloc(1, sizeof *ca);
	if (!ca)
		return os_error_set(err, ENOMEM, "out of memory");
	ca->ca_key = new_ec_key();
	ca->leaf_key = new_ec_key();
	if (!ca->ca_key || !ca->leaf_key || make_ca_cert(ca, sandbox_id) < 0 ||
	    !(ca->ca_pem = cert_to_pem(ca->ca_cert))) {
		os_error_set(err, EIO, "creating sandbox CA: %s", tls_last_error());
		tls_ca_free(ca);
		return -1;
	}
	*out = ca;
	return 0;
}

void tls_ca_free(struct tls_ca *ca)
{
	if (!ca)
		return;
	for (size_t i = 0; i < TLS_CA_LEAF_CACHE; i++)
		SSL_CTX_free(ca->leaves[i].ctx);
	EVP_PKEY_free(ca->ca_key);
	EVP_PKEY_free(ca->leaf_key);
	X509_free(ca->ca_cert);
	free(ca->ca_pem);
	free(ca);
}

const char *tls_ca_cert_pem(const struct tls_ca *ca)
{
	return ca->ca_pem;
}

/* FILE_THIS_BOOT: the CA is made anew at every start (a fresh key), so
 * these files never outlive the process that wrote them in any way that
 * matters; an fsync here cost a journal commit on every sandbox start. */
int tls_ca_write_files(const struct tls_ca *ca, const char *ca_path, const char *bundle_path,
		       const char *system_roots, os_error *err)
{
	_cleanup_free_ char *roots = NULL;
	size_t roots_len = 0;
	if (system_roots && file_read_all(system_roots, 16u << 20, &roots, &roots_len, err) < 0)
		return os_error_prefix(err, "reading system roots");
	if (roots && memchr(roots, '\0', roots_len))
		return os_error_set(err, EINVAL, "system roots %s: a NUL byte is no PEM",
				    system_roots);
	size_t ca_len = strlen(ca->ca_pem);
	_cleanup_free_ char *bundle = malloc(roots_len + ca_len + 2);
	if (!bundle)
		return os_error_set(err, ENOMEM, "out of memory");
	size_t n = 0;
	if (roots_len) {
		memcpy(bundle, roots, roots_len);
		n = roots_len;
		if (bundle[n - 1] != '\n')
			bundle[n++] = '\n';
	}
	memcpy(bundle + n, ca->ca_pem, ca_len + 1);
	const struct file_put files[] = { { ca_path, ca->ca_pem }, { bundle_path, bundle } };
	return file_write_atomic_set(files, 2, 0644, FILE_THIS_BOOT, err);
}

static X509 *sign_leaf(struct tls_ca *ca, const char *host)
{
	X509 *x = new_cert(host, -3600, 7L * 24 * 3600);
	if (!x)
		return NULL;
	char san[300];
	bool ip = strchr(host, ':') != NULL || strspn(host, "0123456789.") == strlen(host);
	snprintf(san, sizeof san, "%s:%s", ip ? "IP" : "DNS", host);
	if (X509_set_issuer_name(x, X509_get_subject_name(ca->ca_cert)) != 1 ||
	    X509_set_pubkey(x, ca->leaf_key) != 1 ||
	    add_ext(x, ca->ca_cert, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, ca->ca_cert, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, ca->ca_cert, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(x, ca->ca_cert, NID_subject_alt_name, san) < 0 ||
	    add_ext(x, ca->ca_cert, NID_authority_key_identifier, "keyid") < 0 ||
	    X509_sign(x, ca->ca_key, EVP_sha256()) == 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* ALPN is not offered: the proxy speaks HTTP/1.1 to the agent. */
static SSL_CTX *new_server_ctx(struct tls_ca *ca, const char *host, os_error *err)
{
	static const struct tls_server_config cfg = { 0 };
	X509 *leaf = sign_leaf(ca, host);
	SSL_CTX *ctx = NULL;
	if (!leaf) {
		os_error_set(err, EIO, "minting certificate for %s: %s", host, tls_last_error());
		return NULL;
	}
	if (tls_ctx_new_server(&cfg, &ctx, err) < 0) {
		os_error_prefix(err, "minting certificate for %s", host);
	} else if (SSL_CTX_use_certificate(ctx, leaf) != 1 ||
		   SSL_CTX_use_PrivateKey(ctx, ca->leaf_key) != 1 ||
		   SSL_CTX_add1_chain_cert(ctx, ca->ca_cert) != 1) {
		os_error_set(err, EIO, "minting certificate for %s: %s", host, tls_last_error());
		SSL_CTX_free(ctx);
		ctx = NULL;
	}
	X509_free(leaf);
	return ctx;
}

SSL_CTX *tls_ca_server_ctx(struct tls_ca *ca, const char *host, os_error *err)
{
	if (strlen(host) >= sizeof ca->leaves[0].host) {
		os_error_set(err, ENAMETOOLONG, "host name too long for a certificate");
		return NULL;
	}
	struct leaf_entry *victim = &ca->leaves[0];
	for (size_t i = 0; i < TLS_CA_LEAF_CACHE; i++) {
		struct leaf_entry *e = &ca->leaves[i];
		if (e->ctx && strcmp(e->host, host) == 0) {
			e->last_use = ++ca->clock;
			SSL_CTX_up_ref(e->ctx);
			return e->ctx;
		}
		if (!e->ctx || (victim->ctx && e->last_use < victim->last_use))
			victim = e;
	}
	SSL_CTX *ctx = new_server_ctx(ca, host, err);
	if (!ctx)
		return NULL;
	SSL_CTX_free(victim->ctx);
	snprintf(victim->host, sizeof victim->host, "%s", host);
	victim->ctx = ctx;
	victim->last_use = ++ca->clock;
	SSL_CTX_up_ref(ctx);
	return ctx;
}
