/* gw_http.h - the CLI's own HTTP/1.1 to the gateway (TCP, Unix socket, or
 * TLS through tls_client.h), with the project's strict response parser and
 * chunked decoder: one request per connection. Not libcurl: its dependency
 * tree (GnuTLS, Kerberos, LDAP, ...) cost every command several
 * milliseconds of start-up. */
#ifndef OS_CLI_GW_HTTP_H
#define OS_CLI_GW_HTTP_H

#include <stddef.h>

#include "client.h"
#include "error.h"
#include "tls_client.h"

/* Connects to the gateway of c; *host gets the name TLS must verify ("" for
 * a Unix socket). ECONNREFUSED (with what to do) when nothing listens. */
int gw_dial(const struct client *c, char *host, size_t host_cap, os_error *err);
/* gw_dial plus the TLS handshake for https://; s->fd is the caller's to close. */
int gw_open(const struct client *c, struct tls_stream *s, os_error *err);

/* Body bytes as they arrive; < 0 stops reading (the call then returns 0). */
typedef int (*gw_body_fn)(const char *data, size_t len, void *user);

/* One request (body: JSON text or NULL) with the bearer token; *status is
 * the answer's status and on_body gets its decoded body. */
int gw_http(const struct client *c, const char *method, const char *path, const char *body,
	    gw_body_fn on_body, void *user, long *status, os_error *err);

#endif
