/* session.h - the supervisor's session with the gateway: the supervisor
 * dials out (the gateway never dials a sandbox) with its sandbox token and
 * keeps one long-lived stream on which the gateway pushes policy revisions
 * at once; it answers with policy-status reports and periodic heartbeats,
 * and reconnects with capped exponential backoff. A session failure never
 * touches enforcement: the proxy keeps the last good policy. */
#ifndef OS_SUPERVISOR_SESSION_H
#define OS_SUPERVISOR_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"
#include "loop.h"
#include "session_net.h"
#include "session_stream.h"

#define GW_SESSION_HEARTBEAT_MS 1000
#define GW_SESSION_WATCHDOG_MS 8000 /* no byte from the gateway for this long: redial */
#define GW_SESSION_BACKOFF_MIN_MS 100
#define GW_SESSION_BACKOFF_MAX_MS 3000
#define GW_SESSION_TOKEN_MAX 256

/* Validates and swaps in a pushed policy; < 0 (err set) keeps the running one. */
typedef int (*gw_session_apply_fn)(void *user, const char *yaml, size_t len, uint64_t revision,
				   os_error *err);

/* A command to run in the sandbox, a transfer or a forwarded connection
 * (m->type SESSION_MSG_EXEC, _TRANSFER, _FORWARD); the owner dials back
 * with gw_session_exec_request. */
typedef void (*gw_session_exec_fn)(void *user, const struct session_msg *m);

struct gw_session_options {
	const char *gateway_url; /* "unix:/path", "http://HOST:PORT" or "https://HOST:PORT" */
	const char *gateway_ca; /* https: PEM CA bundle to verify it; NULL: the system store */
	const char *token_file; /* regular file, ours, no group/other access */
	const char *sandbox_id;
	gw_session_apply_fn apply;
	void *apply_user;
	gw_session_exec_fn exec; /* NULL: exec requests are refused in the log */
	void *exec_user;
};

struct gw_session;

/* Reads the token, parses the URL and loads the CA now, so a bad flag
 * fails start-up; the first dial happens on the loop. The TLS context is
 * made here once and shared by the stream, the reports and exec relays. */
int gw_session_new(struct loop *l, const struct gw_session_options *o, struct gw_session **out,
		   os_error *err);
void gw_session_free(struct gw_session *s);

/* The request that attaches an exec relay to the gateway (POST
 * .../exec/ID with Upgrade). */
int gw_session_exec_request(const struct gw_session *s, const char *exec_id, struct buf *req,
			    os_error *err);
/* Where the gateway is, and the TLS context to reach it with (NULL for
 * http:// and unix:). Both live as long as the session. */
const struct gw_endpoint *gw_session_endpoint(const struct gw_session *s, SSL_CTX **tls);

/* Parsing helpers, exposed for tests. */
int gw_session_parse_url(const char *url, struct gw_endpoint *ep, os_error *err);
int gw_session_read_token(const char *path, char *tok, size_t cap, os_error *err);

#endif
