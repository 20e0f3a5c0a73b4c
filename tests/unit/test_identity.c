/* test_identity.c - caller identity from the kernel: a real loopback
 * connection made by this process must resolve to this executable; a
 * 4-tuple that does not exist must not resolve to anything. */
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

/* A child (fork of this test) makes the connection and holds it: the
 * resolver never counts its own process as a caller. */
static void resolves_child_connection_to_its_chain(void **state)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in server = { .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof server;
	assert_int_equal(bind(lfd, (void *)&server, sizeof server), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (void *)&server, &len), 0);
	int ready[2];
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid_t child = fork();
	if (child == 0) {
		int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(cfd, (void *)&server, sizeof server) < 0)
			_exit(1);
		char b = 1;
		if (write(ready[1], &b, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char b;
	assert_int_equal(read(ready[0], &b, 1), 1);
	struct sockaddr_in client;
	len = sizeof client;
	int afd = accept4(lfd, (void *)&client, &len, SOCK_CLOEXEC);
	assert_true(afd >= 0);
	struct identity_ctx *ctx;
	os_error err = { 0 };
	assert_int_equal(identity_ctx_new(getpid(), &ctx, &err), 0);
	struct identity *id = calloc(1, sizeof *id);
	assert_int_equal(identity_resolve(ctx, (void *)&client, (void *)&server, id, &err),
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
	assert_int_equal(identity_resolve(ctx, (void *)&client, (void *)&server, id, &err),
			 IDENTITY_OK);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	free(id);
	identity_ctx_free(ctx);
	close(afd);
	close(lfd);
	close(ready[0]);
	close(ready[1]);
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

static void parses_proc_net_lines(void **state)
{
	const char *text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
			   "retrnsmt   uid  timeout inode\n"
			   "   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 "
			   "00000000     0        0 1111 1 0 100 0 0 10 0\n"
			   "   1: 0200C80A:A000 0100C80A:0C38 01 00000000:00000000 00:00000000 "
			   "00000000  1000        0 4242 1 0 20 4 30 10 -1\n";
	struct sockaddr_in agent = { .sin_family = AF_INET, .sin_port = htons(0xA000) };
	struct sockaddr_in proxy = { .sin_family = AF_INET, .sin_port = htons(3128) };
	inet_pton(AF_INET, "10.200.0.2", &agent.sin_addr);
	inet_pton(AF_INET, "10.200.0.1", &proxy.sin_addr);
	unsigned long ino = 0;
	uid_t uid = 0;
	assert_int_equal(
		identity_parse_proc_net(text, false, (void *)&agent, (void *)&proxy, &ino, &uid),
		0);
	assert_int_equal(ino, 4242);
	assert_int_equal(uid, 1000);
	proxy.sin_port = htons(3129); /* negative: one field off */
	assert_int_equal(
		identity_parse_proc_net(text, false, (void *)&agent, (void *)&proxy, &ino, &uid),
		-1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(resolves_child_connection_to_its_chain),
		cmocka_unit_test(unknown_tuple_does_not_resolve),
		cmocka_unit_test(parses_proc_net_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
