/* veth_lease.h - one 10.200.N.0/24 subnet and the veth pair on it, taken
 * under a host-wide lock so every backend of every supervisor on this host
 * (inpod, split) draws from one space and never takes a subnet in use. */
#ifndef OS_SUPERVISOR_VETH_LEASE_H
#define OS_SUPERVISOR_VETH_LEASE_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "netlink.h"

#define VETH_LEASE_RUN_DIR "/run/openshell"
#define VETH_LEASE_SUBNETS 256 /* 10.200.N.0/24, N = 0..255 */

struct veth_lease_opts {
	const char *if_prefix; /* host-side name is PREFIX + N */
	const char *peer_ifname; /* name inside the namespace */
	uint8_t prefix_len; /* 24; tests inject an invalid one */
};

struct veth_lease {
	char host_if[IF_NAMESIZE];
	bool created; /* the veth exists: the caller deletes it at teardown */
	struct in_addr host_addr, agent_addr; /* .1 and .2, network byte order */
};

/* Finds a free subnet (no route or address overlaps it, veth name free),
 * creates the veth with its peer in netns_fd, puts host_addr on the host
 * side and brings it up, and turns forwarding off on it. On failure *out
 * still says whether a veth was created. */
int veth_lease_take(struct nl_sock *nl_host, int netns_fd, const struct veth_lease_opts *o,
		    struct veth_lease *out, os_error *err);

/* The agent side of a lease, from inside netns_fd: lo up, agent_addr/24 on
 * peer_ifname, default route via gw (normally host_addr), then waits until
 * both ends really pass packets (a fresh veth drops them for a moment). */
int veth_lease_inner_net(struct nl_sock *nl_host, int netns_fd, const char *peer_ifname,
			 const struct veth_lease *l, struct in_addr gw, os_error *err);

/* Writes value to a /proc/sys path inside the namespace; a missing path
 * (no IPv6 in this kernel) is not an error. */
int veth_sysctl_in_netns(int ns_fd, const char *path, const char *value, os_error *err);

#endif
