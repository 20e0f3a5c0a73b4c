/* proxy_main.c - `openshell-proxy`: the egress proxy alone on a loopback
 * address, for tests and benchmarks (the supervisor embeds the same library
 * behind its isolation backend). SIGHUP reloads the policy file: an invalid
 * file never replaces the running policy. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress_proxy.h"
#include "http.h"
#include "inference.h"
#include "log.h"
#include "parse.h"

struct opts {
	const char *listen, *policy, *hosts, *dns, *upstream_ca, *ca_dir, *creds, *inference;
	const char *audit_log, *sandbox_id, *identity_cgroup, *host_gateway;
	long identity_pid;
	unsigned max_conns, head_timeout_ms, max_upstreams, memory_mb;
	bool endpoint_only, allow_sni_mismatch;
};

struct state {
	struct opts o;
	struct policy_holder *holder;
	struct proxy *proxy;
	struct audit *audit;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: openshell-proxy --listen HOST:PORT --policy FILE [--identity-pid PID]\n"
		"         [--identity-cgroup DIR]\n"
		"         [--hosts FILE] [--dns IP[:PORT],...] [--upstream-ca FILE] [--ca-dir "
		"DIR]\n"
		"         [--credentials FILE] [--inference FILE] [--audit-log FILE]\n"
		"         [--sandbox-id ID] [--max-conns N] [--head-timeout-ms MS]\n"
		"         [--proxy-memory-mb N] [--max-upstream-connections N]\n"
		"         [--host-gateway IP] [--binary-identity kernel|endpoint-only]"
		" [--tunnel-sni check|allow-mismatch]\n");
}

static int parse_args(int argc, char **argv, struct opts *o, os_error *err)
{
	o->sandbox_id = "standalone";
	o->identity_pid = -1;
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **slot = !strcmp(a, "--listen")	      ? &o->listen
				    : !strcmp(a, "--policy")	      ? &o->policy
				    : !strcmp(a, "--hosts")	      ? &o->hosts
				    : !strcmp(a, "--dns")	      ? &o->dns
				    : !strcmp(a, "--upstream-ca")     ? &o->upstream_ca
				    : !strcmp(a, "--ca-dir")	      ? &o->ca_dir
				    : !strcmp(a, "--credentials")     ? &o->creds
				    : !strcmp(a, "--inference")	      ? &o->inference
				    : !strcmp(a, "--audit-log")	      ? &o->audit_log
				    : !strcmp(a, "--sandbox-id")      ? &o->sandbox_id
				    : !strcmp(a, "--identity-cgroup") ? &o->identity_cgroup
				    : !strcmp(a, "--host-gateway")    ? &o->host_gateway
								      : NULL;
		uint64_t n;
		if (!v)
			return os_error_set(err, EINVAL, "%s needs a value", a);
		if (slot) {
			*slot = v;
		} else if (!strcmp(a, "--identity-pid")) {
			if (parse_u64_str(v, 1, INT32_MAX, &n, err) < 0)
				return os_error_prefix(err, "--identity-pid");
			o->identity_pid = (long)n;
		} else if (!strcmp(a, "--binary-identity")) {
			if (strcmp(v, "kernel") != 0 && strcmp(v, "endpoint-only") != 0)
				return os_error_set(
					err, EINVAL,
					"--binary-identity: expected kernel or endpoint-only");
			o->endpoint_only = strcmp(v, "endpoint-only") == 0;
		} else if (!strcmp(a, "--tunnel-sni")) {
			if (strcmp(v, "check") != 0 && strcmp(v, "allow-mismatch") != 0)
				return os_error_set(
					err, EINVAL,
					"--tunnel-sni: expected check or allow-mismatch");
			o->allow_sni_mismatch = strcmp(v, "allow-mismatch") == 0;
		} else if (!strcmp(a, "--head-timeout-ms")) {
			if (parse_u64_str(v, 1, 3600000, &n, err) < 0)
				return os_error_prefix(err, "--head-timeout-ms");
			o->head_timeout_ms = (unsigned)n;
		} else if (!strcmp(a, "--max-conns")) {
			if (parse_u64_str(v, 1, 1000000, &n, err) < 0)
				return os_error_prefix(err, "--max-conns");
			o->max_conns = (unsigned)n;
		} else if (!strcmp(a, "--max-upstream-connections")) {
			if (parse_u64_str(v, 1, 1000000, &n, err) < 0)
				return os_error_prefix(err, "--max-upstream-connections");
			o->max_upstreams = (unsigned)n;
		} else if (!strcmp(a, "--proxy-memory-mb")) {
			if (parse_u64_str(v, PROXY_MEMORY_MB_MIN, PROXY_MEMORY_MB_MAX, &n, err) < 0)
				return os_error_prefix(err, "--proxy-memory-mb");
			o->memory_mb = (unsigned)n;
		} else {
			return os_error_set(err, EINVAL, "unknown option %s", a);
		}
	}
	if (!o->listen || !o->policy)
		return os_error_set(err, EINVAL, "--listen and --policy are required");
	if (o->identity_cgroup && o->identity_pid <= 0)
		return os_error_set(err, EINVAL, "--identity-cgroup needs --identity-pid");
	return 0;
}

static int listen_on(const char *spec, os_error *err)
{
	/* IPv4:PORT, port 0 = any free port (printed on stdout). */
	const char *colon = strrchr(spec, ':');
	char host[64];
	uint64_t port;
	if (!colon || (size_t)(colon - spec) >= sizeof host ||
	    parse_u64_str(colon + 1, 0, 65535, &port, err) < 0)
		return os_error_set(err, EINVAL, "--listen expects IPV4:PORT, got \"%s\"", spec);
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	struct http_authority a = { .port = (uint16_t)port };
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(a.port) };
	if (inet_pton(AF_INET, host, &in.sin_addr) != 1)
		return os_error_set(err, EINVAL, "--listen needs an IPv4 address, got %s", host);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (void *)&in, sizeof in) < 0 || listen(fd, 1024) < 0) {
		os_error_errno(err, "listening on %s", spec);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	socklen_t len = sizeof in;
	getsockname(fd, (void *)&in, &len);
	printf("listening on %s:%u\n", host, ntohs(in.sin_port));
	fflush(stdout);
	return fd;
}

static struct policy_gen *load_policy(const char *path, os_error *err)
{
	struct policy_doc *doc;
	if (policy_load_file(path, &doc, NULL, err) < 0)
		return NULL;
	return policy_compile(doc, err);
}

static void on_hup(struct loop *l, struct loop_signal *s, const struct signalfd_siginfo *i,
		   void *data)
{
	struct state *st = data;
	os_error err = { 0 };
	struct policy_gen *g = load_policy(st->o.policy, &err);
	struct audit_record r = { .event = "policy", .uid = -1 };
	if (!g) {
		r.decision = "deny";
		r.reason = "policy_invalid";
		r.detail = err.msg;
		log_warn("policy reload refused, keeping the running policy: %s", err.msg);
	} else {
		policy_holder_swap(st->holder, g);
		proxy_policy_changed(st->proxy);
		r.decision = "allow";
		r.reason = "policy_loaded";
	}
	audit_write(st->audit, &r);
}

static void on_term(struct loop *l, struct loop_signal *s, const struct signalfd_siginfo *i,
		    void *data)
{
	loop_stop(l);
}

static int run(struct state *st, os_error *err)
{
	struct opts *o = &st->o;
	/* What can fail without holding anything comes first: a bad flag or
	 * policy leaves nothing behind for a leak checker. */
	struct resolver_config rc = { .dns_servers = o->dns, .hosts_file = o->hosts };
	struct ip_addr gw;
	if (o->host_gateway) {
		if (resolver_host_gateway_parse(o->host_gateway, NULL, &gw, err) < 0)
			return -1;
		rc.host_gateway = &gw;
	}
	struct policy_gen *g = load_policy(o->policy, err);
	if (!g)
		return -1;
	struct loop *l;
	if (loop_new(&l, err) < 0) {
		policy_unref(g);
		return -1;
	}
	struct proxy_config cfg = { .sandbox_id = o->sandbox_id };
	proxy_limits_default(&cfg.limits);
	if (o->max_conns)
		cfg.limits.max_conns = o->max_conns;
	cfg.endpoint_only = o->endpoint_only;
	cfg.allow_sni_mismatch = o->allow_sni_mismatch;
	if (o->head_timeout_ms)
		cfg.limits.head_timeout_ms = o->head_timeout_ms;
	if (o->max_upstreams)
		cfg.limits.max_upstreams = o->max_upstreams;
	if (o->memory_mb)
		cfg.limits.memory_budget = (size_t)o->memory_mb << 20;
	st->holder = policy_holder_new(g);
	if (audit_open(o->audit_log, o->sandbox_id, &st->audit, err) < 0 ||
	    resolver_new(l, &rc, &cfg.resolver, err) < 0 ||
	    (o->identity_pid > 0 &&
	     identity_ctx_new((pid_t)o->identity_pid, &cfg.identity, err) < 0) ||
	    (cfg.identity && o->identity_cgroup &&
	     identity_ctx_set_cgroup(cfg.identity, o->identity_cgroup, err) < 0) ||
	    (o->creds && credentials_load(o->creds, &cfg.creds, err) < 0) ||
	    (o->inference && inference_routes_load(o->inference, &cfg.inference, err) < 0))
		return -1;
	if (o->ca_dir) {
		char ca[4096], bundle[4096];
		snprintf(ca, sizeof ca, "%s/ca.pem", o->ca_dir);
		snprintf(bundle, sizeof bundle, "%s/bundle.pem", o->ca_dir);
		if (tls_ca_new(o->sandbox_id, &cfg.ca, err) < 0 ||
		    tls_ca_write_files(cfg.ca, ca, bundle, NULL, err) < 0)
			return -1;
	}
	if (upstream_trust_get(o->upstream_ca, &cfg.upstream_trust, err) < 0)
		return -1;
	cfg.audit = st->audit;
	cfg.policy = st->holder;
	if ((cfg.listen_fd = listen_on(o->listen, err)) < 0 ||
	    proxy_new(l, &cfg, &st->proxy, err) < 0)
		return -1;
	if (loop_signal_add(l, SIGHUP, on_hup, st, NULL, err) < 0 ||
	    loop_signal_add(l, SIGTERM, on_term, st, NULL, err) < 0 ||
	    loop_signal_add(l, SIGINT, on_term, st, NULL, err) < 0)
		return -1;
	int status = loop_run(l, err);
	/* Orderly teardown, so a leak checker sees only real leaks. */
	proxy_free(st->proxy); /* also frees the identity context */
	resolver_free(cfg.resolver);
	credentials_free(cfg.creds);
	inference_routes_free(cfg.inference);
	tls_ca_free(cfg.ca);
	upstream_trust_put(cfg.upstream_trust);
	policy_holder_free(st->holder);
	audit_close(st->audit);
	loop_run_once(l, 0, NULL); /* deferred frees */
	loop_free(l);
	return status;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	proxy_raise_fd_limit();
	log_init("openshell-proxy", LOG_LVL_INFO, LOG_FMT_AUTO, 2);
	struct state st = { 0 };
	os_error err = { 0 };
	if (parse_args(argc, argv, &st.o, &err) < 0) {
		fprintf(stderr, "openshell-proxy: %s\n", err.msg);
		usage();
		return 2;
	}
	if (run(&st, &err) < 0) {
		fprintf(stderr, "openshell-proxy: %s\n", err.msg);
		return 1;
	}
	return 0;
}
