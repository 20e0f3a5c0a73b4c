/* launch_spec.c - the supervisor's part of the agent's launch spec (see
 * launch_spec.h). The user and group are resolved through this host's
 * passwd/group as the launcher will; nothing here runs as the agent. */
#include "launch_spec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "parse.h"

int launch_spec_proxy_url(const struct sockaddr_storage *proxy, char *url, size_t cap,
			  os_error *err)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)proxy;
	char addr[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof addr);
	return str_format(url, cap, err, "http://%s:%u", addr, ntohs(sin->sin_port));
}

/* --user/--group as the spec's "user"/"group": digits are an id and travel
 * as a number, since the split launcher runs in another image whose passwd
 * may not know it; anything else is a name the launcher resolves. */
static json_t *id_value(const char *s)
{
	uint64_t n;
	if (s && *s && strspn(s, "0123456789") == strlen(s) &&
	    parse_u64_str(s, 0, UINT32_MAX, &n, NULL) == 0)
		return json_integer((json_int_t)n);
	return s ? json_string(s) : NULL;
}

json_t *launch_spec_new(const struct sup_options *o, const char *url)
{
	json_t *args = json_array();
	for (char **a = o->argv; *a; a++)
		json_array_append_new(args, json_string(*a));
	json_t *spec = json_pack(
		"{s:o, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:o, s:s, s:{s:[s], s:[s,s]}, s:b}",
		"argv", args, "env", "PATH", "/usr/local/bin:/usr/bin:/bin", "HOME", "/tmp",
		"HTTP_PROXY", url, "HTTPS_PROXY", url, "http_proxy", url, "https_proxy", url,
		"NO_PROXY", "localhost,127.0.0.1", "user", id_value(o->user), "cwd", "/",
		"filesystem", "read_only", "/", "read_write", "/tmp", "/dev/null", "new_namespaces",
		1);
	if (spec && o->group)
		json_object_set_new(spec, "group", id_value(o->group));
	return spec;
}

int launch_spec_sandbox_uid(json_t *spec, uint64_t uid)
{
	const json_t *u = json_object_get(spec, "user"), *g = json_object_get(spec, "group");
	bool asked = (json_is_integer(u) && (uint64_t)json_integer_value(u) != uid) ||
		     (json_is_string(u) && strcmp(json_string_value(u), "nobody") != 0) ||
		     (json_is_integer(g) && (uint64_t)json_integer_value(g) != uid) ||
		     json_is_string(g);
	if (asked)
		log_warn("the policy's run_as_user/run_as_group give way to this sandbox's own "
			 "uid %llu (--sandbox-uid)",
			 (unsigned long long)uid);
	if (json_object_set_new(spec, "user", json_integer((json_int_t)uid)) < 0 ||
	    json_object_set_new(spec, "group", json_integer((json_int_t)uid)) < 0)
		return -1;
	return 0;
}

static bool names_sandbox(const json_t *v)
{
	return json_is_string(v) && strcmp(json_string_value(v), "sandbox") == 0;
}

int launch_spec_sandbox_account(json_t *spec, os_error *err)
{
	const json_t *u = json_object_get(spec, "user"), *g = json_object_get(spec, "group");
	bool user = names_sandbox(u) && !getpwnam("sandbox");
	bool group = names_sandbox(g) && !getgrnam("sandbox");
	if (!user && !group)
		return 0;
	const struct passwd *taken_u = user ? getpwuid(LAUNCH_SPEC_SANDBOX_ID) : NULL;
	const struct group *taken_g = group ? getgrgid(LAUNCH_SPEC_SANDBOX_ID) : NULL;
	if (taken_u || taken_g)
		return os_error_set(
			err, EEXIST,
			"the policy runs the agent as `sandbox`, this host has no such "
			"%s, and id %d, which would stand in for it, is %s's: create the "
			"account (useradd -r -U sandbox) or give run_as_user/run_as_group "
			"as numbers",
			user ? "user" : "group", LAUNCH_SPEC_SANDBOX_ID,
			taken_u ? taken_u->pw_name : taken_g->gr_name);
	log_warn("this host has no `sandbox` %s: the agent runs with id %d in its place, which "
		 "needs no account (create one with useradd -r -U sandbox to use it instead)",
		 user && group ? "user or group"
		 : user	       ? "user"
			       : "group",
		 LAUNCH_SPEC_SANDBOX_ID);
	if (user && json_object_set_new(spec, "user", json_integer(LAUNCH_SPEC_SANDBOX_ID)) < 0)
		return os_error_set(err, ENOMEM, "out of memory");
	/* A number for the user needs a group: the stand-in's, unless the policy
	 * named one that exists. */
	if ((group || (user && !g)) &&
	    json_object_set_new(spec, "group", json_integer(LAUNCH_SPEC_SANDBOX_ID)) < 0)
		return os_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* True when every ancestor of path lets uid/gid search it. */
static bool reachable_by(const char *path, uid_t uid, gid_t gid)
{
	char buf[PATH_MAX];
	if (str_copy(buf, sizeof buf, path, NULL) < 0)
		return false;
	for (char *slash = buf; (slash = strchr(slash + 1, '/')) != NULL;) {
		*slash = '\0';
		struct stat st;
		bool ok = stat(buf, &st) == 0 &&
			  ((st.st_uid == uid && (st.st_mode & S_IXUSR)) ||
			   (st.st_gid == gid && (st.st_mode & S_IXGRP)) || (st.st_mode & S_IXOTH));
		*slash = '/';
		if (!ok)
			return false;
	}
	return true;
}

/* The spec's user and group (name or number) as ids. */
static int spec_ids(const json_t *spec, uid_t *uid, gid_t *gid, os_error *err)
{
	json_t *u = json_object_get(spec, "user"), *g = json_object_get(spec, "group");
	if (json_is_integer(u)) {
		*uid = (uid_t)json_integer_value(u);
		*gid = (gid_t)*uid;
	} else {
		struct passwd *pw = getpwnam(json_string_value(u) ? json_string_value(u) : "");
		if (!pw)
			return os_error_set(err, ENOENT, "workspace: unknown user %s",
					    json_string_value(u) ? json_string_value(u) : "?");
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
	}
	if (json_is_integer(g)) {
		*gid = (gid_t)json_integer_value(g);
	} else if (json_is_string(g)) {
		struct group *gr = getgrnam(json_string_value(g));
		if (!gr)
			return os_error_set(err, ENOENT, "workspace: unknown group %s",
					    json_string_value(g));
		*gid = gr->gr_gid;
	}
	return 0;
}

int launch_spec_workdir(json_t *spec, const char *workdir, os_error *err)
{
	uid_t uid = 0;
	gid_t gid = 0;
	if (spec_ids(spec, &uid, &gid, err) < 0)
		return -1;
	struct stat st;
	if (lstat(workdir, &st) < 0 || !S_ISDIR(st.st_mode))
		return os_error_errno(err, "workspace %s", workdir);
	if (st.st_uid == 0 && chown(workdir, uid, gid) < 0)
		return os_error_errno(err, "giving workspace %s to uid %u", workdir, (unsigned)uid);
	if (json_is_true(json_object_get(spec, "new_namespaces"))) {
		/* The launcher binds it on /sandbox: reachable whatever its parents. */
		json_object_set_new(spec, "workspace", json_string(workdir));
		workdir = "/sandbox";
	} else if (!reachable_by(workdir, uid, gid)) {
		/* e.g. a state directory under root's 0700 home: keep cwd "/" */
		log_warn("workspace %s is not reachable by uid %u (a parent directory is closed "
			 "to it); the agent starts in /",
			 workdir, (unsigned)uid);
		return 0;
	}
	json_object_set_new(spec, "cwd", json_string(workdir));
	json_object_set_new(json_object_get(spec, "env"), "HOME", json_string(workdir));
	return 0;
}
