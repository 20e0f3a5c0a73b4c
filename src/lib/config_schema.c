/* config_schema.c - the one place where configuration keys are declared:
 * [openshell.gateway], [openshell.drivers.kubernetes], [openshell.drivers.local].
 * Adding a key is adding a line here; nothing else may accept undeclared keys. */
#include "config.h"

#include <stdint.h>

#include "cleanup.h"

#define ID_MAX INT64_C(2147483647) /* Kubernetes runAsUser/runAsGroup are int32 */

static const char *const log_levels[] = { "debug", "info", "warn", "error", NULL };
static const char *const drivers[] = { "local", "kubernetes", NULL };
static const char *const topologies[] = { "combined", "dedicated-supervisor", NULL };
static const char *const pull_policies[] = { "Always", "IfNotPresent", "Never", NULL };
static const char *const split_identities[] = { "deny", "endpoint-only", NULL };

static const struct config_key gateway_keys[] = {
	{ .name = "listen_address",
	  .type = CONFIG_STRING,
	  .def = "127.0.0.1:17670",
	  .help = "TCP address:port of the gateway API" },
	{ .name = "unix_socket",
	  .type = CONFIG_STRING,
	  .help = "path of a Unix socket to serve the API on as well" },
	{ .name = "state_dir",
	  .type = CONFIG_STRING,
	  .help = "directory of the gateway's database and keys" },
	{ .name = "log_level",
	  .type = CONFIG_ENUM,
	  .choices = log_levels,
	  .def = "info",
	  .help = "least severe log level written" },
	{ .name = "default_driver",
	  .type = CONFIG_ENUM,
	  .choices = drivers,
	  .def = "local",
	  .help = "compute driver used when a request names none" },
	{ .name = "tls_cert_file",
	  .type = CONFIG_STRING,
	  .help = "PEM certificate chain: with tls_key_file, the TCP listener speaks TLS 1.2+" },
	{ .name = "tls_key_file",
	  .type = CONFIG_STRING,
	  .help = "PEM private key of tls_cert_file; must not be group/other readable (0600)" },
	{ .name = "admin_token_file",
	  .type = CONFIG_STRING,
	  .help = "file holding the admin token (64 hex; e.g. a mounted Secret) instead of "
		  "STATE_DIR/admin.token; read at start, never written" },
	{ .name = "tls_client_ca_file",
	  .type = CONFIG_STRING,
	  .help = "PEM CA: admin clients on TCP must present a certificate it signed (mTLS); "
		  "supervisors need only their sandbox token" },
};

/* One element of dns_peers: the fence's DNS egress rule (NetworkPolicy peer). */
static const struct config_key dns_peer_keys[] = {
	{ .name = "namespace_selector",
	  .type = CONFIG_STRING_MAP,
	  .help = "labels of the namespaces the DNS servers run in" },
	{ .name = "pod_selector",
	  .type = CONFIG_STRING_MAP,
	  .help = "labels of the DNS server Pods" },
	{ .name = "port",
	  .type = CONFIG_INT,
	  .min = 1,
	  .max = 65535,
	  .required = true,
	  .help = "DNS port (UDP and TCP)" },
};

static const struct config_key kubernetes_keys[] = {
	{ .name = "namespace",
	  .type = CONFIG_STRING,
	  .def = "openshell",
	  .help = "namespace sandboxes are created in" },
	{ .name = "topology",
	  .type = CONFIG_ENUM,
	  .choices = topologies,
	  .def = "combined",
	  .help = "one Pod per sandbox, or a supervisor Pod plus a workload Pod" },
	{ .name = "default_image",
	  .type = CONFIG_STRING,
	  .help = "workload image when a request names none" },
	{ .name = "supervisor_image",
	  .type = CONFIG_STRING,
	  .help = "trusted image running openshell-supervisor" },
	{ .name = "image_pull_policy",
	  .type = CONFIG_ENUM,
	  .choices = pull_policies,
	  .def = "IfNotPresent",
	  .help = "imagePullPolicy of every container" },
	{ .name = "image_pull_secrets",
	  .type = CONFIG_STRING_ARRAY,
	  .def = "",
	  .help = "names of Secrets used to pull images" },
	{ .name = "default_runtime_class_name",
	  .type = CONFIG_STRING,
	  .help = "RuntimeClass of workload Pods when a request names none" },
	{ .name = "supervisor_runtime_class_name",
	  .type = CONFIG_STRING,
	  .help = "RuntimeClass of supervisor Pods (unset: none)" },
	{ .name = "allowed_runtime_class_names",
	  .type = CONFIG_STRING_ARRAY,
	  .def = "",
	  .help = "classes requests may ask for; empty: only the default" },
	{ .name = "service_account_name",
	  .type = CONFIG_STRING,
	  .help = "service account of supervisor Pods" },
	{ .name = "gateway_endpoint",
	  .type = CONFIG_STRING,
	  .help = "address supervisors dial to reach the gateway" },
	{ .name = "gateway_ca_secret",
	  .type = CONFIG_STRING,
	  .help = "Secret (in namespace) whose ca.crt verifies an https:// gateway_endpoint" },
	{ .name = "dns_peers",
	  .type = CONFIG_TABLE_ARRAY,
	  .def = "[]",
	  .sub = dns_peer_keys,
	  .n_sub = ARRAY_SIZE(dns_peer_keys),
	  .help = "DNS servers the fence lets workloads reach; empty: no DNS egress" },
	{ .name = "split_binary_identity",
	  .type = CONFIG_ENUM,
	  .choices = split_identities,
	  .def = "deny",
	  .help = "split topology with per-binary policy: refuse, or enforce endpoints only" },
	{ .name = "workspace_storage_size",
	  .type = CONFIG_STRING,
	  .help = "size of the workspace volume (Kubernetes quantity, e.g. 10Gi)" },
	{ .name = "workspace_storage_class",
	  .type = CONFIG_STRING,
	  .help = "StorageClass of the workspace volume" },
	{ .name = "sandbox_uid",
	  .type = CONFIG_INT,
	  .min = 1,
	  .max = ID_MAX,
	  .def = "1000",
	  .help = "non-root user the workload runs as" },
	{ .name = "sandbox_gid",
	  .type = CONFIG_INT,
	  .min = 0,
	  .max = ID_MAX,
	  .def = "1000",
	  .help = "group the workload runs as" },
};

static const struct config_key local_keys[] = {
	{ .name = "state_dir",
	  .type = CONFIG_STRING,
	  .help = "directory holding the local driver's sandboxes" },
	{ .name = "supervisor_binary",
	  .type = CONFIG_STRING,
	  .help = "path of openshell-supervisor" },
	{ .name = "sandbox_binary", .type = CONFIG_STRING, .help = "path of openshell-sandbox" },
	{ .name = "hosts_file",
	  .type = CONFIG_STRING,
	  .help = "ADDRESS NAME... lines the supervisors' proxies consult before DNS" },
	{ .name = "dns_servers",
	  .type = CONFIG_STRING,
	  .help = "IP[:PORT],... the supervisors' proxies resolve with (default: the system's)" },
	{ .name = "upstream_ca_file",
	  .type = CONFIG_STRING,
	  .help = "extra CA the proxies trust for upstream TLS (system roots always are)" },
	{ .name = "max_processes",
	  .type = CONFIG_INT,
	  .min = 0,
	  .max = 4194304,
	  .def = "0",
	  .help = "processes per sandbox, a pids cgroup (else RLIMIT_NPROC); 0 = no limit" },
	{ .name = "max_memory_mb",
	  .type = CONFIG_INT,
	  .min = 0,
	  .max = 16777216,
	  .def = "0",
	  .help = "MiB per sandbox, a memory cgroup (else RLIMIT_AS per process); 0 = no limit" },
	{ .name = "sandbox_uid_range",
	  .type = CONFIG_STRING,
	  .help = "FIRST-LAST: each sandbox's agent runs as its own uid (= gid) from this range, "
		  "over the policy's run_as_user (unset: the policy's, or nobody)" },
	{ .name = "proxy_memory_mb",
	  .type = CONFIG_INT,
	  .min = 0,
	  .max = 1048576,
	  .def = "0",
	  .help = "MiB the supervisor's proxy may buffer for one sandbox (else 503); "
		  "0 = the supervisor's default (64), at least 2" },
	{ .name = "max_upstream_connections",
	  .type = CONFIG_INT,
	  .min = 0,
	  .max = 1000000,
	  .def = "0",
	  .help = "concurrent upstream connections per sandbox (else 503); "
		  "0 = the supervisor's default (256)" },
	{ .name = "transparent_ports",
	  .type = CONFIG_STRING,
	  .help = "PORT,PORT...: direct TCP to these ports becomes a judged proxy connection "
		  "(unset: 80,443), or off" },
};

const struct config_section config_section_gateway = { "gateway", gateway_keys,
						       ARRAY_SIZE(gateway_keys) };
const struct config_section config_section_kubernetes = { "drivers.kubernetes", kubernetes_keys,
							  ARRAY_SIZE(kubernetes_keys) };
const struct config_section config_section_local = { "drivers.local", local_keys,
						     ARRAY_SIZE(local_keys) };

const struct config_section *const config_sections_all[] = {
	&config_section_gateway,
	&config_section_kubernetes,
	&config_section_local,
};
const size_t config_sections_all_len = ARRAY_SIZE(config_sections_all);
