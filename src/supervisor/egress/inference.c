/* inference.c - routing of inference.local requests (see inference.h). The
 * request body is parsed (bounded) only to set "model"; everything else of
 * the caller's JSON is forwarded as sent. */
#include "inference.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "credentials.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"
#include "proxy_internal.h"

struct inference_routes {
	char *name, *provider, *model, *api_key;
	char host[256];
	uint16_t port;
	bool tls;
};

void inference_routes_free(struct inference_routes *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->provider);
	free(r->model);
	if (r->api_key) {
		memset(r->api_key, 0, strlen(r->api_key));
		free(r->api_key);
	}
	free(r);
}

size_t inference_mask_keys(const struct inference_routes *r, char *data, size_t len)
{
	return r ? secret_mask_one(r->api_key, data, len) : 0;
}

size_t inference_max_key_len(const struct inference_routes *r)
{
	return r && r->api_key ? strlen(r->api_key) : 0;
}

static int parse_base_url(struct inference_routes *r, const char *url, os_error *err)
{
	const char *rest;
	if (str_has_prefix(url, "https://")) {
		r->tls = true;
		rest = url + 8;
	} else if (str_has_prefix(url, "http://")) {
		rest = url + 7;
	} else {
		return os_error_set(err, EINVAL, "base_url must start with http:// or https://");
	}
	size_t len = strcspn(rest, "/");
	if (rest[len] && strcmp(rest + len, "/") != 0)
		return os_error_set(err, EINVAL, "base_url must not have a path (got \"%s\")", url);
	struct http_authority a;
	if (http_parse_authority(rest, len, r->tls ? 443 : 80, false, &a, err) < 0)
		return os_error_prefix(err, "base_url");
	if (a.host.len >= sizeof r->host)
		return os_error_set(err, EINVAL, "base_url host too long");
	memcpy(r->host, a.host.p, a.host.len);
	r->host[a.host.len] = '\0';
	r->port = a.port;
	return 0;
}

int inference_routes_parse(const char *text, size_t len, struct inference_routes **out,
			   os_error *err)
{
	_cleanup_json_ json_t *root = json_parse_strict(text, len, 1u << 20, err);
	if (!root)
		return -1;
	static const char *const top[] = { "routes", NULL };
	static const char *const keys[] = {
		"name", "provider", "base_url", "model", "api_key", NULL
	};
	json_t *routes = json_object_get(root, "routes");
	if (json_check_keys(root, top, "inference", err) < 0)
		return -1;
	if (!json_is_array(routes) || json_array_size(routes) == 0)
		return os_error_set(err, EINVAL, "inference: routes must be a non-empty array");
	json_t *r0 = json_array_get(routes, 0);
	const char *name = "default", *provider, *url, *model, *key;
	if (json_check_keys(r0, keys, "inference.routes[0]", err) < 0 ||
	    json_get_string(r0, "name", false, &name, err) < 0 ||
	    json_get_string(r0, "provider", true, &provider, err) < 0 ||
	    json_get_string(r0, "base_url", true, &url, err) < 0 ||
	    json_get_string(r0, "model", true, &model, err) < 0 ||
	    json_get_string(r0, "api_key", true, &key, err) < 0)
		return os_error_prefix(err, "inference.routes[0]");
	if (strcmp(provider, "openai") != 0 && strcmp(provider, "anthropic") != 0)
		return os_error_set(err, EINVAL,
				    "inference.routes[0].provider: expected openai or anthropic, "
				    "got \"%s\"",
				    provider);
	struct inference_routes *r = calloc(1, sizeof *r);
	if (!r)
		return os_error_set(err, ENOMEM, "out of memory");
	r->name = strdup(name);
	r->provider = strdup(provider);
	r->model = strdup(model);
	r->api_key = strdup(key);
	if (!r->name || !r->provider || !r->model || !r->api_key ||
	    parse_base_url(r, url, err) < 0) {
		inference_routes_free(r);
		return err && err->code ? -1 : os_error_set(err, ENOMEM, "out of memory");
	}
	*out = r;
	return 0;
}

int inference_routes_load(const char *path, struct inference_routes **out, os_error *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return os_error_errno(err, "inference routes %s", path);
	if (st.st_mode & 077)
		return os_error_set(err, EPERM,
				    "inference routes %s must not be readable by others", path);
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (file_read_all(path, 1u << 20, &text, &len, err) < 0)
		return -1;
	int rc = inference_routes_parse(text, len, out, err);
	memset(text, 0, len);
	return rc < 0 ? os_error_prefix(err, "%s", path) : 0;
}

bool inference_path_allowed(const char *method, const char *path)
{
	static const char *const posts[] = { "/v1/chat/completions", "/v1/completions",
					     "/v1/responses", "/v1/embeddings", "/v1/messages" };
	if (strcmp(method, "GET") == 0)
		return strcmp(path, "/v1/models") == 0;
	if (strcmp(method, "POST") != 0)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(posts); i++)
		if (strcmp(path, posts[i]) == 0)
			return true;
	return false;
}

static bool is_dropped_header(struct http_slice n)
{
	static const char *const drop[] = {
		"authorization", "x-api-key",		"host",	      "content-length",
		"connection",	 "proxy-connection",	"keep-alive", "transfer-encoding",
		"upgrade",	 "proxy-authorization", "te"
	};
	for (size_t i = 0; i < ARRAY_SIZE(drop); i++)
		if (str_ieq(n.p, n.len, drop[i], strlen(drop[i])))
			return true;
	return false;
}

/* The request body with "model" set to the route's model. */
static char *rewrite_body(const struct inference_routes *r, const char *body, size_t len,
			  os_error *err)
{
	if (len == 0)
		return strdup("");
	_cleanup_json_ json_t *v = json_parse_strict(body, len, INFERENCE_BODY_MAX, err);
	if (!v)
		return NULL;
	if (!json_is_object(v)) {
		os_error_set(err, EINVAL, "request body must be a JSON object");
		return NULL;
	}
	json_object_set_new(v, "model", json_string(r->model));
	return json_dumps(v, JSON_COMPACT);
}

static int build_request(struct conn *c, const struct inference_routes *r,
			 const struct http_request *req, const char *method, const char *path,
			 const char *body, os_error *err)
{
	struct buf *o = &c->uout;
	buf_reset(o);
	char hostport[300];
	snprintf(hostport, sizeof hostport, "%s:%u", r->host, r->port);
	if (http_write_request_line(o, method, path, err) < 0 ||
	    http_write_header(o, "Host", hostport, err) < 0)
		return -1;
	for (size_t i = 0; i < req->headers.n; i++) {
		const struct http_header *h = &req->headers.v[i];
		if (!is_dropped_header(h->name) &&
		    http_write_header_slice(o, h->name, h->value, err) < 0)
			return -1;
	}
	char auth[1100];
	if (strcmp(r->provider, "anthropic") == 0) {
		if (http_write_header(o, "x-api-key", r->api_key, err) < 0)
			return -1;
	} else {
		snprintf(auth, sizeof auth, "Bearer %s", r->api_key);
		int rc = http_write_header(o, "Authorization", auth, err);
		memset(auth, 0, sizeof auth);
		if (rc < 0)
			return -1;
	}
	if (strcmp(method, "POST") == 0 &&
	    buf_printf(o, err, "Content-Length: %zu\r\n", strlen(body)) < 0)
		return -1;
	return buf_printf(o, err, "\r\n%s", body);
}

void inference_handle(struct conn *c, const struct http_request *req, size_t consumed)
{
	const struct inference_routes *r = proxy_cfg(c->proxy)->inference;
	char method[16], path[256];
	if (req->method.len >= sizeof method || req->path.len >= sizeof path) {
		reply_error(c, 403, "policy_denied", "not an inference API path", "inference_path");
		return;
	}
	memcpy(method, req->method.p, req->method.len);
	method[req->method.len] = '\0';
	memcpy(path, req->path.p, req->path.len);
	path[req->path.len] = '\0';
	if (!inference_path_allowed(method, path)) {
		reply_error(c, 403, "policy_denied", "not an inference API path", "inference_path");
		return;
	}
	if (req->framing.chunked || req->framing.content_length > INFERENCE_BODY_MAX) {
		reply_error(c, 413, "payload_too_large",
			    "inference bodies need a Content-Length of at most 200 KiB",
			    "inference_body");
		return;
	}
	size_t body_len = (size_t)req->framing.content_length;
	if (c->cin.len < consumed + body_len)
		return; /* wait for the whole body; the head is parsed again then */
	os_error err = { 0 };
	_cleanup_free_ char *body = rewrite_body(r, c->cin.data + consumed, body_len, &err);
	if (!body) {
		reply_error(c, 400, "bad_request", err.msg, "inference_body");
		return;
	}
	c->client_close = req->framing.close;
	c->req_is_head = false;
	if (build_request(c, r, req, method, path, body, &err) < 0) {
		reply_error(c, 400, "bad_request", err.msg, "inference_request");
		return;
	}
	buf_consume(&c->cin, consumed + body_len);
	audit_decision(c, "inference", "allow", "inference_routed", method, path, r->name);
	c->req_body.state = BODY_DONE;
	c->resp_head_done = false;
	c->resp_body.state = BODY_DONE;
	http_parser_reset(&c->rparser);
	snprintf(c->up_host, sizeof c->up_host, "%s", r->host);
	c->up_port = r->port;
	c->up_tls = r->tls;
	upstream_start(c);
}
