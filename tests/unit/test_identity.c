/* test_identity.c - caller identity from the kernel: a real loopback
 * connection made by a child of this process must resolve to this
 * executable, whatever the socket families of both ends; a 4-tuple that
 * does not exist must not resolve to anything. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "identity.h"

struct conn {
	int lfd, cfd, afd;
	struct sockaddr_in server, client;
};

static void make_conn(struct conn *c)
{
	socklen_t len = sizeof c->server;
	c->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(c->lfd >= 0);
	memset(&c->server, 0, sizeof c->server);
	c->server.sin_family = AF_INET;
	c->server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(c->lfd, (void *)&c->server, sizeof c->server), 0);
	assert_int_equal(listen(c->lfd, 1), 0);
	assert_int_equal(getsockname(c->lfd, (void *)&c->server, &len), 0);
	c->cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c->cfd, (void *)&c->server, sizeof c->server), 0);
	len = sizeof c->client;
	c->afd = accept4(c->lfd, (void *)&c->client, &len, SOCK_CLOEXEC);
	assert_true(c->afd >= 0);
}

static void close_conn(struct conn *c)
{
	close(c->afd);
	close(c->cfd);
	close(c->lfd);
}

/* One way of connecting: the families and addresses of the listener (the
 * proxy's side) and of the client's socket. */
struct shape {
	int listen_family, client_family;
	const char *listen_addr, *connect_addr;
};

static socklen_t make_addr(int family, const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET) {
		assert_int_equal(inet_pton(AF_INET, text, &((struct sockaddr_in *)ss)->sin_addr),
				 1);
		return sizeof(struct sockaddr_in);
	}
	assert_int_equal(inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)ss)->sin6_addr), 1);
	return sizeof(struct sockaddr_in6);
}

static void set_port(struct sockaddr_storage *ss, in_port_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = port;
}

static in_port_t get_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
					: ((const struct sockaddr_in6 *)ss)->sin6_port;
}

/* A child (fork of this test) makes the connection in the given shape and
 * holds it: the resolver never counts its own process as a caller, and
 * must find the child's socket whatever its family. */
static void resolves_child_connection(const struct shape *sh)
{
	struct sockaddr_storage server, target, client;
	socklen_t len = make_addr(sh->listen_family, sh->listen_addr, &server);
	int lfd = socket(sh->listen_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int off = 0;
	if (sh->listen_family == AF_INET6) /* dual-stack, as a v6 proxy would be */
		setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
	assert_int_equal(bind(lfd, (void *)&server, len), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (void *)&server, &len), 0);
	socklen_t tlen = make_addr(sh->client_family, sh->connect_addr, &target);
	set_port(&target, get_port(&server));
	int ready[2];
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid_t child = fork();
	if (child == 0) {
		int cfd = socket(sh->client_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(cfd, (void *)&target, tlen) < 0)
			_exit(1);
		char b = 1;
		if (write(ready[1], &b, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char b;
	assert_int_equal(read(ready[0], &b, 1), 1);
	socklen_t clen = sizeof client;
	int afd = accept4(lfd, (void *)&client, &clen, SOCK_CLOEXEC);
	assert_true(afd >= 0);
	struct sockaddr_storage local;
	socklen_t llen = sizeof local;
	assert_int_equal(getsockname(afd, (void *)&local, &llen), 0);
	struct identity_ctx *ctx;
	os_error err = { 0 };
	assert_int_equal(identity_ctx_new(getpid(), &ctx, &err), 0);
	struct identity *id = calloc(1, sizeof *id);
	assert_int_equal(identity_resolve(ctx, (void *)&client, (void *)&local, id, &err),
			 IDENTITY_OK);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = '\0';
	assert_int_equal(id->pid, child);
	assert_int_equal(id->n_chain, 2); /* the child, then us (the entry) */
	assert_string_equal(id->chain[0], self);
	assert_string_equal(id->chain[1], self);
	assert_int_equal(id->uid, getuid());
	/* Second resolution hits the pin and still agrees. */
	assert_int_equal(identity_resolve(ctx, (void *)&client, (void *)&local, id, &err),
			 IDENTITY_OK);
	/* Negative: a "caller" on the listener's port with no connection: the
	 * kernel's lookup falls back to the listening socket, which is no
	 * caller. */
	struct sockaddr_storage nobody = client;
	set_port(&nobody, htons((in_port_t)(ntohs(get_port(&client)) ^ 0x5a5a)));
	enum identity_failure f = identity_resolve(ctx, (void *)&local, (void *)&nobody, id, &err);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_int_equal(f, IDENTITY_NO_SOCKET);
	free(id);
	identity_ctx_free(ctx);
	close(afd);
	close(lfd);
	close(ready[0]);
	close(ready[1]);
}

static void resolves_ipv4_caller(void **state)
{
	const struct shape sh = { AF_INET, AF_INET, "127.0.0.1", "127.0.0.1" };
	resolves_child_connection(&sh);
}

static void resolves_ipv6_caller(void **state)
{
	const struct shape sh = { AF_INET6, AF_INET6, "::1", "::1" };
	resolves_child_connection(&sh);
}

/* The JVM's default: an AF_INET6 socket connected to a v4-mapped address,
 * to a proxy listening on IPv4 (it sees an AF_INET peer). */
static void resolves_v4_mapped_ipv6_caller_of_ipv4_proxy(void **state)
{
	const struct shape sh = { AF_INET, AF_INET6, "127.0.0.1", "::ffff:127.0.0.1" };
	resolves_child_connection(&sh);
}

/* The other way round: an IPv4 caller of a dual-stack proxy, which sees
 * the peer as v4-mapped AF_INET6. */
static void resolves_ipv4_caller_of_dual_stack_proxy(void **state)
{
	const struct shape sh = { AF_INET6, AF_INET, "::", "127.0.0.1" };
	resolves_child_connection(&sh);
}

static void unknown_tuple_does_not_resolve(void **state)
{
	struct conn c;
	make_conn(&c);
	struct identity_ctx *ctx;
	os_error err = { 0 };
	assert_int_equal(identity_ctx_new(getpid(), &ctx, &err), 0);
	struct identity *id = calloc(1, sizeof *id);
	struct sockaddr_in bogus = c.client;
	bogus.sin_port = htons(ntohs(c.client.sin_port) ^ 0x5a5a);
	assert_int_equal(identity_resolve(ctx, (void *)&bogus, (void *)&c.server, id, &err),
			 IDENTITY_NO_SOCKET);
	free(id);
	identity_ctx_free(ctx);
	close_conn(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(resolves_ipv4_caller),
		cmocka_unit_test(resolves_ipv6_caller),
		cmocka_unit_test(resolves_v4_mapped_ipv6_caller_of_ipv4_proxy),
		cmocka_unit_test(resolves_ipv4_caller_of_dual_stack_proxy),
		cmocka_unit_test(unknown_tuple_does_not_resolve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
