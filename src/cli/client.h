/* client.h - the CLI's connection to the gateway: where it is (explicit
 * OPENSHELL_GATEWAY / --gateway, else the local state dir's Unix socket),
 * TLS settings for https:// (tls_client.h), the bearer token, JSON calls and log streams (gw_http.c), and starting a
 * local gateway when none is configured and none runs. Never prints a token. */
#ifndef OS_CLI_CLIENT_H
#define OS_CLI_CLIENT_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

#include "error.h"
#include "tls_client.h"

struct client {
	char url[PATH_MAX + 32]; /* "http[s]://host:port" or "unix:/path" */
	struct tls_settings tls; /* for https:// (OPENSHELL_TLS_*) */
	char state_dir[PATH_MAX];
	char token[256];
	bool explicit_gateway;
	bool started; /* we auto-started the gateway */
};

/* Resolves the gateway and token from flags/env (gateway may be NULL). */
int client_init(struct client *c, const char *gateway, os_error *err);
/* Makes sure a gateway answers /v1/health, auto-starting a local one if allowed. */
int client_ensure(struct client *c, os_error *err);
/* One JSON call. *status is the HTTP status; *out the parsed body (may be NULL). */
int client_call(struct client *c, const char *method, const char *path, const json_t *body,
		long *status, json_t **out, os_error *err);
/* Streams a response body (logs) to fd until the server ends it. */
int client_stream(struct client *c, const char *path, int fd, os_error *err);
/* Streams an NDJSON response, calling line for each line (without its
 * newline) until the server ends it or line returns < 0. */
typedef int (*client_line_fn)(const char *line, size_t len, void *user);
int client_stream_lines(struct client *c, const char *path, client_line_fn line, void *user,
			os_error *err);
/* Starts openshell-gateway detached for state_dir; waits until it answers. */
int client_start_gateway(struct client *c, os_error *err);

#endif
