/* sockdiag.h - exact TCP socket lookups by 4-tuple through the kernel's
 * sock_diag netlink interface, inside one network namespace: the cost of a
 * lookup is one hash probe in the kernel, whatever the number of sockets
 * (established or TIME_WAIT) the namespace holds. Reads only; never closes
 * or otherwise touches the socket it finds. */
#ifndef OS_SOCKDIAG_H
#define OS_SOCKDIAG_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "error.h"

struct sockdiag;

/* Opens the netlink socket in the network namespace ns_fd refers to (a
 * netlink socket answers for the namespace it was created in, for its whole
 * life): from a short-lived helper thread that joins it, so the caller's
 * own namespace never changes. ns_fd < 0: the caller's namespace. */
int sockdiag_open(int ns_fd, struct sockdiag **out, os_error *err);
void sockdiag_close(struct sockdiag *d);

struct sockdiag_tcp {
	int family; /* of the socket found: AF_INET6 for a v4-mapped one */
	uint8_t state; /* TCP_ESTABLISHED, TCP_TIME_WAIT, ... */
	unsigned long inode; /* 0: no file holds it (TIME_WAIT, orphaned) */
	uid_t uid;
};

/* The TCP socket whose local address is src and peer is dst. Both are
 * AF_INET or AF_INET6 (a v4-mapped AF_INET6 pair looks in the IPv4 table,
 * and an AF_INET pair finds an AF_INET6 socket connected to the mapped
 * address: one table holds both). 1 and *out filled: found; 0: no such
 * socket; -1: the kernel could not be asked. */
int sockdiag_tcp_find(struct sockdiag *d, const struct sockaddr *src, const struct sockaddr *dst,
		      struct sockdiag_tcp *out, os_error *err);

#endif
