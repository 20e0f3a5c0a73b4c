/* jsonrpc.h - strict JSON-RPC 2.0 envelopes (a single message or a batch)
 * as they cross the proxy: the bytes are parsed once, with duplicate object
 * keys refused at any depth (so the proxy and the upstream can never read
 * two different values for one key), and every message is classified as a
 * request, a notification, a result or an error. Anything the specification
 * does not define is refused with a message naming the member and the batch
 * item. Used for json-rpc and mcp endpoints, and for MCP server messages. */
#ifndef OS_JSONRPC_H
#define OS_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* More messages in one batch than this are refused (bounded work per body). */
#define JSONRPC_BATCH_MAX 256
#define JSONRPC_METHOD_MAX 256

enum jsonrpc_kind { JSONRPC_REQUEST, JSONRPC_NOTIFICATION, JSONRPC_RESULT, JSONRPC_ERROR };

struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	const char *method; /* requests and notifications; owned by the tree */
	json_t *id; /* borrowed: requests, results and errors; NULL for notifications */
	json_t *params; /* borrowed, or NULL */
};

struct jsonrpc_payload {
	json_t *root;
	bool batch;
	size_t n;
	struct jsonrpc_msg *msgs;
};

/* Why a payload was refused: not JSON at all (JSON-RPC's parse error) or
 * JSON that is not a valid message (invalid request). */
enum jsonrpc_fault { JSONRPC_FAULT_NONE = 0, JSONRPC_FAULT_PARSE, JSONRPC_FAULT_INVALID };

/* Parses len bytes (at most cap). On failure *fault says which kind and err
 * names the problem ("batch item 2: ..."); out is left empty. */
int jsonrpc_parse(const char *data, size_t len, size_t cap, struct jsonrpc_payload *out,
		  enum jsonrpc_fault *fault, os_error *err);
void jsonrpc_payload_free(struct jsonrpc_payload *p);

/* The JSON-RPC error code for a fault: -32700 or -32600. */
int jsonrpc_fault_code(enum jsonrpc_fault f);

/* True when some message is a result or an error (a peer answering). */
bool jsonrpc_has_response(const struct jsonrpc_payload *p);

/* MCP's checks on a client's or a server's payload beyond JSON-RPC:
 * initialize is one request on its own, tools/call names its tool
 * (*tools[i] for message i, NULL when not a tools/call), and batches are
 * allowed only when batches_ok (MCP 2025-03-26). tools has p->n slots. */
int jsonrpc_mcp_check(const struct jsonrpc_payload *p, bool batches_ok, const char **tools,
		      os_error *err);

#endif
