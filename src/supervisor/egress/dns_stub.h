/* dns_stub.h - the resolver the agent's getaddrinfo() talks to on the
 * transparent path: the sandbox's nat chain sends every query to port 53,
 * UDP and TCP, here, and each is answered from the proxy's own resolver (hosts file,
 * then c-ares), so the agent needs no path to any outside resolver and the
 * addresses it gets are the ones the transparent proxy will accept for the
 * name. Only names the policy could allow are looked up (see
 * dns_stub_gate). Only A is answered; AAAA gets an empty answer (the sandbox has no
 * IPv6), every other question REFUSED. Queries are parsed as hostile input:
 * bounded, one question, no compression in it. */
#ifndef OS_DNS_STUB_H
#define OS_DNS_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "loop.h"
#include "resolver.h"

#define DNS_STUB_INFLIGHT_MAX 256
#define DNS_STUB_TTL 30 /* seconds: short, the proxy resolves again anyway */

struct dns_stub;

/* Whether name may be looked up at all: a name no policy could allow is
 * answered NXDOMAIN without a lookup, so DNS carries nothing out that a
 * CONNECT could not (the proxy resolves only names it has allowed). proto
 * is "udp" or "tcp", the query's transport (for the record). */
typedef bool (*dns_stub_gate)(void *user, const char *name, const char *proto);

/* DNS over TCP (RFC 7766), bounded: connections at once (more are closed
 * at accept), and how long a connection may take to send its next query
 * (counted from accept or the last answer sent, however the bytes
 * trickle: a stalled reader of answers is cut by it too). Queries on one
 * connection are answered in order, one at a time. */
#define DNS_STUB_TCP_CONNS_MAX 32
#define DNS_STUB_TCP_IDLE_MS 10000

/* Serves the bound UDP socket fd and the listening TCP socket tcp_fd (-1:
 * none); both are taken, also on failure. */
int dns_stub_new(struct loop *l, struct resolver *r, dns_stub_gate gate, void *gate_user, int fd,
		 int tcp_fd, struct dns_stub **out, os_error *err);
void dns_stub_free(struct dns_stub *s);

/* How long an answer is remembered: agents cache answers longer than
 * their TTL (the JVM 30 s, many clients until the process ends). */
#define DNS_STUB_REMEMBER_S 300
#define DNS_STUB_REMEMBER_MAX 1024 /* answers kept (a ring: oldest go first) */

/* Whether this stub answered name with address a in the last
 * DNS_STUB_REMEMBER_S seconds: a name served by rotating addresses may
 * resolve elsewhere when the proxy asks again, and the address the agent
 * was handed is then still the name's. */
bool dns_stub_handed_out(const struct dns_stub *s, const char *name, const struct ip_addr *a);

/* The question of query q[0..len): 0 with the name (lower case, no final
 * dot, at most 253 bytes) and type, else -1 with the RCODE to answer
 * (1 FORMERR, 4 NOTIMP), or -2 when nothing may be answered (not a query). */
int dns_stub_parse_question(const uint8_t *q, size_t len, char *name, size_t cap, uint16_t *qtype,
			    size_t *question_end);

#endif
