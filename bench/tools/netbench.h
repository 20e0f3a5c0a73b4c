/* netbench.h - the pieces of `netbench`, the small load tool of the proxy
 * benchmarks: loopback/test-namespace servers and clients only. It must never
 * resolve names or reach any address the caller did not give it. */
#ifndef NETBENCH_H
#define NETBENCH_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Upper bound on one server's concurrent connections (idle-tunnel runs need
 * 1,000 plus headroom); more are refused, never queued without limit. */
#define NB_MAX_CONNS 8192

/* An IPv4 literal and port (sin_family AF_INET), or a name only a proxy may
 * resolve (AF_UNSPEC); "HOST:PORT" is kept for CONNECT lines. */
struct nb_addr {
	struct sockaddr_in sin;
	char text[64];
};

/* Parses "A.B.C.D:PORT" (IPv4 literal only: netbench never resolves names). */
int nb_addr_parse(const char *spec, struct nb_addr *out, os_error *err);
/* "HOST:PORT" where HOST may also be a DNS name (letters, digits, '.', '-'),
 * kept as text for a CONNECT line; never resolved here. */
int nb_target_parse(const char *spec, struct nb_addr *out, os_error *err);
/* Same from separate ADDR and PORT arguments. */
int nb_addr_parse2(const char *host, const char *port, struct nb_addr *out, os_error *err);
/* Blocking connected TCP socket with TCP_NODELAY and a receive/send timeout. */
int nb_connect(const struct nb_addr *a, int timeout_s, os_error *err);
/* Non-blocking listening socket (SO_REUSEADDR). */
int nb_listen(const struct nb_addr *a, os_error *err);
/* Sends "CONNECT target" on fd and reads the answer head; fails unless 200. */
int nb_http_connect(int fd, const char *target, os_error *err);
/* Raises RLIMIT_NOFILE's soft limit to the hard limit. */
void nb_raise_fd_limit(void);
/* Monotonic clock in seconds. */
double nb_now(void);

/* Modes (argv after the mode name). */
int nb_serve_bulk(const struct nb_addr *a, os_error *err);
int nb_serve_http(const struct nb_addr *a, os_error *err);
int nb_serve_rpc(const struct nb_addr *a, os_error *err);
int nb_serve_ws(const struct nb_addr *a, os_error *err);
/* Prints messages/s of count echoed text messages on one WebSocket. */
int nb_ws(const struct nb_addr *target, const struct nb_addr *proxy, uint64_t count, os_error *err);
int nb_bulk(const struct nb_addr *target, const struct nb_addr *proxy, uint64_t bytes,
	    os_error *err);
/* Keep-alive GETs on conns connections until requests are answered; prints
 * req/s, mean, p50, p99 and the mean Little's law allows. */
int nb_http(const struct nb_addr *target, const struct nb_addr *proxy, uint64_t requests,
	    unsigned conns, os_error *err);
int nb_idle(const struct nb_addr *target, const struct nb_addr *proxy, unsigned count,
	    os_error *err);

#endif
