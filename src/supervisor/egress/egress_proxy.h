/* egress_proxy.h - the egress proxy inside openshell-supervisor: every byte that
 * leaves a sandbox passes here. CONNECT and absolute-form http:// requests on
 * the boundary's proxy address; identity from the kernel, the policy
 * generation current at arrival, SSRF checks on every resolved address,
 * TLS termination where L7 rules or credentials apply, splice() otherwise.
 * It never aborts on peer input and never logs a secret or a query string. */
#ifndef OS_EGRESS_PROXY_H
#define OS_EGRESS_PROXY_H

#include <openssl/ssl.h>
#include <stdint.h>

#include "audit.h"
#include "credentials.h"
#include "error.h"
#include "identity.h"
#include "loop.h"
#include "policy.h"
#include "resolver.h"
#include "tls_ca.h"
#include "upstream_trust.h"

struct inference_routes;

/* --proxy-memory-mb bounds: below 2 MiB hardly one bulk connection fits. */
#define PROXY_MEMORY_MB_MIN 2
#define PROXY_MEMORY_MB_MAX (1u << 20)

struct proxy_limits {
	unsigned max_conns; /* per sandbox; over it new ones are refused */
	unsigned head_timeout_ms; /* whole request head must arrive within (slowloris) */
	unsigned idle_timeout_ms; /* no byte either way */
	unsigned connect_timeout_ms;
	size_t buf_cap; /* per buffer cap (four per connection, see proxy_budget.h) */
	/* What the proxy may hold for this sandbox: buffers, splice pipes and a
	 * fixed estimate per connection and TLS session. At the budget new
	 * connections get 503 proxy_memory_budget and reads wait. 0 = none. */
	size_t memory_budget;
	/* Concurrent upstream connections; over it 503 upstream_connection_limit. */
	unsigned max_upstreams;
};

struct proxy_config {
	int listen_fd; /* bound, listening, non-blocking; the proxy owns it */
	const char *sandbox_id;
	struct policy_holder *policy;
	struct identity_ctx *identity; /* NULL: identity unknown -> binary rules deny */
	struct resolver *resolver;
	struct audit *audit;
	struct tls_ca *ca; /* NULL: no TLS termination (L7 endpoints denied) */
	struct upstream_trust *upstream_trust; /* upstream TLS trust, loaded at first use */
	struct credentials *creds; /* may be NULL */
	struct inference_routes *inference; /* may be NULL: inference.local denied */
	/* Operator's choice for boundaries where caller identity cannot cross
	 * (split pods): judge by endpoint only, ignoring binaries lists. */
	bool endpoint_only;
	/* Operator's choice only (never the policy): L4 tunnels to a named host
	 * skip the check that a TLS ClientHello names that host. */
	bool allow_sni_mismatch;
	struct proxy_limits limits;
};

struct proxy;

void proxy_limits_default(struct proxy_limits *l);
int proxy_new(struct loop *l, const struct proxy_config *cfg, struct proxy **out, os_error *err);
/* Serves redirected direct connections on the listening socket fd (the
 * transparent path, docs/network.md): takes ownership of fd. */
int proxy_add_transparent(struct proxy *p, int fd, os_error *err);
/* What the sandbox's DNS stub handed out (dns_stub_handed_out): a name
 * whose fresh lookup no longer holds the dialled address is still accepted
 * for an address the agent was given for it. */
typedef bool (*proxy_dns_memory)(void *user, const char *name, const struct ip_addr *a);
void proxy_set_dns_memory(struct proxy *p, proxy_dns_memory fn, void *user);
/* proxy.c: the stub's answer memory, or false without one. */
bool proxy_dns_handed_out(const struct proxy *p, const char *name, const struct ip_addr *a);
/* Call after policy_holder_swap: tunnels whose decision changed are closed;
 * kept-alive connections judge their next request by the new generation. */
void proxy_policy_changed(struct proxy *p);
unsigned proxy_conn_count(const struct proxy *p);
/* Bytes charged to the sandbox's budget now, and upstream connections held. */
size_t proxy_memory_used(const struct proxy *p);
unsigned proxy_upstream_count(const struct proxy *p);
/* Binds caller identity once the agent's entry process exists (the proxy
 * must listen before the boundary is confirmed, i.e. before any agent runs).
 * Until then every connection is treated as unidentified. Takes ownership. */
void proxy_set_identity(struct proxy *p, struct identity_ctx *id);
/* Raises RLIMIT_NOFILE to its hard limit: each tunnel holds six fds. */
void proxy_raise_fd_limit(void);
void proxy_free(struct proxy *p);

#endif
