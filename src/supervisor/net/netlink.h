/* netlink.h - rtnetlink through libmnl: veth pairs, IPv4 addresses, routes,
 * link state, and a route/address dump for subnet collision checks.
 * Messages are built attribute by attribute; never forks `ip`. */
#ifndef OS_SUPERVISOR_NETLINK_H
#define OS_SUPERVISOR_NETLINK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* One NETLINK_ROUTE socket, bound in the namespace of the thread that opened it. */
struct nl_sock;

int nl_open(struct nl_sock **out, os_error *err);
void nl_close(struct nl_sock *s);

/* Creates a veth pair: host_name in the socket's namespace, peer_name created
 * directly inside the namespace peer_netns_fd. Fails with EEXIST on a name clash. */
int nl_veth_create(struct nl_sock *s, const char *host_name, const char *peer_name,
		   int peer_netns_fd, os_error *err);
/* Deletes a link by name; a missing link is not an error (*gone = false). */
int nl_link_delete(struct nl_sock *s, const char *name, bool *deleted, os_error *err);
int nl_link_index(struct nl_sock *s, const char *name, uint32_t *index, os_error *err);
int nl_link_up(struct nl_sock *s, uint32_t index, os_error *err);
/* Waits until the link is operationally up with its real qdisc attached
 * (until then the kernel silently drops what is sent on it). */
int nl_link_wait_ready(struct nl_sock *s, uint32_t index, int timeout_ms, os_error *err);
int nl_addr_add4(struct nl_sock *s, uint32_t index, struct in_addr addr, uint8_t prefix_len,
		 os_error *err);
/* Adds 0.0.0.0/0 via gateway on the given link (main table). */
int nl_route_add_default4(struct nl_sock *s, uint32_t index, struct in_addr gateway, os_error *err);
/* Sets *in_use when any non-default IPv4 route (any table) or any IPv4
 * address of the socket's namespace overlaps net/prefix_len. */
int nl_prefix4_in_use(struct nl_sock *s, struct in_addr net, uint8_t prefix_len, bool *in_use,
		      os_error *err);

/* Pure helper: do a/alen and b/blen (host byte order) share any address? */
bool ipv4_prefixes_overlap(uint32_t a, uint8_t alen, uint32_t b, uint8_t blen);

#endif
