/* sockowner.c - socket 4-tuple -> inode (sock_diag dump inside the sandbox
 * namespace) -> owning pid (/proc/PID/fd of processes in that namespace) ->
 * /proc/PID/exe. Reads only; never signals or otherwise touches the process. */
#include "sockowner.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "netns.h"
#include "parse.h"
#include "procfs.h"

#define SOCKOWNER_RECV_BUF 32768

struct sockowner {
	struct mnl_socket *mnl;
	ino_t netns_ino;
	uint32_t seq;
	char buf[SOCKOWNER_RECV_BUF] __attribute__((aligned(8)));
};

int sockowner_open(int ns_fd, struct sockowner **out, os_error *err)
{
	struct sockowner *o = calloc(1, sizeof(*o));
	if (!o)
		return os_error_set(err, ENOMEM, "sockowner: out of memory");
	int saved = -1;
	if (netns_inode(ns_fd, &o->netns_ino, err) < 0 || netns_enter(ns_fd, &saved, err) < 0) {
		free(o);
		return -1;
	}
	o->mnl = mnl_socket_open2(NETLINK_SOCK_DIAG, SOCK_CLOEXEC);
	int rc = o->mnl ? mnl_socket_bind(o->mnl, 0, MNL_SOCKET_AUTOPID) : -1;
	if (rc < 0)
		os_error_errno(err, "opening NETLINK_SOCK_DIAG socket");
	netns_leave(saved);
	if (rc < 0) {
		sockowner_close(o);
		return -1;
	}
	*out = o;
	return 0;
}

void sockowner_close(struct sockowner *o)
{
	if (!o)
		return;
	if (o->mnl)
		mnl_socket_close(o->mnl);
	free(o);
}

struct diag_match {
	const struct nflog_packet *pkt;
	size_t alen;
	uint32_t inode;
};

static bool addr_is_any(const void *a, size_t len)
{
	static const uint8_t zero[16];
	return memcmp(a, zero, len) == 0;
}

static int diag_cb(const struct nlmsghdr *nlh, void *data)
{
	struct diag_match *m = data;
	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY)
		return MNL_CB_OK;
	const struct inet_diag_msg *msg = mnl_nlmsg_get_payload(nlh);
	const struct nflog_packet *p = m->pkt;
	if (ntohs(msg->id.idiag_sport) != p->sport || msg->idiag_inode == 0)
		return MNL_CB_OK;
	/* Unconnected UDP sockets have no peer; the local address may be any. */
	bool peer_ok = (ntohs(msg->id.idiag_dport) == p->dport &&
			memcmp(msg->id.idiag_dst, p->dst_raw, m->alen) == 0) ||
		       (msg->id.idiag_dport == 0 && addr_is_any(msg->id.idiag_dst, m->alen));
	bool local_ok = memcmp(msg->id.idiag_src, p->src_raw, m->alen) == 0 ||
			addr_is_any(msg->id.idiag_src, m->alen);
	if (peer_ok && local_ok && m->inode == 0)
		m->inode = msg->idiag_inode;
	return MNL_CB_OK;
}

static int find_inode(struct sockowner *o, const struct nflog_packet *pkt, uint32_t *inode,
		      os_error *err)
{
	char buf[256] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = ++o->seq;
	struct inet_diag_req_v2 *req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = (uint8_t)pkt->family;
	req->sdiag_protocol = pkt->proto;
	req->idiag_states = ~0u;
	if (mnl_socket_sendto(o->mnl, nlh, nlh->nlmsg_len) < 0)
		return os_error_errno(err, "sock_diag dump: send");
	struct diag_match m = { .pkt = pkt, .alen = pkt->family == AF_INET ? 4 : 16 };
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(o->mnl, o->buf, sizeof(o->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return os_error_errno(err, "sock_diag dump: receive");
		int rc = mnl_cb_run(o->buf, (size_t)n, o->seq, mnl_socket_get_portid(o->mnl),
				    diag_cb, &m);
		if (rc == MNL_CB_ERROR)
			return os_error_errno(err, "sock_diag dump");
		if (rc == MNL_CB_STOP)
			break;
	}
	*inode = m.inode;
	return 0;
}

int sockowner_lookup(struct sockowner *o, const struct nflog_packet *pkt, pid_t *pid, char *binary,
		     size_t cap, os_error *err)
{
	if ((pkt->family != AF_INET && pkt->family != AF_INET6) || !pkt->has_ports)
		return 0;
	uint32_t inode = 0;
	if (find_inode(o, pkt, &inode, err) < 0)
		return -1;
	if (inode == 0)
		return 0;
	/* The first holder in /proc's order: a bypass record names one sender. */
	_cleanup_procfs_owners_ struct procfs_owners owners = { 0 };
	if (procfs_socket_owners(o->netns_ino, inode, 0, &owners, NULL) < 0 || owners.n == 0)
		return 0;
	*pid = owners.pid[0];
	char path[64];
	if (str_format(path, sizeof(path), err, "/proc/%d/exe", (int)*pid) < 0)
		return -1;
	ssize_t n = readlink(path, binary, cap - 1);
	if (n < 0)
		n = 0; /* exited between the two looks: pid known, binary not */
	binary[n] = '\0';
	return 1;
}
