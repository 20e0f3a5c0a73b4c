/* exec_forward.c - the relay of one `sandbox port-forward` connection (see
 * exec.h, docs/files.md): a process forked from the supervisor that has
 * already dialled the gateway back, enters only the sandbox's network
 * namespace and connects to 127.0.0.1:PORT there. The agent's server sees a
 * loopback peer; the fence on the sandbox's veth is not touched, so the
 * agent gains no inbound path of its own. Frames as exec's: 'i' bytes and
 * 'c' (half-close) from the client, 'o' bytes back, 'x' once the server
 * closed its side, 'E' when it could not be reached. */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "execframe.h"
#include "fdutil.h"

#define CHUNK 65536
#define TO_SERVER_MAX (1u << 20)

struct fwd {
	struct exec_sock sock;
	int server; /* -1 once closed */
	bool client_eof;
	struct buf from_client, to_server, frame;
};

__attribute__((noreturn)) static void end(struct fwd *f, uint8_t type, const char *msg)
{
	buf_reset(&f->frame);
	if (type == EXECFRAME_ERROR)
		execframe_put(&f->frame, type, msg, strlen(msg), NULL);
	else
		execframe_put_u32(&f->frame, EXECFRAME_EXIT, 0, NULL);
	exec_sock_write_all(&f->sock, f->frame.data, f->frame.len);
	exec_sock_end(&f->sock);
	_exit(type == EXECFRAME_ERROR ? 125 : 0);
}

static int connect_inside(const struct exec_pump_args *a, char *why, size_t cap)
{
	if (setns(a->join_pidfd, CLONE_NEWNET) < 0) {
		snprintf(why, cap, "port-forward: entering the sandbox's network: %s",
			 strerror(errno));
		return -1;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(a->forward_port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof sin) < 0) {
		snprintf(why, cap, "port-forward: connecting to 127.0.0.1:%u in the sandbox: %s",
			 a->forward_port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fd_set_nonblock(fd, true, NULL);
	return fd;
}

/* Client frames into to_server; false on a frame a forward does not take. */
static bool take_client(struct fwd *f)
{
	struct execframe fr;
	long n;
	while ((n = execframe_take((const uint8_t *)f->from_client.data, f->from_client.len, &fr,
				   NULL)) > 0) {
		if (fr.type == EXECFRAME_STDIN) {
			if (!f->client_eof &&
			    buf_append(&f->to_server, fr.payload, fr.len, NULL) < 0)
				return false;
		} else if (fr.type == EXECFRAME_STDIN_EOF) {
			f->client_eof = true;
		} else {
			return false;
		}
		buf_consume(&f->from_client, (size_t)n);
	}
	return n == 0;
}

static void write_server(struct fwd *f)
{
	while (f->to_server.len > 0) {
		ssize_t n = send(f->server, f->to_server.data, f->to_server.len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) /* the server reset: nothing more will arrive either */
			end(f, EXECFRAME_EXIT, NULL);
		buf_consume(&f->to_server, (size_t)n);
	}
	if (f->client_eof)
		shutdown(f->server, SHUT_WR);
}

static void read_server(struct fwd *f)
{
	static char chunk[CHUNK];
	ssize_t n = recv(f->server, chunk, sizeof chunk, 0);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		end(f, EXECFRAME_EXIT, NULL);
	buf_reset(&f->frame);
	if (execframe_put(&f->frame, EXECFRAME_STDOUT, chunk, (size_t)n, NULL) < 0 ||
	    exec_sock_write_all(&f->sock, f->frame.data, f->frame.len) < 0)
		_exit(0); /* the client is gone */
}

static void read_client(struct fwd *f)
{
	char chunk[CHUNK];
	ssize_t n = exec_sock_read(&f->sock, chunk, sizeof chunk);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		_exit(0); /* the client left: closing the server connection is all */
	if (buf_append(&f->from_client, chunk, (size_t)n, NULL) < 0)
		end(f, EXECFRAME_ERROR, "port-forward: client frames over the size limit");
}

void exec_forward_main(const struct exec_pump_args *a)
{
	struct fwd f = { .sock = a->sock };
	char why[256];
	buf_init(&f.from_client, EXECFRAME_MAX_PAYLOAD + 2 * EXECFRAME_HEAD + CHUNK);
	buf_init(&f.to_server, TO_SERVER_MAX + EXECFRAME_MAX_PAYLOAD);
	buf_init(&f.frame, CHUNK + EXECFRAME_HEAD + 64);
	fd_set_nonblock(f.sock.fd, false, NULL);
	f.server = connect_inside(a, why, sizeof why);
	close(a->join_pidfd);
	if (f.server < 0)
		end(&f, EXECFRAME_ERROR, why);
	if (a->early_len && buf_append(&f.from_client, a->early, a->early_len, NULL) < 0)
		end(&f, EXECFRAME_ERROR, "port-forward: early frames over the size limit");
	for (;;) {
		if (!take_client(&f))
			end(&f, EXECFRAME_ERROR,
			    "port-forward: the client sent a frame this relay "
			    "does not take");
		write_server(&f);
		bool take = f.to_server.len < TO_SERVER_MAX;
		bool buffered = take && exec_sock_pending(&f.sock);
		struct pollfd pf[2] = {
			{ .fd = take ? f.sock.fd : -1, .events = POLLIN },
			{ .fd = f.server, .events = POLLIN | (f.to_server.len ? POLLOUT : 0) },
		};
		if (poll(pf, 2, buffered ? 0 : -1) < 0 && errno != EINTR)
			end(&f, EXECFRAME_ERROR, "port-forward: poll failed");
		if (pf[1].revents & (POLLIN | POLLHUP | POLLERR))
			read_server(&f);
		if ((pf[0].revents || buffered) && take)
			read_client(&f);
	}
}
