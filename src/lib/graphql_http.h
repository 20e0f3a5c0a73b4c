/* graphql_http.h - GraphQL over HTTP requests as the proxy judges them: the
 * GET query string (query, operationName, variables, extensions, and a
 * persisted-query id) or the POSTed JSON envelope, single or batched, each
 * resolved to the operation it runs (graphql.h) or, for a persisted query
 * sent without its document, to the hash or id it names. Duplicate JSON
 * keys or GET parameters, wrong types, unknown envelope members and
 * ambiguous persisted-query ids are refused: the proxy and the server must
 * never read two different requests from one. */
#ifndef OS_GRAPHQL_HTTP_H
#define OS_GRAPHQL_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "graphql.h"
#include "json.h"

/* Operations in one batched POST. */
#define GRAPHQL_BATCH_MAX 64

struct graphql_http_op {
	bool persisted_only; /* a hash or id without a document: op is empty */
	struct graphql_operation op;
	char *name; /* persisted_only: the operationName sent, or NULL */
	char *key; /* persisted-query sha256Hash (preferred) or id, or NULL */
};

struct graphql_http_request {
	bool batch;
	size_t n;
	struct graphql_http_op *ops;
};

/* query: the raw query string (no '?'), percent-encoded. */
int graphql_http_parse_get(const char *query, size_t len, struct graphql_http_request *out,
			   os_error *err);
/* body: len bytes of JSON, at most cap. */
int graphql_http_parse_post(const char *body, size_t len, size_t cap,
			    struct graphql_http_request *out, os_error *err);
/* One JSON envelope object already parsed (GraphQL over WebSocket carries
 * it as a message's payload): out->n is 1, never a batch. */
int graphql_http_parse_envelope(const json_t *o, struct graphql_http_request *out, os_error *err);
void graphql_http_request_free(struct graphql_http_request *r);

#endif
