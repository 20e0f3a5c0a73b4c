/* inpod_confirm.c - before anything untrusted runs, try to break the inpod
 * boundary from inside the sandbox namespace: a direct TCP connect and a UDP
 * send to canaries the supervisor owns must fail (and the canaries must see
 * nothing), IPv6 must go nowhere, and the proxy must answer. Probes only
 * ever target the supervisor side of the veth: nothing leaves the machine. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "inpod.h"
#include "log.h"
#include "netns.h"
#include "nflog.h"

#define CONFIRM_TIMEOUT_MS 1000

/* A canary on the supervisor side, on an ephemeral port the fence does not allow. */
static int canary_open(const struct inpod *p, int type, struct sockaddr_in *addr, int *out,
		       os_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return os_error_errno(err, "canary socket");
	socklen_t len = sizeof(*addr);
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr = p->host_addr;
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) < 0)
		return os_error_errno(err, "binding canary");
	if (type == SOCK_STREAM && listen(fd, 4) < 0)
		return os_error_errno(err, "canary listen");
	if (getsockname(fd, (struct sockaddr *)addr, &len) < 0)
		return os_error_errno(err, "canary getsockname");
	*out = steal_fd(fd);
	return 0;
}

int inpod_inside_socket(const struct inpod *p, int domain, int type, int *out, os_error *err)
{
	int saved = -1;
	if (netns_enter(p->netns_fd, &saved, err) < 0)
		return -1;
	int fd = socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int saved_errno = errno;
	netns_leave(saved);
	if (fd < 0) {
		errno = saved_errno;
		return os_error_errno(err, "socket inside the sandbox");
	}
	*out = fd;
	return 0;
}

/* Connects with a deadline; returns the connect outcome as an errno (0 = connected). */
static int connect_outcome(int fd, const struct sockaddr *a, socklen_t len)
{
	if (connect(fd, a, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int n;
	while ((n = poll(&pfd, 1, CONFIRM_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	if (n == 0)
		return ETIMEDOUT;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
		return errno;
	return soerr;
}

static int canary_untouched(int canary, const char *what, os_error *err)
{
	char byte;
	int fd = what[0] == 'T' ? accept4(canary, NULL, NULL, SOCK_CLOEXEC)
				: (int)recv(canary, &byte, 1, MSG_DONTWAIT);
	if (fd >= 0 || errno != EAGAIN) {
		if (what[0] == 'T' && fd >= 0)
			close(fd);
		return os_error_set(err, EPERM, "%s canary was reached from inside the sandbox",
				    what);
	}
	return 0;
}

static int probe_tcp(const struct inpod *p, os_error *err)
{
	struct sockaddr_in canary_addr;
	_cleanup_close_ int canary = -1, s = -1;
	if (canary_open(p, SOCK_STREAM, &canary_addr, &canary, err) < 0 ||
	    inpod_inside_socket(p, AF_INET, SOCK_STREAM, &s, err) < 0)
		return -1;
	int got = connect_outcome(s, (struct sockaddr *)&canary_addr, sizeof(canary_addr));
	if (got != ECONNREFUSED)
		return os_error_set(err, EPERM,
				    "direct TCP connect from inside was not refused (%s)",
				    got ? strerror(got) : "it connected");
	return canary_untouched(canary, "TCP", err);
}

static int probe_udp(const struct inpod *p, os_error *err)
{
	struct sockaddr_in canary_addr;
	_cleanup_close_ int canary = -1, s = -1;
	if (canary_open(p, SOCK_DGRAM, &canary_addr, &canary, err) < 0 ||
	    inpod_inside_socket(p, AF_INET, SOCK_DGRAM, &s, err) < 0)
		return -1;
	/* The fence rejects in the output hook, so the send itself must fail. */
	if (sendto(s, "x", 1, 0, (struct sockaddr *)&canary_addr, sizeof(canary_addr)) >= 0)
		return os_error_set(err, EPERM, "direct UDP send from inside was not blocked");
	return canary_untouched(canary, "UDP", err);
}

static int probe_ipv6(const struct inpod *p, os_error *err)
{
	_cleanup_close_ int s = -1;
	os_error local = { 0 };
	if (inpod_inside_socket(p, AF_INET6, SOCK_STREAM, &s, &local) < 0)
		return local.code == EAFNOSUPPORT ? 0
						  : os_error_set(err, local.code, "%s", local.msg);
	struct sockaddr_in6 dst = { .sin6_family = AF_INET6, .sin6_port = htons(80) };
	inet_pton(AF_INET6, "2001:db8::1", &dst.sin6_addr); /* documentation prefix */
	if (connect_outcome(s, (struct sockaddr *)&dst, sizeof(dst)) == 0)
		return os_error_set(err, EPERM, "IPv6 connect from inside succeeded");
	return 0;
}

static int probe_proxy(const struct inpod *p, os_error *err)
{
	_cleanup_close_ int s = -1;
	if (inpod_inside_socket(p, AF_INET, SOCK_STREAM, &s, err) < 0)
		return -1;
	struct sockaddr_in proxy = { .sin_family = AF_INET,
				     .sin_addr = p->host_addr,
				     .sin_port = htons(p->proxy_port) };
	int got = connect_outcome(s, (struct sockaddr *)&proxy, sizeof(proxy));
	if (got != 0) {
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &p->host_addr, a, sizeof(a));
		return os_error_set(err, got, "proxy %s:%u unreachable from inside: %s", a,
				    p->proxy_port, strerror(got));
	}
	return 0;
}

/* The transparent path is no part of the boundary, but a direct connect to
 * one of its ports (to a documentation address: it goes nowhere else) must
 * now reach the proxy's listener; if it does not, say so before any agent
 * relies on it (the fence still holds either way). */
static void probe_transparent(const struct inpod *p)
{
	_cleanup_close_ int s = -1;
	os_error err = { 0 };
	if (!p->tp_probe_port || inpod_inside_socket(p, AF_INET, SOCK_STREAM, &s, &err) < 0)
		return;
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(p->tp_probe_port) };
	inet_pton(AF_INET, "192.0.2.1", &dst.sin_addr);
	int got = connect_outcome(s, (struct sockaddr *)&dst, sizeof(dst));
	if (got != 0)
		log_warn("transparent path: a direct connect to port %u did not reach the proxy "
			 "(%s): such connections are refused",
			 p->tp_probe_port, strerror(got));
}

static void count_probe(const struct nflog_packet *pkt, void *data)
{
	(void)pkt;
	(*(unsigned *)data)++;
}

/* The probes above were logged by the fence; the monitor must have seen them
 * (which also keeps them out of the workload's audit trail). */
static int probe_monitor(struct inpod *p, os_error *err)
{
	unsigned seen = 0;
	if (nflog_drain(p->nflog, count_probe, &seen, &p->lost_records, err) < 0)
		return -1;
	if (seen == 0)
		return os_error_set(err, EIO, "the bypass monitor saw none of the probes");
	return 0;
}

int inpod_confirm(void *state, os_error *err)
{
	struct inpod *p = state;
	if (probe_tcp(p, err) < 0)
		return os_error_prefix(err, "probe tcp");
	if (probe_udp(p, err) < 0)
		return os_error_prefix(err, "probe udp");
	if (probe_ipv6(p, err) < 0)
		return os_error_prefix(err, "probe ipv6");
	if (probe_proxy(p, err) < 0)
		return os_error_prefix(err, "probe proxy");
	probe_transparent(p);
	if (probe_monitor(p, err) < 0)
		return os_error_prefix(err, "probe monitor");
	return 0;
}
