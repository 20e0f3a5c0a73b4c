/* ssrf.h - classification of destination addresses after DNS resolution and
 * CIDR allow-lists (`allowed_ips`). The always-blocked classes can never be
 * opened by any policy. */
#ifndef OS_POLICY_SSRF_H
#define OS_POLICY_SSRF_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* An address in network byte order; IPv4 stored as such (not mapped). */
struct ip_addr {
	int family; /* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	};
};

struct cidr {
	struct ip_addr addr; /* network address (host bits zero) */
	unsigned prefix; /* 0..32 or 0..128 */
};

enum addr_class {
	ADDR_PUBLIC = 0,
	ADDR_INTERNAL, /* RFC 1918, 100.64/10, 198.18/15, fc00::/7, TEST-NETs, broadcast... */
	ADDR_ALWAYS_BLOCKED /* loopback, unspecified, link-local, multicast?, metadata */
};

/* Parses a strict IPv4 dotted quad (no octal/hex/short forms) or an IPv6
 * literal. IPv4-mapped/compatible IPv6 forms are kept as IPv6 here;
 * classification unmaps them. */
int ip_addr_parse(const char *s, struct ip_addr *out, os_error *err);
int ip_addr_format(const struct ip_addr *a, char *out, size_t cap);
int ip_addr_from_sockaddr(const struct sockaddr *sa, struct ip_addr *out);

/* "10.0.5.0/24", "fd00::/8" or a bare address (/32, /128). Host bits set is
 * an error (names the CIDR). */
int cidr_parse(const char *s, struct cidr *out, os_error *err);
bool cidr_contains(const struct cidr *c, const struct ip_addr *a);
/* True when the CIDR overlaps an always-blocked range (policy load rejects it).
 * Any overlap counts, so 100.64.0.0/10 (holding 100.100.100.200) and
 * fd00::/8 (holding fd00:ec2::254) are refused too. */
bool cidr_overlaps_always_blocked(const struct cidr *c);
/* The same, also naming the range overlapped in *why (for the load error). */
bool cidr_overlaps_always_blocked_why(const struct cidr *c, const char **why);

/* True when every address of the CIDR is always blocked (the entry could
 * never open anything: 127.0.0.0/8, 169.254.169.254, fe80::/10, ::1, ...);
 * *why names the range. */
bool cidr_within_always_blocked(const struct cidr *c, const char **why);

/* Classifies after unmapping IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible forms. */
enum addr_class ip_addr_classify(const struct ip_addr *a, const char **why);

/* Ports blocked even inside allowed_ips: 2379, 2380, 6443, 10250, 10255. */
bool port_is_control_plane(uint16_t port);

enum ssrf_verdict { SSRF_ALLOW = 0, SSRF_DENY_ALWAYS, SSRF_DENY_INTERNAL, SSRF_DENY_PORT };

/* Full check of one resolved destination against an endpoint's allowed_ips. */
enum ssrf_verdict ssrf_check(const struct ip_addr *a, uint16_t port, const struct cidr *allowed,
			     size_t n_allowed, const char **why);

/* True for hostnames that are metadata endpoints whatever they resolve to
 * (metadata.google.internal ...). host must be normalised. */
bool host_is_metadata_name(const char *host);

/* host.openshell.internal and the other names for the sandbox's host
 * (normalised). The resolver maps them to the host gateway the operator
 * configured (the local driver: the host side of the sandbox's veth);
 * the address is then judged like any other (allowed_ips, SSRF). */
bool host_is_gateway_alias(const char *host);

#endif
