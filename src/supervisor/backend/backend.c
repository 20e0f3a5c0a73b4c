/* backend.c - the backend registry and the typestate every lifecycle step
 * checks. A step runs only from the state it expects; a failure moves the
 * instance to "failed" for good. Never calls into a backend after teardown. */
#include "backend.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

extern const struct backend_ops backend_inpod_ops;
extern const struct backend_ops backend_split_ops;

static const struct backend_ops *const registry[] = {
	&backend_inpod_ops,
	&backend_split_ops,
};

enum backend_state { ST_BOUND, ST_READY, ST_RUNNING, ST_FAILED };

struct backend_instance {
	const struct backend_ops *ops;
	void *state;
	enum backend_state st;
};

const struct backend_ops *backend_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(registry) / sizeof(registry[0]); i++)
		if (strcmp(registry[i]->name, name) == 0)
			return registry[i];
	return NULL;
}

int backend_check_sandbox_id(const char *id, os_error *err)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > BACKEND_SANDBOX_ID_MAX)
		return os_error_set(err, EINVAL, "sandbox id must be 1..%d bytes",
				    BACKEND_SANDBOX_ID_MAX);
	if (id[0] == '-' || id[0] == '.')
		return os_error_set(err, EINVAL, "sandbox id may not start with '%c'", id[0]);
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		if (!ok)
			return os_error_set(err, EINVAL,
					    "sandbox id: byte %zu (0x%02x) is not [A-Za-z0-9._-]",
					    i, (unsigned char)c);
	}
	return 0;
}

int backend_attach_ops(const struct backend_ops *ops, const struct backend_descriptor *desc,
		       const struct backend_context *ctx, struct backend_instance **inst,
		       backend_bound *bound, os_error *err)
{
	if (backend_check_sandbox_id(desc->sandbox_id, err) < 0)
		return os_error_prefix(err, "attach");
	struct backend_instance *in = calloc(1, sizeof(*in));
	if (!in)
		return os_error_set(err, ENOMEM, "attach: out of memory");
	in->ops = ops;
	if (ops->attach(desc, ctx, &in->state, err) < 0) {
		free(in); /* the backend cleaned up its partial state itself */
		return os_error_prefix(err, "attach (%s)", ops->name);
	}
	in->st = ST_BOUND;
	*inst = in;
	bound->inst = in;
	return 0;
}

int backend_attach(const struct backend_descriptor *desc, const struct backend_context *ctx,
		   struct backend_instance **inst, backend_bound *bound, os_error *err)
{
	const struct backend_ops *ops = backend_find(desc->backend);
	if (!ops)
		return os_error_set(err, ENOENT, "attach: unknown isolation backend '%s'",
				    desc->backend ? desc->backend : "(none)");
	return backend_attach_ops(ops, desc, ctx, inst, bound, err);
}

/* Every step funnels through here: right handle, right state, or refuse. */
static int expect(const struct backend_instance *in, enum backend_state st, const char *step,
		  os_error *err)
{
	if (!in)
		return os_error_set(err, EINVAL, "%s: handle already consumed or empty", step);
	if (in->st != st)
		return os_error_set(err, EINVAL, "%s: instance is %s, not %s", step,
				    backend_state_name(in),
				    backend_state_name(&(struct backend_instance){ .st = st }));
	return 0;
}

int backend_proxy_endpoint(const backend_bound *bound, struct sockaddr_storage *addr,
			   socklen_t *len, os_error *err)
{
	if (expect(bound->inst, ST_BOUND, "proxy endpoint", err) < 0)
		return -1;
	return bound->inst->ops->proxy_endpoint(bound->inst->state, addr, len) < 0
		       ? os_error_set(err, EINVAL, "proxy endpoint unavailable")
		       : 0;
}

void backend_transparent_take(const backend_bound *bound, struct backend_transparent *out)
{
	out->tcp_fd = out->dns_fd = out->dns_tcp_fd = -1;
	struct backend_instance *in = bound->inst;
	if (in && in->ops->transparent && expect(in, ST_BOUND, "transparent", NULL) == 0)
		in->ops->transparent(in->state, out);
}

int backend_confirm(backend_bound *bound, backend_ready *ready, os_error *err)
{
	struct backend_instance *in = bound->inst;
	if (expect(in, ST_BOUND, "confirm", err) < 0)
		return -1;
	if (in->ops->confirm(in->state, err) < 0) {
		in->st = ST_FAILED;
		return os_error_prefix(err, "confirm (%s)", in->ops->name);
	}
	in->st = ST_READY;
	bound->inst = NULL;
	ready->inst = in;
	return 0;
}

int backend_start_agent(backend_ready *ready, const json_t *launch_spec, backend_running *running,
			os_error *err)
{
	struct backend_instance *in = ready->inst;
	if (expect(in, ST_READY, "start agent", err) < 0)
		return -1;
	if (in->ops->start_agent(in->state, launch_spec, err) < 0) {
		in->st = ST_FAILED;
		return os_error_prefix(err, "start agent (%s)", in->ops->name);
	}
	in->st = ST_RUNNING;
	ready->inst = NULL;
	running->inst = in;
	return 0;
}

int backend_make_cgroups(const backend_ready *ready, const struct cgroup_limits *lim,
			 struct sandbox_cgroups *out, os_error *err)
{
	if (expect(ready->inst, ST_READY, "cgroups", err) < 0)
		return -1;
	if (!ready->inst->ops->make_cgroups)
		return 0;
	return ready->inst->ops->make_cgroups(ready->inst->state, lim, out, err);
}

int backend_agent_stdio(const backend_ready *ready, const int fds[3], os_error *err)
{
	if (expect(ready->inst, ST_READY, "agent stdio", err) < 0)
		return -1;
	if (!ready->inst->ops->agent_stdio)
		return os_error_set(err, ENOTSUP,
				    "the %s backend cannot hand its agent a foreground client's "
				    "stdin/stdout/stderr (use --detach)",
				    ready->inst->ops->name);
	return ready->inst->ops->agent_stdio(ready->inst->state, fds, err);
}

int backend_agent_fd(const backend_running *running)
{
	if (!running->inst || running->inst->st != ST_RUNNING)
		return -1;
	return running->inst->ops->agent_fd(running->inst->state);
}

bool backend_agent_local(const backend_running *running)
{
	return running->inst && !running->inst->ops->agent_remote;
}

pid_t backend_agent_entry_pid(const backend_running *running)
{
	const struct backend_instance *in = running->inst;
	if (!in || in->st != ST_RUNNING || !in->ops->agent_pid)
		return 0;
	return in->ops->agent_pid(in->state);
}

int backend_reap_agent(backend_running *running, int *wait_status, os_error *err)
{
	if (expect(running->inst, ST_RUNNING, "reap agent", err) < 0)
		return -1;
	return running->inst->ops->reap_agent(running->inst->state, wait_status, err);
}

int backend_event_fd(const struct backend_instance *inst)
{
	if (!inst || !inst->ops->event_fd)
		return -1;
	return inst->ops->event_fd(inst->state);
}

int backend_dispatch(struct backend_instance *inst, os_error *err)
{
	if (!inst || !inst->ops->dispatch)
		return 0;
	return inst->ops->dispatch(inst->state, err);
}

const char *backend_state_name(const struct backend_instance *inst)
{
	static const char *const names[] = { "bound", "ready", "running", "failed" };
	return inst ? names[inst->st] : "torn down";
}

void backend_teardown(struct backend_instance **inst)
{
	struct backend_instance *in = *inst;
	if (!in)
		return;
	*inst = NULL;
	in->ops->teardown(in->state);
	free(in);
}
