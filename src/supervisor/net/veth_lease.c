/* veth_lease.c - subnet + veth allocation shared by the isolation backends
 * (see veth_lease.h). The address added on the host side is the claim other
 * supervisors see, so it is added while the lock is held. */
#include "veth_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "netns.h"
#include "parse.h"

#define LOCK_PATH VETH_LEASE_RUN_DIR "/subnets.lock"
#define LINK_READY_MS 2000

int veth_sysctl_in_netns(int ns_fd, const char *path, const char *value, os_error *err)
{
	int saved = -1;
	if (netns_enter(ns_fd, &saved, err) < 0)
		return -1;
	int rc = 0;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		rc = fd_write_all(fd, value, strlen(value), err);
		close(fd);
	} else if (errno != ENOENT) {
		rc = os_error_errno(err, "opening %s", path);
	}
	netns_leave(saved);
	return rc;
}

static int lock_subnets(int *out, os_error *err)
{
	if (mkdir(VETH_LEASE_RUN_DIR, 0755) < 0 && errno != EEXIST)
		return os_error_errno(err, "creating %s", VETH_LEASE_RUN_DIR);
	_cleanup_close_ int fd = open(LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return os_error_errno(err, "opening %s", LOCK_PATH);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return os_error_errno(err, "locking %s", LOCK_PATH);
	*out = steal_fd(fd);
	return 0;
}

/* Defence in depth: packets arriving from the sandbox's veth are never
 * forwarded; the host side only hosts the supervisor's ports. */
static int no_forwarding(const char *ifname, os_error *err)
{
	char path[96];
	if (str_format(path, sizeof(path), err, "/proc/sys/net/ipv4/conf/%s/forwarding", ifname) <
	    0)
		return -1;
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return os_error_errno(err, "opening %s", path);
	return fd_write_all(fd, "0", 1, err);
}

/* Subnet n: 1 = taken, 0 = ours (veth created), -1 = error. */
static int try_subnet(struct nl_sock *nl, int netns_fd, const struct veth_lease_opts *o, unsigned n,
		      struct veth_lease *l, os_error *err)
{
	struct in_addr net = { htonl(0x0ac80000u | n << 8) };
	bool used = false;
	if (nl_prefix4_in_use(nl, net, 24, &used, err) < 0)
		return -1;
	if (used)
		return 1;
	if (str_format(l->host_if, sizeof(l->host_if), err, "%s%u", o->if_prefix, n) < 0)
		return -1;
	os_error local = { 0 };
	if (nl_veth_create(nl, l->host_if, o->peer_ifname, netns_fd, &local) < 0) {
		if (local.code == EEXIST)
			return 1; /* a leftover link holds the name: next subnet */
		return os_error_set(err, local.code, "veth %s: %s", l->host_if, local.msg);
	}
	l->created = true;
	l->host_addr.s_addr = htonl(0x0ac80000u | n << 8 | 1);
	l->agent_addr.s_addr = htonl(0x0ac80000u | n << 8 | 2);
	return 0;
}

int veth_lease_take(struct nl_sock *nl, int netns_fd, const struct veth_lease_opts *o,
		    struct veth_lease *l, os_error *err)
{
	memset(l, 0, sizeof *l);
	_cleanup_close_ int lock = -1;
	if (lock_subnets(&lock, err) < 0)
		return -1;
	for (unsigned n = 0; n < VETH_LEASE_SUBNETS; n++) {
		int rc = try_subnet(nl, netns_fd, o, n, l, err);
		if (rc < 0)
			return -1;
		if (rc == 1)
			continue;
		uint32_t idx = 0;
		if (nl_link_index(nl, l->host_if, &idx, err) < 0 ||
		    nl_addr_add4(nl, idx, l->host_addr, o->prefix_len, err) < 0 ||
		    nl_link_up(nl, idx, err) < 0)
			return os_error_prefix(err, "address on %s", l->host_if);
		return no_forwarding(l->host_if, err);
	}
	return os_error_set(err, EADDRINUSE, "veth: all %d subnets 10.200.N.0/24 are in use",
			    VETH_LEASE_SUBNETS);
}

int veth_lease_inner_net(struct nl_sock *nl_host, int netns_fd, const char *peer_ifname,
			 const struct veth_lease *l, struct in_addr gw, os_error *err)
{
	int saved = -1;
	if (netns_enter(netns_fd, &saved, err) < 0)
		return -1;
	struct nl_sock *nl = NULL;
	int rc = nl_open(&nl, err);
	netns_leave(saved);
	if (rc < 0)
		return -1;
	uint32_t lo = 0, eth = 0, host = 0;
	if (nl_link_index(nl, "lo", &lo, err) < 0 || nl_link_up(nl, lo, err) < 0)
		rc = os_error_prefix(err, "address: loopback");
	else if (nl_link_index(nl, peer_ifname, &eth, err) < 0 ||
		 nl_addr_add4(nl, eth, l->agent_addr, 24, err) < 0 || nl_link_up(nl, eth, err) < 0)
		rc = os_error_prefix(err, "address: agent side");
	else if (nl_route_add_default4(nl, eth, gw, err) < 0)
		rc = os_error_prefix(err, "route");
	else if (nl_link_wait_ready(nl, eth, LINK_READY_MS, err) < 0 ||
		 nl_link_index(nl_host, l->host_if, &host, err) < 0 ||
		 nl_link_wait_ready(nl_host, host, LINK_READY_MS, err) < 0)
		rc = os_error_prefix(err, "link ready");
	nl_close(nl);
	return rc;
}
