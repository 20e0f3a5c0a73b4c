/* graphql_http.c - GraphQL over HTTP envelopes (see graphql_http.h). Field
 * semantics follow OpenShell's classifier: `query` (blank counts as
 * absent), `operationName` (empty counts as absent), persisted queries by
 * extensions.persistedQuery.sha256Hash or by id / documentId / queryId. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graphql_http.h"
#include "hex.h"
#include "json.h"

/* Cap on one decoded GET parameter (the request head bounds it anyway). */
#define GET_VALUE_MAX (64 * 1024)

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r\n,", s[i]))
			return false;
	return true;
}

/* The operation an envelope's fields name. query/name/key may be NULL. */
static int classify(const char *query, size_t qlen, const char *name, const char *key,
		    struct graphql_http_op *op, os_error *err)
{
	if (name && !*name)
		name = NULL;
	if (key && !(op->key = strdup(key)))
		return os_error_set(err, ENOMEM, "out of memory");
	if (query && !blank(query, qlen))
		return graphql_classify(query, qlen, name, &op->op, err);
	if (!key)
		return os_error_set(err, EINVAL,
				    "GraphQL request has no query document or persisted query "
				    "identifier");
	op->persisted_only = true;
	if (name && !(op->name = strdup(name)))
		return os_error_set(err, ENOMEM, "out of memory");
	return 0;
}

static int new_request(struct graphql_http_request *out, size_t n, bool batch, os_error *err)
{
	memset(out, 0, sizeof *out);
	out->ops = calloc(n, sizeof *out->ops);
	if (!out->ops)
		return os_error_set(err, ENOMEM, "out of memory");
	out->n = n;
	out->batch = batch;
	return 0;
}

void graphql_http_request_free(struct graphql_http_request *r)
{
	for (size_t i = 0; r->ops && i < r->n; i++) {
		graphql_operation_free(&r->ops[i].op);
		free(r->ops[i].name);
		free(r->ops[i].key);
	}
	free(r->ops);
	memset(r, 0, sizeof *r);
}

/* extensions.persistedQuery.sha256Hash, when a non-empty string. */
static int persisted_hash(const json_t *ext, const char **hash, os_error *err)
{
	*hash = NULL;
	if (!ext || json_is_null(ext))
		return 0;
	if (!json_is_object(ext))
		return os_error_set(err, EINVAL, "GraphQL 'extensions' must be an object");
	const json_t *pq = json_object_get(ext, "persistedQuery");
	if (!pq)
		return 0;
	if (!json_is_object(pq))
		return os_error_set(err, EINVAL, "'extensions.persistedQuery' must be an object");
	const json_t *h = json_object_get(pq, "sha256Hash");
	if (h && !json_is_string(h))
		return os_error_set(err, EINVAL,
				    "'extensions.persistedQuery.sha256Hash' must be a string");
	if (h && json_string_length(h))
		*hash = json_string_value(h);
	return 0;
}

/* --- POST: {query, operationName, variables, extensions, id...} --- */

static int optional_string(const json_t *o, const char *k, const json_t **out, os_error *err)
{
	const json_t *v = json_object_get(o, k);
	*out = v && !json_is_null(v) ? v : NULL;
	if (*out && !json_is_string(*out))
		return os_error_set(err, EINVAL, "GraphQL '%s' must be a string", k);
	return 0;
}

/* At most one of id / documentId / queryId (NULL when none). */
static int persisted_id(const char *const *vals, const char *const *keys, const char **id,
			os_error *err)
{
	const char *which = NULL;
	*id = NULL;
	for (size_t i = 0; i < 3; i++) {
		if (!vals[i] || !*vals[i])
			continue;
		if (which)
			return os_error_set(
				err, EINVAL,
				"GraphQL persisted-query ids \"%s\" and \"%s\" must not "
				"be combined",
				which, keys[i]);
		which = keys[i];
		*id = vals[i];
	}
	return 0;
}

static const char *const id_keys[] = { "id", "documentId", "queryId" };

static int classify_envelope(const json_t *o, struct graphql_http_op *op, os_error *err)
{
	static const char *const keys[] = { "query", "operationName", "variables", "extensions",
					    "id",    "documentId",    "queryId",   NULL };
	if (!json_is_object(o))
		return os_error_set(err, EINVAL, "a GraphQL request must be a JSON object");
	if (json_check_keys(o, keys, "GraphQL request", err) < 0)
		return -1;
	const json_t *q, *name, *ids[3];
	const char *idv[3] = { 0 }, *hash, *id;
	if (optional_string(o, "query", &q, err) < 0 ||
	    optional_string(o, "operationName", &name, err) < 0)
		return -1;
	for (size_t i = 0; i < 3; i++) {
		if (optional_string(o, id_keys[i], &ids[i], err) < 0)
			return -1;
		idv[i] = ids[i] ? json_string_value(ids[i]) : NULL;
	}
	const json_t *vars = json_object_get(o, "variables");
	if (vars && !json_is_null(vars) && !json_is_object(vars))
		return os_error_set(err, EINVAL, "GraphQL 'variables' must be an object");
	if (persisted_hash(json_object_get(o, "extensions"), &hash, err) < 0 ||
	    persisted_id(idv, id_keys, &id, err) < 0)
		return -1;
	return classify(q ? json_string_value(q) : NULL, q ? json_string_length(q) : 0,
			name ? json_string_value(name) : NULL, hash ? hash : id, op, err);
}

int graphql_http_parse_envelope(const json_t *o, struct graphql_http_request *out, os_error *err)
{
	memset(out, 0, sizeof *out);
	if (new_request(out, 1, false, err) < 0)
		return -1;
	if (classify_envelope(o, &out->ops[0], err) < 0) {
		graphql_http_request_free(out);
		return -1;
	}
	return 0;
}

int graphql_http_parse_post(const char *body, size_t len, size_t cap,
			    struct graphql_http_request *out, os_error *err)
{
	memset(out, 0, sizeof *out);
	if (len == 0)
		return os_error_set(err, EINVAL, "GraphQL POST body is empty");
	os_error e = { 0 };
	_cleanup_json_ json_t *root = json_parse_strict(body, len, cap, &e);
	if (!root)
		return os_error_set(err, e.code, "GraphQL request body is not valid JSON: %s",
				    e.msg);
	bool batch = json_is_array(root);
	size_t n = batch ? json_array_size(root) : 1;
	if (batch && n == 0)
		return os_error_set(err, EINVAL, "GraphQL batch request is empty");
	if (n > GRAPHQL_BATCH_MAX)
		return os_error_set(err, EINVAL, "GraphQL batch of %zu operations exceeds %d", n,
				    GRAPHQL_BATCH_MAX);
	if (!batch && !json_is_object(root))
		return os_error_set(err, EINVAL,
				    "GraphQL JSON envelope must be an object or array");
	if (new_request(out, n, batch, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (classify_envelope(batch ? json_array_get(root, i) : root, &out->ops[i], &e) ==
		    0)
			continue;
		if (batch)
			os_error_set(err, e.code, "batch item %zu: %s", i, e.msg);
		else
			os_error_set(err, e.code, "%s", e.msg);
		graphql_http_request_free(out);
		return -1;
	}
	return 0;
}

/* --- GET: the query string --- */

/* application/x-www-form-urlencoded: '+' is a space, %XX a byte. */
static int form_decode(const char *s, size_t n, char **out, size_t *olen, os_error *err)
{
	char *d = malloc(n + 1);
	if (!d)
		return os_error_set(err, ENOMEM, "out of memory");
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '+') {
			d[o++] = ' ';
		} else if (s[i] != '%') {
			d[o++] = s[i];
		} else {
			int hi = i + 2 < n ? hex_digit_value((unsigned char)s[i + 1]) : -1;
			int lo = hi >= 0 ? hex_digit_value((unsigned char)s[i + 2]) : -1;
			if (lo < 0) {
				free(d);
				return os_error_set(err, EINVAL,
						    "bad percent-escape at offset %zu of the query "
						    "string",
						    i);
			}
			d[o++] = (char)(hi * 16 + lo);
			i += 2;
		}
	}
	d[o] = 0;
	*out = d;
	*olen = o;
	return 0;
}

enum { P_QUERY, P_NAME, P_VARS, P_EXT, P_ID, P_DOCID, P_QUERYID, P_COUNT };

struct get_params {
	char *v[P_COUNT];
	size_t len[P_COUNT];
};

static void get_params_free(struct get_params *p)
{
	for (size_t i = 0; i < P_COUNT; i++)
		free(p->v[i]);
}

static int get_param(struct get_params *p, const char *k, size_t kl, const char *v, size_t vl,
		     size_t at, os_error *err)
{
	static const char *const names[P_COUNT] = {
		"query", "operationName", "variables", "extensions", "id", "documentId", "queryId"
	};
	char *key;
	size_t klen;
	if (form_decode(k, kl, &key, &klen, err) < 0)
		return -1;
	int slot = -1;
	for (int i = 0; i < P_COUNT; i++)
		if (strlen(names[i]) == klen && !memcmp(key, names[i], klen))
			slot = i;
	free(key);
	if (slot < 0)
		return 0; /* other parameters mean nothing to GraphQL */
	if (p->v[slot])
		return os_error_set(err, EINVAL,
				    "GraphQL GET parameter \"%s\" must not appear more than once",
				    names[slot]);
	if (vl > GET_VALUE_MAX)
		return os_error_set(err, EINVAL, "GraphQL GET parameter \"%s\" is too long",
				    names[slot]);
	if (form_decode(v, vl, &p->v[slot], &p->len[slot], err) < 0)
		return os_error_prefix(err, "parameter at offset %zu", at);
	if (memchr(p->v[slot], 0, p->len[slot]))
		return os_error_set(err, EINVAL, "GraphQL GET parameter \"%s\" contains a NUL byte",
				    names[slot]);
	return 0;
}

static int split_query(const char *q, size_t len, struct get_params *p, os_error *err)
{
	for (size_t i = 0; i < len;) {
		size_t end = i;
		while (end < len && q[end] != '&')
			end++;
		const char *eq = memchr(q + i, '=', end - i);
		size_t kl = eq ? (size_t)(eq - (q + i)) : end - i;
		const char *v = eq ? eq + 1 : q + end;
		if (get_param(p, q + i, kl, v, (size_t)(q + end - v), i, err) < 0)
			return -1;
		i = end + 1;
	}
	return 0;
}

static int get_json_checks(const struct get_params *p, const char **hash, json_t **ext,
			   os_error *err)
{
	os_error e = { 0 };
	*hash = NULL;
	*ext = NULL;
	if (p->v[P_VARS] && p->len[P_VARS]) {
		json_t *vars = json_parse_strict(p->v[P_VARS], p->len[P_VARS], GET_VALUE_MAX, &e);
		bool ok = vars && (json_is_object(vars) || json_is_null(vars));
		json_decref(vars);
		if (!ok)
			return os_error_set(err, EINVAL,
					    "GraphQL GET 'variables' must be a JSON object%s%s",
					    e.msg[0] ? ": " : "", e.msg);
	}
	if (!p->v[P_EXT] || !p->len[P_EXT])
		return 0;
	if (!(*ext = json_parse_strict(p->v[P_EXT], p->len[P_EXT], GET_VALUE_MAX, &e)))
		return os_error_set(err, EINVAL, "GraphQL GET 'extensions' is not valid JSON: %s",
				    e.msg);
	return persisted_hash(*ext, hash, err);
}

int graphql_http_parse_get(const char *query, size_t len, struct graphql_http_request *out,
			   os_error *err)
{
	struct get_params p = { 0 };
	_cleanup_json_ json_t *ext = NULL;
	memset(out, 0, sizeof *out);
	const char *hash, *id;
	int rc = split_query(query, len, &p, err);
	if (rc == 0)
		rc = get_json_checks(&p, &hash, &ext, err);
	const char *ids[3] = { p.v[P_ID], p.v[P_DOCID], p.v[P_QUERYID] };
	if (rc == 0)
		rc = persisted_id(ids, id_keys, &id, err);
	if (rc == 0)
		rc = new_request(out, 1, false, err);
	if (rc == 0) {
		rc = classify(p.v[P_QUERY], p.len[P_QUERY], p.v[P_NAME], hash ? hash : id,
			      &out->ops[0], err);
		if (rc < 0)
			graphql_http_request_free(out);
	}
	get_params_free(&p);
	return rc;
}
