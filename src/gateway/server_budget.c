/* server_budget.c - who may hold a gateway connection. A connection is
 * "pending" from accept until a request on it authenticated; pending ones
 * are budgeted per listener and per TCP peer address, and when a budget is
 * full the oldest pending connection of that budget is closed to make room:
 * anonymous clients can only push each other out, never the Unix socket's
 * admin, an authenticated supervisor session or a client that sends its
 * request at once. Never refuses an authenticated supervisor session while
 * any connection of lower standing could make room. */
#include <errno.h>
#include <sys/resource.h>

#include "log.h"
#include "server_internal.h"

#define TOTAL_WANTED 4096 /* every connection, if the fd limit allows */
#define FDS_SPARE 128 /* for SQLite, the driver, log files, children */
#define PENDING_TCP_MAX 1024
#define PENDING_UNIX_MAX 64
#define PENDING_PEER_MAX 256 /* per TCP source address */
#define UNIX_RESERVE 128 /* TCP connections never take these */
#define SESSION_RESERVE 512 /* long admin streams never take these */

/* The fd limit bounds the budget: a gateway out of descriptors accepts
 * nothing, so it raises its soft limit to the hard one and stays below. */
void server_budget_init(struct server *s)
{
	struct rlimit rl;
	size_t total = TOTAL_WANTED;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			getrlimit(RLIMIT_NOFILE, &rl);
		}
		if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < total + FDS_SPARE)
			total = rl.rlim_cur > FDS_SPARE * 2 ? rl.rlim_cur - FDS_SPARE : FDS_SPARE;
	}
	s->total_max = total;
}

static void pending_unlink(struct conn *c)
{
	struct server *s = c->srv;
	int l = c->listener;
	if (c->pprev)
		c->pprev->pnext = c->pnext;
	else
		s->pending_head[l] = c->pnext;
	if (c->pnext)
		c->pnext->pprev = c->pprev;
	else
		s->pending_tail[l] = c->pprev;
	c->pprev = c->pnext = NULL;
	s->npending[l]--;
}

static size_t peer_pending(const struct server *s, uint32_t peer)
{
	size_t n = 0;
	for (const struct conn *c = s->pending_head[GW_LISTENER_TCP]; c; c = c->pnext)
		n += c->peer_addr == peer;
	return n;
}

/* Closes the oldest pending connection of listener l (of peer when
 * by_peer); false when there is none to close. */
static bool evict(struct server *s, int l, bool by_peer, uint32_t peer, const char *why)
{
	struct conn *c = s->pending_head[l];
	while (c && by_peer && c->peer_addr != peer)
		c = c->pnext;
	if (!c)
		return false;
	if (!s->evictions++ || s->evictions % 1000 == 0)
		log_warn("connection budget: %s: closing the oldest unauthenticated connection "
			 "(%zu closed so far)",
			 why, s->evictions);
	server_conn_close(c);
	return true;
}

bool server_budget_admit(struct server *s, int l, uint32_t peer)
{
	if (l == GW_LISTENER_TCP && s->nlistener[l] >= s->total_max - UNIX_RESERVE &&
	    !evict(s, l, false, 0, "the TCP listener is full"))
		return false;
	if (s->nconns >= s->total_max && !evict(s, l, false, 0, "every connection is taken") &&
	    !evict(s, !l, false, 0, "every connection is taken"))
		return false;
	size_t cap = l == GW_LISTENER_TCP ? PENDING_TCP_MAX : PENDING_UNIX_MAX;
	if (s->npending[l] >= cap)
		evict(s, l, false, 0,
		      l == GW_LISTENER_TCP ? "too many unauthenticated TCP connections"
					   : "too many unauthenticated Unix socket connections");
	if (l == GW_LISTENER_TCP && peer_pending(s, peer) >= PENDING_PEER_MAX)
		evict(s, l, true, peer, "too many unauthenticated connections from one address");
	return true;
}

void server_budget_add(struct conn *c, int l, uint32_t peer)
{
	struct server *s = c->srv;
	c->listener = l;
	c->peer_addr = peer;
	c->pending = true;
	c->pprev = s->pending_tail[l];
	if (c->pprev)
		c->pprev->pnext = c;
	else
		s->pending_head[l] = c;
	s->pending_tail[l] = c;
	s->npending[l]++;
	s->nlistener[l]++;
}

int server_budget_trust(struct conn *c, bool session, bool long_lived)
{
	struct server *s = c->srv;
	if (!session && long_lived &&
	    s->nlong >= s->total_max - SESSION_RESERVE - PENDING_TCP_MAX - PENDING_UNIX_MAX)
		return -1;
	if (c->pending)
		pending_unlink(c);
	c->pending = false;
	if (!session && long_lived && !c->counted_long) {
		c->counted_long = true;
		s->nlong++;
	}
	return 0;
}

void server_budget_remove(struct conn *c)
{
	struct server *s = c->srv;
	if (c->pending)
		pending_unlink(c);
	c->pending = false;
	if (c->counted_long)
		s->nlong--;
	s->nlistener[c->listener]--;
}
