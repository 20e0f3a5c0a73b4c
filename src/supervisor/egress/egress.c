/* egress.c - the supervisor side of the proxy (see egress.h). The static
 * part of the policy (filesystem, process, Landlock) becomes the launch spec;
 * the dynamic part (network policies) lives in reference-counted generations
 * swapped on reload. */
#include "egress.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "dns_stub.h"
#include "egress_proxy.h"
#include "inference.h"
#include "java_trust.h"
#include "json.h"
#include "log.h"
#include "parse.h"
#include "pathutil.h"

#define SYSTEM_ROOTS "/etc/ssl/certs/ca-certificates.crt"

struct egress {
	struct egress_options o;
	struct loop *loop;
	struct dns_stub *dns; /* the transparent path's resolver, or NULL */
	uint16_t dns_ports[EGRESS_TRANSPARENT_PORTS_MAX]; /* the ports its names serve */
	size_t n_dns_ports;
	time_t dns_deny_second; /* audit records of refused names: at most */
	unsigned dns_deny_count; /* DNS_DENY_RECORDS_PER_S a second */
	struct policy_holder *holder;
	struct proxy *proxy;
	struct audit *audit;
	struct proxy_config cfg;
	struct identity_ctx *identity; /* owned by the proxy; NULL until bound */
	json_t *fs; /* the launch spec's filesystem lists, shared with the spec */
	uint64_t generation; /* 1 at start, +1 per policy swapped in */
	char ca_path[PATH_MAX], bundle_path[PATH_MAX], java_trust_path[PATH_MAX];
};

static struct policy_gen *load_gen(const char *path, struct policy_diag *diag, os_error *err)
{
	struct policy_doc *doc;
	if (policy_load_file(path, &doc, diag, err) < 0)
		return NULL;
	return policy_compile(doc, err);
}

static int listen_at(const struct sockaddr *addr, socklen_t len, os_error *err)
{
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, addr, len) < 0 || listen(fd, 1024) < 0) {
		os_error_errno(err, "proxy listener");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int setup_ca(struct egress *e, os_error *err)
{
	/* Every level: an image may have no /run at all (busybox-like ones),
	 * and the dedicated Pod points us into its emptyDir. */
	if (dir_create_parents(e->o.run_dir, 0755) < 0)
		return os_error_errno(err, "creating %s", e->o.run_dir);
	if (str_format(e->ca_path, sizeof e->ca_path, err, "%s/ca.pem", e->o.run_dir) < 0 ||
	    str_format(e->bundle_path, sizeof e->bundle_path, err, "%s/ca-bundle.pem",
		       e->o.run_dir) < 0)
		return -1;
	const char *roots = access(SYSTEM_ROOTS, R_OK) == 0 ? SYSTEM_ROOTS : NULL;
	if (tls_ca_new(e->o.sandbox_id, &e->cfg.ca, err) < 0 ||
	    tls_ca_write_files(e->cfg.ca, e->ca_path, e->bundle_path, roots, err) < 0)
		return os_error_prefix(err, "sandbox CA");
	if (str_format(e->java_trust_path, sizeof e->java_trust_path, err, "%s/truststore.p12",
		       e->o.run_dir) < 0 ||
	    java_trust_write(e->bundle_path, e->java_trust_path, err) < 0)
		return os_error_prefix(err, "sandbox CA");
	return 0;
}

int egress_start(struct loop *l, const struct sockaddr *addr, socklen_t len,
		 const struct egress_options *o, struct egress **out, os_error *err)
{
	struct egress *e = calloc(1, sizeof *e);
	if (!e)
		return os_error_set(err, ENOMEM, "out of memory");
	e->o = *o;
	e->loop = l;
	proxy_raise_fd_limit();
	proxy_limits_default(&e->cfg.limits);
	if (o->proxy_memory_mb)
		e->cfg.limits.memory_budget = (size_t)o->proxy_memory_mb << 20;
	if (o->max_upstreams)
		e->cfg.limits.max_upstreams = o->max_upstreams;
	e->cfg.sandbox_id = o->sandbox_id;
	e->cfg.endpoint_only = o->endpoint_only;
	e->cfg.allow_sni_mismatch = o->allow_sni_mismatch;
	struct policy_gen *g = load_gen(o->policy_path, NULL, err);
	struct resolver_config rc = { .dns_servers = o->dns_servers, .hosts_file = o->hosts_file };
	struct ip_addr gw;
	if (g && o->host_gateway) {
		if (resolver_host_gateway_parse(o->host_gateway, addr, &gw, err) < 0) {
			policy_unref(g);
			egress_free(e);
			return -1;
		}
		rc.host_gateway = &gw;
	}
	if (!g || !(e->holder = policy_holder_new(g)) ||
	    audit_open(o->audit_log, o->sandbox_id, &e->audit, err) < 0 ||
	    resolver_new(l, &rc, &e->cfg.resolver, err) < 0 ||
	    (o->credentials_path &&
	     credentials_load(o->credentials_path, &e->cfg.creds, err) < 0) ||
	    (o->inference_path &&
	     inference_routes_load(o->inference_path, &e->cfg.inference, err) < 0) ||
	    (o->run_dir && setup_ca(e, err) < 0) ||
	    upstream_trust_get(o->upstream_ca, &e->cfg.upstream_trust, err) < 0) {
		egress_free(e);
		return -1;
	}
	e->cfg.policy = e->holder;
	e->cfg.audit = e->audit;
	if ((e->cfg.listen_fd = listen_at(addr, len, err)) < 0 ||
	    proxy_new(l, &e->cfg, &e->proxy, err) < 0) {
		if (e->cfg.listen_fd > 0 && !e->proxy)
			close(e->cfg.listen_fd);
		egress_free(e);
		return -1;
	}
	e->generation = 1;
	struct audit_record r = { .event = "policy",
				  .decision = "allow",
				  .reason = "policy_loaded",
				  .uid = -1,
				  .generation = e->generation };
	audit_write(e->audit, &r);
	*out = e;
	return 0;
}

static json_t *path_array(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static bool inside_any(const json_t *paths, const char *path)
{
	size_t i;
	const json_t *p;
	json_array_foreach (paths, i, p)
		if (path_is_inside(path, json_string_value(p)))
			return true;
	return false;
}

/* The launch spec's filesystem part: the policy's lists, the workdir when
 * include_workdir, and the CA directory (read-only) so TLS clients work. */
static void fill_filesystem(struct egress *e, const struct policy_doc *d, json_t *spec)
{
	static const char *const defaults_ro[] = { "/usr",  "/lib", "/lib64", "/bin",
						   "/sbin", "/etc", "/proc",  "/dev/urandom" };
	static const char *const defaults_rw[] = { "/tmp", "/dev/null" };
	json_t *ro, *rw;
	if (d->fs_present) {
		ro = path_array(d->read_only, d->n_read_only);
		rw = path_array(d->read_write, d->n_read_write);
	} else {
		ro = json_array();
		rw = json_array();
		for (size_t i = 0; i < ARRAY_SIZE(defaults_ro); i++)
			json_array_append_new(ro, json_string(defaults_ro[i]));
		for (size_t i = 0; i < ARRAY_SIZE(defaults_rw); i++)
			json_array_append_new(rw, json_string(defaults_rw[i]));
	}
	/* With its own namespaces the agent sees the workspace on /sandbox. */
	if (d->include_workdir && e->o.workdir)
		json_array_append_new(
			rw, json_string(json_is_true(json_object_get(spec, "new_namespaces"))
						? "/sandbox"
						: e->o.workdir));
	/* Inside a read_write path it is readable already (and root's files
	 * there stay root's); a read_only entry nested in read_write would
	 * need the launcher's mount namespace, which split agents lack. */
	if (e->o.run_dir && !inside_any(rw, e->o.run_dir))
		json_array_append_new(ro, json_string(e->o.run_dir));
	json_t *fs = json_pack("{s:o, s:o}", "read_only", ro, "read_write", rw);
	json_decref(e->fs);
	e->fs = json_incref(fs);
	json_object_set_new(spec, "filesystem", fs);
	json_object_set_new(spec, "landlock",
			    json_string(d->landlock == POLICY_LANDLOCK_HARD_REQUIREMENT
						? "hard_requirement"
						: "best_effort"));
}

static void fill_ident(json_t *spec, const char *key, const struct policy_ident *id)
{
	if (!id->set)
		return;
	if (id->is_sandbox)
		json_object_set_new(spec, key, json_string("sandbox"));
	else
		json_object_set_new(spec, key, json_integer(id->id));
}

/* Java reads neither the proxy variables nor a PEM bundle: the JVM's own
 * properties say both (JAVA_TOOL_OPTIONS is read by every JVM at start).
 * An agent's own JAVA_TOOL_OPTIONS is not kept: the spec's env is ours. */
static void set_java_options(struct egress *e, json_t *env, const char *proxy_url)
{
	const char *hp = strncmp(proxy_url, "http://", 7) == 0 ? proxy_url + 7 : NULL;
	const char *colon = hp ? strrchr(hp, ':') : NULL;
	if (!colon)
		return;
	char opts[2 * PATH_MAX + 512];
	int n = snprintf(opts, sizeof opts,
			 "-Dhttp.proxyHost=%.*s -Dhttp.proxyPort=%s -Dhttps.proxyHost=%.*s "
			 "-Dhttps.proxyPort=%s -Dhttp.nonProxyHosts=localhost|127.0.0.1|[::1]",
			 (int)(colon - hp), hp, colon + 1, (int)(colon - hp), hp, colon + 1);
	if (e->cfg.ca && e->java_trust_path[0] && n > 0 && (size_t)n < sizeof opts)
		snprintf(opts + n, sizeof opts - (size_t)n,
			 " -Djavax.net.ssl.trustStore=%s -Djavax.net.ssl.trustStoreType=PKCS12"
			 " -Djavax.net.ssl.trustStorePassword=" JAVA_TRUST_PASSWORD,
			 e->java_trust_path);
	json_object_set_new(env, "JAVA_TOOL_OPTIONS", json_string(opts));
}

static void fill_env(struct egress *e, json_t *env, const char *proxy_url)
{
	static const char *const proxy_vars[] = { "HTTP_PROXY",	 "HTTPS_PROXY", "http_proxy",
						  "https_proxy", "ALL_PROXY",	"all_proxy" };
	/* Each runtime's own name for "trust this bundle" (system roots + the
	 * sandbox CA); Node adds NODE_EXTRA_CA_CERTS to its built-in roots, so
	 * it gets the CA alone. */
	static const char *const bundle_vars[] = { "SSL_CERT_FILE",	"REQUESTS_CA_BUNDLE",
						   "CURL_CA_BUNDLE",	"GIT_SSL_CAINFO",
						   "NPM_CONFIG_CAFILE", "PIP_CERT",
						   "AWS_CA_BUNDLE" };
	for (size_t i = 0; i < ARRAY_SIZE(proxy_vars); i++)
		json_object_set_new(env, proxy_vars[i], json_string(proxy_url));
	/* Node >= 22.21 / 24 honours the proxy variables only when asked. */
	json_object_set_new(env, "NODE_USE_ENV_PROXY", json_string("1"));
	json_object_set_new(env, "NO_PROXY", json_string("localhost,127.0.0.1,::1"));
	json_object_set_new(env, "no_proxy", json_string("localhost,127.0.0.1,::1"));
	if (e->cfg.ca) {
		for (size_t i = 0; i < ARRAY_SIZE(bundle_vars); i++)
			json_object_set_new(env, bundle_vars[i], json_string(e->bundle_path));
		json_object_set_new(env, "NODE_EXTRA_CA_CERTS", json_string(e->ca_path));
	}
	set_java_options(e, env, proxy_url);
	char **vars = NULL;
	size_t n = 0;
	if (e->cfg.creds && credentials_agent_env(e->cfg.creds, &vars, &n, NULL) == 0) {
		for (size_t i = 0; i < n; i++) {
			char *eq = strchr(vars[i], '=');
			if (eq) {
				*eq = '\0';
				json_object_set_new(env, vars[i], json_string(eq + 1));
			}
			free(vars[i]);
		}
		free(vars);
	}
}

int egress_fill_spec(struct egress *e, json_t *spec, const char *proxy_url, os_error *err)
{
	struct policy_gen *g = policy_holder_acquire(e->holder);
	const struct policy_doc *d = policy_gen_doc(g);
	fill_filesystem(e, d, spec);
	fill_ident(spec, "user", &d->run_as_user);
	fill_ident(spec, "group", &d->run_as_group);
	policy_unref(g);
	json_t *env = json_object_get(spec, "env");
	if (!env) {
		env = json_object();
		json_object_set_new(spec, "env", env);
	}
	fill_env(e, env, proxy_url);
	if (e->cfg.ca) /* in the filesystem view, where a launcher makes one */
		json_object_set_new(spec, "system_trust", json_string(e->bundle_path));
	return 0;
}

/* The strings of a JSON array of paths, borrowed from it. */
static const char **path_list(const json_t *a, size_t *n)
{
	*n = json_array_size(a);
	const char **v = calloc(*n ? *n : 1, sizeof *v);
	for (size_t i = 0; v && i < *n; i++)
		v[i] = json_string_value(json_array_get(a, i));
	return v;
}

/* The agent's read-only tree decides what code may run as an allowed
 * binary (injection.h): the lists the launch spec was given. */
static int set_identity_tree(struct egress *e, struct identity_ctx *id, os_error *err)
{
	if (!e->fs)
		return 0;
	struct injection_tree t;
	_cleanup_free_ const char **ro =
		path_list(json_object_get(e->fs, "read_only"), &t.n_read_only);
	_cleanup_free_ const char **rw =
		path_list(json_object_get(e->fs, "read_write"), &t.n_read_write);
	if (!ro || !rw)
		return os_error_set(err, ENOMEM, "out of memory");
	t.read_only = ro;
	t.read_write = rw;
	return identity_ctx_set_tree(id, &t, err);
}

int egress_bind_agent(struct egress *e, pid_t entry_pid, const char *cgroup_dir, os_error *err)
{
	struct identity_ctx *id;
	if (identity_ctx_new(entry_pid, &id, err) < 0)
		return os_error_prefix(err, "caller identity");
	if ((cgroup_dir && identity_ctx_set_cgroup(id, cgroup_dir, err) < 0) ||
	    set_identity_tree(e, id, err) < 0) {
		identity_ctx_free(id);
		return os_error_prefix(err, "caller identity");
	}
	proxy_set_identity(e->proxy, id);
	e->identity = id;
	return 0;
}

int egress_add_entry(struct egress *e, pid_t pid, os_error *err)
{
	if (!e->identity)
		return os_error_set(err, ENOTSUP, "no caller identity is bound in this sandbox");
	return identity_ctx_add_entry(e->identity, pid, err);
}

void egress_remove_entry(struct egress *e, pid_t pid)
{
	if (e->identity)
		identity_ctx_remove_entry(e->identity, pid);
}

/* Audits a refused update; the running generation stays. */
static int refuse(struct egress *e, uint64_t revision, const char *why, os_error *err)
{
	char detail[OS_ERROR_MSG_MAX + 48];
	struct audit_record r = { .event = "policy",
				  .decision = "deny",
				  .reason = "policy_invalid",
				  .uid = -1,
				  .detail = detail,
				  .generation = e->generation };
	if (revision)
		snprintf(detail, sizeof detail, "revision %llu: %s", (unsigned long long)revision,
			 why);
	else
		snprintf(detail, sizeof detail, "%s", why);
	audit_write(e->audit, &r);
	if (why != err->msg)
		os_error_set(err, EINVAL, "%s", why);
	return -1;
}

static bool static_part_same(const struct policy_doc *a, const struct policy_doc *b)
{
	bool same = a->landlock == b->landlock && a->fs_present == b->fs_present &&
		    a->n_read_only == b->n_read_only && a->n_read_write == b->n_read_write &&
		    a->include_workdir == b->include_workdir;
	for (size_t i = 0; same && i < a->n_read_only; i++)
		same = strcmp(a->read_only[i], b->read_only[i]) == 0;
	for (size_t i = 0; same && i < a->n_read_write; i++)
		same = strcmp(a->read_write[i], b->read_write[i]) == 0;
	return same;
}

/* Swaps in g (taken) when only the dynamic part changed. */
static int swap_in(struct egress *e, struct policy_gen *g, uint64_t revision, os_error *err)
{
	struct policy_gen *cur = policy_holder_acquire(e->holder);
	bool same = static_part_same(policy_gen_doc(cur), policy_gen_doc(g));
	policy_unref(cur);
	if (!same) {
		policy_unref(g);
		return refuse(e, revision,
			      "filesystem_policy and landlock are fixed when the sandbox starts",
			      err);
	}
	policy_holder_swap(e->holder, g);
	proxy_policy_changed(e->proxy);
	e->generation++;
	char detail[48];
	struct audit_record r = { .event = "policy",
				  .decision = "allow",
				  .reason = "policy_loaded",
				  .uid = -1,
				  .generation = e->generation };
	if (revision) {
		snprintf(detail, sizeof detail, "revision %llu", (unsigned long long)revision);
		r.detail = detail;
	}
	audit_write(e->audit, &r);
	return 0;
}

int egress_reload(struct egress *e, os_error *err)
{
	struct policy_diag diag = { 0 };
	struct policy_gen *g = load_gen(e->o.policy_path, &diag, err);
	policy_diag_free(&diag);
	if (!g)
		return refuse(e, 0, err->msg, err);
	if (swap_in(e, g, 0, err) < 0)
		return -1;
	return 0;
}

int egress_apply_policy_text(struct egress *e, const char *yaml, size_t len, uint64_t revision,
			     os_error *err)
{
	struct policy_doc *doc = NULL;
	struct policy_gen *g = NULL;
	/* The gateway's push of the revision in force (at every session
	 * start) is that policy, not a second load: no policy_loaded record. */
	struct policy_gen *cur = policy_holder_acquire(e->holder);
	const struct policy_doc *in_force = policy_gen_doc(cur);
	bool same = len == in_force->source_len && memcmp(yaml, in_force->source, len) == 0;
	policy_unref(cur);
	if (same)
		return 0;
	if (policy_parse("policy", yaml, len, &doc, NULL, err) == 0)
		g = policy_compile(doc, err);
	if (!g)
		return refuse(e, revision, err->msg, err);
	if (swap_in(e, g, revision, err) < 0)
		return -1;
	return 0;
}

#define DNS_DENY_RECORDS_PER_S 20

/* A name is looked up only when some endpoint allows it on a port the
 * transparent path serves (by endpoint: the querying binary is unknown;
 * the connection that follows is judged with its identity). */
static bool dns_name_allowed(void *user, const char *name, const char *proto)
{
	struct egress *e = user;
	struct policy_gen *g = policy_holder_acquire(e->holder);
	bool ok = false;
	for (size_t i = 0; i < e->n_dns_ports && !ok; i++) {
		struct policy_decision d;
		policy_decide_connect_endpoint_only(g, name, e->dns_ports[i], &d);
		ok = d.verdict != POLICY_DENY;
	}
	uint64_t generation = e->generation;
	policy_unref(g);
	time_t now = time(NULL);
	if (now != e->dns_deny_second) {
		e->dns_deny_second = now;
		e->dns_deny_count = 0;
	}
	if (!ok && e->dns_deny_count++ < DNS_DENY_RECORDS_PER_S) {
		struct audit_record r = { .event = "dns",
					  .decision = "deny",
					  .reason = "dns_name_not_allowed",
					  .proto = proto,
					  .host = name,
					  .uid = -1,
					  .detail = "no policy allows this name: answered NXDOMAIN "
						    "without a lookup",
					  .generation = generation };
		audit_write(e->audit, &r);
	}
	return ok;
}

static bool dns_handed_out(void *user, const char *name, const struct ip_addr *a)
{
	return dns_stub_handed_out(user, name, a);
}

int egress_serve_transparent(struct egress *e, int tcp_fd, int dns_fd, int dns_tcp_fd,
			     const uint16_t *ports, size_t n_ports, os_error *err)
{
	e->n_dns_ports =
		n_ports < EGRESS_TRANSPARENT_PORTS_MAX ? n_ports : EGRESS_TRANSPARENT_PORTS_MAX;
	memcpy(e->dns_ports, ports, e->n_dns_ports * sizeof *ports);
	if (tcp_fd >= 0 && proxy_add_transparent(e->proxy, tcp_fd, err) < 0) {
		close(tcp_fd);
		if (dns_fd >= 0)
			close(dns_fd);
		if (dns_tcp_fd >= 0)
			close(dns_tcp_fd);
		return -1;
	}
	if (dns_fd < 0 && dns_tcp_fd >= 0)
		close(dns_tcp_fd); /* TCP beside UDP only */
	if (dns_fd >= 0 && dns_stub_new(e->loop, e->cfg.resolver, dns_name_allowed, e, dns_fd,
					dns_tcp_fd, &e->dns, err) < 0)
		return -1;
	if (e->dns)
		proxy_set_dns_memory(e->proxy, dns_handed_out, e->dns);
	return 0;
}

void egress_free(struct egress *e)
{
	if (!e)
		return;
	dns_stub_free(e->dns); /* before the resolver its lookups use */
	proxy_free(e->proxy);
	json_decref(e->fs);
	resolver_free(e->cfg.resolver);
	credentials_free(e->cfg.creds);
	inference_routes_free(e->cfg.inference);
	tls_ca_free(e->cfg.ca);
	upstream_trust_put(e->cfg.upstream_trust);
	if (e->holder)
		policy_holder_free(e->holder);
	audit_close(e->audit);
	/* The CA files were only for this sandbox's agent. */
	if (e->ca_path[0])
		unlink(e->ca_path);
	if (e->bundle_path[0])
		unlink(e->bundle_path);
	if (e->java_trust_path[0])
		unlink(e->java_trust_path);
	if (e->o.run_dir && e->ca_path[0])
		rmdir(e->o.run_dir);
	free(e);
}
