/* session_net.h - one non-blocking client connection to the gateway on the
 * supervisor's loop: connect, TLS handshake when the gateway is https://,
 * send a prepared request, hand received bytes to the owner, time out when
 * the gateway goes quiet. Never blocks the loop (no name resolution, no
 * blocking connect or handshake). */
#ifndef OS_SUPERVISOR_SESSION_NET_H
#define OS_SUPERVISOR_SESSION_NET_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "error.h"
#include "loop.h"

/* Where the gateway is, from --gateway (session_config.c). */
struct gw_endpoint {
	struct sockaddr_storage addr;
	unsigned addr_len;
	char host[300]; /* the Host header: the URL's authority */
	char name[256]; /* https: the DNS name or IP the certificate must carry */
	bool tls; /* https:// */
};

enum gw_conn_event {
	GW_CONN_DATA, /* data/len received */
	GW_CONN_END, /* the gateway closed the connection */
	GW_CONN_ERROR, /* err says what failed (connect, TLS, send, recv) */
	GW_CONN_TIMEOUT, /* nothing received for idle_ms */
};

struct gw_conn;
/* The callback may gw_conn_close(c); the connection is not touched after it returns. */
typedef void (*gw_conn_fn)(struct gw_conn *c, enum gw_conn_event ev, const char *data, size_t len,
			   const os_error *err, void *user);

/* tls: the client context when ep->tls (verifies the gateway), else NULL. */
int gw_conn_open(struct loop *l, const struct gw_endpoint *ep, SSL_CTX *tls, const char *request,
		 size_t request_len, uint64_t idle_ms, gw_conn_fn cb, void *user,
		 struct gw_conn **out, os_error *err);
void gw_conn_close(struct gw_conn *c);

#endif
