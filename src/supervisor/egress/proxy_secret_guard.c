/* proxy_secret_guard.c - which connections lead to an upstream that holds a
 * secret of this sandbox (secret_echo.h), judged by name AND by address.
 *
 * By name alone, a second policy entry naming the same server another way
 * (another host name resolving to the same address, or the same host:port
 * allowed as a plain L4 tunnel for another binary) would reach the very
 * server that received the secret with nothing scrubbing its answers. So a
 * secret marks both the name and the connected address; answers from either
 * are scrubbed, and an uninspected tunnel to either is refused (its bytes
 * cannot be scrubbed), also one already open when the secret is first sent. */
#include "proxy_internal.h"
#include "secret_echo.h"

static uint16_t connected_port(const struct conn *c)
{
	return c->up_port ? c->up_port : c->port;
}

/* The name this connection's requests go to (inference: the backend's). */
static const char *upstream_name(const struct conn *c)
{
	return c->inference && c->up_host[0] ? c->up_host : c->host;
}

bool conn_holds_secret(const struct conn *c)
{
	const struct secret_echo *g = proxy_echo(c->proxy);
	return secret_echo_marked(g, upstream_name(c), connected_port(c)) ||
	       (c->dst[0] && secret_echo_marked(g, c->dst, connected_port(c)));
}

void conn_mark_secret_holder(struct conn *c)
{
	struct secret_echo *g = proxy_echo(c->proxy);
	uint16_t port = connected_port(c);
	bool fresh = !secret_echo_marked(g, upstream_name(c), port) ||
		     (c->dst[0] && !secret_echo_marked(g, c->dst, port));
	secret_echo_mark(g, upstream_name(c), port);
	if (c->dst[0])
		secret_echo_mark(g, c->dst, port);
	if (fresh) /* tunnels opened before this secret went out */
		proxy_close_secret_tunnels(c->proxy);
}
