/* k8s_creds.c - where the Kubernetes client's credentials come from:
 * in-cluster service account first, then a kubeconfig (YAML via yamltree).
 * It never accepts auth it cannot honour (exec plugins, skipped TLS checks). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "k8s_client.h"
#include "parse.h"
#include "yamltree.h"

void k8s_creds_free(struct k8s_creds *c)
{
	struct k8s_blob *blobs[] = { &c->ca, &c->cert, &c->key, &c->token };
	free(c->server);
	free(c->namespace);
	for (size_t i = 0; i < ARRAY_SIZE(blobs); i++) {
		if (blobs[i]->data)
			explicit_bzero(blobs[i]->data, blobs[i]->len);
		free(blobs[i]->data);
		free(blobs[i]->path);
	}
	memset(c, 0, sizeof *c);
}

static int b64_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/* Strict standard base64 (whitespace ignored, '=' only as final padding). */
static int b64_decode(const char *s, size_t len, struct k8s_blob *out, const char *what,
		      os_error *err)
{
	_cleanup_free_ char *buf = malloc(len / 4 * 3 + 4);
	size_t n = 0, pad = 0;
	uint32_t acc = 0;
	unsigned bits = 0;
	if (!buf)
		return os_error_set(err, ENOMEM, "%s: out of memory", what);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
			continue;
		if (ch == '=') {
			pad++;
			continue;
		}
		int v = b64_value(ch);
		if (v < 0 || pad)
			return os_error_set(err, EINVAL, "%s: invalid base64 at byte %zu", what, i);
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (pad > 2 || bits >= 6 || (acc & ((1u << bits) - 1)))
		return os_error_set(err, EINVAL, "%s: invalid base64 padding", what);
	buf[n] = '\0';
	out->data = steal_ptr(buf);
	out->len = n;
	return 0;
}

static const struct ynode *named_entry(const struct ynode *list, const char *name,
				       const char *inner, const char *what, os_error *err)
{
	if (!list || list->kind != YNODE_SEQUENCE) {
		os_error_set(err, EINVAL, "%s: expected a sequence", what);
		return NULL;
	}
	for (size_t i = 0; i < list->seq.n; i++) {
		const struct ynode *it = list->seq.items[i];
		if (ynode_scalar_eq(ynode_map_get(it, "name"), name)) {
			const struct ynode *v = ynode_map_get(it, inner);
			if (!v || v->kind != YNODE_MAPPING) {
				os_error_set(err, EINVAL,
					     "%s '%s' (line %u): '%s' is not a mapping", what, name,
					     it->line, inner);
				return NULL;
			}
			return v;
		}
	}
	os_error_set(err, EINVAL, "%s: no entry named '%s'", what, name);
	return NULL;
}

static const char *scalar(const struct ynode *map, const char *key)
{
	const struct ynode *v = ynode_map_get(map, key);
	if (!v || v->kind != YNODE_SCALAR || ynode_is_null(v))
		return NULL;
	return v->scalar.value;
}

static char *join_path(const char *base_dir, const char *p)
{
	char *out = NULL;
	if (p[0] == '/' || !base_dir)
		return strdup(p);
	if (asprintf(&out, "%s/%s", base_dir, p) < 0)
		return NULL;
	return out;
}

/* data-key (base64) wins over file-key (path), as in client-go. */
static int blob_from(const struct ynode *map, const char *data_key, const char *file_key,
		     const char *base_dir, struct k8s_blob *out, const char *what, os_error *err)
{
	const char *d = scalar(map, data_key), *f = scalar(map, file_key);
	if (d)
		return b64_decode(d, strlen(d), out, what, err);
	if (f) {
		out->path = join_path(base_dir, f);
		if (!out->path)
			return os_error_set(err, ENOMEM, "%s: out of memory", what);
	}
	return 0;
}

static int parse_user(const struct ynode *user, const char *base_dir, struct k8s_creds *out,
		      os_error *err)
{
	static const char *const unsupported[] = { "exec", "auth-provider", "username",
						   "password" };
	for (size_t i = 0; i < ARRAY_SIZE(unsupported); i++)
		if (ynode_map_get(user, unsupported[i]))
			return os_error_set(err, ENOTSUP,
					    "user '%s' authentication is not supported (use a "
					    "client certificate or a bearer token)",
					    unsupported[i]);
	if (blob_from(user, "client-certificate-data", "client-certificate", base_dir, &out->cert,
		      "client-certificate", err) < 0 ||
	    blob_from(user, "client-key-data", "client-key", base_dir, &out->key, "client-key",
		      err) < 0)
		return -1;
	const char *tok = scalar(user, "token");
	if (tok) {
		out->token.data = strdup(tok);
		if (!out->token.data)
			return os_error_set(err, ENOMEM, "token: out of memory");
		out->token.len = strlen(tok);
	} else if (scalar(user, "tokenFile")) {
		out->token.path = join_path(base_dir, scalar(user, "tokenFile"));
		if (!out->token.path)
			return os_error_set(err, ENOMEM, "tokenFile: out of memory");
	}
	bool has_cert = out->cert.data || out->cert.path, has_key = out->key.data || out->key.path;
	if (has_cert != has_key)
		return os_error_set(err, EINVAL,
				    "user has a client certificate without its key "
				    "(or a key without its certificate)");
	if (!has_cert && !out->token.data && !out->token.path)
		return os_error_set(err, EINVAL,
				    "user has neither a client certificate nor a token");
	return 0;
}

static int parse_cluster(const struct ynode *cluster, const char *base_dir, struct k8s_creds *out,
			 os_error *err)
{
	const char *server = scalar(cluster, "server");
	const char *skip = scalar(cluster, "insecure-skip-tls-verify");
	if (!server || !str_has_prefix(server, "https://"))
		return os_error_set(err, EINVAL, "cluster server must be an https:// URL, got '%s'",
				    server ? server : "(none)");
	if (skip && strcmp(skip, "false") != 0)
		return os_error_set(err, ENOTSUP, "insecure-skip-tls-verify is not supported");
	out->server = strdup(server);
	if (!out->server)
		return os_error_set(err, ENOMEM, "server: out of memory");
	size_t n = strlen(out->server);
	while (n > 8 && out->server[n - 1] == '/')
		out->server[--n] = '\0';
	return blob_from(cluster, "certificate-authority-data", "certificate-authority", base_dir,
			 &out->ca, "certificate-authority", err);
}

static int parse_tree(const struct ynode *root, const char *base_dir, const char *context,
		      struct k8s_creds *out, os_error *err)
{
	if (!root || root->kind != YNODE_MAPPING)
		return os_error_set(err, EINVAL, "kubeconfig: expected a mapping at the top");
	const char *ctx_name = context ? context : scalar(root, "current-context");
	if (!ctx_name)
		return os_error_set(err, EINVAL, "kubeconfig: no current-context");
	const struct ynode *ctx =
		named_entry(ynode_map_get(root, "contexts"), ctx_name, "context", "contexts", err);
	if (!ctx)
		return -1;
	const char *cl = scalar(ctx, "cluster"), *us = scalar(ctx, "user");
	if (!cl || !us)
		return os_error_set(err, EINVAL, "context '%s' lacks cluster or user", ctx_name);
	const struct ynode *cluster =
		named_entry(ynode_map_get(root, "clusters"), cl, "cluster", "clusters", err);
	if (!cluster)
		return -1;
	const struct ynode *user =
		named_entry(ynode_map_get(root, "users"), us, "user", "users", err);
	if (!user)
		return -1;
	if (parse_cluster(cluster, base_dir, out, err) < 0 ||
	    parse_user(user, base_dir, out, err) < 0)
		return -1;
	if (scalar(ctx, "namespace") && !(out->namespace = strdup(scalar(ctx, "namespace"))))
		return os_error_set(err, ENOMEM, "namespace: out of memory");
	return 0;
}

int k8s_kubeconfig_parse(const char *name, const char *data, size_t len, const char *base_dir,
			 const char *context, struct k8s_creds *out, os_error *err)
{
	_cleanup_ytree_ struct ytree *t = NULL;
	memset(out, 0, sizeof *out);
	if (ytree_parse(name, data, len, &t, err) < 0)
		return -1;
	if (parse_tree(t->root, base_dir, context, out, err) < 0) {
		k8s_creds_free(out);
		return os_error_prefix(err, "%s", name);
	}
	snprintf(out->source, sizeof out->source, "%s", name);
	return 0;
}

/* Reads a whole small file (credential material) into a NUL-terminated buffer. */
static int read_small(const char *path, struct k8s_blob *out, os_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return os_error_errno(err, "opening %s", path);
	_cleanup_free_ char *buf = malloc(K8S_CRED_FILE_MAX + 1);
	size_t n = 0;
	if (!buf)
		return os_error_set(err, ENOMEM, "reading %s: out of memory", path);
	for (;;) {
		ssize_t r = read(fd, buf + n, K8S_CRED_FILE_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return os_error_errno(err, "reading %s", path);
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > K8S_CRED_FILE_MAX)
			return os_error_set(err, EFBIG, "%s: larger than %u bytes", path,
					    K8S_CRED_FILE_MAX);
	}
	buf[n] = '\0';
	out->data = steal_ptr(buf);
	out->len = n;
	return 0;
}

static int materialise(struct k8s_blob *b, bool trim, os_error *err)
{
	if (!b->path || b->data)
		return 0;
	if (read_small(b->path, b, err) < 0)
		return -1;
	while (trim && b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r'))
		b->data[--b->len] = '\0';
	return 0;
}

static int load_in_cluster(const char *host, const char *port, struct k8s_creds *out, os_error *err)
{
	const char *dir = getenv("OPENSHELL_K8S_SERVICEACCOUNT_DIR");
	struct k8s_blob ns = { 0 };
	if (!dir)
		dir = K8S_SA_DIR;
	memset(out, 0, sizeof *out);
	bool v6 = strchr(host, ':') != NULL;
	if (asprintf(&out->server, v6 ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0 ||
	    asprintf(&out->token.path, "%s/token", dir) < 0 ||
	    asprintf(&out->ca.path, "%s/ca.crt", dir) < 0 ||
	    asprintf(&ns.path, "%s/namespace", dir) < 0) {
		free(ns.path);
		return os_error_set(err, ENOMEM, "in-cluster credentials: out of memory");
	}
	if (materialise(&ns, true, NULL) == 0)
		out->namespace = steal_ptr(ns.data);
	free(ns.data);
	free(ns.path);
	snprintf(out->source, sizeof out->source, "in-cluster service account %s", dir);
	return 0;
}

static int load_kubeconfig_file(const char *path, const char *context, struct k8s_creds *out,
				os_error *err)
{
	struct k8s_blob doc = { 0 };
	if (read_small(path, &doc, err) < 0)
		return os_error_prefix(err, "kubeconfig");
	_cleanup_free_ char *dir = strdup(path);
	if (!dir) {
		free(doc.data);
		return os_error_set(err, ENOMEM, "kubeconfig: out of memory");
	}
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int r = k8s_kubeconfig_parse(path, doc.data, doc.len, slash ? dir : ".", context, out, err);
	explicit_bzero(doc.data, doc.len);
	free(doc.data);
	return r;
}

static int first_kubeconfig(const char *explicit_path, char *out, size_t cap, os_error *err)
{
	const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
	if (explicit_path)
		return str_copy(out, cap, explicit_path, err);
	if (env && *env) {
		/* A list like client-go's: the first existing file is used. */
		const char *p = env;
		while (*p) {
			size_t n = strcspn(p, ":");
			if (n && n < cap) {
				memcpy(out, p, n);
				out[n] = '\0';
				if (access(out, R_OK) == 0)
					return 0;
			}
			p += n + (p[n] == ':');
		}
	}
	if (home && str_format(out, cap, NULL, "%s/.kube/config", home) == 0 &&
	    access(out, R_OK) == 0)
		return 0;
	return os_error_set(err, ENOENT,
			    "no Kubernetes credentials: not in a cluster (KUBERNETES_SERVICE_HOST "
			    "unset), no $KUBECONFIG and no ~/.kube/config");
}

int k8s_creds_discover(const char *kubeconfig_path, const char *context, struct k8s_creds *out,
		       os_error *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char path[4096];
	int r;
	if (!kubeconfig_path && host && *host && port && *port)
		r = load_in_cluster(host, port, out, err);
	else if (first_kubeconfig(kubeconfig_path, path, sizeof path, err) < 0)
		return -1;
	else
		r = load_kubeconfig_file(path, context, out, err);
	if (r < 0)
		return -1;
	if (materialise(&out->ca, false, err) < 0 || materialise(&out->cert, false, err) < 0 ||
	    materialise(&out->key, false, err) < 0 || materialise(&out->token, true, err) < 0) {
		os_error_prefix(err, "credentials from %s", out->source);
		k8s_creds_free(out);
		return -1;
	}
	return 0;
}

int k8s_creds_refresh_token(struct k8s_creds *c, os_error *err)
{
	struct k8s_blob fresh = { .path = c->token.path };
	if (!c->token.path)
		return 0;
	if (materialise(&fresh, true, err) < 0)
		return os_error_prefix(err, "re-reading the token");
	if (c->token.data)
		explicit_bzero(c->token.data, c->token.len);
	free(c->token.data);
	c->token.data = fresh.data;
	c->token.len = fresh.len;
	return 0;
}
