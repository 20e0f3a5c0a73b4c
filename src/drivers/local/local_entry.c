/* local_entry.c - the local driver's registry entry: reads
 * [openshell.drivers.local] and finds the supervisor and launcher next to
 * the host's executable. It never guesses a binary from $PATH. */
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include "driver_registry.h"
#include "local_driver.h"
#include "local_settings.h"
#include "local_uid.h"
#include "selfpath.h"

#define SECTION "drivers.local"

struct local_paths {
	char sup[PATH_MAX], sbx[PATH_MAX];
	const char *supervisor, *sandbox;
};

static int find_binaries(const struct config *cfg, struct local_paths *p, os_error *err)
{
	p->supervisor = config_get_string(cfg, SECTION, "supervisor_binary");
	p->sandbox = config_get_string(cfg, SECTION, "sandbox_binary");
	if (!p->supervisor &&
	    exe_sibling("../supervisor", "openshell-supervisor", p->sup, sizeof(p->sup)) == 0)
		p->supervisor = p->sup;
	if (!p->sandbox &&
	    exe_sibling("../sandbox", "openshell-sandbox", p->sbx, sizeof(p->sbx)) == 0)
		p->sandbox = p->sbx;
	if (!p->supervisor)
		return os_error_set(err, ENOENT,
				    "openshell-supervisor not found next to the gateway: set "
				    "[openshell.drivers.local] supervisor_binary");
	return 0;
}

static int local_open(const struct config *cfg, const struct driver_env *env, struct driver **out,
		      os_error *err)
{
	struct local_paths p;
	const char *d = config_get_string(cfg, SECTION, "state_dir");
	if (find_binaries(cfg, &p, err) < 0 ||
	    local_settings_check(cfg, p.supervisor, p.sandbox, err) < 0)
		return -1;
	struct local_driver_config lc = {
		.state_dir = d ? d : env->state_dir,
		.supervisor_binary = p.supervisor,
		.sandbox_binary = p.sandbox,
		.hosts_file = config_get_string(cfg, SECTION, "hosts_file"),
		.dns_servers = config_get_string(cfg, SECTION, "dns_servers"),
		.upstream_ca_file = config_get_string(cfg, SECTION, "upstream_ca_file"),
		.max_processes = config_get_int(cfg, SECTION, "max_processes"),
		.max_memory_mb = config_get_int(cfg, SECTION, "max_memory_mb"),
		.sandbox_uid_range = config_get_string(cfg, SECTION, "sandbox_uid_range"),
		.proxy_memory_mb = config_get_int(cfg, SECTION, "proxy_memory_mb"),
		.max_upstream_connections =
			config_get_int(cfg, SECTION, "max_upstream_connections"),
		.transparent_ports = config_get_string(cfg, SECTION, "transparent_ports"),
	};
	return local_driver_new(&lc, out, err);
}

static int local_check(const struct config *cfg, const struct driver_env *env, json_t **report,
		       os_error *err)
{
	struct local_paths p;
	int r = find_binaries(cfg, &p, err);
	if (r == 0 && local_settings_check(cfg, p.supervisor, p.sandbox, err) < 0)
		r = -1;
	struct local_uid_range uids;
	const char *range = config_get_string(cfg, SECTION, "sandbox_uid_range");
	if (r == 0 && range && local_uid_range_parse(range, &uids, err) < 0)
		r = -1;
	*report = json_pack("{s:b, s:s?, s:s?}", "ok", r == 0, "supervisor_binary",
			    r == 0 ? p.supervisor : NULL, "sandbox_binary",
			    r == 0 ? p.sandbox : NULL);
	return r;
}

const struct driver_entry driver_entry_local = {
	.name = "local",
	.open = local_open,
	.check = local_check,
};
