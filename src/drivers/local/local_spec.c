/* local_spec.c - what a caller may ask of a local sandbox. Refuses anything
 * the local driver cannot honour (runtime classes, images, resources) rather
 * than ignoring it, and any env that would steer the proxy or OpenShell. */
#include "local_driver.h"

#include <errno.h>
#include <string.h>

#include "execframe.h"
#include "json.h"
#include "parse.h"

#define ARGV_MAX 1024
#define ENV_MAX 256
#define VALUE_MAX 4096
/* The kernel's execve limits, which the agent's command must pass twice (the
 * supervisor's exec and the agent's): MAX_ARG_STRLEN is 128 KiB with the
 * NUL, and ARG_MAX is a quarter of the stack limit: 2 MiB with the usual
 * 8 MiB (the driver raises the supervisor's, local_proc.c, so that the
 * command's 2 MiB fit beside the environment and the supervisor's flags). */
#define COMMAND_ARG_MAX (128u * 1024 - 1)
#define COMMAND_TOTAL_MAX (2u * 1024 * 1024)

static int check_env_name(const char *k, os_error *err)
{
	static const char *const reserved[] = { "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
						"ALL_PROXY",  "http_proxy",  "https_proxy",
						"no_proxy",   "all_proxy" };
	if (!*k || strlen(k) > 128)
		return os_error_set(err, EINVAL, "spec.env: name must be 1..128 characters");
	for (const char *p = k; *p; p++)
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (p != k && *p >= '0' && *p <= '9')))
			return os_error_set(err, EINVAL,
					    "spec.env: \"%s\" is not a variable name "
					    "([A-Za-z_][A-Za-z0-9_]*)",
					    k);
	if (str_has_prefix(k, "OPENSHELL_"))
		return os_error_set(err, EINVAL, "spec.env.%s: OPENSHELL_* variables are reserved",
				    k);
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!strcmp(k, reserved[i]))
			return os_error_set(err, EINVAL,
					    "spec.env.%s: proxy variables are set by the "
					    "supervisor",
					    k);
	return 0;
}

static int check_string_map(const json_t *m, const char *what, bool env, os_error *err)
{
	if (!json_is_object(m))
		return os_error_set(err, EINVAL, "spec.%s: expected an object of strings", what);
	if (json_object_size(m) > ENV_MAX)
		return os_error_set(err, EINVAL, "spec.%s: more than %d entries", what, ENV_MAX);
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)m, k, v) {
		if (!json_is_string(v) || json_string_length(v) > VALUE_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return os_error_set(err, EINVAL,
					    "spec.%s.%s: expected a string of at most %d bytes "
					    "without NUL",
					    what, k, VALUE_MAX);
		if (env && check_env_name(k, err) < 0)
			return -1;
		if (!env && (!*k || strlen(k) > 63 || str_has_prefix(k, "openshell.ai/")))
			return os_error_set(err, EINVAL,
					    "spec.labels: key \"%s\" must be 1..63 bytes and not "
					    "under openshell.ai/",
					    k);
	}
	return 0;
}

static int check_command(const json_t *c, os_error *err)
{
	if (!json_is_array(c) || json_array_size(c) == 0 || json_array_size(c) > ARGV_MAX)
		return os_error_set(
			err, EINVAL,
			"spec.command: expected a non-empty array of at most %d strings", ARGV_MAX);
	size_t i, total = 0;
	json_t *a;
	json_array_foreach (c, i, a) {
		if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
			return os_error_set(err, EINVAL,
					    "spec.command[%zu]: expected a string without NUL", i);
		if (json_string_length(a) > COMMAND_ARG_MAX)
			return os_error_set(
				err, EINVAL,
				"spec.command[%zu]: %zu bytes: over the kernel's limit "
				"for one argument, %u bytes (MAX_ARG_STRLEN, 128 KiB with "
				"its NUL)",
				i, json_string_length(a), COMMAND_ARG_MAX);
		total += json_string_length(a) + 1;
	}
	if (total > COMMAND_TOTAL_MAX)
		return os_error_set(err, EINVAL,
				    "spec.command: %zu bytes in all (with a NUL each): over the "
				    "limit of %u bytes (2 MiB, the kernel's ARG_MAX with an 8 MiB "
				    "stack)",
				    total, COMMAND_TOTAL_MAX);
	if (json_string_length(json_array_get(c, 0)) == 0)
		return os_error_set(err, EINVAL, "spec.command[0]: empty program name");
	return 0;
}

/* spec.attach, a foreground create: {"tty": B, "rows": N, "cols": N,
 * "term": T, "remove": B}, every field optional; the size and TERM only
 * with a tty; remove: the gateway deletes the sandbox when its agent ends. */
static int check_attach(const json_t *a, os_error *err)
{
	static const char *const keys[] = { "tty", "rows", "cols", "term", "remove", NULL };
	bool tty = false, remove = false;
	int64_t rows = 0, cols = 0;
	const char *term = NULL;
	if (!json_is_object(a))
		return os_error_set(err, EINVAL,
				    "spec.attach: expected an object {tty, rows, cols, term}");
	if (json_check_keys(a, keys, "spec.attach", err) < 0 ||
	    json_get_bool(a, "tty", false, &tty, err) < 0 ||
	    json_get_int(a, "rows", false, 0, 65535, &rows, err) < 0 ||
	    json_get_int(a, "cols", false, 0, 65535, &cols, err) < 0 ||
	    json_get_string(a, "term", false, &term, err) < 0 ||
	    json_get_bool(a, "remove", false, &remove, err) < 0)
		return err->code = EINVAL, os_error_prefix(err, "spec.attach");
	if (!tty && (rows || cols || term))
		return os_error_set(err, EINVAL,
				    "spec.attach: rows, cols and term only with \"tty\": true");
	if (term && !execframe_term_ok(term))
		return os_error_set(err, EINVAL,
				    "spec.attach.term: expected a terminal type of 1..%d "
				    "characters of [A-Za-z0-9.+_-]",
				    EXECFRAME_TERM_MAX);
	return 0;
}

int local_spec_validate(const json_t *spec, os_error *err)
{
	static const char *const keys[] = { "command", "env", "labels", "runtime_class_name",
					    "attach",  NULL };
	if (!json_is_object(spec))
		return os_error_set(err, EINVAL, "spec: expected an object");
	if (json_check_keys(spec, keys, "spec", err) < 0) {
		err->code = EINVAL;
		return -1;
	}
	const json_t *rc = json_object_get(spec, "runtime_class_name");
	if (rc && !json_is_null(rc))
		return os_error_set(err, EINVAL,
				    "spec.runtime_class_name: the local driver has no runtime "
				    "classes (use the kubernetes driver)");
	const json_t *c = json_object_get(spec, "command");
	if (!c || check_command(c, err) < 0)
		return c ? -1 : os_error_set(err, EINVAL, "spec.command: required");
	const json_t *env = json_object_get(spec, "env");
	if (env && check_string_map(env, "env", true, err) < 0)
		return -1;
	const json_t *labels = json_object_get(spec, "labels");
	if (labels && check_string_map(labels, "labels", false, err) < 0)
		return -1;
	const json_t *attach = json_object_get(spec, "attach");
	if (attach && check_attach(attach, err) < 0)
		return -1;
	return 0;
}
