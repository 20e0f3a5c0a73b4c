/* graphql_ws.h - one client message of GraphQL over WebSocket, as the
 * proxy judges it: the graphql-transport-ws subprotocol (`subscribe`) and
 * the older graphql-ws one (`start`) carry an operation, their
 * connection_init / connection_terminate / ping / pong / complete / stop
 * messages carry none. Upstream OpenShell's classifier: any other type, a
 * message that is not a JSON object, an operation without a non-empty
 * string id or without an object payload is refused. Stricter here: the
 * JSON is parsed strictly (duplicate keys refused, so the proxy and the
 * server never read two different messages from one) and a message has
 * only the members the subprotocols define (type, id, payload). */
#ifndef OS_GRAPHQL_WS_H
#define OS_GRAPHQL_WS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "graphql_http.h"

enum graphql_ws_kind {
	GRAPHQL_WS_CONTROL, /* no operation: type names it */
	GRAPHQL_WS_OPERATION, /* subscribe / start: req holds its one operation */
};

struct graphql_ws_message {
	enum graphql_ws_kind kind;
	char type[24]; /* the message type (known types only; "" on error) */
	struct graphql_http_request req; /* GRAPHQL_WS_OPERATION */
};

/* text: len bytes of one whole text message (UTF-8 already checked), at
 * most cap. -1 with err (saying what was wrong) when the message cannot be
 * judged; out->type then names a known type when the message had one. */
int graphql_ws_classify(const char *text, size_t len, size_t cap, struct graphql_ws_message *out,
			os_error *err);
void graphql_ws_message_free(struct graphql_ws_message *m);

#endif
