/* proxy_ws_int.h - the WebSocket relay's permessage-deflate pieces
 * (proxy_ws_deflate.c), used by proxy_ws.c. */
#ifndef OS_PROXY_WS_INT_H
#define OS_PROXY_WS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "error.h"

/* The agent's Sec-WebSocket-Extensions as offered on: its first valid
 * permessage-deflate offer with client_no_context_takeover added. 1 (out
 * set), 0 (nothing the proxy can inspect was offered), -1 (too long). */
int ws_deflate_offer(const char *value, size_t len, char *out, size_t cap);
/* The server's Sec-WebSocket-Extensions: one valid permessage-deflate, put
 * in out for the agent with client_no_context_takeover; else -1. */
int ws_deflate_answer(const char *value, size_t len, char *out, size_t cap, os_error *err);
/* One message, decompressed with a fresh decoder into out (at most cap
 * bytes: EMSGSIZE beyond). */
int ws_inflate(const struct buf *in, struct buf *out, size_t cap, os_error *err);
/* in[0..len) compressed as one permessage-deflate message (a fresh
 * encoder, the final 00 00 ff ff removed) into out. */
int ws_deflate(const char *in, size_t len, struct buf *out, os_error *err);

#endif
