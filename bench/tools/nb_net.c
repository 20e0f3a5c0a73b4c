/* nb_net.c - netbench's socket plumbing: IPv4 literal parsing, connect,
 * listen and the client side of an HTTP CONNECT. It never resolves a name:
 * a benchmark must only ever reach the addresses it was handed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "netbench.h"
#include "parse.h"

/* A CONNECT answer head bigger than this is not a proxy we want to measure. */
#define NB_CONNECT_HEAD_MAX 4096

int nb_addr_parse2(const char *host, const char *port, struct nb_addr *out, os_error *err)
{
	uint64_t p;
	memset(out, 0, sizeof *out);
	out->sin.sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &out->sin.sin_addr) != 1)
		return os_error_set(err, EINVAL, "\"%s\" is not an IPv4 address literal", host);
	if (parse_u64_str(port, 1, 65535, &p, err) < 0)
		return os_error_prefix(err, "port \"%s\"", port);
	out->sin.sin_port = htons((uint16_t)p);
	return str_format(out->text, sizeof out->text, err, "%s:%u", host, (unsigned)p);
}

int nb_addr_parse(const char *spec, struct nb_addr *out, os_error *err)
{
	const char *colon = strrchr(spec, ':');
	char host[INET_ADDRSTRLEN];
	memset(out, 0, sizeof *out);
	size_t len = colon ? (size_t)(colon - spec) : 0;
	if (!colon || len == 0 || len >= sizeof host)
		return os_error_set(err, EINVAL, "expected IPV4:PORT, got \"%s\"", spec);
	memcpy(host, spec, len);
	host[len] = '\0';
	return nb_addr_parse2(host, colon + 1, out, err);
}

/* A name is only ever written into a CONNECT line for the proxy to judge and
 * resolve; netbench itself never looks it up. */
int nb_target_parse(const char *spec, struct nb_addr *out, os_error *err)
{
	const char *colon = strrchr(spec, ':');
	uint64_t p;
	if (nb_addr_parse(spec, out, NULL) == 0)
		return 0;
	if (!colon || colon == spec || (size_t)(colon - spec) > 253)
		return os_error_set(err, EINVAL, "expected HOST:PORT, got \"%s\"", spec);
	for (const char *c = spec; c < colon; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'))
			return os_error_set(err, EINVAL, "bad character in host of \"%s\"", spec);
	}
	if (parse_u64_str(colon + 1, 1, 65535, &p, err) < 0)
		return os_error_prefix(err, "port of \"%s\"", spec);
	memset(out, 0, sizeof *out);
	out->sin.sin_family = AF_UNSPEC; /* a name: usable through a proxy only */
	return str_copy(out->text, sizeof out->text, spec, err);
}

int nb_connect(const struct nb_addr *a, int timeout_s, os_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	struct timeval tv = { .tv_sec = timeout_s };
	if (a->sin.sin_family != AF_INET)
		return os_error_set(err, EINVAL, "%s: direct connections need an IPv4 literal",
				    a->text);
	if (fd < 0)
		return os_error_errno(err, "socket");
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
		return os_error_errno(err, "socket options");
	if (connect(fd, (const struct sockaddr *)&a->sin, sizeof a->sin) < 0)
		return os_error_errno(err, "connecting to %s", a->text);
	return steal_fd(fd);
}

int nb_listen(const struct nb_addr *a, os_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0)
		return os_error_errno(err, "socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (const struct sockaddr *)&a->sin, sizeof a->sin) < 0 || listen(fd, 4096) < 0)
		return os_error_errno(err, "listening on %s", a->text);
	return steal_fd(fd);
}

/* Reads byte by byte up to the blank line so no tunnelled byte is consumed. */
static int read_head(int fd, char *head, size_t cap, os_error *err)
{
	size_t n = 0;
	while (n + 1 < cap) {
		ssize_t r = read(fd, head + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return os_error_errno(err, "reading the CONNECT answer");
		if (r == 0)
			return os_error_set(err, ECONNRESET,
					    "proxy closed before answering CONNECT");
		n++;
		if (n >= 4 && !memcmp(head + n - 4, "\r\n\r\n", 4)) {
			head[n] = '\0';
			return 0;
		}
	}
	return os_error_set(err, EMSGSIZE, "CONNECT answer head over %zu bytes", cap);
}

int nb_http_connect(int fd, const char *target, os_error *err)
{
	char req[256], head[NB_CONNECT_HEAD_MAX];
	if (str_format(req, sizeof req, err, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target,
		       target) < 0)
		return -1;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		return os_error_errno(err, "sending CONNECT %s", target);
	if (read_head(fd, head, sizeof head, err) < 0)
		return -1;
	if (strncmp(head, "HTTP/1.1 200", 12) && strncmp(head, "HTTP/1.0 200", 12)) {
		char *eol = strchr(head, '\r');
		if (eol)
			*eol = '\0';
		return os_error_set(err, EACCES, "CONNECT %s refused: \"%s\"", target, head);
	}
	return 0;
}

void nb_raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl); /* best effort: the caller sees EMFILE */
	}
}

double nb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
