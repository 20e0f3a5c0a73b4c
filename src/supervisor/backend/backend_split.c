/* backend_split.c - the `split` isolation backend: the agent runs in its own
 * network namespace (locally) or Pod (Kubernetes, `pod` mode) with no
 * capabilities, fenced by the platform so that it can reach only this
 * supervisor's proxy and control ports. The launcher there dials the
 * control port and must prove knowledge of the sandbox's key before it is
 * told anything; it runs the agent only when the launch spec arrives.
 * In pod mode the fence is the driver's NetworkPolicy and attach only listens.
 * Never starts a workload itself and never relaxes a fence it did not build. */
#include "split.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "parse.h"

static void split_teardown(void *state);

static int parse_addr(const char *flag, const char *text, struct in_addr *out, os_error *err)
{
	if (!text || inet_pton(AF_INET, text, out) != 1)
		return os_error_set(err, EINVAL, "%s: '%s' is not an IPv4 address", flag,
				    text ? text : "(missing)");
	return 0;
}

/* Operator configuration, checked before anything is created. */
static int take_config(struct split *s, const struct backend_descriptor *d, os_error *err)
{
	const char *mode = d->split_mode ? d->split_mode : "local";
	if (strcmp(mode, "local") == 0)
		s->mode = SPLIT_LOCAL;
	else if (strcmp(mode, "pod") == 0)
		s->mode = SPLIT_POD;
	else
		return os_error_set(err, EINVAL, "split mode '%s': expected local or pod", mode);
	if (d->proxy_port == 0 || d->control_port == 0 || d->control_port == d->proxy_port)
		return os_error_set(err, EINVAL,
				    "proxy and control ports must be distinct and 1..65535");
	s->proxy_port = d->proxy_port;
	s->control_port = d->control_port;
	s->confirm_ms = d->confirm_timeout_ms ? d->confirm_timeout_ms : SPLIT_DEFAULT_CONFIRM_MS;
	if (!d->key_file)
		return os_error_set(err, EINVAL, "the sandbox's key file is required");
	if (splitchan_load_key(d->key_file, s->key, err) < 0)
		return -1;
	if (s->mode == SPLIT_LOCAL) {
		if (d->listen_addr || d->advertise_addr)
			return os_error_set(err, EINVAL,
					    "listen/advertise addresses apply to pod mode only");
		return 0;
	}
	if (parse_addr("advertise address", d->advertise_addr, &s->advertise_addr, err) < 0)
		return -1;
	s->listen_addr.s_addr = htonl(INADDR_ANY);
	return d->listen_addr ? parse_addr("listen address", d->listen_addr, &s->listen_addr, err)
			      : 0;
}

static int listen_on(struct in_addr addr, uint16_t port, int *out, uint16_t *bound, os_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return os_error_errno(err, "socket");
	int one = 1;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr = addr,
				   .sin_port = htons(port) };
	socklen_t len = sizeof(sin);
	char a[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &addr, a, sizeof(a));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
		return os_error_errno(err, "listening on %s:%u", a, port);
	if (bound)
		*bound = ntohs(sin.sin_port);
	*out = steal_fd(fd);
	return 0;
}

static int split_attach(const struct backend_descriptor *d, const struct backend_context *ctx,
			void **state, os_error *err)
{
	struct split *s = calloc(1, sizeof(*s));
	if (!s)
		return os_error_set(err, ENOMEM, "out of memory");
	s->netns_fd = s->control_fd = s->canary_fd = s->conn_fd = s->exit_efd = -1;
	if (ctx)
		s->ctx = *ctx;
	int rc = str_copy(s->id, sizeof(s->id), d->sandbox_id, err);
	if (rc == 0)
		rc = take_config(s, d, err);
	if (rc == 0 && s->mode == SPLIT_LOCAL)
		rc = split_net_setup(s, err);
	/* Listening before confirm: a launcher that dials early waits in the backlog. */
	if (rc == 0 && listen_on(s->listen_addr, s->control_port, &s->control_fd, NULL, err) < 0)
		rc = os_error_prefix(err, "step control port");
	if (rc == 0 && listen_on(s->listen_addr, 0, &s->canary_fd, &s->canary_port, err) < 0)
		rc = os_error_prefix(err, "step canary");
	if (rc == 0 && (s->exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		rc = os_error_errno(err, "eventfd");
	if (rc < 0) {
		split_teardown(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int split_proxy_endpoint(void *state, struct sockaddr_storage *addr, socklen_t *len)
{
	const struct split *s = state;
	struct sockaddr_in *sin = (struct sockaddr_in *)addr;
	memset(addr, 0, sizeof(*addr));
	sin->sin_family = AF_INET;
	sin->sin_addr = s->listen_addr;
	sin->sin_port = htons(s->proxy_port);
	*len = sizeof(*sin);
	return 0;
}

static void split_teardown(void *state)
{
	struct split *s = state;
	if (!s)
		return;
	split_session_close(s); /* the launcher kills the agent when the channel goes */
	if (s->control_fd >= 0)
		close(s->control_fd);
	if (s->canary_fd >= 0)
		close(s->canary_fd);
	if (s->exit_efd >= 0)
		close(s->exit_efd);
	if (s->mode == SPLIT_LOCAL)
		split_net_teardown(s);
	secure_zero(s->key, sizeof(s->key));
	free(s);
}

const struct backend_ops backend_split_ops = {
	.name = "split",
	.attach = split_attach,
	.proxy_endpoint = split_proxy_endpoint,
	.confirm = split_confirm,
	.start_agent = split_start_agent,
	.agent_fd = split_agent_fd,
	.reap_agent = split_reap_agent,
	.event_fd = split_event_fd,
	.dispatch = split_dispatch,
	.teardown = split_teardown,
	.agent_remote = true,
	.agent_pid = split_agent_pid,
};
