/* tls_ca.h - the per-sandbox certificate authority used to terminate the
 * agent's TLS for endpoints with L7 rules or credentials, and the upstream
 * client context. The CA's private key lives only in this process's memory:
 * nothing here ever writes it anywhere. */
#ifndef OS_SUPERVISOR_TLS_CA_H
#define OS_SUPERVISOR_TLS_CA_H

#include <openssl/ssl.h>

#include "error.h"
#include "tlsctx.h"

#define TLS_CA_LEAF_CACHE 256 /* server contexts kept (LRU) */

struct tls_ca;

/* Generates a fresh P-256 CA named after the sandbox (valid 30 days, path
 * length 0) and one leaf key shared by the leaves it signs. */
int tls_ca_new(const char *sandbox_id, struct tls_ca **out, os_error *err);
void tls_ca_free(struct tls_ca *ca);

/* PEM of the CA certificate (owned by ca). */
const char *tls_ca_cert_pem(const struct tls_ca *ca);

/* Writes the CA certificate to ca_path and a bundle (the system roots from
 * system_roots, then this CA) to bundle_path, both 0644. */
int tls_ca_write_files(const struct tls_ca *ca, const char *ca_path, const char *bundle_path,
		       const char *system_roots, os_error *err);

/* A server SSL_CTX presenting a leaf for host (DNS name or IP literal),
 * from the LRU cache or freshly signed. The caller owns one reference
 * (SSL_CTX_free when done). */
SSL_CTX *tls_ca_server_ctx(struct tls_ca *ca, const char *host, os_error *err);

/* Last OpenSSL error as text, for messages. */
const char *tls_last_error(void);

#endif
