/* split_net.c - the split backend's local fence, standing in for what a
 * Kubernetes NetworkPolicy gives a workload Pod: the agent's own network
 * namespace, a veth to the supervisor, and an nftables fence in that
 * namespace letting it reach only the supervisor's proxy and control ports.
 * The fence is committed before the agent side has an address or a route;
 * the namespace is named only so the platform can start the launcher in it.
 * Never forks `ip` or `nft`; never opens a path the fence does not guard. */
#include "split.h"
#include "veth_lease.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "log.h"
#include "netlink.h"
#include "netns.h"
#include "nft.h"
#include "parse.h"
#include "procfs.h"
#include "sockdiag.h"

/* Subnets come from veth_lease.c: one lock and one 10.200.N.0/24 space
 * shared with the inpod backend. */
#define PEER_IFNAME "eth0"
#define NFLOG_GROUP 8

/* /run/netns/openshell-split-<id>, as `ip netns` names namespaces. */
static int name_netns(struct split *s, os_error *err)
{
	char path[PATH_MAX], src[64];
	if (mkdir(SPLIT_NETNS_DIR, 0755) < 0 && errno != EEXIST)
		return os_error_errno(err, "creating %s", SPLIT_NETNS_DIR);
	if (str_format(path, sizeof(path), err, SPLIT_NETNS_DIR "/openshell-split-%s", s->id) < 0 ||
	    str_format(src, sizeof(src), err, "/proc/self/fd/%d", s->netns_fd) < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0)
		return os_error_errno(err, "%s (a leftover? `ip netns del` removes it)", path);
	close(fd);
	if (mount(src, path, "none", MS_BIND, NULL) < 0) {
		os_error_errno(err, "bind-mounting the namespace on %s", path);
		unlink(path);
		return -1;
	}
	return str_copy(s->netns_path, sizeof(s->netns_path), path, err);
}

void split_net_unname(struct split *s)
{
	if (!s->netns_path[0])
		return;
	if (umount2(s->netns_path, MNT_DETACH) < 0)
		log_warn("split: unmounting %s: %s", s->netns_path, strerror(errno));
	else
		unlink(s->netns_path);
	s->netns_path[0] = '\0';
}

static int alloc_veth(struct split *s, os_error *err)
{
	struct veth_lease_opts o = { .if_prefix = "osx",
				     .peer_ifname = PEER_IFNAME,
				     .prefix_len = 24 };
	struct veth_lease l;
	int rc = veth_lease_take(s->nl_host, s->netns_fd, &o, &l, err);
	/* Even on failure: teardown deletes a veth that was created. */
	memcpy(s->host_if, l.host_if, sizeof s->host_if);
	s->veth_created = l.created;
	s->advertise_addr = l.host_addr;
	s->agent_addr = l.agent_addr;
	s->listen_addr = s->advertise_addr;
	return rc;
}

/* The rule letting the agent side reach the control port, in the same
 * structural form nft.c uses for the proxy rule. */
static json_t *control_rule(const struct split *s)
{
	char addr[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &s->advertise_addr, addr, sizeof(addr));
	return json_pack("{s:{s:{s:s, s:s, s:s, s:[{s:{s:s, s:{s:{s:s, s:s}}, s:s}},"
			 " {s:{s:s, s:{s:{s:s, s:s}}, s:i}}, {s:n}]}}}",
			 "add", "rule", "family", "inet", "table", NFT_FENCE_TABLE, "chain",
			 "output", "expr", "match", "op", "==", "left", "payload", "protocol", "ip",
			 "field", "daddr", "right", addr, "match", "op", "==", "left", "payload",
			 "protocol", "tcp", "field", "dport", "right", (json_int_t)s->control_port,
			 "accept");
}

/* Inserts the control rule before the output chain's first logging rule
 * (after the proxy accept), so it is evaluated before any reject. */
static int add_control_rule(json_t *cmds, const struct split *s, os_error *err)
{
	size_t i;
	json_t *c;
	json_array_foreach (cmds, i, c) {
		json_t *r = json_object_get(json_object_get(c, "add"), "rule");
		json_t *first = json_array_get(json_object_get(r, "expr"), 0);
		const char *chain = json_string_value(json_object_get(r, "chain"));
		if (chain && strcmp(chain, "output") == 0 && json_object_get(first, "limit")) {
			json_t *rule = control_rule(s);
			if (!rule || json_array_insert_new(cmds, i, rule) < 0)
				return os_error_set(err, ENOMEM,
						    "fence: building the control rule");
			return 0;
		}
	}
	return os_error_set(err, EINVAL, "fence: no logging rule found in the output chain");
}

static int apply_fence(struct split *s, os_error *err)
{
	char prefix[NFT_LOG_PREFIX_MAX + 1];
	if (str_format(prefix, sizeof(prefix), err, "osx:%s ", s->id) < 0)
		return -1;
	struct nft_fence_spec spec = {
		.proxy_addr = s->advertise_addr,
		.proxy_port = s->proxy_port,
		.log_prefix = prefix,
		.nflog_group = NFLOG_GROUP,
		.log_rate_per_sec = 20,
		.log_burst = 40,
	};
	_cleanup_json_ json_t *rules = nft_fence_ruleset(&spec, err);
	if (!rules || add_control_rule(json_object_get(rules, "nftables"), s, err) < 0)
		return -1;
	return nft_apply(s->netns_fd, rules, err);
}

/* Agent side: lo up, address, default route via the supervisor side. */
static int inner_net(struct split *s, os_error *err)
{
	struct veth_lease l = { .created = s->veth_created,
				.host_addr = s->advertise_addr,
				.agent_addr = s->agent_addr };
	memcpy(l.host_if, s->host_if, sizeof l.host_if);
	return veth_lease_inner_net(s->nl_host, s->netns_fd, PEER_IFNAME, &l, s->advertise_addr,
				    err);
}

int split_net_setup(struct split *s, os_error *err)
{
	if (netns_create(&s->netns_fd, err) < 0 ||
	    veth_sysctl_in_netns(s->netns_fd, "/proc/sys/net/ipv6/conf/default/disable_ipv6", "1",
				 err) < 0)
		return os_error_prefix(err, "step netns");
	if (nl_open(&s->nl_host, err) < 0)
		return os_error_prefix(err, "step netlink");
	if (alloc_veth(s, err) < 0)
		return os_error_prefix(err, "step veth");
	/* The fence goes in while the agent side has no address and no route. */
	if (apply_fence(s, err) < 0)
		return os_error_prefix(err, "step nftables");
	if (inner_net(s, err) < 0)
		return os_error_prefix(err, "step agent network");
	/* Named last: nothing can be started in it before the fence holds. */
	if (name_netns(s, err) < 0)
		return os_error_prefix(err, "step netns name");
	return 0;
}

void split_net_teardown(struct split *s)
{
	split_net_unname(s);
	if (s->veth_created && s->nl_host) {
		bool deleted;
		os_error err = { 0 };
		/* Deleting our end takes the agent's with it: no link outlives us. */
		if (nl_link_delete(s->nl_host, s->host_if, &deleted, &err) < 0)
			log_warn("split teardown: %s", err.msg);
		s->veth_created = false;
	}
	nl_close(s->nl_host);
	s->nl_host = NULL;
	if (s->netns_fd >= 0)
		close(s->netns_fd);
	s->netns_fd = -1;
}

/* Inode of the launcher's end of our control connection: an exact lookup
 * in the agent's namespace (its end is local=theirs, peer=ours). */
static int launcher_socket_inode(const struct split *s, unsigned long *inode, os_error *err)
{
	struct sockaddr_in ours, theirs;
	socklen_t l1 = sizeof(ours), l2 = sizeof(theirs);
	if (getsockname(s->conn_fd, (struct sockaddr *)&ours, &l1) < 0 ||
	    getpeername(s->conn_fd, (struct sockaddr *)&theirs, &l2) < 0)
		return os_error_errno(err, "control connection addresses");
	struct sockdiag *d = NULL;
	struct sockdiag_tcp sk;
	if (sockdiag_open(s->netns_fd, &d, err) < 0)
		return -1;
	int rc = sockdiag_tcp_find(d, (struct sockaddr *)&theirs, (struct sockaddr *)&ours, &sk,
				   err);
	sockdiag_close(d);
	if (rc < 0)
		return -1;
	if (rc == 0 || sk.inode == 0 || sk.state != TCP_ESTABLISHED)
		return os_error_set(err, ENOENT, "the launcher's socket is not in its namespace");
	*inode = sk.inode;
	return 0;
}

int split_net_launcher_pid(const struct split *s, pid_t *pid, os_error *err)
{
	unsigned long inode = 0;
	ino_t ns_ino;
	if (netns_inode(s->netns_fd, &ns_ino, err) < 0 || launcher_socket_inode(s, &inode, err) < 0)
		return -1;
	/* The first holder in /proc's order, as before the scan was shared. */
	_cleanup_procfs_owners_ struct procfs_owners owners = { 0 };
	if (procfs_socket_owners(ns_ino, inode, 0, &owners, err) < 0)
		return os_error_prefix(err, "the launcher's socket %lu", inode);
	if (owners.n == 0)
		return os_error_set(err, ESRCH,
				    "no process in the agent namespace holds socket %lu", inode);
	*pid = owners.pid[0];
	return 0;
}
