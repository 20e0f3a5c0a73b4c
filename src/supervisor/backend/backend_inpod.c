/* backend_inpod.c - the `inpod` isolation backend: a network namespace per
 * sandbox, a veth pair to the supervisor, and an nftables fence inside the
 * namespace that lets the agent reach only the proxy. The fence is committed
 * before the agent side has an address or route; this file never opens a
 * path out that the fence does not guard, and never forks `ip` or `nft`.
 *
 * Test hook (test-only): OPENSHELL_TEST_FAIL_STEP=veth|address|nftables|route
 * makes that step's kernel request invalid so the kernel or libnftables
 * really rejects it; the error must then name the step. It can only make
 * attach fail, never weaken the fence. */
#include "inpod.h"
#include "veth_lease.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auditrec.h"
#include "cgroup.h"
#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "log.h"
#include "netlink.h"
#include "netns.h"
#include "nflog.h"
#include "nft.h"
#include "parse.h"
#include "procsys.h"
#include "sockowner.h"

bool inpod_test_fail(const char *step)
{
	const char *v = getenv(INPOD_TEST_FAIL_ENV);
	return v && strcmp(v, step) == 0;
}

static int make_netns(struct inpod *p, os_error *err)
{
	/* In a Pod (the combined topology) /proc/sys is read-only. */
	if (procsys_net_writable(err) < 0)
		return -1;
	if (netns_create(&p->netns_fd, err) < 0 || netns_inode(p->netns_fd, &p->netns_ino, err) < 0)
		return -1;
	/* Interfaces created later in the namespace get no IPv6 at all. */
	return veth_sysctl_in_netns(p->netns_fd, "/proc/sys/net/ipv6/conf/default/disable_ipv6",
				    "1", err);
}

static int alloc_veth(struct inpod *p, os_error *err)
{
	struct veth_lease_opts o = {
		.if_prefix = "osb",
		.peer_ifname = inpod_test_fail("veth") ? "eth0/x" : INPOD_PEER_IFNAME,
		.prefix_len = inpod_test_fail("address") ? 33 : 24,
	};
	struct veth_lease l;
	int rc = veth_lease_take(p->nl_host, p->netns_fd, &o, &l, err);
	/* Even on failure: teardown deletes a veth that was created. */
	memcpy(p->host_if, l.host_if, sizeof p->host_if);
	p->veth_created = l.created;
	p->host_addr = l.host_addr;
	p->agent_addr = l.agent_addr;
	return rc;
}

static int apply_fence(struct inpod *p, os_error *err)
{
	char prefix[NFT_LOG_PREFIX_MAX + 1];
	if (str_format(prefix, sizeof(prefix), err, "osb:%s ", p->id) < 0)
		return -1;
	struct nft_fence_spec spec = {
		.proxy_addr = p->host_addr,
		.proxy_port = p->proxy_port,
		.log_prefix = prefix,
		.nflog_group = INPOD_NFLOG_GROUP,
		.log_rate_per_sec = 20,
		.log_burst = 40,
	};
	_cleanup_json_ json_t *rules = nft_fence_ruleset(&spec, err);
	if (!rules)
		return -1;
	if (inpod_test_fail("nftables")) {
		/* A jump to a chain that does not exist: the whole batch must be refused. */
		json_array_append_new(json_object_get(rules, "nftables"),
				      json_pack("{s:{s:{s:s, s:s, s:s, s:[{s:{s:s}}]}}}", "add",
						"rule", "family", "inet", "table", NFT_FENCE_TABLE,
						"chain", "output", "expr", "jump", "target",
						"no-such-chain"));
	}
	return nft_apply(p->netns_fd, rules, err);
}

/* Agent side: lo up, address, default route via the supervisor side. */
static int inner_net(struct inpod *p, os_error *err)
{
	struct veth_lease l = { .created = p->veth_created,
				.host_addr = p->host_addr,
				.agent_addr = p->agent_addr };
	memcpy(l.host_if, p->host_if, sizeof l.host_if);
	struct in_addr gw = p->host_addr;
	if (inpod_test_fail("route"))
		inet_pton(AF_INET, "192.0.2.254", &gw); /* not on-link: ENETUNREACH */
	return veth_lease_inner_net(p->nl_host, p->netns_fd, INPOD_PEER_IFNAME, &l, gw, err);
}

static void inpod_teardown(void *state);

static int inpod_attach_steps(struct inpod *p, const struct backend_descriptor *d, os_error *err)
{
	if (make_netns(p, err) < 0)
		return os_error_prefix(err, "step netns");
	if (nl_open(&p->nl_host, err) < 0)
		return os_error_prefix(err, "step netlink");
	if (alloc_veth(p, err) < 0)
		return os_error_prefix(err, "step veth");
	/* The fence goes in while the agent side has no address and no route. */
	if (apply_fence(p, err) < 0)
		return os_error_prefix(err, "step nftables");
	if (nflog_open(p->netns_fd, INPOD_NFLOG_GROUP, &p->nflog, err) < 0 ||
	    sockowner_open(p->netns_fd, &p->owner, err) < 0)
		return os_error_prefix(err, "step bypass monitor");
	if (inner_net(p, err) < 0)
		return os_error_prefix(err, "step agent network");
	/* Not part of the fence: without it direct connections are refused as
	 * before (a kernel without nft nat/redirect), so it only warns. */
	os_error tp_err = { 0 };
	if (inpod_transparent_up(p, d, &tp_err) < 0) {
		log_warn("transparent path unavailable, direct connections stay refused: %s",
			 tp_err.msg);
		inpod_transparent_close(p);
	}
	return 0;
}

static int inpod_attach(const struct backend_descriptor *d, const struct backend_context *ctx,
			void **state, os_error *err)
{
	if (d->proxy_port == 0)
		return os_error_set(err, EINVAL, "proxy port must be 1..65535");
	struct inpod *p = calloc(1, sizeof(*p));
	if (!p)
		return os_error_set(err, ENOMEM, "out of memory");
	p->netns_fd = -1;
	p->agent_pidfd = -1;
	p->tp_tcp_fd = p->tp_dns_fd = p->tp_dns_tcp_fd = -1;
	p->proxy_port = d->proxy_port;
	if (ctx)
		p->ctx = *ctx;
	if (str_copy(p->id, sizeof(p->id), d->sandbox_id, err) < 0 ||
	    str_copy(p->launcher, sizeof(p->launcher), d->launcher ? d->launcher : "", err) < 0 ||
	    inpod_attach_steps(p, d, err) < 0) {
		inpod_teardown(p);
		return -1;
	}
	*state = p;
	return 0;
}

static int inpod_proxy_endpoint(void *state, struct sockaddr_storage *addr, socklen_t *len)
{
	struct inpod *p = state;
	struct sockaddr_in *sin = (struct sockaddr_in *)addr;
	memset(addr, 0, sizeof(*addr));
	sin->sin_family = AF_INET;
	sin->sin_addr = p->host_addr;
	sin->sin_port = htons(p->proxy_port);
	*len = sizeof(*sin);
	return 0;
}

/* One bypass attempt -> one audit record. */
static void on_bypass(const struct nflog_packet *pkt, void *data)
{
	struct inpod *p = data;
	char binary[PATH_MAX] = "";
	pid_t pid = 0;
	os_error err = { 0 };
	int found = sockowner_lookup(p->owner, pkt, &pid, binary, sizeof(binary), &err);
	const char *proto = nflog_proto_name(pkt->proto);
	/* The fence rejected a connection that ignored the proxy: a deny, in
	 * the proxy's schema; what is not known is left out, as there. */
	_cleanup_json_ json_t *rec = auditrec_new(p->id, "bypass", "deny", "direct_connection");
	if (!rec)
		return;
	json_object_set_new(rec, "proto", proto ? json_string(proto) : json_integer(pkt->proto));
	if (pkt->family)
		json_object_set_new(rec, "dst", json_string(pkt->dst));
	if (pkt->has_ports)
		json_object_set_new(rec, "dport", json_integer(pkt->dport));
	if (found == 1)
		json_object_set_new(rec, "pid", json_integer(pid));
	if (pkt->has_uid)
		json_object_set_new(rec, "uid", json_integer(pkt->uid));
	if (found == 1 && binary[0])
		json_object_set_new(rec, "binary", json_string(binary));
	if (p->ctx.audit)
		p->ctx.audit(p->ctx.audit_user, rec);
}

static int inpod_event_fd(void *state)
{
	struct inpod *p = state;
	return p->nflog ? nflog_fd(p->nflog) : -1;
}

static int inpod_dispatch(void *state, os_error *err)
{
	struct inpod *p = state;
	if (!p->nflog)
		return 0;
	return nflog_drain(p->nflog, on_bypass, p, &p->lost_records, err);
}

/* The launcher forked here: its pid stays ours until it is reaped. */
static pid_t inpod_agent_pid(void *state)
{
	const struct inpod *p = state;
	return p->agent_pid > 0 ? p->agent_pid : 0;
}

/* The agent is a child of this supervisor on this host: one cgroup per
 * controller holds the whole sandbox. */
static int inpod_make_cgroups(void *state, const struct cgroup_limits *lim,
			      struct sandbox_cgroups *out, os_error *err)
{
	const struct inpod *p = state;
	return cgroup_create(p->id, lim, out, err);
}

static void inpod_teardown(void *state)
{
	struct inpod *p = state;
	if (!p)
		return;
	inpod_stop_agent(p);
	inpod_transparent_close(p);
	nflog_close(p->nflog);
	sockowner_close(p->owner);
	/* Unregistering a netdev waits for RCU grace periods (~15 ms). When no
	 * workload ever ran, our fds are the namespace's only references, so
	 * closing them lets the kernel destroy the namespace and both veth ends
	 * in its batched cleanup. Once an agent has run, delete the veth now:
	 * a straggler must not keep a link to the supervisor alive. */
	if (p->veth_created && p->nl_host && p->agent_pid > 0) {
		bool deleted;
		os_error err = { 0 };
		/* Deleting our end takes the peer (inside the namespace) with it. */
		if (nl_link_delete(p->nl_host, p->host_if, &deleted, &err) < 0)
			log_warn("inpod teardown: %s", err.msg);
	}
	nl_close(p->nl_host);
	if (p->netns_fd >= 0)
		close(p->netns_fd); /* the last reference: the namespace and its rules go */
	free(p);
}

const struct backend_ops backend_inpod_ops = {
	.name = "inpod",
	.attach = inpod_attach,
	.proxy_endpoint = inpod_proxy_endpoint,
	.confirm = inpod_confirm,
	.start_agent = inpod_start_agent,
	.agent_fd = inpod_agent_fd,
	.reap_agent = inpod_reap_agent,
	.event_fd = inpod_event_fd,
	.dispatch = inpod_dispatch,
	.teardown = inpod_teardown,
	.agent_pid = inpod_agent_pid,
	.make_cgroups = inpod_make_cgroups,
	.transparent = inpod_transparent,
	.agent_stdio = inpod_agent_stdio,
};
