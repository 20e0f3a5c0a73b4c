/* tls_client.h - the CLI's TLS to an https:// gateway, shared by gw_http.c
 * (client.c) and the upgraded exec connection (cmd_exec.c): the settings
 * from OPENSHELL_TLS_CA / OPENSHELL_TLS_CERT / OPENSHELL_TLS_KEY, what a TLS
 * failure means in words, and a blocking OpenSSL stream that verifies the
 * gateway's certificate and name. It never skips verification. */
#ifndef OS_CLI_TLS_CLIENT_H
#define OS_CLI_TLS_CLIENT_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

struct tls_settings {
	const char *ca; /* PEM CA the gateway's certificate must chain to; NULL: system roots */
	const char *cert, *key; /* client certificate for mTLS, both or neither */
};

/* Reads the OPENSHELL_TLS_* variables; errors name the variable and file. */
int tls_settings_from_env(struct tls_settings *t, os_error *err);

/* Fills err for a failed exchange with the gateway at url: what the
 * OpenSSL failure text means and what to set,
 * then the text itself. Returns -1. */
int tls_error(os_error *err, const struct tls_settings *t, const char *url, const char *detail);

/* One connection's bytes, through TLS when ssl is set. fd stays the caller's. */
struct tls_stream {
	int fd;
	struct ssl_st *ssl;
	const struct tls_settings *settings;
};

/* Handshakes on a connected blocking socket; host is checked against the
 * certificate (as an IP address when it is one). */
int tls_stream_start(struct tls_stream *s, int fd, const struct tls_settings *t, const char *host,
		     os_error *err);
/* > 0 bytes, 0 at EOF, -1 with err. TLS records that carry no data (a key
 * update) come back as -1 with err->code EAGAIN: read again after poll. */
ssize_t tls_stream_read(struct tls_stream *s, void *buf, size_t len, os_error *err);
int tls_stream_write_all(struct tls_stream *s, const void *buf, size_t len, os_error *err);
/* For a non-blocking fd: writes what fits of buf now. > 0 bytes written,
 * 0 when nothing could go (poll for POLLOUT, and call again with the same
 * bytes first), -1 with err. */
ssize_t tls_stream_write_some(struct tls_stream *s, const void *buf, size_t len, os_error *err);
/* Decrypted bytes are waiting that poll() cannot see. */
bool tls_stream_pending(const struct tls_stream *s);
/* Sends close_notify and frees the TLS state; does not close fd. */
void tls_stream_end(struct tls_stream *s);

#endif
