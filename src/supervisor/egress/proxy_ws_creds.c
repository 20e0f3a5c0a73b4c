/* proxy_ws_creds.c - credential placeholders in text the agent sends: WebSocket
 * text messages (`websocket_credential_rewrite: true`) and request bodies
 * (`request_body_credential_rewrite`, proxy_body_creds.c). As in OpenShell,
 * every placeholder of the message is resolved or the message fails; here a
 * secret also goes only to the endpoint that binds its provider, and only
 * inside TLS to the upstream. The rewritten text is never logged. */
#include <string.h>

#include "credentials.h"
#include "proxy_internal.h"

bool proxy_ws_has_placeholder(const char *p, size_t n)
{
	return memmem(p, n, CRED_PLACEHOLDER_PREFIX, strlen(CRED_PLACEHOLDER_PREFIX)) != NULL;
}

const char *proxy_text_rewrite(struct conn *c, const char *in, size_t len, struct buf *out,
			       const char *too_big)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	if (!conn_upstream_is_tls(c))
		return "credential_plaintext";
	if (!cfg->creds)
		return "credential_unknown";
	const char *provider = NULL;
	os_error err = { 0 };
	switch (credentials_rewrite_text(cfg->creds, in, len, proxy_cred_allowed, c, out, &provider,
					 &err)) {
	case CRED_OK:
	case CRED_NONE:
		return NULL;
	case CRED_UNKNOWN_KEY:
		return "credential_unknown";
	case CRED_ENDPOINT_MISMATCH:
		return "credential_endpoint_mismatch";
	default:
		return too_big; /* the rewritten text outgrew its buffer */
	}
}

const char *proxy_ws_rewrite(struct conn *c, const char *in, size_t len, struct buf *out)
{
	return proxy_text_rewrite(c, in, len, out, "websocket_too_big");
}
