/* nflog.h - the bypass monitor's input: an NFLOG group read over
 * NETLINK_NETFILTER with libmnl, and a bounded parser for the logged packet
 * headers (which the workload crafted). Never trusts a length it did not check. */
#ifndef OS_SUPERVISOR_NFLOG_H
#define OS_SUPERVISOR_NFLOG_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Bytes of each packet copied to us: enough for IPv6 + TCP headers. */
#define NFLOG_COPY_RANGE 128
#define NFLOG_PREFIX_MAX 128

struct nflog_packet {
	char prefix[NFLOG_PREFIX_MAX];
	bool has_uid;
	uint32_t uid;
	int family; /* AF_INET or AF_INET6; 0 when the payload was unreadable */
	uint8_t proto; /* IPPROTO_* */
	uint8_t src_raw[16], dst_raw[16]; /* network order; IPv4 uses the first 4 */
	char src[INET6_ADDRSTRLEN];
	char dst[INET6_ADDRSTRLEN];
	bool has_ports;
	uint16_t sport, dport;
};

/* Parses a network-layer packet (IPv4 or IPv6 header, then TCP/UDP ports).
 * Fills family/proto/src/dst and ports when present; returns -1 naming
 * the first malformed field. */
int nflog_parse_payload(const uint8_t *p, size_t len, struct nflog_packet *out, os_error *err);

/* Short lowercase name of an IP protocol ("tcp", "udp", "icmp", ...) or NULL. */
const char *nflog_proto_name(uint8_t proto);

struct nflog;
typedef void (*nflog_cb)(const struct nflog_packet *pkt, void *data);

/* Opens a non-blocking NFLOG listener for group inside namespace ns_fd. */
int nflog_open(int ns_fd, uint16_t group, struct nflog **out, os_error *err);
int nflog_fd(const struct nflog *l);
/* Drains every queued message, calling cb per packet. *lost is incremented
 * when the kernel dropped messages because we were slow (ENOBUFS). */
int nflog_drain(struct nflog *l, nflog_cb cb, void *data, unsigned *lost, os_error *err);
void nflog_close(struct nflog *l);

#endif
