/* tls_sni.h - the server name a TLS client asks for, read from the first
 * bytes of an opaque tunnel so one allowed name cannot front another served
 * at the same address. A bounded parser of untrusted bytes: it never
 * allocates, never reads past len, and refuses what a TLS server would. */
#ifndef OS_TLS_SNI_H
#define OS_TLS_SNI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of the client's first flight read before a verdict: a ClientHello
 * (records included) that does not complete within them is refused. */
#define TLS_SNI_INPUT_MAX 16384
#define TLS_SNI_NAME_MAX 256 /* host_name bytes + NUL */

enum tls_sni_result {
	TLS_SNI_NEED_MORE, /* a ClientHello so far: read more */
	TLS_SNI_NOT_TLS, /* the first byte is not a TLS handshake record */
	TLS_SNI_NONE, /* a complete ClientHello without server_name */
	TLS_SNI_FOUND, /* a complete ClientHello; name holds its host_name */
	TLS_SNI_MALFORMED, /* a handshake record no TLS server accepts */
	TLS_SNI_TOO_LARGE, /* over TLS_SNI_INPUT_MAX */
	TLS_SNI_ENCRYPTED, /* a complete ClientHello with an encrypted name (ECH, ESNI) */
};

/* Parses data[0..len), the client's bytes from the start of the stream.
 * Stateless: call again with more bytes after TLS_SNI_NEED_MORE. On
 * TLS_SNI_FOUND name (cap >= TLS_SNI_NAME_MAX for any name) holds the
 * host_name: printable ASCII, no NUL, as sent; on TLS_SNI_ENCRYPTED the
 * outer host_name, or "" when there is none. */
enum tls_sni_result tls_sni_parse(const uint8_t *data, size_t len, char *name, size_t cap);
const char *tls_sni_result_name(enum tls_sni_result r);

/* The SNI names host (already normalised: lower case, no trailing dot):
 * case-insensitive, one trailing dot of the SNI ignored. */
bool tls_sni_matches(const char *sni, const char *host);

#endif
