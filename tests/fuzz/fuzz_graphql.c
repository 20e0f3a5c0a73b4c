/* fuzz_graphql.c - libFuzzer target for the GraphQL document parser, the
 * GraphQL-over-HTTP envelopes and the GraphQL-over-WebSocket messages. The
 * first input line (up to 64 bytes) is the operationName, the rest the
 * document; the whole input is also read as a POST body, as a GET query
 * string and as a WebSocket text message. Checks the answers'
 * invariants (sorted distinct root fields within the cap, each a GraphQL
 * name; a message on every error) and aborts on any violation. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphql_ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_name(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') ||
		      ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'z')))
			return false;
	return true;
}

static void check_op(const struct graphql_operation *op)
{
	if (op->n_fields == 0 || op->n_fields > GRAPHQL_FIELDS_MAX)
		abort(); /* a selection set is never empty */
	for (size_t i = 0; i < op->n_fields; i++)
		if (!is_name(op->fields[i]) || (i && strcmp(op->fields[i - 1], op->fields[i]) >= 0))
			abort();
	if (op->name && !is_name(op->name))
		abort();
}

static void check_http(const struct graphql_http_request *r, int rc, const os_error *err)
{
	if (rc < 0) {
		if (!err->msg[0] || r->ops || r->n)
			abort();
		return;
	}
	if (r->n == 0 || r->n > GRAPHQL_BATCH_MAX || (!r->batch && r->n != 1))
		abort();
	for (size_t i = 0; i < r->n; i++) {
		const struct graphql_http_op *o = &r->ops[i];
		if (o->persisted_only ? (!o->key || !o->key[0] || o->op.fields) : 0)
			abort();
		if (!o->persisted_only)
			check_op(&o->op);
	}
}

static void fuzz_http(const uint8_t *data, size_t size)
{
	struct graphql_http_request r;
	os_error err = { 0 };
	int rc = graphql_http_parse_post((const char *)data, size, 1 << 20, &r, &err);
	check_http(&r, rc, &err);
	graphql_http_request_free(&r);
	memset(&err, 0, sizeof err);
	rc = graphql_http_parse_get((const char *)data, size, &r, &err);
	check_http(&r, rc, &err);
	graphql_http_request_free(&r);
}

/* A message is refused, a control message (no operation), or exactly one
 * operation (never a batch). */
static void fuzz_ws(const uint8_t *data, size_t size)
{
	struct graphql_ws_message m;
	os_error err = { 0 };
	int rc = graphql_ws_classify((const char *)data, size, 1 << 20, &m, &err);
	if (rc < 0 && (!err.msg[0] || m.req.ops))
		abort();
	if (rc == 0 && m.kind == GRAPHQL_WS_CONTROL && (m.req.ops || !m.type[0]))
		abort();
	if (rc == 0 && m.kind == GRAPHQL_WS_OPERATION) {
		if (m.req.batch || m.req.n != 1)
			abort();
		check_http(&m.req, 0, &err);
	}
	graphql_ws_message_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_http(data, size);
	fuzz_ws(data, size);
	char name[65] = "";
	const char *doc = (const char *)data;
	const char *nl = memchr(data, '\n', size < 65 ? size : 65);
	if (nl) {
		memcpy(name, data, (size_t)(nl - doc));
		name[nl - doc] = 0;
		size -= (size_t)(nl - doc) + 1;
		doc = nl + 1;
	}
	struct graphql_operation op;
	os_error err = { 0 };
	if (graphql_classify(doc, size, name, &op, &err) < 0) {
		if (!err.msg[0] || op.fields || op.name)
			abort();
		return 0;
	}
	check_op(&op);
	if (op.name && name[0] && strcmp(op.name, name) != 0)
		abort();
	graphql_operation_free(&op);
	return 0;
}
