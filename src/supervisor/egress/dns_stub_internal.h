/* dns_stub_internal.h - what the DNS stub's two transports share: the
 * query core (dns_stub.c) answers one query to a peer, which is a UDP
 * address or a TCP connection (dns_stub_tcp.c). Not for other users. */
#ifndef OS_DNS_STUB_INTERNAL_H
#define OS_DNS_STUB_INTERNAL_H

#include <sys/socket.h>

#include "dns_stub.h"

#define DNS_PACKET_MAX 512 /* a query or an answer, on either transport */

struct dns_tcp_conn;
struct dns_tcp;
struct dns_pending;

/* Where an answer goes. */
struct dns_peer {
	struct dns_tcp_conn *conn; /* TCP: this connection; NULL: UDP to addr */
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

/* Serves query q[0..len) (copied): the answer goes to `to` now, or when
 * its lookup ends. Returns that lookup (cancel it if the peer goes away
 * first), or NULL when the answer was sent at once or none is due (the
 * packet was no query). */
struct dns_pending *dns_stub_serve(struct dns_stub *s, const uint8_t *q, size_t len,
				   const struct dns_peer *to);
/* The peer went away: no answer, the lookup is dropped. */
void dns_stub_cancel(struct dns_pending *p);

/* dns_stub_tcp.c: the listener (fd taken) and its connections. */
int dns_tcp_new(struct dns_stub *s, struct loop *l, int fd, struct dns_tcp **out, os_error *err);
void dns_tcp_free(struct dns_tcp *t);
/* The answer to the query the connection is waiting for (pkt[0..len),
 * len <= DNS_PACKET_MAX). */
void dns_tcp_answer(struct dns_tcp_conn *c, const uint8_t *pkt, size_t len);

#endif
