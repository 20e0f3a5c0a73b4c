/* proxy_ws_creds.c - credential placeholders in WebSocket text messages, for
 * an endpoint with `websocket_credential_rewrite: true`. As in OpenShell,
 * every placeholder of the message is resolved or the message fails; here a
 * secret also goes only to the endpoint that binds its provider, and only
 * inside TLS to the upstream. The rewritten text is never logged. */
#include <string.h>

#include "credentials.h"
#include "proxy_internal.h"

static bool bound_here(void *data, const char *provider)
{
	const struct conn *c = data;
	return c->ep->credential_provider && provider &&
	       strcmp(c->ep->credential_provider, provider) == 0;
}

bool proxy_ws_has_placeholder(const char *p, size_t n)
{
	return memmem(p, n, CRED_PLACEHOLDER_PREFIX, strlen(CRED_PLACEHOLDER_PREFIX)) != NULL;
}

const char *proxy_ws_rewrite(struct conn *c, const char *in, size_t len, struct buf *out)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	if (!(c->mode == MODE_MITM && c->upstream.ssl))
		return "credential_plaintext";
	if (!cfg->creds)
		return "credential_unknown";
	const char *provider = NULL;
	os_error err = { 0 };
	switch (credentials_rewrite_text(cfg->creds, in, len, bound_here, c, out, &provider,
					 &err)) {
	case CRED_OK:
	case CRED_NONE:
		return NULL;
	case CRED_UNKNOWN_KEY:
		return "credential_unknown";
	case CRED_ENDPOINT_MISMATCH:
		return "credential_endpoint_mismatch";
	default:
		return "websocket_too_big"; /* the rewritten message outgrew its buffer */
	}
}
