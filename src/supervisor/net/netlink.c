/* netlink.c - rtnetlink requests built attribute by attribute with libmnl.
 * Every request asks for an ACK so each step reports its own kernel error;
 * nothing here forks a helper or parses text. */
#include "netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "cleanup.h"

/* Large enough for a whole route dump batch from the kernel. */
#define NL_RECV_BUF 32768
#define NL_SEND_BUF 1024

struct nl_sock {
	struct mnl_socket *mnl;
	uint32_t portid;
	uint32_t seq;
	char buf[NL_RECV_BUF]
		__attribute__((aligned(8))); /* netlink headers need 4-byte alignment */
};

int nl_open(struct nl_sock **out, os_error *err)
{
	struct nl_sock *s = calloc(1, sizeof(*s));
	if (!s)
		return os_error_set(err, ENOMEM, "netlink: out of memory");
	s->mnl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!s->mnl) {
		free(s);
		return os_error_errno(err, "opening NETLINK_ROUTE socket");
	}
	if (mnl_socket_bind(s->mnl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int saved = errno;
		mnl_socket_close(s->mnl);
		free(s);
		errno = saved;
		return os_error_errno(err, "binding NETLINK_ROUTE socket");
	}
	s->portid = mnl_socket_get_portid(s->mnl);
	s->seq = (uint32_t)time(NULL);
	*out = s;
	return 0;
}

void nl_close(struct nl_sock *s)
{
	if (!s)
		return;
	mnl_socket_close(s->mnl);
	free(s);
}

/* Sends one request and runs cb on every reply until the ACK or NLMSG_DONE. */
static int nl_transact(struct nl_sock *s, struct nlmsghdr *nlh, mnl_cb_t cb, void *data,
		       const char *what, os_error *err)
{
	nlh->nlmsg_seq = ++s->seq;
	if (mnl_socket_sendto(s->mnl, nlh, nlh->nlmsg_len) < 0)
		return os_error_errno(err, "netlink %s: send", what);
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(s->mnl, s->buf, sizeof(s->buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return os_error_errno(err, "netlink %s: receive", what);
		}
		int rc = mnl_cb_run(s->buf, (size_t)n, nlh->nlmsg_seq, s->portid, cb, data);
		if (rc == MNL_CB_ERROR)
			return os_error_errno(err, "netlink %s", what);
		if (rc == MNL_CB_STOP)
			return 0;
	}
}

static struct nlmsghdr *nl_header(char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	return nlh;
}

int nl_veth_create(struct nl_sock *s, const char *host_name, const char *peer_name,
		   int peer_netns_fd, os_error *err)
{
	char buf[NL_SEND_BUF] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = nl_header(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, host_name);
	struct nlattr *linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	struct nlattr *info_data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	/* The peer nest starts with a bare ifinfomsg, then its own attributes. */
	struct ifinfomsg *pifm = (struct ifinfomsg *)mnl_nlmsg_get_payload_tail(nlh);
	memset(pifm, 0, sizeof(*pifm));
	pifm->ifi_family = AF_UNSPEC;
	nlh->nlmsg_len += MNL_ALIGN(sizeof(*pifm));
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer_name);
	mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)peer_netns_fd);
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, info_data);
	mnl_attr_nest_end(nlh, linkinfo);
	return nl_transact(s, nlh, NULL, NULL, "creating veth pair", err);
}

int nl_link_delete(struct nl_sock *s, const char *name, bool *deleted, os_error *err)
{
	char buf[NL_SEND_BUF] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = nl_header(buf, RTM_DELLINK, 0);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	*deleted = false;
	os_error local = { 0 };
	if (nl_transact(s, nlh, NULL, NULL, "deleting link", &local) < 0) {
		if (local.code == ENODEV)
			return 0; /* already gone: teardown is idempotent */
		return os_error_set(err, local.code, "%s: %s", name, local.msg);
	}
	*deleted = true;
	return 0;
}

static int link_index_cb(const struct nlmsghdr *nlh, void *data)
{
	if (nlh->nlmsg_type == RTM_NEWLINK) {
		const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
		*(uint32_t *)data = (uint32_t)ifm->ifi_index;
	}
	return MNL_CB_OK;
}

int nl_link_index(struct nl_sock *s, const char *name, uint32_t *index, os_error *err)
{
	char buf[NL_SEND_BUF] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = nl_header(buf, RTM_GETLINK, 0);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	uint32_t found = 0;
	if (nl_transact(s, nlh, link_index_cb, &found, "looking up link", err) < 0)
		return os_error_prefix(err, "%s", name);
	if (found == 0)
		return os_error_set(err, ENODEV, "link %s: no index in reply", name);
	*index = found;
	return 0;
}

struct link_state {
	bool oper_up;
	bool qdisc_noop;
};

static int link_state_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_state *st = data;
	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	const struct nlattr *attr;
	mnl_attr_for_each(attr, nlh, sizeof(struct ifinfomsg))
	{
		if (mnl_attr_get_type(attr) == IFLA_OPERSTATE &&
		    mnl_attr_get_payload_len(attr) == 1)
			st->oper_up = mnl_attr_get_u8(attr) == IF_OPER_UP;
		if (mnl_attr_get_type(attr) == IFLA_QDISC)
			st->qdisc_noop = strncmp(mnl_attr_get_payload(attr), "noop",
						 mnl_attr_get_payload_len(attr)) == 0;
	}
	return MNL_CB_OK;
}

int nl_link_wait_ready(struct nl_sock *s, uint32_t index, int timeout_ms, os_error *err)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		char buf[NL_SEND_BUF] __attribute__((aligned(8)));
		struct nlmsghdr *nlh = nl_header(buf, RTM_GETLINK, 0);
		struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
		ifm->ifi_family = AF_UNSPEC;
		ifm->ifi_index = (int)index;
		struct link_state st = { .qdisc_noop = true };
		if (nl_transact(s, nlh, link_state_cb, &st, "reading link state", err) < 0)
			return -1;
		if (st.oper_up && !st.qdisc_noop)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - start.tv_sec) * 1000 +
			  (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms > timeout_ms)
			return os_error_set(err, ETIMEDOUT, "link %u not up after %d ms", index,
					    timeout_ms);
		nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
	}
}

int nl_link_up(struct nl_sock *s, uint32_t index, os_error *err)
{
	char buf[NL_SEND_BUF] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = nl_header(buf, RTM_NEWLINK, 0);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = (int)index;
	ifm->ifi_flags = IFF_UP;
	ifm->ifi_change = IFF_UP;
	return nl_transact(s, nlh, NULL, NULL, "setting link up", err);
}

int nl_addr_add4(struct nl_sock *s, uint32_t index, struct in_addr addr, uint8_t prefix_len,
		 os_error *err)
{
	char buf[NL_SEND_BUF] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = nl_header(buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = prefix_len;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = index;
	mnl_attr_put(nlh, IFA_LOCAL, sizeof(addr), &addr);
	mnl_attr_put(nlh, IFA_ADDRESS, sizeof(addr), &addr);
	return nl_transact(s, nlh, NULL, NULL, "adding IPv4 address", err);
}

int nl_route_add_default4(struct nl_sock *s, uint32_t index, struct in_addr gateway, os_error *err)
{
	char buf[NL_SEND_BUF] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = nl_header(buf, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = 0;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_UNIVERSE;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_GATEWAY, sizeof(gateway), &gateway);
	mnl_attr_put_u32(nlh, RTA_OIF, index);
	return nl_transact(s, nlh, NULL, NULL, "adding default route", err);
}

bool ipv4_prefixes_overlap(uint32_t a, uint8_t alen, uint32_t b, uint8_t blen)
{
	uint8_t len = alen < blen ? alen : blen;
	if (len > 32)
		len = 32;
	uint32_t mask = len == 0 ? 0 : ~(uint32_t)0 << (32 - len);
	return (a & mask) == (b & mask);
}

struct overlap_probe {
	uint32_t net; /* host byte order */
	uint8_t len;
	bool hit;
};

static int route_overlap_cb(const struct nlmsghdr *nlh, void *data)
{
	struct overlap_probe *p = data;
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	/* The default route overlaps everything and is what we route around. */
	if (nlh->nlmsg_type != RTM_NEWROUTE || rtm->rtm_family != AF_INET || rtm->rtm_dst_len == 0)
		return MNL_CB_OK;
	const struct nlattr *attr;
	mnl_attr_for_each(attr, nlh, sizeof(*rtm))
	{
		if (mnl_attr_get_type(attr) != RTA_DST || mnl_attr_get_payload_len(attr) != 4)
			continue;
		uint32_t dst;
		memcpy(&dst, mnl_attr_get_payload(attr), 4);
		if (ipv4_prefixes_overlap(ntohl(dst), rtm->rtm_dst_len, p->net, p->len))
			p->hit = true;
	}
	return MNL_CB_OK;
}

static int addr_overlap_cb(const struct nlmsghdr *nlh, void *data)
{
	struct overlap_probe *p = data;
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	if (nlh->nlmsg_type != RTM_NEWADDR || ifa->ifa_family != AF_INET)
		return MNL_CB_OK;
	const struct nlattr *attr;
	mnl_attr_for_each(attr, nlh, sizeof(*ifa))
	{
		int type = mnl_attr_get_type(attr);
		if ((type != IFA_LOCAL && type != IFA_ADDRESS) ||
		    mnl_attr_get_payload_len(attr) != 4)
			continue;
		uint32_t a;
		memcpy(&a, mnl_attr_get_payload(attr), 4);
		if (ipv4_prefixes_overlap(ntohl(a), ifa->ifa_prefixlen, p->net, p->len))
			p->hit = true;
	}
	return MNL_CB_OK;
}

int nl_prefix4_in_use(struct nl_sock *s, struct in_addr net, uint8_t prefix_len, bool *in_use,
		      os_error *err)
{
	struct overlap_probe probe = { .net = ntohl(net.s_addr), .len = prefix_len };
	char buf[NL_SEND_BUF] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET; /* table 0 = every table */
	if (nl_transact(s, nlh, route_overlap_cb, &probe, "dumping IPv4 routes", err) < 0)
		return -1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	if (nl_transact(s, nlh, addr_overlap_cb, &probe, "dumping IPv4 addresses", err) < 0)
		return -1;
	*in_use = probe.hit;
	return 0;
}
