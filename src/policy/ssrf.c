/* ssrf.c - strict IP literal parsing, CIDRs and the SSRF classification of a
 * resolved destination (see ssrf.h). It must never let a policy open an
 * always-blocked address, whatever form (mapped, NAT64, 6to4) the address takes.
 *
 * Decisions documented here (POLICY.md "SSRF"):
 * - IPv4 literals are strict dotted quads. `0177.0.0.1`, `0x7f.0.0.1`,
 *   `2130706433` and `127.1` are NOT IP literals for ip_addr_parse; the host
 *   normaliser (hostglob.c) refuses such numeric-looking names outright, so
 *   they are never handed to a resolver that would read them the BSD way.
 * - IPv6 forms that carry an IPv4 address are classified by that address:
 *   IPv4-mapped ::ffff:0:0/96, IPv4-translated ::ffff:0:0:0/96,
 *   IPv4-compatible ::/96, NAT64 64:ff9b::/96 and 6to4 2002::/16. So
 *   64:ff9b::7f00:1 is loopback, 2002:a00:1:: is internal.
 * - Multicast (224/4, ff00::/8) is always blocked: nothing an agent may reach
 *   over TCP lives there, and a multicast destination is never a single host.
 * - Control-plane ports (etcd 2379/2380, kube-apiserver 6443, kubelet
 *   10250/10255) are refused for every destination, public ones included: a
 *   cluster's API may well be exposed on a public address.
 * - Teredo (2001::/32) is not unmapped; its embedded addresses are obfuscated
 *   relay/client addresses, not a destination. */
#include "ssrf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "parse.h"

/* One classified range. embed >= 0 marks an IPv6 range that carries an IPv4
 * address at that byte offset: such addresses are classified by the IPv4. */
struct range {
	int family;
	uint8_t net[16];
	unsigned prefix;
	enum addr_class cls;
	int embed;
	const char *why;
};

#define V4(cls, why, p, ...)                                                                       \
	{                                                                                          \
		AF_INET, { __VA_ARGS__ }, p, cls, -1, why                                          \
	}
#define V6(cls, why, p, ...)                                                                       \
	{                                                                                          \
		AF_INET6, { __VA_ARGS__ }, p, cls, -1, why                                         \
	}
#define EMB(off, why, p, ...)                                                                      \
	{                                                                                          \
		AF_INET6, { __VA_ARGS__ }, p, ADDR_PUBLIC, off, why                                \
	}
#define BLK ADDR_ALWAYS_BLOCKED
#define INT ADDR_INTERNAL

/* First match wins, so specific entries (metadata) precede their enclosing range. */
static const struct range v4_ranges[] = {
	V4(BLK, "cloud metadata address 169.254.169.254", 32, 169, 254, 169, 254),
	V4(BLK, "cloud metadata address 169.254.170.2 (ECS task metadata)", 32, 169, 254, 170, 2),
	V4(BLK, "cloud metadata address 100.100.100.200 (Alibaba)", 32, 100, 100, 100, 200),
	V4(BLK, "cloud metadata address 168.63.129.16 (Azure)", 32, 168, 63, 129, 16),
	V4(BLK, "unspecified/this-network address 0.0.0.0/8", 8, 0),
	V4(BLK, "loopback address 127.0.0.0/8", 8, 127),
	V4(BLK, "link-local address 169.254.0.0/16", 16, 169, 254),
	V4(BLK, "multicast address 224.0.0.0/4", 4, 224),
	V4(INT, "private address 10.0.0.0/8", 8, 10),
	V4(INT, "private address 172.16.0.0/12", 12, 172, 16),
	V4(INT, "private address 192.168.0.0/16", 16, 192, 168),
	V4(INT, "shared address space 100.64.0.0/10", 10, 100, 64),
	V4(INT, "benchmarking address 198.18.0.0/15", 15, 198, 18),
	V4(INT, "IETF protocol assignment 192.0.0.0/24", 24, 192, 0, 0),
	V4(INT, "documentation address TEST-NET-1 192.0.2.0/24", 24, 192, 0, 2),
	V4(INT, "documentation address TEST-NET-2 198.51.100.0/24", 24, 198, 51, 100),
	V4(INT, "documentation address TEST-NET-3 203.0.113.0/24", 24, 203, 0, 113),
	V4(INT, "reserved/broadcast address 240.0.0.0/4", 4, 240),
};

static const struct range v6_ranges[] = {
	V6(BLK, "unspecified address ::", 128, 0),
	V6(BLK, "loopback address ::1", 128, [15] = 1),
	EMB(12, "IPv4-mapped address ::ffff:0:0/96", 96, [10] = 0xff, [11] = 0xff),
	EMB(12, "IPv4-translated address ::ffff:0:0:0/96", 96, [8] = 0xff, [9] = 0xff),
	EMB(12, "IPv4-compatible address ::/96", 96, 0),
	EMB(12, "NAT64 address 64:ff9b::/96", 96, 0x00, 0x64, 0xff, 0x9b),
	EMB(2, "6to4 address 2002::/16", 16, 0x20, 0x02),
	V6(BLK, "cloud metadata address fd00:ec2::254", 128, 0xfd, 0x00, 0x0e,
	   0xc2, [14] = 0x02, [15] = 0x54),
	V6(BLK, "link-local address fe80::/10", 10, 0xfe, 0x80),
	V6(BLK, "multicast address ff00::/8", 8, 0xff),
	V6(INT, "unique local address fc00::/7", 7, 0xfc),
	V6(INT, "site-local address fec0::/10", 10, 0xfe, 0xc0),
	V6(INT, "documentation address 2001:db8::/32", 32, 0x20, 0x01, 0x0d, 0xb8),
	V6(INT, "local-use NAT64 address 64:ff9b:1::/48", 48, 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01),
	V6(INT, "discard-only address 100::/64", 64, 0x01, 0x00),
};

static const uint8_t *addr_bytes(const struct ip_addr *a)
{
	return a->family == AF_INET ? (const uint8_t *)&a->v4 : (const uint8_t *)&a->v6;
}

static unsigned addr_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* True when the first `bits` bits of x and y agree. */
static bool prefix_equal(const uint8_t *x, const uint8_t *y, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;
	if (memcmp(x, y, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (x[whole] & mask) == (y[whole] & mask);
}

/* Strict dotted quad: four decimal fields 0..255, no leading zeros, no sign. */
static bool parse_v4_strict(const char *s, struct in_addr *out)
{
	uint8_t b[4];
	for (int i = 0; i < 4; i++) {
		if (i > 0 && *s++ != '.')
			return false;
		const char *start = s;
		unsigned v = 0;
		while (*s >= '0' && *s <= '9' && s - start < 3)
			v = v * 10 + (unsigned)(*s++ - '0');
		size_t n = (size_t)(s - start);
		if (n == 0 || v > 255 || (n > 1 && start[0] == '0') || (*s >= '0' && *s <= '9'))
			return false;
		b[i] = (uint8_t)v;
	}
	if (*s != '\0')
		return false;
	memcpy(out, b, 4);
	return true;
}

int ip_addr_parse(const char *s, struct ip_addr *out, os_error *err)
{
	struct ip_addr a = { 0 };
	if (strchr(s, ':')) {
		/* inet_pton refuses zone ids, brackets and malformed groups. */
		if (inet_pton(AF_INET6, s, &a.v6) != 1)
			return os_error_set(err, EINVAL, "\"%.64s\" is not a valid IPv6 address",
					    s);
		a.family = AF_INET6;
	} else {
		if (!parse_v4_strict(s, &a.v4))
			return os_error_set(err, EINVAL,
					    "\"%.64s\" is not a strict dotted-quad IPv4 address "
					    "(four decimal fields 0-255, no leading zeros)",
					    s);
		a.family = AF_INET;
	}
	*out = a;
	return 0;
}

int ip_addr_format(const struct ip_addr *a, char *out, size_t cap)
{
	if (a->family != AF_INET && a->family != AF_INET6) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (cap > INT32_MAX)
		cap = INT32_MAX;
	if (!inet_ntop(a->family, addr_bytes(a), out, (socklen_t)cap))
		return -1; /* errno ENOSPC from inet_ntop */
	return 0;
}

int ip_addr_from_sockaddr(const struct sockaddr *sa, struct ip_addr *out)
{
	struct ip_addr a = { 0 };
	if (sa->sa_family == AF_INET) {
		a.family = AF_INET;
		a.v4 = ((const struct sockaddr_in *)sa)->sin_addr;
	} else if (sa->sa_family == AF_INET6) {
		a.family = AF_INET6;
		a.v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr;
	} else {
		errno = EAFNOSUPPORT;
		return -1;
	}
	*out = a;
	return 0;
}

/* Strict prefix length: decimal, no leading zeros, within the family's width. */
static int parse_prefix(const char *s, const char *cidr, unsigned max, unsigned *out, os_error *err)
{
	size_t n = strlen(s);
	uint64_t v;
	if (n == 0 || n > 3 || (n > 1 && s[0] == '0') || parse_u64(s, n, 0, max, &v, NULL) < 0)
		return os_error_set(err, EINVAL, "CIDR \"%.80s\": prefix length must be 0..%u",
				    cidr, max);
	*out = (unsigned)v;
	return 0;
}

int cidr_parse(const char *s, struct cidr *out, os_error *err)
{
	char addr[64];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof addr)
		return os_error_set(err, EINVAL, "CIDR \"%.80s\": expected ADDRESS[/PREFIX]", s);
	memcpy(addr, s, alen);
	addr[alen] = '\0';

	struct cidr c = { 0 };
	if (ip_addr_parse(addr, &c.addr, err) < 0)
		return os_error_prefix(err, "CIDR \"%.80s\"", s);
	unsigned max = addr_bits(c.addr.family);
	c.prefix = max;
	if (slash && parse_prefix(slash + 1, s, max, &c.prefix, err) < 0)
		return -1;

	/* Host bits set usually means a typo (10.0.5.1/24 for 10.0.5.0/24): refuse. */
	const uint8_t *b = addr_bytes(&c.addr);
	for (unsigned bit = c.prefix; bit < max; bit++) {
		if (b[bit / 8] & (0x80 >> (bit % 8)))
			return os_error_set(err, EINVAL,
					    "CIDR \"%.80s\" has host bits set after /%u; "
					    "write the network address",
					    s, c.prefix);
	}
	*out = c;
	return 0;
}

bool cidr_contains(const struct cidr *c, const struct ip_addr *a)
{
	if (c->addr.family != a->family || c->prefix > addr_bits(a->family))
		return false;
	return prefix_equal(addr_bytes(&c->addr), addr_bytes(a), c->prefix);
}

/* The first IPv6 range (embedding or classified) holding a, or NULL. */
static const struct range *v6_lookup(const struct in6_addr *a)
{
	for (size_t i = 0; i < ARRAY_SIZE(v6_ranges); i++) {
		if (prefix_equal(v6_ranges[i].net, a->s6_addr, v6_ranges[i].prefix))
			return &v6_ranges[i];
	}
	return NULL;
}

/* The IPv4 address an IPv6 address carries, by the embedding ranges above. */
static bool unmap_v4(const struct ip_addr *a, struct ip_addr *v4)
{
	if (a->family != AF_INET6)
		return false;
	const struct range *r = v6_lookup(&a->v6);
	if (!r || r->embed < 0)
		return false;
	v4->family = AF_INET;
	memcpy(&v4->v4, a->v6.s6_addr + r->embed, 4);
	return true;
}

static enum addr_class classify_v4(const struct in_addr *a, const char **why)
{
	for (size_t i = 0; i < ARRAY_SIZE(v4_ranges); i++) {
		if (prefix_equal(v4_ranges[i].net, (const uint8_t *)a, v4_ranges[i].prefix)) {
			*why = v4_ranges[i].why;
			return v4_ranges[i].cls;
		}
	}
	*why = "public address";
	return ADDR_PUBLIC;
}

enum addr_class ip_addr_classify(const struct ip_addr *a, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	if (a->family == AF_INET)
		return classify_v4(&a->v4, why);
	if (a->family != AF_INET6) {
		*why = "unknown address family";
		return ADDR_ALWAYS_BLOCKED;
	}
	struct ip_addr v4;
	if (unmap_v4(a, &v4))
		return classify_v4(&v4.v4, why);
	const struct range *r = v6_lookup(&a->v6);
	if (r) {
		*why = r->why;
		return r->cls;
	}
	*why = "public address";
	return ADDR_PUBLIC;
}

/* Two ranges of one family overlap iff they agree on the shorter prefix. */
static bool overlaps(const uint8_t *x, unsigned xp, const uint8_t *y, unsigned yp)
{
	return prefix_equal(x, y, xp < yp ? xp : yp);
}

static bool v4_cidr_overlaps_blocked(const uint8_t *net, unsigned prefix, const char **why)
{
	for (size_t i = 0; i < ARRAY_SIZE(v4_ranges); i++) {
		const struct range *r = &v4_ranges[i];
		if (r->cls == ADDR_ALWAYS_BLOCKED && overlaps(r->net, r->prefix, net, prefix)) {
			*why = r->why;
			return true;
		}
	}
	return false;
}

/* For an embedding range: the IPv4 CIDR that c covers inside it. */
static bool embedded_overlaps_blocked(const struct range *r, const struct cidr *c, const char **why)
{
	if (c->prefix <= r->prefix) { /* all of IPv4, so mapped 127/8 and friends */
		*why = r->why;
		return true;
	}
	unsigned v4_prefix = c->prefix - (unsigned)r->embed * 8;
	if (v4_prefix > 32)
		v4_prefix = 32;
	return v4_cidr_overlaps_blocked(c->addr.v6.s6_addr + r->embed, v4_prefix, why);
}

bool cidr_overlaps_always_blocked_why(const struct cidr *c, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	if (c->addr.family == AF_INET)
		return v4_cidr_overlaps_blocked((const uint8_t *)&c->addr.v4, c->prefix, why);
	*why = "unknown address family";
	if (c->addr.family != AF_INET6)
		return true;
	const uint8_t *net = c->addr.v6.s6_addr;
	for (size_t i = 0; i < ARRAY_SIZE(v6_ranges); i++) {
		const struct range *r = &v6_ranges[i];
		if (!overlaps(r->net, r->prefix, net, c->prefix))
			continue;
		if (r->cls == ADDR_ALWAYS_BLOCKED) {
			*why = r->why;
			return true;
		}
		if (r->embed >= 0 && embedded_overlaps_blocked(r, c, why))
			return true;
	}
	return false;
}

static bool v4_within_blocked(const uint8_t *net, unsigned prefix, const char **why)
{
	for (size_t i = 0; i < ARRAY_SIZE(v4_ranges); i++) {
		const struct range *r = &v4_ranges[i];
		if (r->cls == ADDR_ALWAYS_BLOCKED && r->prefix <= prefix &&
		    prefix_equal(r->net, net, r->prefix)) {
			*why = r->why;
			return true;
		}
	}
	return false;
}

bool cidr_within_always_blocked(const struct cidr *c, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	if (c->addr.family == AF_INET)
		return v4_within_blocked((const uint8_t *)&c->addr.v4, c->prefix, why);
	if (c->addr.family != AF_INET6)
		return false;
	const uint8_t *net = c->addr.v6.s6_addr;
	for (size_t i = 0; i < ARRAY_SIZE(v6_ranges); i++) {
		const struct range *r = &v6_ranges[i];
		if (r->prefix > c->prefix || !prefix_equal(r->net, net, r->prefix))
			continue;
		if (r->cls == ADDR_ALWAYS_BLOCKED) {
			*why = r->why;
			return true;
		}
		/* Inside an embedding range: judged by the IPv4 part it carries. */
		if (r->embed >= 0) {
			unsigned v4p = c->prefix - (unsigned)r->embed * 8;
			return v4_within_blocked(net + r->embed, v4p > 32 ? 32 : v4p, why);
		}
	}
	return false;
}

bool cidr_overlaps_always_blocked(const struct cidr *c)
{
	return cidr_overlaps_always_blocked_why(c, NULL);
}

bool port_is_control_plane(uint16_t port)
{
	return port == 2379 || port == 2380 || port == 6443 || port == 10250 || port == 10255;
}

static bool allowed_covers(const struct ip_addr *a, const struct cidr *allowed, size_t n)
{
	struct ip_addr v4;
	bool has_v4 = unmap_v4(a, &v4);
	for (size_t i = 0; i < n; i++) {
		if (cidr_contains(&allowed[i], a) || (has_v4 && cidr_contains(&allowed[i], &v4)))
			return true;
	}
	return false;
}

enum ssrf_verdict ssrf_check(const struct ip_addr *a, uint16_t port, const struct cidr *allowed,
			     size_t n_allowed, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	enum addr_class cls = ip_addr_classify(a, why);
	if (cls == ADDR_ALWAYS_BLOCKED)
		return SSRF_DENY_ALWAYS; /* no allowed_ips entry can open these */
	if (cls == ADDR_INTERNAL && !allowed_covers(a, allowed, n_allowed))
		return SSRF_DENY_INTERNAL;
	if (port_is_control_plane(port)) {
		*why = "Kubernetes/etcd control-plane port (2379, 2380, 6443, 10250, 10255)";
		return SSRF_DENY_PORT;
	}
	if (cls == ADDR_INTERNAL)
		*why = "internal address covered by allowed_ips";
	return SSRF_ALLOW;
}

/* Names that reach a metadata service whatever DNS says about them. Matched
 * exactly and as a parent domain (x.metadata.google.internal). */
static const char *const metadata_names[] = {
	"metadata.google.internal", /* GCP */
	"metadata.goog", /* GCP */
	"metadata", /* GCP short name via the search domain */
	"instance-data", /* AWS short name */
	"instance-data.ec2.internal", /* AWS */
	"metadata.tencentyun.com", /* Tencent Cloud */
};

bool host_is_metadata_name(const char *host)
{
	size_t hlen = strlen(host);
	for (size_t i = 0; i < ARRAY_SIZE(metadata_names); i++) {
		const char *m = metadata_names[i];
		size_t mlen = strlen(m);
		if (hlen == mlen && memcmp(host, m, mlen) == 0)
			return true;
		if (hlen > mlen && host[hlen - mlen - 1] == '.' &&
		    memcmp(host + hlen - mlen, m, mlen) == 0)
			return true;
	}
	return false;
}

/* OpenShell's names for the machine running the sandbox (compute drivers
 * put them in the sandbox's /etc/hosts upstream; proxy.rs
 * HOST_GATEWAY_ALIASES, plus Docker Desktop's gateway.docker.internal). */
bool host_is_gateway_alias(const char *host)
{
	static const char *const names[] = { "host.openshell.internal", "host.docker.internal",
					     "host.containers.internal",
					     "gateway.docker.internal" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(host, names[i]))
			return true;
	return false;
}
