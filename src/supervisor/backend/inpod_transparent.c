/* inpod_transparent.c - the transparent path of the inpod backend: clients
 * that ignore the proxy variables (Node's fetch, Go programs built without
 * proxy support, anything told --noproxy) connect straight to the address
 * DNS gave them. Inside the sandbox's namespace a nat chain redirects such
 * connections, to the operator's ports only, to a listener the supervisor
 * made in that namespace, and every DNS query (UDP and TCP) to resolver
 * sockets there too. The proxy then learns the original destination (SO_ORIGINAL_DST in
 * this namespace's conntrack) and judges it like a CONNECT.
 *
 * The fence's filter chains are not changed: the nat chain runs before
 * them, and what it redirects is loopback traffic to the supervisor's own
 * sockets. Any other direct connection is still refused and recorded. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "inpod.h"
#include "json.h"
#include "nft.h"

/* A socket of `type` on 127.0.0.1, an ephemeral port, inside the sandbox's
 * namespace (lo is up by now). The agent cannot take the port first: it
 * does not run yet. */
static int loopback_socket(const struct inpod *p, int type, const char *what, int *fd_out,
			   uint16_t *port, os_error *err)
{
	int fd = -1;
	if (inpod_inside_socket(p, AF_INET, type, &fd, err) < 0)
		return -1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 1024) < 0) ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		os_error_errno(err, "transparent %s listener", what);
		close(fd);
		return -1;
	}
	*fd_out = fd;
	*port = ntohs(a.sin_port);
	return 0;
}

int inpod_transparent_up(struct inpod *p, const struct backend_descriptor *d, os_error *err)
{
	p->tp_tcp_fd = p->tp_dns_fd = p->tp_dns_tcp_fd = -1;
	if (d->transparent_off)
		return 0;
	struct nft_redirect_spec spec = { .n_tcp_ports = d->n_transparent_ports,
					  .keep_addr = p->host_addr };
	memcpy(spec.tcp_ports, d->transparent_ports,
	       d->n_transparent_ports * sizeof d->transparent_ports[0]);
	if ((spec.n_tcp_ports &&
	     loopback_socket(p, SOCK_STREAM, "TCP", &p->tp_tcp_fd, &spec.tcp_to, err) < 0) ||
	    loopback_socket(p, SOCK_DGRAM, "DNS", &p->tp_dns_fd, &spec.dns_to, err) < 0 ||
	    loopback_socket(p, SOCK_STREAM, "DNS over TCP", &p->tp_dns_tcp_fd, &spec.dns_tcp_to,
			    err) < 0)
		return -1;
	_cleanup_json_ json_t *rules = nft_redirect_ruleset(&spec, err);
	if (!rules || nft_apply(p->netns_fd, rules, err) < 0)
		return -1;
	p->tp_probe_port = spec.n_tcp_ports ? spec.tcp_ports[0] : 0;
	return 0;
}

void inpod_transparent(void *state, struct backend_transparent *out)
{
	struct inpod *p = state;
	out->tcp_fd = p->tp_tcp_fd;
	out->dns_fd = p->tp_dns_fd;
	out->dns_tcp_fd = p->tp_dns_tcp_fd;
	p->tp_tcp_fd = p->tp_dns_fd = p->tp_dns_tcp_fd = -1; /* the proxy owns them now */
}

void inpod_transparent_close(struct inpod *p)
{
	if (p->tp_tcp_fd >= 0)
		close(p->tp_tcp_fd);
	if (p->tp_dns_fd >= 0)
		close(p->tp_dns_fd);
	if (p->tp_dns_tcp_fd >= 0)
		close(p->tp_dns_tcp_fd);
	p->tp_tcp_fd = p->tp_dns_fd = p->tp_dns_tcp_fd = -1;
}
