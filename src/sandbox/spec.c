/* spec.c - strict parser of the launch spec (see spec.h).
 * Every error names the field; nothing is half-applied because parsing
 * finishes before the first step runs. */
#include "spec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "json.h"
#include "parse.h"

#define ID_MAX 4294967294u

/* A JSON string without embedded NUL bytes (they would silently truncate). */
static int str_value(const json_t *v, const char *where, const char **out, os_error *err)
{
	if (!json_is_string(v))
		return os_error_set(err, EINVAL, "%s: expected a string", where);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return os_error_set(err, EINVAL, "%s: contains a NUL byte", where);
	*out = json_string_value(v);
	return 0;
}

static int check_path(const char *p, const char *where, os_error *err)
{
	size_t len = strlen(p);
	if (p[0] != '/')
		return os_error_set(err, EINVAL, "%s: \"%s\" is not an absolute path", where, p);
	if (len > SPEC_MAX_PATH_LEN)
		return os_error_set(err, ENAMETOOLONG, "%s: path longer than %d bytes", where,
				    SPEC_MAX_PATH_LEN);
	for (const char *c = p; (c = strstr(c, "..")) != NULL; c += 2)
		if (c[-1] == '/' && (c[2] == '/' || c[2] == '\0'))
			return os_error_set(err, EINVAL, "%s: \"%s\" contains \"..\"", where, p);
	return 0;
}

/* Array of strings at obj[key] into a NULL-terminated malloc'd vector; an
 * absent key is an empty vector (or an error when min > 0). */
static int string_array(const json_t *obj, const char *key, size_t min, size_t max, bool paths,
			const char ***out, size_t *n, os_error *err)
{
	const json_t *arr = obj ? json_object_get(obj, key) : NULL;
	size_t count = arr ? json_array_size(arr) : 0;
	*n = 0;
	if (!arr && min > 0)
		return os_error_set(err, EINVAL, "missing field \"%s\"", key);
	if (arr && (!json_is_array(arr) || count < min || count > max))
		return os_error_set(err, EINVAL, "%s: expected an array of %zu..%zu strings", key,
				    min, max);
	if (!(*out = calloc(count + 1, sizeof(char *))))
		return os_error_set(err, ENOMEM, "%s: out of memory", key);
	for (size_t i = 0; i < count; i++) {
		char where[64];
		snprintf(where, sizeof(where), "%s[%zu]", key, i);
		if (str_value(json_array_get(arr, i), where, &(*out)[i], err) < 0 ||
		    (paths && check_path((*out)[i], where, err) < 0))
			return -1;
	}
	*n = count;
	return 0;
}

static bool env_name_ok(const char *k)
{
	return k[0] != '\0' && strchr(k, '=') == NULL;
}

static int parse_env(const json_t *root, struct launch_spec *s, os_error *err)
{
	const json_t *env = json_object_get(root, "env");
	size_t n = env ? json_object_size(env) : 0, ne = 0, nd = 0;
	if (env && !json_is_object(env))
		return os_error_set(err, EINVAL, "env: expected an object of strings");
	if (n > SPEC_MAX_ENV)
		return os_error_set(err, E2BIG, "env: more than %d variables", SPEC_MAX_ENV);
	s->envp = calloc(n + 1, sizeof(char *));
	s->dropped_env = calloc(n + 1, sizeof(char *));
	if (!s->envp || !s->dropped_env)
		return os_error_set(err, ENOMEM, "env: out of memory");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)env, k, v) {
		const char *val;
		char where[300];
		snprintf(where, sizeof(where), "env.%.256s", k);
		if (!env_name_ok(k) || strlen(k) > 256)
			return os_error_set(err, EINVAL, "%s: invalid variable name", where);
		if (str_value(v, where, &val, err) < 0)
			return -1;
		if (str_has_prefix(k, "OPENSHELL_")) { /* supervisor-only: never to the agent */
			s->dropped_env[nd++] = k;
			continue;
		}
		size_t sz = strlen(k) + strlen(val) + 2;
		if (!(s->envp[ne] = malloc(sz)))
			return os_error_set(err, ENOMEM, "env: out of memory");
		snprintf(s->envp[ne++], sz, "%s=%s", k, val);
	}
	return 0;
}

/* "user"/"group": a name (resolved later) or a number 1..ID_MAX. */
static int id_field(const json_t *root, const char *key, const char **name, uint64_t *num,
		    os_error *err)
{
	const json_t *v = json_object_get(root, key);
	*name = NULL;
	*num = 0;
	if (!v)
		return 1;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i == 0)
			return os_error_set(err, EPERM, "%s: 0 (root) is not allowed", key);
		if (i < 1 || (uint64_t)i > ID_MAX)
			return os_error_set(err, EINVAL, "%s: expected 1..%u", key, ID_MAX);
		*num = (uint64_t)i;
		return 0;
	}
	if (str_value(v, key, name, err) < 0)
		return -1;
	size_t len = strlen(*name);
	if (len == 0 || len > 64 ||
	    strspn(*name, "abcdefghijklmnopqrstuvwxyz"
			  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != len)
		return os_error_set(err, EINVAL, "%s: \"%s\" is not a valid name", key, *name);
	return 0;
}

static int parse_ids(const json_t *root, struct launch_spec *s, os_error *err)
{
	const char *uname, *gname;
	uint64_t unum, gnum;
	gid_t primary = 0;
	int rc = id_field(root, "user", &uname, &unum, err);
	if (rc < 0)
		return -1;
	if (rc == 1)
		return os_error_set(err, EINVAL, "missing field \"user\"");
	if ((rc = id_field(root, "group", &gname, &gnum, err)) < 0)
		return -1;
	if (uname) {
		if (ids_resolve_user(uname, &s->uid, &primary, err) < 0)
			return os_error_prefix(err, "user");
	} else {
		s->uid = (uid_t)unum;
	}
	if (gname) {
		if (ids_resolve_group(gname, &s->gid, err) < 0)
			return os_error_prefix(err, "group");
	} else if (gnum) {
		s->gid = (gid_t)gnum;
	} else if (uname) {
		s->gid = primary;
	} else {
		return os_error_set(err, EINVAL, "group: required when user is a number");
	}
	return 0;
}

static int parse_filesystem(const json_t *root, struct launch_spec *s, os_error *err)
{
	static const char *const keys[] = { "read_only", "read_write", NULL };
	const json_t *fs = json_object_get(root, "filesystem");
	if (fs && json_check_keys(fs, keys, "filesystem", err) < 0)
		return -1;
	if (string_array(fs, "read_only", 0, SPEC_MAX_PATHS, true, &s->ro_paths, &s->n_ro, err) <
		    0 ||
	    string_array(fs, "read_write", 0, SPEC_MAX_PATHS, true, &s->rw_paths, &s->n_rw, err) <
		    0)
		return os_error_prefix(err, "filesystem");
	if (s->n_ro + s->n_rw > SPEC_MAX_PATHS)
		return os_error_set(err, E2BIG, "filesystem: more than %d paths", SPEC_MAX_PATHS);
	for (size_t i = 0; i < s->n_rw; i++)
		if (strspn(s->rw_paths[i], "/") == strlen(s->rw_paths[i]))
			return os_error_set(err, EINVAL,
					    "filesystem.read_write: \"/\" is not allowed");
	return 0;
}

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{ "as", RLIMIT_AS },	   { "cpu", RLIMIT_CPU },	  { "data", RLIMIT_DATA },
	{ "fsize", RLIMIT_FSIZE }, { "memlock", RLIMIT_MEMLOCK }, { "nofile", RLIMIT_NOFILE },
	{ "nproc", RLIMIT_NPROC }, { "stack", RLIMIT_STACK },
};

static int parse_rlimits(const json_t *root, struct launch_spec *s, os_error *err)
{
	const json_t *rl = json_object_get(root, "rlimits");
	if (!rl)
		return 0;
	if (!json_is_object(rl))
		return os_error_set(err, EINVAL, "rlimits: expected an object");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)rl, k, v) {
		size_t i = 0;
		while (i < sizeof(rlimit_names) / sizeof(rlimit_names[0]) &&
		       strcmp(rlimit_names[i].name, k) != 0)
			i++;
		if (i == sizeof(rlimit_names) / sizeof(rlimit_names[0]))
			return os_error_set(err, EINVAL, "rlimits: unknown limit \"%s\"%s", k,
					    strcmp(k, "core") == 0 ? " (core is always 0)" : "");
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return os_error_set(err, EINVAL, "rlimits.%s: expected an integer >= 0", k);
		s->rlimits[s->n_rlimits].resource = rlimit_names[i].resource;
		s->rlimits[s->n_rlimits++].value = (rlim_t)json_integer_value(v);
	}
	return 0;
}

static int parse_netns(const json_t *root, struct launch_spec *s, os_error *err)
{
	const json_t *v = json_object_get(root, "netns");
	s->netns_fd = -1;
	s->netns_path = NULL;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 3 || json_integer_value(v) > 65535)
			return os_error_set(err, EINVAL, "netns: fd must be 3..65535");
		s->netns_fd = (int)json_integer_value(v);
		return 0;
	}
	if (str_value(v, "netns", &s->netns_path, err) < 0)
		return os_error_prefix(err, "expected an fd number or a path");
	return check_path(s->netns_path, "netns", err);
}

static int parse_scalars(const json_t *root, struct launch_spec *s, os_error *err)
{
	const char *mode = "best_effort";
	s->cwd = "/";
	if (json_get_string(root, "cwd", false, &s->cwd, err) < 0 ||
	    check_path(s->cwd, "cwd", err) < 0)
		return -1;
	if (json_get_string(root, "landlock", false, &mode, err) < 0)
		return -1;
	if (strcmp(mode, "hard_requirement") == 0)
		s->landlock_hard = true;
	else if (strcmp(mode, "best_effort") != 0)
		return os_error_set(err, EINVAL,
				    "landlock: expected \"best_effort\" or \"hard_requirement\"");
	if (json_get_bool(root, "tty", false, &s->tty, err) < 0 ||
	    json_get_bool(root, "new_namespaces", false, &s->new_namespaces, err) < 0 ||
	    json_get_string(root, "hostname", false, &s->hostname, err) < 0)
		return -1;
	if (s->hostname && (strlen(s->hostname) < 1 || strlen(s->hostname) > 64))
		return os_error_set(err, EINVAL, "hostname: expected 1..64 bytes");
	if (s->hostname && !s->new_namespaces)
		return os_error_set(err, EINVAL, "hostname: needs \"new_namespaces\": true");
	return 0;
}

/* workspace, cgroups and join: how the sandbox is placed on the host. join
 * (sandbox exec) enters an existing sandbox, so it excludes what creates one. */
static int parse_placement(const json_t *root, struct launch_spec *s, os_error *err)
{
	if (json_get_string(root, "workspace", false, &s->workspace, err) < 0 ||
	    (s->workspace && check_path(s->workspace, "workspace", err) < 0))
		return -1;
	if (s->workspace && !s->new_namespaces)
		return os_error_set(err, EINVAL, "workspace: needs \"new_namespaces\": true");
	if (json_get_string(root, "system_trust", false, &s->system_trust, err) < 0 ||
	    (s->system_trust && check_path(s->system_trust, "system_trust", err) < 0))
		return -1;
	if (string_array(root, "cgroups", 0, SPEC_MAX_CGROUPS, true, &s->cgroups, &s->n_cgroups,
			 err) < 0)
		return -1;
	const json_t *j = json_object_get(root, "join");
	if (!j)
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < 3 || json_integer_value(j) > 65535)
		return os_error_set(err, EINVAL, "join: expected a pidfd number 3..65535");
	if (s->new_namespaces || s->netns_fd >= 0 || s->netns_path)
		return os_error_set(err, EINVAL,
				    "join: excludes \"new_namespaces\" and \"netns\" (it enters "
				    "the namespaces of an existing sandbox)");
	s->join_pidfd = (int)json_integer_value(j);
	return 0;
}

/* "transfer": {"op": "upload"|"download", "path": P}, in place of argv. */
static int parse_transfer(const json_t *root, struct launch_spec *s, os_error *err)
{
	static const char *const keys[] = { "op", "path", NULL };
	const json_t *t = json_object_get(root, "transfer");
	const char *op = NULL;
	if (!t)
		return 0;
	if (json_object_get(root, "argv"))
		return os_error_set(err, EINVAL, "transfer: excludes \"argv\"");
	if (!json_is_object(t) || json_check_keys(t, keys, "transfer", err) < 0 ||
	    json_get_string(t, "op", true, &op, err) < 0 ||
	    str_value(json_object_get(t, "path"), "transfer.path", &s->transfer_path, err) < 0)
		return os_error_prefix(err, "transfer");
	if (strcmp(op, "upload") != 0 && strcmp(op, "download") != 0)
		return os_error_set(err, EINVAL,
				    "transfer.op: expected \"upload\" or \"download\"");
	if (strlen(s->transfer_path) == 0 || strlen(s->transfer_path) > SPEC_MAX_PATH_LEN)
		return os_error_set(err, EINVAL, "transfer.path: expected 1..%d bytes",
				    SPEC_MAX_PATH_LEN);
	s->transfer_upload = !strcmp(op, "upload");
	return 0;
}

int spec_parse(const char *data, size_t len, struct launch_spec *s, os_error *err)
{
	static const char *const keys[] = {
		"argv",	     "env",	"cwd",	"user",	    "group",	      "filesystem",
		"landlock",  "rlimits", "tty",	"netns",    "new_namespaces", "hostname",
		"workspace", "cgroups", "join", "transfer", "system_trust",   NULL
	};
	size_t argc;
	memset(s, 0, sizeof(*s));
	s->netns_fd = s->join_pidfd = -1;
	s->root = json_parse_strict(data, len, SPEC_MAX_BYTES, err);
	if (!s->root)
		return os_error_prefix(err, "launch spec");
	if (json_check_keys(s->root, keys, "launch spec", err) < 0)
		return -1;
	if (parse_transfer(s->root, s, err) < 0 ||
	    string_array(s->root, "argv", s->transfer_path ? 0 : 1, SPEC_MAX_ARGV, false, &s->argv,
			 &argc, err) < 0)
		return -1;
	if (parse_env(s->root, s, err) < 0 || parse_scalars(s->root, s, err) < 0 ||
	    parse_filesystem(s->root, s, err) < 0 || parse_rlimits(s->root, s, err) < 0 ||
	    parse_netns(s->root, s, err) < 0 || parse_ids(s->root, s, err) < 0 ||
	    parse_placement(s->root, s, err) < 0)
		return -1;
	return 0;
}

void spec_free(struct launch_spec *s)
{
	if (s->envp)
		for (char **e = s->envp; *e; e++)
			free(*e);
	free(s->envp);
	free(s->dropped_env);
	free(s->argv);
	free(s->ro_paths);
	free(s->rw_paths);
	free(s->cgroups);
	json_decref(s->root);
	memset(s, 0, sizeof(*s));
	s->netns_fd = s->join_pidfd = -1;
}
