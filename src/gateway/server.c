/* server.c - the gateway's listeners on the shared loop: a TCP one (TLS
 * when configured) and a Unix socket, each handing accepted connections to
 * server_conn.c. Refuses connections over the cap rather than queueing. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "loop.h"
#include "parse.h"
#include "server_internal.h"

#define ACCEPT_BATCH 64

/* Out of descriptors with nothing to make room: stop listening (a level-
 * triggered listener would spin) until a connection closes. */
static void pause_accepting(struct server *s)
{
	log_warn("out of file descriptors: not accepting connections until one closes");
	s->accept_paused = true;
	for (int i = 0; i < 2; i++)
		if (s->ios[i])
			loop_io_modify(s->ios[i], 0, NULL);
}

void server_resume_accepting(struct server *s)
{
	s->accept_paused = false;
	for (int i = 0; i < 2; i++)
		if (s->ios[i])
			loop_io_modify(s->ios[i], LOOP_IN, NULL);
}

static void on_accept(struct loop *l, struct loop_io *w, int lfd, unsigned ev, void *data)
{
	struct server *s = data;
	int li = lfd == s->fds[GW_LISTENER_TCP] ? GW_LISTENER_TCP : GW_LISTENER_UNIX;
	/* A bounded batch: a flood on one listener must not keep the loop from
	 * reading the requests (and sessions) it already accepted. */
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			pause_accepting(s);
			return;
		}
		if (fd < 0)
			return;
		uint32_t peer =
			ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_addr.s_addr : 0;
		server_conn_accept(s, fd, li == GW_LISTENER_TCP ? s->tls : NULL, li, peer);
	}
}

static int listen_tcp(const char *spec, int *out, os_error *err)
{
	struct http_authority a;
	if (http_parse_authority(spec, strlen(spec), 0, true, &a, err) < 0)
		return os_error_prefix(err, "listen address \"%s\" (want IPV4:PORT)", spec);
	char host[64];
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(a.port) };
	if (a.host.len >= sizeof(host))
		return os_error_set(err, EINVAL, "listen address \"%s\": bad host", spec);
	memcpy(host, a.host.p, a.host.len);
	host[a.host.len] = '\0';
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return os_error_set(err, EINVAL, "listen address \"%s\": not an IPv4 address",
				    spec);
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return os_error_errno(err, "listening on %s", spec);
	int bound = bind(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (bound < 0 && errno == EADDRINUSE)
		return os_error_set(
			err, EADDRINUSE,
			"listen_address %s is already in use by another program: "
			"choose another address with --listen ADDR:PORT, "
			"OPENSHELL_GATEWAY_LISTEN_ADDRESS=ADDR:PORT or [openshell.gateway] "
			"listen_address (none: only the Unix socket)",
			spec);
	if (bound < 0 || listen(fd, 256) < 0)
		return os_error_errno(err, "listening on %s", spec);
	*out = steal_fd(fd);
	return 0;
}

static int listen_unix(const char *path, int *out, os_error *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (str_copy(sun.sun_path, sizeof(sun.sun_path), path, err) < 0)
		return os_error_prefix(err, "unix socket path");
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return os_error_errno(err, "socket");
	/* A stale socket file from a crashed gateway: remove only if it is a socket. */
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0 || listen(fd, 256) < 0)
		return os_error_errno(err, "listening on %s", path);
	*out = steal_fd(fd);
	return 0;
}

int server_start(struct gateway *gw, const struct gateway_listen *ls, os_error *err)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return os_error_set(err, ENOMEM, "server");
	s->gw = gw;
	s->fds[0] = s->fds[1] = -1;
	gw->server = s;
	server_budget_init(s);
	struct gateway_tls_config tls = { ls->tls_cert, ls->tls_key, ls->tls_client_ca };
	if (gw_tls_ctx_new(&tls, &s->tls, err) < 0)
		return -1;
	s->mtls = s->tls && ls->tls_client_ca;
	if (s->tls && !ls->tcp)
		return os_error_set(
			err, EINVAL,
			"tls_cert_file is set but listen_address is none: TLS is served "
			"only on the TCP listener");
	if ((ls->tcp && listen_tcp(ls->tcp, &s->fds[0], err) < 0) ||
	    (ls->unix_path && listen_unix(ls->unix_path, &s->fds[1], err) < 0))
		return -1;
	for (int i = 0; i < 2; i++)
		if (s->fds[i] >= 0 &&
		    loop_io_add(gw->loop, s->fds[i], LOOP_IN, 0, on_accept, s, &s->ios[i], err) < 0)
			return -1;
	return 0;
}

void server_sandboxes_changed(struct gateway *gw)
{
	struct server *s = gw->server;
	for (struct conn *c = s ? s->conns : NULL; c; c = c->next)
		if (c->state == GW_STREAMING && c->resp.watch)
			loop_timer_set(c->timer, 0, STREAM_TICK_MS, NULL);
}

void server_free(struct server *s)
{
	if (!s)
		return;
	/* Connections still open at shutdown (streams, sessions, relays, a
	 * client still draining) go first: they reference the tables below. */
	while (s->conns)
		server_conn_close(s->conns);
	sessions_free(s->gw);
	execs_free(s->gw);
	for (int i = 0; i < 2; i++) {
		if (s->ios[i])
			loop_io_remove(s->ios[i]);
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	}
	SSL_CTX_free(s->tls);
	free(s);
}
