/* nb_client.c - netbench's clients: `bulk` (one transfer of N bytes, direct
 * or through a CONNECT tunnel, reported in Gbit/s) and `idle` (N open CONNECT
 * tunnels held until stdin closes, for memory measurements). They connect
 * only to the literal addresses given and never hold more than they report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "netbench.h"
#include "parse.h"

#define NB_READ_CHUNK (1024 * 1024)
#define NB_TIMEOUT_S 30

/* Connects to the target, through the proxy's CONNECT when one is given. */
static int open_stream(const struct nb_addr *target, const struct nb_addr *proxy, os_error *err)
{
	_cleanup_close_ int fd = nb_connect(proxy ? proxy : target, NB_TIMEOUT_S, err);
	if (fd < 0)
		return -1;
	if (proxy && nb_http_connect(fd, target->text, err) < 0)
		return -1;
	return steal_fd(fd);
}

int nb_bulk(const struct nb_addr *target, const struct nb_addr *proxy, uint64_t bytes,
	    os_error *err)
{
	_cleanup_free_ char *buf = malloc(NB_READ_CHUNK);
	_cleanup_close_ int fd = open_stream(target, proxy, err);
	char req[32];
	uint64_t got = 0;
	if (fd < 0)
		return -1;
	if (!buf)
		return os_error_set(err, ENOMEM, "read buffer");
	if (str_format(req, sizeof req, err, "%llu\n", (unsigned long long)bytes) < 0)
		return -1;
	double t0 = nb_now();
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		return os_error_errno(err, "sending the byte count");
	for (;;) {
		ssize_t r = read(fd, buf, NB_READ_CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return os_error_errno(err, "reading after %llu of %llu bytes",
					      (unsigned long long)got, (unsigned long long)bytes);
		if (r == 0)
			break;
		got += (uint64_t)r;
	}
	double secs = nb_now() - t0;
	if (got != bytes)
		return os_error_set(err, EPROTO, "received %llu bytes, expected %llu",
				    (unsigned long long)got, (unsigned long long)bytes);
	/* stdout: the figure alone, for scripts; stderr: what it came from. */
	printf("%.3f\n", (double)bytes * 8 / secs / 1e9);
	fprintf(stderr, "bulk: %llu bytes in %.3f s via %s\n", (unsigned long long)bytes, secs,
		proxy ? proxy->text : "direct");
	return 0;
}

static void close_all(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

int nb_idle(const struct nb_addr *target, const struct nb_addr *proxy, unsigned count,
	    os_error *err)
{
	_cleanup_free_ int *fds = calloc(count, sizeof *fds);
	unsigned n = 0;
	char c;
	if (!fds)
		return os_error_set(err, ENOMEM, "%u descriptors", count);
	nb_raise_fd_limit();
	for (; n < count; n++) {
		if ((fds[n] = open_stream(target, proxy, err)) < 0) {
			close_all(fds, n);
			return os_error_prefix(err, "tunnel %u of %u", n + 1, count);
		}
	}
	printf("ready %u\n", n);
	fflush(stdout);
	for (;;) { /* hold the tunnels until stdin reaches EOF (or fails) */
		ssize_t r = read(STDIN_FILENO, &c, 1);
		if (r == 0 || (r < 0 && errno != EINTR))
			break;
	}
	close_all(fds, n);
	return 0;
}
