/* nft.h - the in-namespace nftables fence, built as a libnftables JSON
 * document (structure, not text) and applied as one atomic transaction.
 * Never pastes caller strings into nft syntax; never forks `nft`. */
#ifndef OS_SUPERVISOR_NFT_H
#define OS_SUPERVISOR_NFT_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define NFT_FENCE_TABLE "openshell"
/* nftables log prefixes are at most 127 bytes. */
#define NFT_LOG_PREFIX_MAX 127

struct nft_fence_spec {
	struct in_addr proxy_addr; /* the only remote address allowed (supervisor side) */
	uint16_t proxy_port; /* and its only TCP port */
	const char *log_prefix; /* prefix of bypass log lines, e.g. "osb:<sandbox> " */
	uint16_t nflog_group; /* NFLOG group the bypass monitor listens on */
	uint32_t log_rate_per_sec; /* rate limit of logged bypass attempts */
	uint32_t log_burst;
};

/* Builds the fence ruleset: an inet table whose output chain accepts
 * loopback, established/related and TCP to the proxy, logs the rest
 * (rate-limited) and rejects TCP (reset) and UDP (port unreachable), then
 * drops; input accepts loopback and replies only; forward drops. */
json_t *nft_fence_ruleset(const struct nft_fence_spec *spec, os_error *err);

/* Ports whose direct connections become transparent proxy connections. */
#define NFT_REDIRECT_PORTS_MAX 16

/* The transparent path (a convenience on top of the fence, never part of
 * it): direct TCP to one of tcp_ports leaving through any interface but lo
 * is redirected to 127.0.0.1:tcp_to, and UDP to port 53 (whatever server
 * resolv.conf names, loopback ones included) to 127.0.0.1:dns_to. A port
 * of 0 leaves that redirect out. The filter chains are untouched: what is
 * redirected still passes them as loopback traffic. */
struct nft_redirect_spec {
	uint16_t tcp_ports[NFT_REDIRECT_PORTS_MAX];
	size_t n_tcp_ports;
	uint16_t tcp_to;
	uint16_t dns_to; /* UDP port 53 goes here */
	uint16_t dns_tcp_to; /* TCP port 53 (0: none) */
	/* Never redirected (the supervisor's side of the veth: there only the
	 * proxy port answers, the rest is refused as before). */
	struct in_addr keep_addr;
};

json_t *nft_redirect_ruleset(const struct nft_redirect_spec *spec, os_error *err);

/* Applies ruleset as one transaction inside the namespace ns_fd. */
int nft_apply(int ns_fd, const json_t *ruleset, os_error *err);

#endif
