/* resolver.h - asynchronous name resolution for the proxy on the shared
 * event loop (c-ares). An operator-supplied hosts map is consulted first (so
 * tests and air-gapped sites can pin names); the proxy connects only to the
 * addresses returned here, after checking each one (no second lookup). */
#ifndef OS_SUPERVISOR_RESOLVER_H
#define OS_SUPERVISOR_RESOLVER_H

#include <stddef.h>

#include "error.h"
#include "loop.h"
#include "ssrf.h"

struct sockaddr;

#define RESOLVER_ADDRS_MAX 16

struct resolver_config {
	const char *dns_servers; /* "IP[:port],..." or NULL for the system resolver */
	const char *hosts_file; /* optional "ADDRESS NAME..." lines, consulted first */
	unsigned timeout_ms; /* per lookup; 0 = 5000 */
	/* The host-gateway aliases (host_is_gateway_alias) resolve to this
	 * address, before the hosts map and DNS; NULL: they are looked up like
	 * any other name. */
	const struct ip_addr *host_gateway;
};

/* The --host-gateway value: an IP address, or `proxy` for the address the
 * proxy listens on (listen; with the inpod backend the host side of the
 * sandbox's veth), which must then be a specific address. */
int resolver_host_gateway_parse(const char *spec, const struct sockaddr *listen,
				struct ip_addr *out, os_error *err);

struct resolver;
struct resolver_query;

/* status 0: addrs[0..n) valid for the callback's duration; otherwise errmsg says why. */
typedef void (*resolver_cb)(void *data, int status, const struct ip_addr *addrs, size_t n,
			    const char *errmsg);

int resolver_new(struct loop *l, const struct resolver_config *cfg, struct resolver **out,
		 os_error *err);
void resolver_free(struct resolver *r);

/* Starts a lookup of a normalised host name or IP literal. The callback runs
 * later from the loop (never synchronously) unless the query is cancelled. */
struct resolver_query *resolver_lookup(struct resolver *r, const char *host, resolver_cb cb,
				       void *data, os_error *err);
/* The callback will not run; safe until the callback has started. */
void resolver_cancel(struct resolver_query *q);

#endif
