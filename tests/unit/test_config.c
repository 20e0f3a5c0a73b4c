/* test_config.c - unit tests of the configuration loader: defaults,
 * precedence CLI > env > file > default, sources, unknown keys and sections
 * with positions, type / enum / range errors, env names, dns_peers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

static struct config *new_config(void)
{
	os_error err = { 0 };
	struct config *cfg = config_new(config_sections_all, config_sections_all_len, &err);
	if (!cfg)
		fail_msg("config_new: %s", err.msg);
	return cfg;
}

static int load(struct config *cfg, const char *doc, os_error *err)
{
	os_error_clear(err);
	return config_load_toml(cfg, doc, strlen(doc), "gw.toml", err);
}

/* Asserts that doc is rejected with exactly want. */
static void assert_file_rejected(const char *doc, const char *want)
{
	_cleanup_config_ struct config *cfg = new_config();
	os_error err;
	if (load(cfg, doc, &err) == 0)
		fail_msg("accepted: %s", doc);
	if (strcmp(err.msg, want) != 0)
		fail_msg("for %s\n  got:  %s\n  want: %s", doc, err.msg, want);
}

static void assert_file_accepted(const char *doc)
{
	_cleanup_config_ struct config *cfg = new_config();
	os_error err;
	if (load(cfg, doc, &err) < 0)
		fail_msg("rejected %s: %s", doc, err.msg);
}

static void defaults_are_resolved(void **state)
{
	_cleanup_config_ struct config *cfg = new_config();
	const struct config_value *v = config_get(cfg, "gateway", "listen_address");
	assert_non_null(v);
	assert_string_equal(v->str, "127.0.0.1:17670");
	assert_int_equal(v->source, CONFIG_SRC_DEFAULT);
	assert_string_equal(config_get_string(cfg, "gateway", "log_level"), "info");
	assert_string_equal(config_get_string(cfg, "gateway", "default_driver"), "local");
	assert_string_equal(config_get_string(cfg, "drivers.kubernetes", "split_binary_identity"),
			    "deny");
	assert_int_equal(config_get_int(cfg, "drivers.kubernetes", "sandbox_uid"), 1000);
	v = config_get(cfg, "drivers.kubernetes", "allowed_runtime_class_names");
	assert_int_equal(v->n_strv, 0);
	assert_int_equal(v->source, CONFIG_SRC_DEFAULT);
	v = config_get(cfg, "drivers.kubernetes", "dns_peers");
	assert_int_equal(v->toml->u.array.len, 0); /* empty: no DNS egress */
	v = config_get(cfg, "gateway", "unix_socket");
	assert_int_equal(v->source, CONFIG_SRC_UNSET);
	assert_null(v->str);
	assert_null(config_get(cfg, "gateway", "no_such_key"));
	assert_null(config_get_string(cfg, "nowhere", "listen_address"));
}

static void file_values_override_defaults_and_record_origin(void **state)
{
	_cleanup_config_ struct config *cfg = new_config();
	os_error err;
	assert_int_equal(load(cfg,
			      "[openshell.gateway]\n"
			      "listen_address = \"0.0.0.0:9000\"\n"
			      "log_level = \"debug\"\n"
			      "[openshell.drivers.kubernetes]\n"
			      "topology = \"dedicated-supervisor\"\n"
			      "allowed_runtime_class_names = [\"kata\", \"gvisor\"]\n"
			      "sandbox_gid = 0\n",
			      &err),
			 0);
	const struct config_value *v = config_get(cfg, "gateway", "listen_address");
	assert_string_equal(v->str, "0.0.0.0:9000");
	assert_int_equal(v->source, CONFIG_SRC_FILE);
	assert_string_equal(v->origin, "gw.toml:2:18");
	assert_string_equal(config_source_name(v->source), "file");
	v = config_get(cfg, "drivers.kubernetes", "allowed_runtime_class_names");
	assert_int_equal(v->n_strv, 2);
	assert_string_equal(v->strv[0], "kata");
	assert_string_equal(v->strv[1], "gvisor");
	assert_int_equal(config_get_int(cfg, "drivers.kubernetes", "sandbox_gid"), 0);
	/* untouched keys keep their default */
	assert_int_equal(config_get(cfg, "gateway", "default_driver")->source, CONFIG_SRC_DEFAULT);
}

static void precedence_is_cli_env_file_default_in_any_order(void **state)
{
	_cleanup_config_ struct config *cfg = new_config();
	os_error err;
	char *env[] = { "OPENSHELL_GATEWAY_LISTEN_ADDRESS=10.0.0.1:1",
			"OPENSHELL_GATEWAY_LOG_LEVEL=warn",
			"OPENSHELL_BUILD=/ignored", /* not a configuration key */
			NULL };
	/* highest precedence first: later, lower sources must not win */
	assert_int_equal(config_set_cli(cfg, "gateway.listen_address", "10.0.0.2:2", &err), 0);
	assert_int_equal(config_load_env(cfg, env, &err), 0);
	assert_int_equal(load(cfg,
			      "[openshell.gateway]\n"
			      "listen_address = \"10.0.0.3:3\"\n"
			      "log_level = \"error\"\n"
			      "state_dir = \"/var/lib/os\"\n",
			      &err),
			 0);
	const struct config_value *v = config_get(cfg, "gateway", "listen_address");
	assert_string_equal(v->str, "10.0.0.2:2");
	assert_int_equal(v->source, CONFIG_SRC_CLI);
	assert_string_equal(v->origin, "command line gateway.listen_address");
	v = config_get(cfg, "gateway", "log_level");
	assert_string_equal(v->str, "warn");
	assert_int_equal(v->source, CONFIG_SRC_ENV);
	assert_string_equal(v->origin, "OPENSHELL_GATEWAY_LOG_LEVEL");
	v = config_get(cfg, "gateway", "state_dir");
	assert_string_equal(v->str, "/var/lib/os");
	assert_int_equal(v->source, CONFIG_SRC_FILE);
	/* and a CLI value still beats everything when it comes last */
	assert_int_equal(config_set_cli(cfg, "gateway.log_level", "debug", &err), 0);
	assert_string_equal(config_get_string(cfg, "gateway", "log_level"), "debug");
}

static void unknown_keys_and_sections_are_rejected_with_position(void **state)
{
	assert_file_accepted("[openshell.gateway]\nlog_level = \"info\"\n");
	assert_file_rejected("[openshell.gateway]\nlog_level = \"info\"\nlisten_adress = \"x\"\n",
			     "gw.toml:3:1: unknown key 'listen_adress' in [openshell.gateway]");
	assert_file_rejected("[openshell.drivers.docker]\nx = 1\n",
			     "gw.toml:1:20: unknown key 'openshell.drivers.docker'");
	assert_file_rejected("[openshell]\ngateway = 1\n",
			     "gw.toml:2:11: openshell.gateway: expected a table, found integer");
	assert_file_rejected("[gateway]\nlog_level = \"info\"\n",
			     "gw.toml:1:2: unknown top-level key 'gateway' (only [openshell] is "
			     "read)");
	assert_file_rejected("openshell.\"gateway.log_level\" = 1\n",
			     "gw.toml:1:11: unknown key 'openshell.gateway.log_level'");
	assert_file_rejected("[openshell.drivers.local]\nnamespace = \"x\"\n",
			     "gw.toml:2:1: unknown key 'namespace' in [openshell.drivers.local]");
	assert_file_accepted("[openshell.drivers.kubernetes]\nnamespace = \"x\"\n");
	/* TOML errors keep the parser's position */
	assert_file_rejected("[openshell.gateway\n", "gw.toml:1:19: expected ']' to close the "
						     "table header");
}

static void type_enum_and_range_errors_name_key_and_expectation(void **state)
{
	assert_file_rejected("[openshell.gateway]\nlisten_address = 17670\n",
			     "gw.toml:2:18: openshell.gateway.listen_address: expected a string, "
			     "found integer");
	assert_file_rejected("[openshell.gateway]\nlog_level = \"verbose\"\n",
			     "gw.toml:2:13: openshell.gateway.log_level: 'verbose' is not one of "
			     "debug, info, warn, error");
	assert_file_rejected("[openshell.drivers.kubernetes]\nsandbox_uid = 0\n",
			     "gw.toml:2:15: openshell.drivers.kubernetes.sandbox_uid: 0 is out of "
			     "range [1, 2147483647]");
	assert_file_rejected("[openshell.drivers.kubernetes]\nimage_pull_secrets = [\"a\", 1]\n",
			     "gw.toml:2:28: openshell.drivers.kubernetes.image_pull_secrets: "
			     "expected an array of strings, found integer");
	assert_file_rejected("[openshell.drivers.kubernetes]\nimage_pull_policy = \"always\"\n",
			     "gw.toml:2:21: openshell.drivers.kubernetes.image_pull_policy: "
			     "'always' is not one of Always, IfNotPresent, Never");
	assert_file_rejected("[openshell.gateway]\nstate_dir = \"/a\\u0000b\"\n",
			     "gw.toml:2:13: openshell.gateway.state_dir: must not contain a NUL "
			     "character");
	assert_file_accepted("[openshell.drivers.kubernetes]\nsandbox_uid = 1\n"
			     "image_pull_policy = \"Always\"\nimage_pull_secrets = [\"a\"]\n");
}

static void env_names_map_sections_and_keys(void **state)
{
	char name[128];
	os_error err;
	const struct config_key *k = NULL;
	for (size_t i = 0; i < config_section_kubernetes.n_keys; i++)
		if (strcmp(config_section_kubernetes.keys[i].name,
			   "supervisor_runtime_class_name") == 0)
			k = &config_section_kubernetes.keys[i];
	assert_non_null(k);
	assert_int_equal(config_env_name(&config_section_kubernetes, k, name, sizeof name, &err),
			 0);
	assert_string_equal(name, "OPENSHELL_DRIVERS_KUBERNETES_SUPERVISOR_RUNTIME_CLASS_NAME");
	assert_int_equal(config_env_name(&config_section_gateway, &config_section_gateway.keys[0],
					 name, sizeof name, &err),
			 0);
	assert_string_equal(name, "OPENSHELL_GATEWAY_LISTEN_ADDRESS");

	_cleanup_config_ struct config *cfg = new_config();
	char *env[] = { "OPENSHELL_DRIVERS_KUBERNETES_SUPERVISOR_RUNTIME_CLASS_NAME=kata-sup",
			"OPENSHELL_DRIVERS_KUBERNETES_SANDBOX_UID=2000",
			"OPENSHELL_DRIVERS_KUBERNETES_IMAGE_PULL_SECRETS=reg1,reg2",
			"OPENSHELL_DRIVERS_KUBERNETES_ALLOWED_RUNTIME_CLASS_NAMES=[\"a,b\"]",
			"OPENSHELL_DRIVERS_LOCAL_STATE_DIR=/srv/local",
			NULL };
	assert_int_equal(config_load_env(cfg, env, &err), 0);
	assert_string_equal(
		config_get_string(cfg, "drivers.kubernetes", "supervisor_runtime_class_name"),
		"kata-sup");
	assert_int_equal(config_get_int(cfg, "drivers.kubernetes", "sandbox_uid"), 2000);
	const struct config_value *v = config_get(cfg, "drivers.kubernetes", "image_pull_secrets");
	assert_int_equal(v->n_strv, 2);
	assert_string_equal(v->strv[1], "reg2");
	v = config_get(cfg, "drivers.kubernetes", "allowed_runtime_class_names");
	assert_int_equal(v->n_strv, 1);
	assert_string_equal(v->strv[0], "a,b");
	assert_string_equal(config_get_string(cfg, "drivers.local", "state_dir"), "/srv/local");
	/* the gateway's state_dir is a different key */
	assert_null(config_get_string(cfg, "gateway", "state_dir"));
}

static void env_and_cli_values_are_type_checked(void **state)
{
	_cleanup_config_ struct config *cfg = new_config();
	os_error err;
	char *bad_enum[] = { "OPENSHELL_GATEWAY_LOG_LEVEL=loud", NULL };
	char *bad_int[] = { "OPENSHELL_DRIVERS_KUBERNETES_SANDBOX_GID=12x", NULL };
	char *bad_range[] = { "OPENSHELL_DRIVERS_KUBERNETES_SANDBOX_UID=0", NULL };
	char *bad_list[] = { "OPENSHELL_DRIVERS_KUBERNETES_IMAGE_PULL_SECRETS=a,,b", NULL };
	assert_int_equal(config_load_env(cfg, bad_enum, &err), -1);
	assert_string_equal(err.msg, "OPENSHELL_GATEWAY_LOG_LEVEL: gateway.log_level: 'loud' is "
				     "not one of debug, info, warn, error");
	assert_int_equal(config_load_env(cfg, bad_int, &err), -1);
	assert_string_equal(err.msg,
			    "OPENSHELL_DRIVERS_KUBERNETES_SANDBOX_GID: "
			    "drivers.kubernetes.sandbox_gid: expected an integer, got '12x'");
	assert_int_equal(config_load_env(cfg, bad_range, &err), -1);
	assert_string_equal(err.msg, "OPENSHELL_DRIVERS_KUBERNETES_SANDBOX_UID: "
				     "drivers.kubernetes.sandbox_uid: 0 is out of range [1, "
				     "2147483647]");
	assert_int_equal(config_load_env(cfg, bad_list, &err), -1);
	assert_non_null(strstr(err.msg, "empty item in list"));
	assert_int_equal(config_set_cli(cfg, "gateway.log_level", "loud", &err), -1);
	assert_string_equal(err.msg, "command line gateway.log_level: gateway.log_level: 'loud' is "
				     "not one of debug, info, warn, error");
	assert_int_equal(config_set_cli(cfg, "gateway.nope", "1", &err), -1);
	assert_non_null(strstr(err.msg, "unknown configuration key 'gateway.nope'"));
	assert_int_equal(config_set_cli(cfg, "listen_address", "1", &err), -1);
	/* failed attempts changed nothing */
	assert_string_equal(config_get_string(cfg, "gateway", "log_level"), "info");
	assert_int_equal(config_get(cfg, "gateway", "log_level")->source, CONFIG_SRC_DEFAULT);
	/* positive control */
	assert_int_equal(config_set_cli(cfg, "drivers.kubernetes.sandbox_uid", "4242", &err), 0);
	assert_int_equal(config_get_int(cfg, "drivers.kubernetes", "sandbox_uid"), 4242);
}

static void dns_peers_are_schema_checked(void **state)
{
	_cleanup_config_ struct config *cfg = new_config();
	os_error err;
	assert_int_equal(load(cfg,
			      "[openshell.drivers.kubernetes]\n"
			      "dns_peers = [\n"
			      "  { namespace_selector = { \"kubernetes.io/metadata.name\" = "
			      "\"kube-system\" }, pod_selector = { k8s-app = \"kube-dns\" }, "
			      "port = 53 },\n"
			      "]\n",
			      &err),
			 0);
	const struct config_value *v = config_get(cfg, "drivers.kubernetes", "dns_peers");
	assert_int_equal(v->toml->u.array.len, 1);
	const struct toml_value *peer = v->toml->u.array.items[0];
	assert_int_equal(toml_table_get(peer, "port")->u.integer, 53);
	assert_string_equal(
		toml_table_get(toml_table_get(peer, "pod_selector"), "k8s-app")->u.str.s,
		"kube-dns");

	assert_file_rejected("[openshell.drivers.kubernetes]\ndns_peers = [{ port = 53, "
			     "podSelector = {} }]\n",
			     "gw.toml:2:27: unknown key "
			     "'openshell.drivers.kubernetes.dns_peers[0].podSelector'");
	assert_file_rejected(
		"[openshell.drivers.kubernetes]\ndns_peers = [{ pod_selector = {} }]\n",
		"gw.toml:2:14: openshell.drivers.kubernetes.dns_peers[0]: missing "
		"required key 'port'");
	assert_file_rejected("[openshell.drivers.kubernetes]\ndns_peers = [{ port = 70000 }]\n",
			     "gw.toml:2:23: openshell.drivers.kubernetes.dns_peers[0].port: 70000 "
			     "is out of range [1, 65535]");
	assert_file_rejected(
		"[openshell.drivers.kubernetes]\n"
		"dns_peers = [{ port = 53, pod_selector = { app = 1 } }]\n",
		"gw.toml:2:50: openshell.drivers.kubernetes.dns_peers[0].pod_selector: "
		"expected a table of strings, found integer");
	assert_file_rejected("[openshell.drivers.kubernetes]\ndns_peers = { port = 53 }\n",
			     "gw.toml:2:13: openshell.drivers.kubernetes.dns_peers: expected an "
			     "array of tables, found table");

	/* the environment takes the TOML inline form */
	char *env[] = { "OPENSHELL_DRIVERS_KUBERNETES_DNS_PEERS=[{ port = 5353 }]", NULL };
	assert_int_equal(config_load_env(cfg, env, &err), 0);
	v = config_get(cfg, "drivers.kubernetes", "dns_peers");
	assert_int_equal(v->source, CONFIG_SRC_ENV);
	assert_int_equal(toml_table_get(v->toml->u.array.items[0], "port")->u.integer, 5353);
	char *bad[] = { "OPENSHELL_DRIVERS_KUBERNETES_DNS_PEERS=[{ port = 53 }", NULL };
	assert_int_equal(config_load_env(cfg, bad, &err), -1);
	assert_non_null(strstr(err.msg, "OPENSHELL_DRIVERS_KUBERNETES_DNS_PEERS:1:"));
}

static const char *const two_choices[] = { "a", "b", NULL };

static void inconsistent_schemas_are_refused(void **state)
{
	os_error err;
	static const struct config_key bad_default[] = {
		{ .name = "mode", .type = CONFIG_ENUM, .choices = two_choices, .def = "c" },
	};
	static const struct config_key good_default[] = {
		{ .name = "mode", .type = CONFIG_ENUM, .choices = two_choices, .def = "b" },
	};
	static const struct config_key ab_keys[] = { { .name = "b_c", .type = CONFIG_STRING } };
	static const struct config_key c_keys[] = { { .name = "c", .type = CONFIG_STRING } };
	const struct config_section bad = { "x", bad_default, 1 }, good = { "x", good_default, 1 };
	const struct config_section a = { "a", ab_keys, 1 }, a_b = { "a.b", c_keys, 1 };
	const struct config_section *s1[] = { &bad }, *s2[] = { &good }, *s3[] = { &a, &a_b };

	assert_null(config_new(s1, 1, &err));
	assert_non_null(
		strstr(err.msg, "configuration schema: default: x.mode: 'c' is not one of"));
	struct config *cfg = config_new(s2, 1, &err);
	assert_non_null(cfg);
	assert_string_equal(config_get_string(cfg, "x", "mode"), "b");
	config_free(cfg);
	assert_null(config_new(s3, 2, &err));
	assert_string_equal(err.msg, "configuration schema: a.b_c and a.b.c both map to "
				     "OPENSHELL_A_B_C");
}

static void config_file_is_read_from_disk(void **state)
{
	_cleanup_config_ struct config *cfg = new_config();
	os_error err;
	char path[] = "/tmp/test_config_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char doc[] = "[openshell.gateway]\ndefault_driver = \"kubernetes\"\nbogus = 1\n";
	assert_int_equal(write(fd, doc, sizeof doc - 1), (ssize_t)(sizeof doc - 1));
	close(fd);
	assert_int_equal(config_load_file(cfg, path, &err), -1);
	char want[256];
	snprintf(want, sizeof want, "%s:3:1: unknown key 'bogus' in [openshell.gateway]", path);
	assert_string_equal(err.msg, want);
	unlink(path);
	assert_int_equal(config_load_file(cfg, path, &err), -1);
	assert_int_equal(err.code, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_are_resolved),
		cmocka_unit_test(file_values_override_defaults_and_record_origin),
		cmocka_unit_test(precedence_is_cli_env_file_default_in_any_order),
		cmocka_unit_test(unknown_keys_and_sections_are_rejected_with_position),
		cmocka_unit_test(type_enum_and_range_errors_name_key_and_expectation),
		cmocka_unit_test(env_names_map_sections_and_keys),
		cmocka_unit_test(env_and_cli_values_are_type_checked),
		cmocka_unit_test(dns_peers_are_schema_checked),
		cmocka_unit_test(inconsistent_schemas_are_refused),
		cmocka_unit_test(config_file_is_read_from_disk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
