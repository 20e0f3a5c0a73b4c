/* dns_stub.c - see dns_stub.h. The query core and the UDP socket (TCP
 * connections: dns_stub_tcp.c); each query becomes one resolver lookup
 * whose callback sends the answer to its peer; at most
 * DNS_STUB_INFLIGHT_MAX lookups wait at a time, both transports together
 * (more: SERVFAIL at once). */
#include "dns_stub.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dns_stub_internal.h"
#include "hostglob.h"
#include "log.h"

#define DNS_HEADER 12
#define RCODE_FORMERR 1
#define RCODE_SERVFAIL 2
#define RCODE_NXDOMAIN 3
#define RCODE_NOTIMP 4
#define RCODE_REFUSED 5
#define QTYPE_A 1
#define QTYPE_AAAA 28

struct dns_pending {
	struct dns_stub *stub;
	struct dns_pending *prev, *next;
	struct resolver_query *query;
	struct dns_peer to;
	uint8_t head[DNS_PACKET_MAX]; /* header + question, copied from the query */
	size_t head_len;
	char host[254]; /* the name looked up, normalised */
};

struct handout {
	char name[254];
	struct in_addr addr;
	time_t until;
};

struct dns_stub {
	struct loop *loop;
	struct resolver *resolver;
	dns_stub_gate gate;
	void *gate_user;
	int fd;
	struct loop_io *io;
	struct dns_tcp *tcp; /* NULL: no TCP listener */
	struct dns_pending *pending;
	unsigned n_pending;
	struct handout handed[DNS_STUB_REMEMBER_MAX];
	size_t next_handout;
};

static void remember(struct dns_stub *s, const char *name, struct in_addr a)
{
	struct handout *h = &s->handed[s->next_handout];
	s->next_handout = (s->next_handout + 1) % DNS_STUB_REMEMBER_MAX;
	snprintf(h->name, sizeof h->name, "%s", name);
	h->addr = a;
	h->until = time(NULL) + DNS_STUB_REMEMBER_S;
}

bool dns_stub_handed_out(const struct dns_stub *s, const char *name, const struct ip_addr *a)
{
	if (!s || a->family != AF_INET)
		return false;
	time_t now = time(NULL);
	for (size_t i = 0; i < DNS_STUB_REMEMBER_MAX; i++) {
		const struct handout *h = &s->handed[i];
		if (h->until >= now && h->addr.s_addr == a->v4.s_addr && strcmp(h->name, name) == 0)
			return true;
	}
	return false;
}

int dns_stub_parse_question(const uint8_t *q, size_t len, char *name, size_t cap, uint16_t *qtype,
			    size_t *question_end)
{
	if (len < DNS_HEADER || (q[2] & 0x80))
		return -2; /* too short to answer, or an answer itself */
	if (((q[2] >> 3) & 0x0f) != 0)
		return -RCODE_NOTIMP; /* only standard queries */
	if (q[4] != 0 || q[5] != 1)
		return -RCODE_FORMERR; /* exactly one question */
	size_t pos = DNS_HEADER, out = 0;
	for (;;) {
		if (pos >= len)
			return -RCODE_FORMERR;
		uint8_t l = q[pos++];
		if (l == 0)
			break;
		size_t need = out + (out ? 1 : 0) + l; /* the name's length with this label */
		if (l > 63 || pos + l > len || need > 253 || need >= cap)
			return -RCODE_FORMERR; /* compression pointers included: none here */
		if (out)
			name[out++] = '.';
		for (uint8_t i = 0; i < l; i++) {
			uint8_t ch = q[pos + i];
			if (ch <= 0x20 || ch >= 0x7f || ch == '.')
				return -RCODE_FORMERR;
			name[out++] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
		}
		pos += l;
	}
	name[out] = '\0';
	if (out == 0 || pos + 4 > len)
		return -RCODE_FORMERR;
	*qtype = (uint16_t)(q[pos] << 8 | q[pos + 1]);
	uint16_t qclass = (uint16_t)(q[pos + 2] << 8 | q[pos + 3]);
	*question_end = pos + 4;
	return qclass == 1 ? 0 : -RCODE_NOTIMP;
}

/* Header flags of an answer to head: QR, the query's opcode and RD, RA. */
static void answer_header(uint8_t *h, int rcode, uint16_t ancount)
{
	h[2] = (uint8_t)(0x80 | (h[2] & 0x79)); /* QR, opcode, RD; AA TC cleared */
	h[3] = (uint8_t)(0x80 | (rcode & 0x0f)); /* RA */
	h[4] = 0;
	h[5] = 1;
	h[6] = (uint8_t)(ancount >> 8);
	h[7] = (uint8_t)ancount;
	memset(h + 8, 0, 4); /* no authority, no additional (an EDNS OPT is not echoed) */
}

static void send_answer(struct dns_stub *s, const struct dns_peer *to, const uint8_t *pkt,
			size_t len)
{
	if (to->conn)
		dns_tcp_answer(to->conn, pkt, len);
	else if (sendto(s->fd, pkt, len, MSG_DONTWAIT, (const struct sockaddr *)&to->addr,
			to->addr_len) < 0)
		log_debug("dns stub: sendto: %s", strerror(errno));
}

/* An answer with no records: header + question only. */
static void answer_empty(struct dns_stub *s, const struct dns_peer *to, const uint8_t *head,
			 size_t head_len, int rcode)
{
	uint8_t pkt[DNS_PACKET_MAX];
	memcpy(pkt, head, head_len);
	answer_header(pkt, rcode, 0);
	send_answer(s, to, pkt, head_len);
}

static void pending_unlink(struct dns_pending *p)
{
	struct dns_stub *s = p->stub;
	if (p->prev)
		p->prev->next = p->next;
	else
		s->pending = p->next;
	if (p->next)
		p->next->prev = p->prev;
	s->n_pending--;
}

static void on_resolved(void *data, int status, const struct ip_addr *addrs, size_t n,
			const char *errmsg)
{
	struct dns_pending *p = data;
	struct dns_stub *s = p->stub;
	pending_unlink(p);
	if (status != 0) {
		answer_empty(s, &p->to, p->head, p->head_len,
			     status == ENOENT ? RCODE_NXDOMAIN : RCODE_SERVFAIL);
		log_debug("dns stub: %s", errmsg ? errmsg : "lookup failed");
		free(p);
		return;
	}
	uint8_t pkt[DNS_PACKET_MAX];
	memcpy(pkt, p->head, p->head_len);
	size_t len = p->head_len;
	uint16_t count = 0;
	for (size_t i = 0; i < n && len + 16 <= sizeof pkt; i++) {
		if (addrs[i].family != AF_INET)
			continue; /* no IPv6 in the sandbox */
		/* name: a pointer to the question's (offset 12); A IN, TTL, 4 bytes */
		const uint8_t rr[12] = {
			0xc0, 0x0c, 0, QTYPE_A, 0, 1, 0, 0, 0, DNS_STUB_TTL, 0, 4
		};
		memcpy(pkt + len, rr, sizeof rr);
		memcpy(pkt + len + sizeof rr, &addrs[i].v4, 4);
		len += sizeof rr + 4;
		count++;
		remember(s, p->host, addrs[i].v4);
	}
	answer_header(pkt, 0, count);
	send_answer(s, &p->to, pkt, len);
	free(p);
}

static struct dns_pending *lookup(struct dns_stub *s, const struct dns_peer *to,
				  const uint8_t *head, size_t head_len, const char *name)
{
	char host[256];
	os_error err = { 0 };
	if (host_normalize(name, strlen(name), host, sizeof host, &err) < 0 ||
	    !s->gate(s->gate_user, host, to->conn ? "tcp" : "udp")) {
		answer_empty(s, to, head, head_len, RCODE_NXDOMAIN);
		return NULL;
	}
	struct dns_pending *p = s->n_pending < DNS_STUB_INFLIGHT_MAX ? calloc(1, sizeof *p) : NULL;
	if (!p) {
		answer_empty(s, to, head, head_len, RCODE_SERVFAIL);
		return NULL;
	}
	p->stub = s;
	p->to = *to;
	memcpy(p->head, head, head_len);
	p->head_len = head_len;
	snprintf(p->host, sizeof p->host, "%s", host);
	p->query = resolver_lookup(s->resolver, host, on_resolved, p, &err);
	if (!p->query) {
		free(p);
		answer_empty(s, to, head, head_len, RCODE_SERVFAIL);
		return NULL;
	}
	p->next = s->pending;
	if (s->pending)
		s->pending->prev = p;
	s->pending = p;
	s->n_pending++;
	return p;
}

struct dns_pending *dns_stub_serve(struct dns_stub *s, const uint8_t *q, size_t len,
				   const struct dns_peer *to)
{
	char name[256];
	uint16_t qtype = 0;
	size_t end = 0;
	if (len > DNS_PACKET_MAX)
		return NULL; /* no question we answer (both transports refuse it first) */
	int r = dns_stub_parse_question(q, len, name, sizeof name, &qtype, &end);
	if (r == -2)
		return NULL;
	if (r < 0) { /* the header alone goes back */
		answer_empty(s, to, q, DNS_HEADER, -r);
		return NULL;
	}
	if (qtype == QTYPE_A)
		return lookup(s, to, q, end, name);
	/* AAAA: the name may exist; it has no address here */
	answer_empty(s, to, q, end, qtype == QTYPE_AAAA ? 0 : RCODE_REFUSED);
	return NULL;
}

void dns_stub_cancel(struct dns_pending *p)
{
	resolver_cancel(p->query);
	pending_unlink(p);
	free(p);
}

#define RECV_BATCH 64 /* per wake-up: the loop's other work goes on */

static void on_readable(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	struct dns_stub *s = data;
	for (int i = 0; i < RECV_BATCH; i++) {
		uint8_t q[DNS_PACKET_MAX];
		struct sockaddr_storage peer;
		socklen_t plen = sizeof peer;
		ssize_t n = recvfrom(fd, q, sizeof q, MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&peer, &plen);
		if (n < 0)
			return;
		if ((size_t)n > sizeof q)
			continue; /* a query over 512 bytes is no question we answer */
		struct dns_peer to = { .conn = NULL, .addr = peer, .addr_len = plen };
		dns_stub_serve(s, q, (size_t)n, &to);
	}
}

int dns_stub_new(struct loop *l, struct resolver *r, dns_stub_gate gate, void *gate_user, int fd,
		 int tcp_fd, struct dns_stub **out, os_error *err)
{
	struct dns_stub *s = calloc(1, sizeof *s);
	if (!s) {
		close(fd);
		if (tcp_fd >= 0)
			close(tcp_fd);
		return os_error_set(err, ENOMEM, "out of memory");
	}
	s->loop = l;
	s->resolver = r;
	s->gate = gate;
	s->gate_user = gate_user;
	s->fd = fd;
	if (loop_io_add(l, fd, LOOP_IN, 0, on_readable, s, &s->io, err) < 0) {
		if (tcp_fd >= 0)
			close(tcp_fd);
		dns_stub_free(s);
		return os_error_prefix(err, "watching the DNS socket");
	}
	if (tcp_fd >= 0 && dns_tcp_new(s, l, tcp_fd, &s->tcp, err) < 0) {
		dns_stub_free(s);
		return os_error_prefix(err, "DNS over TCP");
	}
	*out = s;
	return 0;
}

void dns_stub_free(struct dns_stub *s)
{
	if (!s)
		return;
	dns_tcp_free(s->tcp); /* its connections cancel their own lookups */
	while (s->pending)
		dns_stub_cancel(s->pending);
	if (s->io)
		loop_io_remove(s->io);
	close(s->fd);
	free(s);
}
