/* inpod.h - internal state of the `inpod` backend, shared by its files:
 * backend_inpod.c (attach, teardown, bypass monitor), inpod_confirm.c
 * (break-the-boundary probes) and inpod_agent.c (launcher spawn). Not an API. */
#ifndef OS_SUPERVISOR_INPOD_H
#define OS_SUPERVISOR_INPOD_H

#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "error.h"

#define INPOD_PEER_IFNAME "eth0"
#define INPOD_NFLOG_GROUP 7
/* Test-only: names a step whose kernel request is deliberately made invalid
 * so it really fails (see docs in backend_inpod.c). Never weakens a rule. */
#define INPOD_TEST_FAIL_ENV "OPENSHELL_TEST_FAIL_STEP"

struct nl_sock;
struct nflog;
struct sockowner;

struct inpod {
	char id[BACKEND_SANDBOX_ID_MAX + 1];
	uint16_t proxy_port;
	char launcher[PATH_MAX];
	struct backend_context ctx;

	int netns_fd;
	ino_t netns_ino;
	struct nl_sock *nl_host; /* rtnetlink in the supervisor's namespace */
	char host_if[IF_NAMESIZE];
	bool veth_created;
	struct in_addr host_addr, agent_addr; /* network byte order */

	struct nflog *nflog;
	struct sockowner *owner;
	unsigned lost_records;

	int tp_tcp_fd, tp_dns_fd,
		tp_dns_tcp_fd; /* transparent listeners until the proxy takes them */
	uint16_t tp_probe_port; /* a redirected port confirm tries, 0 = none */

	bool has_stdio; /* stdio: the agent's fds 0-2 (borrowed), else the supervisor's */
	int stdio[3];
	pid_t agent_pid; /* the launcher, which becomes/forks the agent */
	int agent_pidfd;
	bool agent_reaped;
};

/* True when the test hook names this step (test-only; see INPOD_TEST_FAIL_ENV). */
bool inpod_test_fail(const char *step);

int inpod_confirm(void *state, os_error *err);
/* A non-blocking socket created inside the sandbox namespace, as the agent
 * would (inpod_confirm.c). */
int inpod_inside_socket(const struct inpod *p, int domain, int type, int *out, os_error *err);
/* inpod_transparent.c: the listeners and the nat redirects (after the
 * agent side's network is up), handing them over, closing what is left. */
int inpod_transparent_up(struct inpod *p, const struct backend_descriptor *d, os_error *err);
void inpod_transparent(void *state, struct backend_transparent *out);
void inpod_transparent_close(struct inpod *p);
int inpod_start_agent(void *state, const json_t *launch_spec, os_error *err);
int inpod_agent_stdio(void *state, const int fds[3], os_error *err);
int inpod_agent_fd(void *state);
int inpod_reap_agent(void *state, int *wait_status, os_error *err);
/* Kills (SIGKILL) and reaps the agent if it is still there. */
void inpod_stop_agent(struct inpod *p);

#endif
