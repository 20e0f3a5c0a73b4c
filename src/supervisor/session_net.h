/* session_net.h - one non-blocking client connection to the gateway on the
 * supervisor's loop: connect, send a prepared request, hand received bytes
 * to the owner, time out when the gateway goes quiet. Never blocks the loop
 * (no name resolution, no blocking connect). */
#ifndef OS_SUPERVISOR_SESSION_NET_H
#define OS_SUPERVISOR_SESSION_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "error.h"
#include "loop.h"

enum gw_conn_event {
	GW_CONN_DATA, /* data/len received */
	GW_CONN_END, /* the gateway closed the connection */
	GW_CONN_ERROR, /* err says what failed (connect, send, recv) */
	GW_CONN_TIMEOUT, /* nothing received for idle_ms */
};

struct gw_conn;
/* The callback may gw_conn_close(c); the connection is not touched after it returns. */
typedef void (*gw_conn_fn)(struct gw_conn *c, enum gw_conn_event ev, const char *data, size_t len,
			   const os_error *err, void *user);

int gw_conn_open(struct loop *l, const struct sockaddr_storage *addr, socklen_t addr_len,
		 const char *request, size_t request_len, uint64_t idle_ms, gw_conn_fn cb,
		 void *user, struct gw_conn **out, os_error *err);
void gw_conn_close(struct gw_conn *c);

#endif
