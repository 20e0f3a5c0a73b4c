/* proxy.c - listener, connection lifecycle and the I/O pump of the egress
 * proxy (see proxy.h). Every event leads to conn_step(), which steps the
 * connection's state machine (proxy_state.c) until a step has to wait. */
#include "egress_proxy.h"

#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "denials.h"
#include "secret_echo.h"
#include "proxy_internal.h"

struct proxy {
	struct loop *loop;
	struct proxy_config cfg;
	struct loop_io *lio;
	struct loop_io *tp_lio; /* the transparent listener, if any */
	int tp_fd;
	proxy_dns_memory dns_memory; /* the DNS stub's answers, or NULL */
	void *dns_memory_user;
	struct conn *conns;
	unsigned n_conns;
	uint64_t serial; /* bumped by proxy_policy_changed */
	bool freeing; /* proxy_free: nothing is on the stack, free at once */
	struct secret_echo *echo; /* upstreams that hold a secret */
	struct denials *denials; /* recent denials, for http://policy.local */
	struct proxy_budget budget; /* memory and upstream slots of this sandbox */
	bool rebalancing; /* proxy_rebalance() is walking the connections */
};

void proxy_limits_default(struct proxy_limits *l)
{
	l->max_conns = 4096;
	l->head_timeout_ms = 10000;
	l->idle_timeout_ms = 300000;
	l->connect_timeout_ms = 10000;
	l->buf_cap = 256 * 1024;
	l->memory_budget = (size_t)64 << 20;
	l->max_upstreams = 256;
}

struct secret_echo *proxy_echo(const struct proxy *p)
{
	return p->echo;
}

struct denials *proxy_denials(const struct proxy *p)
{
	return p->denials;
}

const struct proxy_config *proxy_cfg(const struct proxy *p)
{
	return &p->cfg;
}

struct loop *proxy_loop(const struct proxy *p)
{
	return p->loop;
}

struct policy_gen *proxy_current(struct proxy *p, uint64_t *serial)
{
	if (serial)
		*serial = p->serial;
	return policy_holder_acquire(p->cfg.policy);
}

uint64_t proxy_policy_serial(const struct proxy *p)
{
	return p->serial;
}

unsigned proxy_conn_count(const struct proxy *p)
{
	return p->n_conns;
}

size_t proxy_memory_used(const struct proxy *p)
{
	return p->budget.used;
}

unsigned proxy_upstream_count(const struct proxy *p)
{
	return p->budget.upstreams;
}

/* What c holds in buffers and pipes: what moves with the traffic. */
static size_t conn_held(const struct conn *c)
{
	return c->cin.alloc + c->cout.alloc + c->uin.alloc + c->uout.alloc + c->piped[0] +
	       c->piped[1] + proxy_sse_held(c) + proxy_ws_held(c);
}

void proxy_cap_socket_buffers(int fd)
{
	int r = PROXY_SOCK_RCVBUF, s = PROXY_SOCK_SNDBUF;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &r, sizeof r);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &s, sizeof s);
}

/* What the kernel holds for one socket: its receive queue (truesize) and
 * what waits to be sent. A paused side can fill its receive buffer without
 * the proxy seeing an event, so all of that buffer is charged then. */
static size_t socket_held(int fd, bool paused)
{
	uint32_t mi[SK_MEMINFO_VARS] = { 0 };
	socklen_t len = sizeof mi;
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) < 0)
		return 0;
	size_t rmem = mi[SK_MEMINFO_RMEM_ALLOC];
	if (paused && mi[SK_MEMINFO_RCVBUF] > rmem)
		rmem = mi[SK_MEMINFO_RCVBUF];
	return rmem + mi[SK_MEMINFO_WMEM_QUEUED];
}

static size_t kernel_held(const struct conn *c)
{
	return socket_held(c->client.fd, c->client_paused) +
	       socket_held(c->upstream.fd, c->upstream_paused);
}

static size_t conn_footprint(const struct conn *c)
{
	size_t n = PROXY_CONN_OVERHEAD + conn_held(c) + kernel_held(c);
	if (c->client.ssl)
		n += PROXY_TLS_OVERHEAD;
	if (c->upstream.ssl)
		n += PROXY_TLS_OVERHEAD;
	return n;
}

/* Empty buffers give their memory back (under pressure only: a busy
 * connection would otherwise pay a reallocation per read). */
static void conn_release_empty(struct conn *c)
{
	struct buf *bufs[] = { &c->cin, &c->cout, &c->uin, &c->uout };
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		if (bufs[i]->len == 0 && bufs[i]->data)
			buf_free(bufs[i]);
}

static void on_resume(struct loop *l, void *data)
{
	struct conn *c = data;
	c->resume = NULL;
	conn_step(c);
}

/* Which side's reads are off for backpressure (not because the protocol
 * expects nothing there): its receive buffer is charged whole then. */
static void note_paused(struct conn *c, bool c_in, bool u_in)
{
	bool up = false, cl = false;
	switch (c->state) {
	case ST_FORWARD:
		cl = c->req_body.state != BODY_DONE;
		up = true;
		break;
	case ST_WEBSOCKET:
		cl = up = true;
		break;
	case ST_TUNNEL:
		cl = !c->half_closed[0];
		up = !c->half_closed[1];
		break;
	default:
		break;
	}
	bool was_cl = c->client_paused, was_up = c->upstream_paused;
	c->client_paused = cl && !c_in && !c->client.eof;
	c->upstream_paused = up && !u_in && !c->upstream.eof;
	if (was_cl != c->client_paused || was_up != c->upstream_paused)
		conn_charge(c);
}

/* The budget was reached: every connection's empty buffers are released.
 * It resumed: connections whose reads waited are stepped again (deferred,
 * since a caller up the stack may be stepping one of them). */
static void proxy_rebalance(struct proxy *p, enum budget_change ch)
{
	if (p->rebalancing || p->freeing)
		return;
	p->rebalancing = true;
	if (ch == BUDGET_PAUSED) {
		log_warn("proxy: memory budget of %zu bytes reached: reads wait", p->budget.limit);
		for (struct conn *c = p->conns; c; c = c->next) {
			conn_release_empty(c);
			conn_charge(c);
		}
	}
	if (!p->budget.paused)
		for (struct conn *c = p->conns; c; c = c->next)
			if (c->mem_waiting && !c->resume) {
				c->mem_waiting = false;
				if (loop_defer(p->loop, on_resume, c, &c->resume, NULL) < 0)
					conn_update_interest(c); /* epoll will do */
			}
	p->rebalancing = false;
}

void conn_charge(struct conn *c)
{
	struct proxy *p = c->proxy;
	if (p->budget.paused && !c->dead)
		conn_release_empty(c);
	size_t now = c->dead ? 0 : conn_footprint(c);
	enum budget_change ch = budget_update(&p->budget, c->charged, now);
	c->charged = now;
	if (ch != BUDGET_SAME)
		proxy_rebalance(p, ch);
}

size_t conn_read_room(struct conn *c, size_t want)
{
	size_t room = budget_allowance(&c->proxy->budget, conn_held(c), c->proxy->n_conns);
	if (room < want)
		want = room;
	c->mem_waiting = want == 0;
	return want;
}

bool conn_take_upstream(struct conn *c)
{
	if (c->up_slot)
		return true;
	c->up_slot = budget_take_upstream(&c->proxy->budget);
	return c->up_slot;
}

void conn_put_upstream(struct conn *c)
{
	if (!c->up_slot)
		return;
	c->up_slot = false;
	budget_put_upstream(&c->proxy->budget);
}

void proxy_set_identity(struct proxy *p, struct identity_ctx *id)
{
	identity_ctx_free(p->cfg.identity);
	p->cfg.identity = id;
}

void proxy_raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void conn_free(struct loop *l, void *data)
{
	struct conn *c = data;
	buf_free(&c->cin);
	buf_free(&c->cout);
	buf_free(&c->uin);
	buf_free(&c->uout);
	if (c->mw_body.data) /* may hold a resolved secret */
		memset(c->mw_body.data, 0, c->mw_body.alloc);
	buf_free(&c->mw_body);
	proxy_sse_stop(c);
	proxy_ws_free(c);
	proxy_json_watch_free(c);
	free(c->tls_answer);
	free(c->chain_store);
	free(c);
}

void conn_close(struct conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	struct proxy *p = c->proxy;
	if (c->query)
		resolver_cancel(c->query);
	if (c->cio)
		loop_io_remove(c->cio);
	if (c->uio)
		loop_io_remove(c->uio);
	if (c->timer)
		loop_timer_remove(c->timer);
	loop_defer_cancel(c->resume);
	c->resume = NULL;
	conn_put_upstream(c);
	stream_close(&c->client);
	stream_close(&c->upstream);
	for (int d = 0; d < 2; d++)
		for (int e = 0; e < 2; e++)
			if (c->pipes[d][e] >= 0)
				close(c->pipes[d][e]);
	if (c->gen)
		policy_unref(c->gen);
	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	p->n_conns--;
	conn_charge(c); /* dead: gives back all it held */
	/* Callers up the stack still hold c: free it on the next iteration
	 * (or now, when the whole proxy is going away). */
	if (p->freeing)
		conn_free(p->loop, c);
	else if (loop_defer(p->loop, conn_free, c, NULL, NULL) < 0)
		log_error("proxy: leaking a connection record (defer failed)");
}

static unsigned side_interest(const struct stream *s, bool want_in, bool want_out)
{
	unsigned ev = (want_in ? LOOP_IN : 0) | (want_out ? LOOP_OUT : 0);
	if (s->ssl && (want_in || want_out) && s->want)
		ev |= s->want; /* TLS may need the other direction to progress */
	return ev;
}

void conn_update_interest(struct conn *c)
{
	if (c->dead)
		return;
	conn_charge(c);
	size_t cap = c->proxy->cfg.limits.buf_cap;
	/* Reads wait while the budget has nothing for this connection: with no
	 * read interest armed, a socket the proxy does not drain cannot spin. */
	bool mem = conn_read_room(c, 1) > 0;
	bool cin_room = mem && c->cin.len < cap;
	bool cout_busy = c->cout.len > c->hold; /* held bytes wait for more data */
	bool uin_room = mem && c->uin.len<cap, uout_busy = c->uout.len> 0;
	bool c_in = false, c_out = cout_busy, u_in = false, u_out = uout_busy;
	switch (c->state) {
	case ST_READ_HEAD:
		c_in = cin_room && !cout_busy;
		break;
	case ST_RESOLVE:
		break;
	case ST_CONNECT_UPSTREAM:
		u_out = true;
		break;
	case ST_TLS_CLIENT:
		c_in = !cout_busy; /* the handshake: TLS state is charged at admission */
		break;
	case ST_TLS_UPSTREAM:
		u_in = true;
		break;
	case ST_TUNNEL:
		c_in = mem && c->piped[0] == 0 && !c->half_closed[0];
		u_out = u_out || c->piped[0] > 0;
		u_in = mem && c->piped[1] == 0 && !c->half_closed[1];
		c_out = c_out || c->piped[1] > 0;
		break;
	case ST_FORWARD:
		c_in = cin_room && c->req_body.state != BODY_DONE;
		u_in = uin_room && !c->upstream.eof; /* at EOF: wait for the agent, do not spin */
		break;
	case ST_WEBSOCKET:
		c_in = cin_room && !c->client.eof;
		u_in = uin_room;
		break;
	case ST_CLOSING:
		c_in = c->lingering;
		break;
	}
	if (c->cio)
		loop_io_modify(c->cio, side_interest(&c->client, c_in, c_out), NULL);
	if (c->uio)
		loop_io_modify(c->uio, side_interest(&c->upstream, u_in, u_out), NULL);
	note_paused(c, c_in, u_in);
}

/* Writes as much of b as the stream takes: the bytes written, or -1 on a
 * dead peer. */
static ssize_t flush(struct stream *s, struct buf *b, size_t hold)
{
	size_t sent = 0;
	while (b->len > hold) {
		ssize_t n = stream_write(s, b->data, b->len - hold);
		if (n == STREAM_AGAIN)
			break;
		if (n <= 0)
			return -1;
		buf_consume(b, (size_t)n);
		sent += (size_t)n;
	}
	return (ssize_t)sent;
}

/* Scrubs secrets from what is about to reach the agent (see conn.masking). */
static void scrub_client_output(struct conn *c)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	size_t l = secret_echo_max_len(cfg->creds, cfg->inference);
	if (!c->masking || l == 0 || c->cout.len == 0)
		return;
	if (secret_echo_mask(cfg->creds, cfg->inference, c->cout.data, c->cout.len) > 0)
		audit_decision(c, "http", "deny", "credential_echo_masked", NULL, NULL,
			       "a secret in the upstream's answer was masked");
	bool done = c->state != ST_FORWARD;
	c->hold = done ? 0 : (c->cout.len < l - 1 ? c->cout.len : l - 1);
}

#define STEPS_MAX 64 /* per event: stay fair to the other connections */

static enum step_result step_state(struct conn *c)
{
	switch (c->state) {
	case ST_READ_HEAD:
		return request_head_step(c);
	case ST_RESOLVE:
		return STEP_WAIT; /* on_resolved() moves on */
	case ST_CONNECT_UPSTREAM:
		return upstream_connect_step(c);
	case ST_TLS_CLIENT:
		return tls_accept_step(c);
	case ST_TLS_UPSTREAM:
		return tls_connect_step(c);
	case ST_TUNNEL:
		return tunnel_step(c);
	case ST_FORWARD:
		return forward_step(c);
	case ST_WEBSOCKET:
		return proxy_ws_step(c);
	case ST_CLOSING:
		if (c->cout.len > 0)
			return STEP_WAIT;
		if (conn_linger_start(c) && !conn_linger_step(c))
			return STEP_WAIT;
		conn_close(c);
		return STEP_CLOSED;
	}
	return STEP_WAIT;
}

/* Flushes both sides, then steps the current state once. */
static enum step_result step_once(struct conn *c)
{
	scrub_client_output(c);
	ssize_t out = flush(&c->client, &c->cout, c->hold), up = 0;
	if (out >= 0 && c->upstream.fd >= 0 && c->state != ST_CONNECT_UPSTREAM)
		up = flush(&c->upstream, &c->uout, 0);
	if (out < 0 || up < 0) {
		conn_close(c);
		return STEP_CLOSED;
	}
	enum step_result r = step_state(c);
	/* conn_close() may run deep inside a step (a read that sees the peer
	 * gone): the flag has the last word. */
	if (c->dead)
		return STEP_CLOSED;
	return r == STEP_WAIT && (out > 0 || up > 0) ? STEP_PROGRESS : r;
}

void conn_step(struct conn *c)
{
	if (c->dead)
		return;
	bool moved = false;
	for (int i = 0; i < STEPS_MAX; i++) {
		enum step_result r = step_once(c);
		if (r == STEP_CLOSED)
			return;
		if (r == STEP_WAIT)
			break;
		moved = true;
	}
	/* Bytes produced by the last step are scrubbed and flushed now. */
	scrub_client_output(c);
	if (flush(&c->client, &c->cout, c->hold) < 0) {
		conn_close(c);
		return;
	}
	/* The first head's deadline runs from accept (armed there): bytes
	 * trickled in one at a time must not extend it (slowloris). */
	if (moved && !c->lingering && !(c->state == ST_READ_HEAD && c->mode == MODE_NONE))
		loop_timer_set(c->timer, c->proxy->cfg.limits.idle_timeout_ms, 0, NULL);
	conn_update_interest(c);
}

static void on_conn_io(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	struct conn *c = data;
	if (events & (LOOP_IN | LOOP_HUP | LOOP_ERR))
		stream_readable(fd == c->upstream.fd ? &c->upstream : &c->client);
	if (fd == c->upstream.fd && c->state == ST_READ_HEAD && (events & (LOOP_ERR | LOOP_HUP))) {
		upstream_drop(c); /* an idle kept-alive upstream went away */
		conn_step(c);
		return;
	}
	if ((events & (LOOP_ERR)) && c->state != ST_CONNECT_UPSTREAM) {
		conn_close(c);
		return;
	}
	conn_step(c);
}

static void on_conn_timer(struct loop *l, struct loop_timer *t, void *data)
{
	struct conn *c = data;
	if (c->lingering) {
		conn_close(c); /* the agent kept sending: enough */
		return;
	}
	if (c->transparent && c->state == ST_READ_HEAD && c->mode == MODE_NONE && c->cin.len == 0) {
		/* Slowloris on the transparent path: no ClientHello or request
		 * head in time; nothing can be said in a protocol not yet known. */
		c->port = c->port ? c->port : c->orig_port;
		audit_decision(c, "connect", "deny", "head_timeout", NULL, NULL,
			       "no TLS ClientHello or request head in time");
		conn_close(c);
		return;
	}
	if (c->state == ST_READ_HEAD && c->mode == MODE_NONE && c->cin.len > 0) {
		reply_error(c, 408, "request_timeout", "request head not received in time",
			    "head_timeout");
		conn_step(c);
		return;
	}
	audit_decision(c, "connect", "deny", "idle_timeout", NULL, NULL, NULL);
	conn_close(c);
}

int conn_add_upstream_watch(struct conn *c, os_error *err);
int conn_add_upstream_watch(struct conn *c, os_error *err)
{
	return loop_io_add(c->proxy->loop, c->upstream.fd, LOOP_OUT, 0, on_conn_io, c, &c->uio,
			   err);
}

static void accept_one(struct proxy *p, int fd, const struct sockaddr_storage *peer,
		       bool transparent)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return;
	}
	c->proxy = p;
	c->peer = *peer;
	socklen_t len = sizeof c->local;
	getsockname(fd, (struct sockaddr *)&c->local, &len);
	if (transparent)
		transparent_accepted(c, fd);
	stream_init(&c->client, fd);
	stream_init(&c->upstream, -1);
	for (int d = 0; d < 2; d++)
		c->pipes[d][0] = c->pipes[d][1] = -1;
	size_t cap = p->cfg.limits.buf_cap;
	buf_init(&c->cin, cap);
	buf_init(&c->cout, cap);
	buf_init(&c->uin, cap);
	buf_init(&c->uout, cap);
	http_parser_init(&c->parser, NULL);
	http_parser_init(&c->rparser, NULL);
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->n_conns++;
	if (loop_io_add(p->loop, fd, LOOP_IN, 0, on_conn_io, c, &c->cio, NULL) < 0 ||
	    loop_timer_add(p->loop, p->cfg.limits.head_timeout_ms, 0, on_conn_timer, c, &c->timer,
			   NULL) < 0) {
		conn_close(c);
		return;
	}
	if (p->n_conns > p->cfg.limits.max_conns) {
		reply_error(c, 503, "too_many_connections",
			    "connection limit of this sandbox reached", "conn_limit");
		conn_step(c);
	} else if (!budget_admits(&p->budget, PROXY_CONN_OVERHEAD + PROXY_TLS_OVERHEAD)) {
		reply_error(c, 503, "proxy_memory_budget",
			    "the proxy's memory budget for this sandbox is exhausted",
			    "proxy_memory_budget");
		conn_step(c);
	} else {
		conn_charge(c);
		proxy_identify_at_accept(c);
	}
}

/* Large, so a flood costs few /proc snapshots (each walks every fd of the
 * sandbox); one loop turn still serves the other connections after it. */
#define ACCEPT_BATCH 512

/* Accepts a batch first, then sets each connection up: the callers of the
 * whole batch are looked up in one snapshot of /proc taken after the last
 * accept, so every socket of the batch is in it. */
static void accept_batch(struct proxy *p, int lfd, bool transparent)
{
	static struct sockaddr_storage peer[ACCEPT_BATCH]; /* one loop thread */
	static int fds[ACCEPT_BATCH];
	int n = 0;
	while (n < ACCEPT_BATCH) {
		socklen_t len = sizeof peer[n];
		int fd = accept4(lfd, (struct sockaddr *)&peer[n], &len,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warn("proxy: accept: %s", strerror(errno));
			break;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		proxy_cap_socket_buffers(fd);
		fds[n++] = fd;
	}
	if (p->cfg.identity)
		identity_batch_begin(p->cfg.identity);
	for (int i = 0; i < n; i++)
		accept_one(p, fds[i], &peer[i], transparent);
	if (p->cfg.identity)
		identity_batch_end(p->cfg.identity);
}

static void on_accept(struct loop *l, struct loop_io *w, int lfd, unsigned events, void *data)
{
	accept_batch(data, lfd, false);
}

static void on_accept_transparent(struct loop *l, struct loop_io *w, int lfd, unsigned events,
				  void *data)
{
	accept_batch(data, lfd, true);
}

void proxy_set_dns_memory(struct proxy *p, proxy_dns_memory fn, void *user)
{
	p->dns_memory = fn;
	p->dns_memory_user = user;
}

bool proxy_dns_handed_out(const struct proxy *p, const char *name, const struct ip_addr *a)
{
	return p->dns_memory && p->dns_memory(p->dns_memory_user, name, a);
}

int proxy_add_transparent(struct proxy *p, int fd, os_error *err)
{
	if (p->tp_lio)
		return os_error_set(err, EEXIST, "the proxy has a transparent listener already");
	if (loop_io_add(p->loop, fd, LOOP_IN, 0, on_accept_transparent, p, &p->tp_lio, err) < 0)
		return os_error_prefix(err, "watching the transparent listener");
	p->tp_fd = fd;
	return 0;
}

int proxy_new(struct loop *l, const struct proxy_config *cfg, struct proxy **out, os_error *err)
{
	struct proxy *p = calloc(1, sizeof *p);
	if (!p)
		return os_error_set(err, ENOMEM, "out of memory");
	p->loop = l;
	p->cfg = *cfg;
	p->tp_fd = -1;
	if (!p->cfg.limits.buf_cap)
		proxy_limits_default(&p->cfg.limits);
	budget_init(&p->budget, p->cfg.limits.memory_budget, p->cfg.limits.max_upstreams);
	if (secret_echo_new(&p->echo, err) < 0) {
		free(p);
		return -1;
	}
	p->denials = denials_new();
	if (!p->denials) {
		secret_echo_free(p->echo);
		free(p);
		return os_error_set(err, ENOMEM, "out of memory");
	}
	if (loop_io_add(l, cfg->listen_fd, LOOP_IN, 0, on_accept, p, &p->lio, err) < 0) {
		denials_free(p->denials);
		secret_echo_free(p->echo);
		free(p);
		return os_error_prefix(err, "watching the proxy listener");
	}
	*out = p;
	return 0;
}

void proxy_policy_changed(struct proxy *p)
{
	p->serial++;
	struct policy_gen *g = policy_holder_acquire(p->cfg.policy);
	for (struct conn *c = p->conns, *next; c; c = next) {
		next = c->next;
		if (c->mode != MODE_TUNNEL || !c->identified)
			continue;
		/* Re-judge the tunnel under the new generation; close it if the answer changed. */
		struct policy_decision d;
		policy_decide_connect(g, c->host, c->port, c->chain, c->n_chain, &d);
		if (d.verdict == POLICY_DENY) {
			audit_decision(c, "connect", "deny", policy_reason_name(d.reason), NULL,
				       NULL, "tunnel closed by a policy update");
			conn_close(c);
		}
	}
	policy_unref(g);
}

void proxy_close_secret_tunnels(struct proxy *p)
{
	for (struct conn *c = p->conns, *next; c; c = next) {
		next = c->next;
		/* Any tunnel, also one still connecting or checking its SNI. */
		if (c->mode != MODE_TUNNEL || c->state == ST_CLOSING || !conn_holds_secret(c))
			continue;
		audit_decision(c, "connect", "deny", "tunnel_to_secret_holder", NULL, NULL,
			       "this upstream has received a secret of the sandbox; its bytes "
			       "cannot be scrubbed in an uninspected tunnel");
		conn_close(c);
	}
}

void proxy_free(struct proxy *p)
{
	if (!p)
		return;
	p->freeing = true;
	while (p->conns)
		conn_close(p->conns);
	if (p->lio)
		loop_io_remove(p->lio);
	close(p->cfg.listen_fd);
	if (p->tp_lio)
		loop_io_remove(p->tp_lio);
	if (p->tp_fd >= 0)
		close(p->tp_fd);
	identity_ctx_free(p->cfg.identity); /* owned since proxy_new / proxy_set_identity */
	secret_echo_free(p->echo);
	denials_free(p->denials);
	free(p);
}
