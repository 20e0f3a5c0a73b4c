/* split.h - internal state of the `split` backend, shared by its files:
 * backend_split.c (attach, listeners, teardown), split_net.c (the local
 * fence: namespace, veth, nftables) and split_session.c (the authenticated
 * launcher session: confirm, start, exit). Not an API. */
#ifndef OS_SUPERVISOR_SPLIT_H
#define OS_SUPERVISOR_SPLIT_H

#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>

#include "backend.h"
#include "error.h"
#include "splitchan.h"

#define SPLIT_NETNS_DIR "/run/netns"
#define SPLIT_DEFAULT_CONFIRM_MS 60000

enum split_mode { SPLIT_LOCAL, SPLIT_POD };

struct nl_sock;

struct split {
	char id[BACKEND_SANDBOX_ID_MAX + 1];
	enum split_mode mode;
	uint16_t proxy_port, control_port;
	unsigned confirm_ms;
	uint8_t key[SPLITCHAN_KEY_LEN];
	struct backend_context ctx;

	/* Where we listen, and where the workload reaches us (network order). */
	struct in_addr listen_addr, advertise_addr;
	int control_fd; /* listener for the launcher, closed once one is in */
	int canary_fd; /* TCP listener the break test must not reach */
	uint16_t canary_port;

	/* local mode: the agent's namespace and the veth to it */
	int netns_fd;
	char netns_path[PATH_MAX]; /* its name under /run/netns, "" once removed */
	struct nl_sock *nl_host;
	char host_if[IF_NAMESIZE];
	bool veth_created;
	struct in_addr agent_addr;

	/* the authenticated launcher */
	int conn_fd;
	struct splitchan chan;
	bool chan_ready;
	bool started; /* the launch spec went out */
	int exit_efd; /* eventfd: readable once the agent's end is known */
	bool exited, lost, reaped;
	int exit_code;
	pid_t launcher_pid; /* local mode: entry of caller identity; 0 = none */
	char lost_reason[256];
};

/* split_net.c: local mode only. */
int split_net_setup(struct split *s, os_error *err);
/* Removes the namespace's name (the launcher is inside by now). Idempotent. */
void split_net_unname(struct split *s);
void split_net_teardown(struct split *s);
/* The launcher's pid, found by the kernel's record of who holds its end of
 * the control connection (never by its own claim): the root of caller
 * identity in local mode. */
int split_net_launcher_pid(const struct split *s, pid_t *pid, os_error *err);

/* split_session.c */
int split_confirm(void *state, os_error *err);
int split_start_agent(void *state, const json_t *launch_spec, os_error *err);
int split_agent_fd(void *state);
int split_reap_agent(void *state, int *wait_status, os_error *err);
int split_event_fd(void *state);
pid_t split_agent_pid(void *state);
int split_dispatch(void *state, os_error *err);
void split_session_close(struct split *s);

#endif
