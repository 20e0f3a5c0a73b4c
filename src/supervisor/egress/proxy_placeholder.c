/* proxy_placeholder.c - PLACEHOLDER proxy: a listener on the backend's proxy
 * address that accepts and immediately closes. It exists only so `confirm`
 * can prove the proxy path is reachable until the real proxy lands; it must
 * never forward a byte. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "proxy.h"

struct placeholder {
	int fd;
};

static int ph_start(const struct sockaddr *addr, socklen_t len, void **state, os_error *err)
{
	_cleanup_close_ int fd =
		socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return os_error_errno(err, "proxy placeholder: socket");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, addr, len) < 0)
		return os_error_errno(err, "proxy placeholder: bind");
	if (listen(fd, 64) < 0)
		return os_error_errno(err, "proxy placeholder: listen");
	struct placeholder *ph = malloc(sizeof(*ph));
	if (!ph)
		return os_error_set(err, ENOMEM, "proxy placeholder: out of memory");
	ph->fd = steal_fd(fd);
	*state = ph;
	return 0;
}

static int ph_fd(void *state)
{
	return ((struct placeholder *)state)->fd;
}

static int ph_dispatch(void *state, os_error *err)
{
	struct placeholder *ph = state;
	for (;;) {
		int c = accept4(ph->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0) {
			close(c);
			continue;
		}
		if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
			return 0;
		return os_error_errno(err, "proxy placeholder: accept");
	}
}

static void ph_stop(void *state)
{
	struct placeholder *ph = state;
	if (!ph)
		return;
	close(ph->fd);
	free(ph);
}

const struct proxy_ops proxy_placeholder_ops = {
	.name = "placeholder",
	.start = ph_start,
	.fd = ph_fd,
	.dispatch = ph_dispatch,
	.stop = ph_stop,
};
