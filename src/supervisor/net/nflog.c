/* nflog.c - NFLOG over libmnl plus a strict IPv4/IPv6 header parser.
 * The payload bytes come from the sandboxed workload: every offset is checked
 * against the copied length before use; a bad packet is reported, not guessed. */
#include "nflog.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "fdutil.h"
#include "netns.h"

#define NFLOG_RECV_BUF 65536

struct nflog {
	struct mnl_socket *mnl;
	uint16_t group;
	char buf[NFLOG_RECV_BUF]
		__attribute__((aligned(8))); /* netlink headers need 4-byte alignment */
};

const char *nflog_proto_name(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	case IPPROTO_SCTP:
		return "sctp";
	default:
		return NULL;
	}
}

static int parse_ports(const uint8_t *l4, size_t len, struct nflog_packet *out, os_error *err)
{
	if (out->proto != IPPROTO_TCP && out->proto != IPPROTO_UDP && out->proto != IPPROTO_SCTP)
		return 0;
	if (len < 4)
		return os_error_set(err, EBADMSG, "nflog packet: %s header truncated (%zu bytes)",
				    nflog_proto_name(out->proto), len);
	out->sport = (uint16_t)(l4[0] << 8 | l4[1]);
	out->dport = (uint16_t)(l4[2] << 8 | l4[3]);
	out->has_ports = true;
	return 0;
}

static int parse_ipv4(const uint8_t *p, size_t len, struct nflog_packet *out, os_error *err)
{
	if (len < 20)
		return os_error_set(err, EBADMSG, "nflog packet: IPv4 header truncated (%zu bytes)",
				    len);
	size_t ihl = (size_t)(p[0] & 0x0f) * 4;
	if (ihl < 20 || ihl > len)
		return os_error_set(err, EBADMSG, "nflog packet: IPv4 header length %zu invalid",
				    ihl);
	out->family = AF_INET;
	out->proto = p[9];
	memcpy(out->src_raw, p + 12, 4);
	memcpy(out->dst_raw, p + 16, 4);
	inet_ntop(AF_INET, p + 12, out->src, sizeof(out->src));
	inet_ntop(AF_INET, p + 16, out->dst, sizeof(out->dst));
	/* A non-first fragment carries no ports. */
	if (((p[6] & 0x1f) << 8 | p[7]) != 0)
		return 0;
	return parse_ports(p + ihl, len - ihl, out, err);
}

static int parse_ipv6(const uint8_t *p, size_t len, struct nflog_packet *out, os_error *err)
{
	if (len < 40)
		return os_error_set(err, EBADMSG, "nflog packet: IPv6 header truncated (%zu bytes)",
				    len);
	out->family = AF_INET6;
	/* Extension headers are not walked: the next header is reported as is. */
	out->proto = p[6];
	memcpy(out->src_raw, p + 8, 16);
	memcpy(out->dst_raw, p + 24, 16);
	inet_ntop(AF_INET6, p + 8, out->src, sizeof(out->src));
	inet_ntop(AF_INET6, p + 24, out->dst, sizeof(out->dst));
	return parse_ports(p + 40, len - 40, out, err);
}

int nflog_parse_payload(const uint8_t *p, size_t len, struct nflog_packet *out, os_error *err)
{
	if (len < 1)
		return os_error_set(err, EBADMSG, "nflog packet: empty payload");
	switch (p[0] >> 4) {
	case 4:
		return parse_ipv4(p, len, out, err);
	case 6:
		return parse_ipv6(p, len, out, err);
	default:
		return os_error_set(err, EBADMSG, "nflog packet: IP version %u unknown", p[0] >> 4);
	}
}

/* Sends one NFULNL_MSG_CONFIG request carrying a single attribute. */
static int nflog_config(struct nflog *l, uint16_t type, const void *val, size_t len,
			const char *what, os_error *err)
{
	char buf[256] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = 1;
	struct nfgenmsg *nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons(l->group);
	mnl_attr_put(nlh, type, len, val);
	if (mnl_socket_sendto(l->mnl, nlh, nlh->nlmsg_len) < 0)
		return os_error_errno(err, "nflog %s: send", what);
	ssize_t n = mnl_socket_recvfrom(l->mnl, l->buf, sizeof(l->buf));
	if (n < 0)
		return os_error_errno(err, "nflog %s: receive", what);
	if (mnl_cb_run(l->buf, (size_t)n, 1, mnl_socket_get_portid(l->mnl), NULL, NULL) < 0)
		return os_error_errno(err, "nflog %s", what);
	return 0;
}

static int nflog_setup(struct nflog *l, os_error *err)
{
	l->mnl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!l->mnl)
		return os_error_errno(err, "opening NETLINK_NETFILTER socket");
	if (mnl_socket_bind(l->mnl, 0, MNL_SOCKET_AUTOPID) < 0)
		return os_error_errno(err, "binding NETLINK_NETFILTER socket");
	struct nfulnl_msg_config_cmd cmd = { .command = NFULNL_CFG_CMD_BIND };
	if (nflog_config(l, NFULA_CFG_CMD, &cmd, sizeof(cmd), "binding group", err) < 0)
		return -1;
	struct nfulnl_msg_config_mode mode = { .copy_range = htonl(NFLOG_COPY_RANGE),
					       .copy_mode = NFULNL_COPY_PACKET };
	if (nflog_config(l, NFULA_CFG_MODE, &mode, sizeof(mode), "setting copy mode", err) < 0)
		return -1;
	/* Deliver each packet at once (the default batches up to 100 for 1 s). */
	uint32_t qthresh = htonl(1);
	return nflog_config(l, NFULA_CFG_QTHRESH, &qthresh, sizeof(qthresh),
			    "setting queue threshold", err);
}

int nflog_open(int ns_fd, uint16_t group, struct nflog **out, os_error *err)
{
	struct nflog *l = calloc(1, sizeof(*l));
	if (!l)
		return os_error_set(err, ENOMEM, "nflog: out of memory");
	l->group = group;
	int saved = -1;
	if (netns_enter(ns_fd, &saved, err) < 0) {
		free(l);
		return -1;
	}
	int rc = nflog_setup(l, err);
	netns_leave(saved);
	if (rc == 0 && fd_set_nonblock(mnl_socket_get_fd(l->mnl), true, err) < 0)
		rc = -1;
	if (rc < 0) {
		nflog_close(l);
		return os_error_prefix(err, "nflog group %u", group);
	}
	*out = l;
	return 0;
}

int nflog_fd(const struct nflog *l)
{
	return mnl_socket_get_fd(l->mnl);
}

void nflog_close(struct nflog *l)
{
	if (!l)
		return;
	if (l->mnl)
		mnl_socket_close(l->mnl);
	free(l);
}

struct drain_ctx {
	nflog_cb cb;
	void *data;
};

static void copy_prefix(const struct nlattr *attr, struct nflog_packet *pkt)
{
	size_t n = mnl_attr_get_payload_len(attr);
	const char *s = mnl_attr_get_payload(attr);
	if (n >= sizeof(pkt->prefix))
		n = sizeof(pkt->prefix) - 1;
	memcpy(pkt->prefix, s, n);
	pkt->prefix[n] = '\0'; /* an embedded NUL simply ends it earlier */
}

static int packet_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct drain_ctx *d = data;
	if (nlh->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET))
		return MNL_CB_OK;
	struct nflog_packet pkt = { 0 };
	const struct nlattr *attr;
	mnl_attr_for_each(attr, nlh, sizeof(struct nfgenmsg))
	{
		switch (mnl_attr_get_type(attr)) {
		case NFULA_PREFIX:
			copy_prefix(attr, &pkt);
			break;
		case NFULA_UID:
			if (mnl_attr_get_payload_len(attr) == 4) {
				pkt.uid = ntohl(mnl_attr_get_u32(attr));
				pkt.has_uid = true;
			}
			break;
		case NFULA_PAYLOAD: {
			os_error ignored = { 0 };
			/* An unparsable packet still yields a record, with fields unknown. */
			nflog_parse_payload(mnl_attr_get_payload(attr),
					    mnl_attr_get_payload_len(attr), &pkt, &ignored);
			break;
		}
		default:
			break;
		}
	}
	d->cb(&pkt, d->data);
	return MNL_CB_OK;
}

int nflog_drain(struct nflog *l, nflog_cb cb, void *data, unsigned *lost, os_error *err)
{
	struct drain_ctx d = { .cb = cb, .data = data };
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(l->mnl, l->buf, sizeof(l->buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			if (errno == ENOBUFS) {
				(*lost)++; /* overrun: the kernel dropped some; keep reading */
				continue;
			}
			return os_error_errno(err, "nflog group %u: receive", l->group);
		}
		if (mnl_cb_run(l->buf, (size_t)n, 0, 0, packet_cb, &d) < 0)
			return os_error_errno(err, "nflog group %u: malformed message", l->group);
	}
}
