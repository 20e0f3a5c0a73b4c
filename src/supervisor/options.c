/* options.c - the supervisor's flags (see options.h): a table for the flags
 * that take a string as is, code for those whose value is checked. Values
 * are borrowed from argv; every number is parsed bounded. */
#include "options.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "egress_proxy.h"
#include "execframe.h"
#include "parse.h"
#include "selfpath.h"

static const char usage_text[] =
	"usage: openshell-supervisor --backend inpod|split --sandbox-id ID --proxy-port N\n"
	"         [--max-processes N] [--max-memory-mb M] [--sandbox-uid UID]"
	" [--binary-identity kernel|endpoint-only]\n"
	"         [--tunnel-sni check|allow-mismatch] [--host-gateway IP|proxy]\n"
	"         [--transparent-ports P,P...|off]\n"
	"         [--proxy-memory-mb N] [--max-upstream-connections N]\n"
	"         [--launcher PATH] [--audit-log FILE] [--user U] [--group G]"
	" -- CMD [ARG...]\n"
	"         [--gateway unix:/PATH|http://HOST:PORT|https://HOST:PORT"
	" --token-file FILE [--gateway-ca FILE]]\n"
	"         [--attach pipes|tty [--attach-rows N --attach-cols N] [--attach-term T]]\n"
	"       split: --split-key FILE --split-control-port N [--split-mode local|pod]\n"
	"         [--split-listen IP] [--split-advertise IP] [--split-confirm-timeout "
	"MS]\n";

const char *sup_options_usage(void)
{
	return usage_text;
}

/* Flags whose value is kept as given. */
static const struct {
	const char *flag;
	size_t off; /* of a const char * in struct sup_options */
} string_flags[] = {
	{ "--backend", offsetof(struct sup_options, desc.backend) },
	{ "--sandbox-id", offsetof(struct sup_options, desc.sandbox_id) },
	{ "--launcher", offsetof(struct sup_options, desc.launcher) },
	{ "--audit-log", offsetof(struct sup_options, audit_log) },
	{ "--user", offsetof(struct sup_options, user) },
	{ "--group", offsetof(struct sup_options, group) },
	{ "--policy", offsetof(struct sup_options, egress.policy_path) },
	{ "--credentials", offsetof(struct sup_options, egress.credentials_path) },
	{ "--inference", offsetof(struct sup_options, egress.inference_path) },
	{ "--hosts", offsetof(struct sup_options, egress.hosts_file) },
	{ "--dns", offsetof(struct sup_options, egress.dns_servers) },
	{ "--host-gateway", offsetof(struct sup_options, egress.host_gateway) },
	{ "--upstream-ca", offsetof(struct sup_options, egress.upstream_ca) },
	{ "--run-dir", offsetof(struct sup_options, egress.run_dir) },
	{ "--workdir", offsetof(struct sup_options, egress.workdir) },
	{ "--gateway", offsetof(struct sup_options, gateway_url) },
	{ "--token-file", offsetof(struct sup_options, token_file) },
	{ "--gateway-ca", offsetof(struct sup_options, gateway_ca) },
	{ "--split-mode", offsetof(struct sup_options, desc.split_mode) },
	{ "--split-key", offsetof(struct sup_options, desc.key_file) },
	{ "--split-listen", offsetof(struct sup_options, desc.listen_addr) },
	{ "--split-advertise", offsetof(struct sup_options, desc.advertise_addr) },
};

static bool set_string_flag(struct sup_options *o, const char *a, const char *v)
{
	for (size_t i = 0; i < sizeof string_flags / sizeof string_flags[0]; i++)
		if (strcmp(a, string_flags[i].flag) == 0) {
			*(const char **)(void *)((char *)o + string_flags[i].off) = v;
			return true;
		}
	return false;
}

static int port_flag(const char *flag, const char *v, uint16_t *out, os_error *err)
{
	uint64_t n = 0;
	if (parse_u64_str(v, 1, 65535, &n, err) < 0)
		return os_error_prefix(err, "%s", flag);
	*out = (uint16_t)n;
	return 0;
}

/* --transparent-ports 80,443,8080 | off */
static int transparent_ports_flag(const char *v, struct backend_descriptor *d, os_error *err)
{
	d->n_transparent_ports = 0;
	d->transparent_off = strcmp(v, "off") == 0;
	if (!d->transparent_off &&
	    parse_port_list(v, d->transparent_ports, BACKEND_TRANSPARENT_PORTS_MAX,
			    &d->n_transparent_ports, err) < 0)
		return os_error_prefix(err, "--transparent-ports (or off)");
	return 0;
}

/* Flags whose value is checked here. */
static int set_checked_flag(struct sup_options *o, const char *a, const char *v, os_error *err)
{
	uint64_t n = 0;
	if (strcmp(a, "--proxy-port") == 0)
		return port_flag(a, v, &o->desc.proxy_port, err);
	if (strcmp(a, "--split-control-port") == 0)
		return port_flag(a, v, &o->desc.control_port, err);
	if (strcmp(a, "--transparent-ports") == 0) {
		o->transparent_set = true;
		return transparent_ports_flag(v, &o->desc, err);
	}
	if (strcmp(a, "--split-confirm-timeout") == 0) {
		if (parse_u64_str(v, 1, 3600000, &n, err) < 0)
			return os_error_prefix(err, "%s", a);
		o->desc.confirm_timeout_ms = (unsigned)n;
	} else if (strcmp(a, "--binary-identity") == 0) {
		if (strcmp(v, "endpoint-only") != 0 && strcmp(v, "kernel") != 0)
			return os_error_set(err, EINVAL,
					    "--binary-identity: expected kernel or "
					    "endpoint-only, got \"%s\"",
					    v);
		o->egress.endpoint_only = strcmp(v, "endpoint-only") == 0;
	} else if (strcmp(a, "--tunnel-sni") == 0) {
		if (strcmp(v, "check") != 0 && strcmp(v, "allow-mismatch") != 0)
			return os_error_set(
				err, EINVAL,
				"--tunnel-sni: expected check or allow-mismatch, got \"%s\"", v);
		o->egress.allow_sni_mismatch = strcmp(v, "allow-mismatch") == 0;
	} else if (strcmp(a, "--sandbox-uid") == 0) {
		/* Never root, never a system account's range. */
		if (parse_u64_str(v, 1000, INT32_MAX, &o->sandbox_uid, err) < 0)
			return os_error_prefix(err, "%s", a);
	} else if (strcmp(a, "--attach") == 0) {
		if (strcmp(v, "pipes") != 0 && strcmp(v, "tty") != 0)
			return os_error_set(err, EINVAL,
					    "--attach: expected pipes or tty, got \"%s\"", v);
		o->attach.on = true;
		o->attach.tty = strcmp(v, "tty") == 0;
	} else if (strcmp(a, "--attach-rows") == 0 || strcmp(a, "--attach-cols") == 0) {
		if (parse_u64_str(v, 1, 65535, &n, err) < 0)
			return os_error_prefix(err, "%s", a);
		*(a[9] == 'r' ? &o->attach.rows : &o->attach.cols) = (uint16_t)n;
	} else if (strcmp(a, "--attach-term") == 0) {
		if (!execframe_term_ok(v))
			return os_error_set(err, EINVAL,
					    "--attach-term: expected a terminal type of 1..%d "
					    "characters of [A-Za-z0-9.+_-]",
					    EXECFRAME_TERM_MAX);
		o->attach.term = v;
	} else if (strcmp(a, "--max-processes") == 0) {
		if (parse_u64_str(v, 1, 1u << 22, &o->max_processes, err) < 0)
			return os_error_prefix(err, "%s", a);
	} else if (strcmp(a, "--max-memory-mb") == 0) {
		if (parse_u64_str(v, 16, 1u << 24, &o->max_memory_mb, err) < 0)
			return os_error_prefix(err, "%s", a);
	} else if (strcmp(a, "--proxy-memory-mb") == 0) {
		if (parse_u64_str(v, PROXY_MEMORY_MB_MIN, PROXY_MEMORY_MB_MAX, &n, err) < 0)
			return os_error_prefix(err, "%s", a);
		o->egress.proxy_memory_mb = (unsigned)n;
	} else if (strcmp(a, "--max-upstream-connections") == 0) {
		if (parse_u64_str(v, 1, 1000000, &n, err) < 0)
			return os_error_prefix(err, "%s", a);
		o->egress.max_upstreams = (unsigned)n;
	} else
		return os_error_set(err, EINVAL, "unknown option %s", a);
	return 0;
}

/* What no single flag can check, and the defaults that depend on others. */
static int finish(struct sup_options *o, os_error *err)
{
	if (!o->desc.backend || !o->desc.sandbox_id || !o->desc.proxy_port ||
	    !o->egress.policy_path)
		return os_error_set(
			err, EINVAL,
			"--backend, --sandbox-id, --proxy-port and --policy are required");
	if (!o->gateway_url != !o->token_file)
		return os_error_set(err, EINVAL, "--gateway and --token-file go together");
	if (o->gateway_ca && !o->gateway_url)
		return os_error_set(err, EINVAL, "--gateway-ca needs --gateway https://...");
	if (!o->transparent_set) { /* web ports by default */
		o->desc.transparent_ports[0] = 80;
		o->desc.transparent_ports[1] = 443;
		o->desc.n_transparent_ports = 2;
	}
	if ((o->attach.rows || o->attach.cols || o->attach.term) && !o->attach.tty)
		return os_error_set(
			err, EINVAL,
			"--attach-rows, --attach-cols and --attach-term need --attach tty");
	if (o->attach.on && !o->gateway_url)
		return os_error_set(err, EINVAL,
				    "--attach needs --gateway: its client attaches through the "
				    "gateway");
	o->egress.sandbox_id = o->desc.sandbox_id;
	o->egress.audit_log = o->audit_log;
	if (!o->egress.run_dir) {
		if (str_format(o->run_dir_buf, sizeof o->run_dir_buf, err, "/run/openshell/%s",
			       o->desc.sandbox_id) < 0)
			return -1;
		o->egress.run_dir = o->run_dir_buf;
	}
	if (!o->argv || !o->argv[0])
		return os_error_set(err, EINVAL, "missing agent command after --");
	/* openshell-sandbox next to us (installed) or in the build tree's sibling folder. */
	if (!o->desc.launcher && exe_sibling("../sandbox", "openshell-sandbox", o->launcher_buf,
					     sizeof o->launcher_buf) == 0)
		o->desc.launcher = o->launcher_buf;
	return 0;
}

int sup_options_parse(int argc, char **argv, struct sup_options *o, os_error *err)
{
	*o = (struct sup_options){ .user = "nobody" };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			o->argv = argv + i + 1;
			break;
		}
		if (i + 1 >= argc)
			return os_error_set(err, EINVAL, "%s: missing value", a);
		const char *v = argv[++i];
		if (!set_string_flag(o, a, v) && set_checked_flag(o, a, v, err) < 0)
			return -1;
	}
	return finish(o, err);
}
