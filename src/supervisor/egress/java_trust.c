/* java_trust.c - see java_trust.h. */
#include "java_trust.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>

#include "fdutil.h"

#define ORACLE_TRUSTED_KEY_USAGE "2.16.840.1.113894.746875.1.1"
#define ANY_EXTENDED_KEY_USAGE "2.5.29.37.0"
#define JAVA_TRUST_MAX_CERTS 4096

/* One trusted-certificate bag, named (the JDK's alias) and marked trusted. */
static int add_bag(STACK_OF(PKCS12_SAFEBAG) * *bags, X509 *x, size_t i, ASN1_OBJECT *any_eku)
{
	PKCS12_SAFEBAG *bag = PKCS12_add_cert(bags, x);
	char alias[32];
	snprintf(alias, sizeof alias, "openshell-%zu", i);
	if (!bag || !PKCS12_add_friendlyname_asc(bag, alias, -1) ||
	    !PKCS12_add1_attr_by_txt(bag, ORACLE_TRUSTED_KEY_USAGE, V_ASN1_OBJECT,
				     (const unsigned char *)any_eku, -1))
		return -1;
	return 0;
}

static PKCS12 *build(const char *bundle, os_error *err)
{
	BIO *in = BIO_new_file(bundle, "r");
	if (!in)
		return os_error_set(err, EIO, "java trust store: cannot read %s", bundle), NULL;
	ASN1_OBJECT *any_eku = OBJ_txt2obj(ANY_EXTENDED_KEY_USAGE, 1);
	STACK_OF(PKCS12_SAFEBAG) *bags = NULL;
	STACK_OF(PKCS7) *safes = NULL;
	PKCS12 *p12 = NULL;
	size_t n = 0;
	X509 *x;
	int bad = !any_eku;
	while (!bad && n < JAVA_TRUST_MAX_CERTS && (x = PEM_read_bio_X509(in, NULL, NULL, NULL))) {
		bad = add_bag(&bags, x, n++, any_eku) < 0;
		X509_free(x);
	}
	ERR_clear_error(); /* the end of the file reads as an error */
	BIO_free(in);
	/* Certificates in the clear (nid -1): they are public; the MAC keeps
	 * the JDK's integrity check meaningful. */
	if (!bad && n > 0 && PKCS12_add_safe(&safes, bags, -1, 0, NULL) &&
	    (p12 = PKCS12_add_safes(safes, 0)) &&
	    !PKCS12_set_mac(p12, JAVA_TRUST_PASSWORD, -1, NULL, 0, 2048, EVP_sha256())) {
		PKCS12_free(p12);
		p12 = NULL;
	}
	sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	ASN1_OBJECT_free(any_eku);
	if (!p12)
		os_error_set(err, EINVAL, "java trust store: %s",
			     n ? "building the PKCS12 file failed"
			       : "no certificate in the bundle");
	return p12;
}

int java_trust_write(const char *bundle, const char *out, os_error *err)
{
	PKCS12 *p12 = build(bundle, err);
	if (!p12)
		return -1;
	unsigned char *der = NULL;
	int len = i2d_PKCS12(p12, &der);
	PKCS12_free(p12);
	if (len <= 0)
		return os_error_set(err, EINVAL, "java trust store: encoding failed");
	int rc = file_write_atomic(out, (const char *)der, (size_t)len, 0644, err);
	OPENSSL_free(der);
	return rc;
}
