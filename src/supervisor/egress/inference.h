/* inference.h - `inference.local`: the agent talks to one well-known name;
 * the supervisor routes each OpenAI/Anthropic-shaped request to the backend
 * the operator configured, strips the caller's auth, injects the backend key
 * and sets the model. The backend key never reaches the agent. */
#ifndef OS_PROXY_INFERENCE_H
#define OS_PROXY_INFERENCE_H

#include <stddef.h>

#include "error.h"
#include "http.h"

#define INFERENCE_HOST "inference.local"
#define INFERENCE_BODY_MAX (200u * 1024) /* request bodies are rewritten in memory */

struct inference_routes;
struct conn;

/* JSON: {"routes": [{"name": "default", "provider": "openai"|"anthropic",
 * "base_url": "http(s)://host[:port]", "model": "...", "api_key": "..."}]};
 * the first route is used. The file must not be readable by others. */
int inference_routes_load(const char *path, struct inference_routes **out, os_error *err);
int inference_routes_parse(const char *json, size_t len, struct inference_routes **out,
			   os_error *err);
void inference_routes_free(struct inference_routes *r);
/* The backends' API keys, for scrubbing answers (secret_echo.h): '*' over
 * each occurrence in data (count returned), and the longest key's length. */
size_t inference_mask_keys(const struct inference_routes *r, char *data, size_t len);
size_t inference_max_key_len(const struct inference_routes *r);

/* True for the OpenAI/Anthropic-shaped method+path pairs that are routed. */
bool inference_path_allowed(const char *method, const char *path);

/* Handles one request inside a terminated inference.local tunnel. */
void inference_handle(struct conn *c, const struct http_request *req, size_t consumed);

#endif
