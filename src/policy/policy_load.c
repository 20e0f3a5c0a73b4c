/* policy_load.c - policy v1 loader: top level, filesystem, landlock, process
 * and the network policy map (endpoints are in policy_load_endpoint.c).
 * Must never return a partially valid policy: any error frees everything. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"
#include "policy_load_int.h"

static const struct policy_limits default_limits = {
	.max_policies = POLICY_MAX_POLICIES,
	.max_endpoints = POLICY_MAX_ENDPOINTS,
};

/* Absolute, normalised: no empty, `.` or `..` component, no trailing slash. */
static const char *path_problem(const char *p)
{
	size_t len = strlen(p);
	if (p[0] != '/')
		return "not absolute";
	if (len > POLICY_MAX_PATH_LEN)
		return "longer than 4096 bytes";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return "contains a control byte";
	if (len > 1 && p[len - 1] == '/')
		return "has a trailing slash";
	for (const char *s = p; *s;) {
		s++; /* past '/' */
		size_t n = strcspn(s, "/");
		if (n == 0 && len > 1)
			return "contains an empty component (`//`)";
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return "contains `..`";
		if (n == 1 && s[0] == '.')
			return "contains `.`";
		s += n;
	}
	return NULL;
}

static void load_path_list(struct lctx *c, const struct ynode *n, bool writable, char ***out,
			   size_t *count)
{
	if (!want_seq(c, n, false))
		return;
	*out = calloc(n->seq.n ? n->seq.n : 1, sizeof **out);
	if (!*out) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < n->seq.n; i++) {
		const struct ynode *it = n->seq.items[i];
		size_t old = kp_push(c, "[%zu]", i);
		const char *p, *why;
		if (!get_str(c, it, "an absolute path", &p)) {
		} else if ((why = path_problem(p))) {
			char what[96];
			snprintf(what, sizeof what, "an absolute normalised path (this one %s)",
				 why);
			lerr_expected(c, it, what);
		} else if (writable && !strcmp(p, "/")) {
			lerr(c, it, "`/` cannot be writable");
		} else if (++c->n_fs_paths > POLICY_MAX_PATHS) {
			lerr(c, it, "more than 256 filesystem paths");
		} else {
			(*out)[(*count)++] = ldup(c, p);
		}
		kp_pop(c, old);
	}
}

static void load_filesystem(struct lctx *c, const struct ynode *n)
{
	static const char *const keys[] = { "include_workdir", "read_only", "read_write", NULL };
	struct policy_doc *d = c->doc;
	d->fs_present = true;
	d->include_workdir = false; /* OpenShell: false once the section is present */
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	for (size_t i = 0; i < n->map.n; i++) {
		const char *k = n->map.pairs[i].key->scalar.value;
		const struct ynode *v = n->map.pairs[i].value;
		size_t old = kp_push(c, ".%s", k);
		if (!strcmp(k, "include_workdir"))
			get_bool(c, v, &d->include_workdir);
		else if (!strcmp(k, "read_only"))
			load_path_list(c, v, false, &d->read_only, &d->n_read_only);
		else if (!strcmp(k, "read_write"))
			load_path_list(c, v, true, &d->read_write, &d->n_read_write);
		kp_pop(c, old);
	}
}

static void load_landlock(struct lctx *c, const struct ynode *n)
{
	static const char *const keys[] = { "compatibility", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const struct ynode *v = ynode_map_get(n, "compatibility");
	if (!v)
		return;
	size_t old = kp_push(c, ".compatibility");
	if (ynode_scalar_eq(v, "best_effort"))
		c->doc->landlock = POLICY_LANDLOCK_BEST_EFFORT;
	else if (ynode_scalar_eq(v, "hard_requirement"))
		c->doc->landlock = POLICY_LANDLOCK_HARD_REQUIREMENT;
	else
		lerr_expected(c, v, "best_effort or hard_requirement");
	kp_pop(c, old);
}

static void load_ident(struct lctx *c, const struct ynode *n, struct policy_ident *id)
{
	static const char what[] = "`sandbox` or a number 1..4294967294 (root is not allowed)";
	if (ynode_scalar_eq(n, "sandbox")) {
		*id = (struct policy_ident){ .set = true, .is_sandbox = true };
		return;
	}
	uint64_t v;
	/* OpenShell writes numeric ids quoted ("1500"); accept both spellings. */
	if (n && n->kind == YNODE_SCALAR && n->scalar.len && n->scalar.len <= 10 &&
	    strspn(n->scalar.value, "0123456789") == n->scalar.len &&
	    parse_u64(n->scalar.value, n->scalar.len, 1, 4294967294u, &v, NULL) == 0) {
		*id = (struct policy_ident){ .set = true, .id = (uint32_t)v };
		return;
	}
	lerr_expected(c, n, what);
}

static void load_process(struct lctx *c, const struct ynode *n)
{
	static const char *const keys[] = { "run_as_user", "run_as_group", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	for (size_t i = 0; i < n->map.n; i++) {
		const char *k = n->map.pairs[i].key->scalar.value;
		const struct ynode *v = n->map.pairs[i].value;
		size_t old = kp_push(c, ".%s", k);
		if (!strcmp(k, "run_as_user"))
			load_ident(c, v, &c->doc->run_as_user);
		else if (!strcmp(k, "run_as_group"))
			load_ident(c, v, &c->doc->run_as_group);
		kp_pop(c, old);
	}
}

static bool name_ok(const char *s, size_t len)
{
	if (len == 0 || len > POLICY_NAME_MAX)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == len;
}

static void load_binaries(struct lctx *c, const struct ynode *n, struct policy_network *net)
{
	static const char *const keys[] = { "path", "harness", NULL };
	if (!want_seq(c, n, false))
		return;
	if (n->seq.n > POLICY_MAX_BINARIES) {
		lerr(c, n, "more than 1024 binaries");
		return;
	}
	net->binaries = calloc(n->seq.n ? n->seq.n : 1, sizeof *net->binaries);
	if (!net->binaries) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < n->seq.n; i++) {
		const struct ynode *it = n->seq.items[i];
		size_t old = kp_push(c, "[%zu]", i);
		if (want_map(c, it)) {
			check_keys(c, it, keys);
			const struct ynode *p = ynode_map_get(it, "path");
			const struct ynode *h = ynode_map_get(it, "harness");
			const char *s, *why;
			bool harness;
			if (h) {
				size_t hold = kp_push(c, ".harness");
				if (get_bool(c, h, &harness))
					lwarn(c, h, "deprecated upstream and ignored");
				kp_pop(c, hold);
			}
			kp_push(c, ".path");
			if (!p)
				lerr(c, it, "required key missing (expected an absolute path)");
			else if (!get_str(c, p, "an absolute path", &s)) {
			} else if ((why = path_problem(s))) {
				char what[96];
				snprintf(what, sizeof what,
					 "an absolute normalised path (this one %s)", why);
				lerr_expected(c, p, what);
			} else {
				net->binaries[net->n_binaries++].path = ldup(c, s);
			}
		}
		kp_pop(c, old);
	}
}

static void load_endpoints(struct lctx *c, const struct ynode *n, struct policy_network *net,
			   size_t pidx)
{
	if (!want_seq(c, n, false))
		return;
	if (c->doc->n_endpoints_total + n->seq.n > c->lim->max_endpoints) {
		lerr(c, n, "more than %zu endpoints in the policy file", c->lim->max_endpoints);
		return;
	}
	c->doc->n_endpoints_total += n->seq.n;
	net->endpoints = calloc(n->seq.n ? n->seq.n : 1, sizeof *net->endpoints);
	if (!net->endpoints) {
		lerr_oom(c);
		return;
	}
	net->n_endpoints = n->seq.n;
	for (size_t i = 0; i < n->seq.n; i++) {
		size_t old = kp_push(c, "[%zu]", i);
		net->endpoints[i].policy_index = pidx;
		net->endpoints[i].index = i;
		load_endpoint(c, n->seq.items[i], &net->endpoints[i]);
		kp_pop(c, old);
	}
}

static void load_network(struct lctx *c, const struct ynode *n, struct policy_network *net,
			 size_t pidx)
{
	static const char *const keys[] = { "name", "endpoints", "binaries", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	for (size_t i = 0; i < n->map.n; i++) {
		const char *k = n->map.pairs[i].key->scalar.value;
		const struct ynode *v = n->map.pairs[i].value;
		size_t old = kp_push(c, ".%s", k);
		const char *s;
		if (!strcmp(k, "name"))
			get_str(c, v, "a display name", &s);
		else if (!strcmp(k, "endpoints"))
			load_endpoints(c, v, net, pidx);
		else if (!strcmp(k, "binaries"))
			load_binaries(c, v, net);
		kp_pop(c, old);
	}
}

static void load_networks(struct lctx *c, const struct ynode *n)
{
	struct policy_doc *d = c->doc;
	if (ynode_is_null(n))
		return; /* `network_policies:` with nothing under it: none */
	if (!want_map(c, n))
		return;
	if (n->map.n > c->lim->max_policies) {
		lerr(c, n, "more than %zu policies", c->lim->max_policies);
		return;
	}
	d->networks = calloc(n->map.n ? n->map.n : 1, sizeof *d->networks);
	if (!d->networks) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < n->map.n; i++) {
		const struct ynode *k = n->map.pairs[i].key;
		size_t old = kp_push(c, ".%.128s", k->scalar.value);
		if (!name_ok(k->scalar.value, k->scalar.len))
			lerr_expected(c, k, "a policy name of 1..128 letters, digits, `_` or `-`");
		else if (!strncmp(k->scalar.value, "_provider_", 10))
			lerr(c, k, "names starting with `_provider_` are reserved");
		d->networks[i].name = ldup(c, k->scalar.value);
		d->n_networks++;
		load_network(c, n->map.pairs[i].value, &d->networks[i], i);
		kp_pop(c, old);
	}
}

static void load_root(struct lctx *c, const struct ynode *root)
{
	static const char *const keys[] = { "version", "filesystem_policy", "landlock",
					    "process", "network_policies",  "network_middlewares",
					    NULL };
	c->doc->include_workdir = true; /* default when filesystem_policy is absent */
	if (!want_map(c, root))
		return;
	check_keys(c, root, keys);
	const struct ynode *v = ynode_map_get(root, "version");
	if (!v) {
		lerr(c, root, "version: required key missing (expected 1)");
	} else {
		uint64_t ver;
		size_t old = kp_push(c, "version");
		get_uint(c, v, 1, 1, "the integer 1", &ver);
		kp_pop(c, old);
	}
	for (size_t i = 0; i < root->map.n; i++) {
		const char *k = root->map.pairs[i].key->scalar.value;
		const struct ynode *val = root->map.pairs[i].value;
		size_t old = kp_push(c, "%s", k);
		if (!strcmp(k, "filesystem_policy"))
			load_filesystem(c, val);
		else if (!strcmp(k, "landlock"))
			load_landlock(c, val);
		else if (!strcmp(k, "process"))
			load_process(c, val);
		else if (!strcmp(k, "network_policies"))
			load_networks(c, val);
		else if (!strcmp(k, "network_middlewares"))
			load_middlewares(c, val);
		kp_pop(c, old);
	}
}

static int net_cmp(const void *a, const void *b)
{
	const struct policy_network *x = a, *y = b;
	return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* Sorted policies make "the lexicographically smallest match" the lowest index. */
static void sort_networks(struct policy_doc *d)
{
	if (d->n_networks > 1)
		qsort(d->networks, d->n_networks, sizeof *d->networks, net_cmp);
	for (size_t i = 0; i < d->n_networks; i++)
		for (size_t j = 0; j < d->networks[i].n_endpoints; j++)
			d->networks[i].endpoints[j].policy_index = i;
}

int policy_parse_limits(const char *name, const char *data, size_t len,
			const struct policy_limits *lim, struct policy_doc **out,
			struct policy_diag *diag, os_error *err)
{
	_cleanup_ytree_ struct ytree *t = NULL;
	if (ytree_parse(name, data, len, &t, err) < 0) {
		if (diag) {
			char **v = calloc(1, sizeof *v);
			if (v && (v[0] = strdup(err->msg))) {
				diag->msgs = v;
				diag->n = 1;
			} else {
				free(v);
			}
		}
		return -1;
	}
	struct lctx c = {
		.file = name, .diag = diag, .err = err, .lim = lim ? lim : &default_limits
	};
	c.doc = calloc(1, sizeof *c.doc);
	if (!c.doc)
		return os_error_set(err, ENOMEM, "out of memory");
	load_root(&c, t->root);
	if (!c.failed)
		check_overlaps(&c);
	if (c.failed) {
		policy_doc_free(c.doc);
		return -1;
	}
	sort_networks(c.doc);
	if (!(c.doc->source = malloc(len + 1))) {
		policy_doc_free(c.doc);
		return os_error_set(err, ENOMEM, "%s: out of memory keeping the policy text", name);
	}
	memcpy(c.doc->source, data, len);
	c.doc->source[len] = '\0';
	c.doc->source_len = len;
	*out = c.doc;
	return 0;
}

int policy_parse(const char *name, const char *data, size_t len, struct policy_doc **out,
		 struct policy_diag *diag, os_error *err)
{
	return policy_parse_limits(name, data, len, NULL, out, diag, err);
}

int policy_load_file(const char *path, struct policy_doc **out, struct policy_diag *diag,
		     os_error *err)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (file_read_all(path, YTREE_MAX_INPUT, &data, &len, err) < 0) {
		os_error_prefix(err, "%s", path);
		if (diag && (diag->msgs = calloc(1, sizeof *diag->msgs)) &&
		    (diag->msgs[0] = strdup(err->msg)))
			diag->n = 1;
		return -1;
	}
	return policy_parse(path, data, len, out, diag, err);
}
