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

/* Applies ruleset as one transaction inside the namespace ns_fd. */
int nft_apply(int ns_fd, const json_t *ruleset, os_error *err);

#endif
