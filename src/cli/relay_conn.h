/* relay_conn.h - one upgraded connection to a sandbox through the gateway
 * (relay_conn.c), shared by exec, upload, download and port-forward: after
 * the 101 both directions carry exec frames (execframe.h). */
#ifndef OS_CLI_RELAY_CONN_H
#define OS_CLI_RELAY_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cli.h"
#include "tls_client.h"

/* POST /v1/sandboxes/SEG/ROUTE with body, upgraded. While the gateway says
 * not_ready for a sandbox that is coming up, waits (up to 60 s, with a
 * progress line). 0 with s open and in holding the frames that came with
 * the 101; else the CLI exit code after printing why. */
int relay_open(struct cli *cli, const char *name, const char *seg, const char *route,
	       const char *body, struct tls_stream *s, struct buf *in);

/* One frame on s; < 0 when the connection is gone. */
int relay_send_frame(struct tls_stream *s, uint8_t type, const void *p, size_t n);

/* After a lost connection (lost) or a command killed by a signal: what
 * became of the sandbox, in words into out, or NULL when it still runs. */
const char *relay_what_happened(struct cli *cli, const char *name, const char *seg, bool lost,
				char *out, size_t cap);

#endif
