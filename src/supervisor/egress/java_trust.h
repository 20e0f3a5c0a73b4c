/* java_trust.h - a Java trust store for the agent: the sandbox's CA bundle
 * (system roots + sandbox CA) as a PKCS12 file that JDK 9+ reads with
 * javax.net.ssl.trustStore, written with OpenSSL (no keytool at run time).
 * Each certificate carries the attribute the JDK looks for to treat a
 * PKCS12 certificate entry as trusted (Oracle's TrustedKeyUsage OID,
 * anyExtendedKeyUsage); without it the store loads and trusts nothing. */
#ifndef OS_JAVA_TRUST_H
#define OS_JAVA_TRUST_H

#include "error.h"

/* The store's password: public on purpose (the store holds only public
 * certificates; the JDK wants one to check the file's MAC). */
#define JAVA_TRUST_PASSWORD "changeit"

/* Reads every certificate of the PEM file bundle and writes out (0644). */
int java_trust_write(const char *bundle, const char *out, os_error *err);

#endif
