/* proxy_sni.c - the first bytes of an L4 tunnel to a named host: when they
 * are a TLS ClientHello its server name must be the CONNECT host, or one
 * allowed name fronts any other served at the same address. Nothing from
 * the agent reaches the upstream before the verdict; a mismatch, an
 * encrypted ClientHello (its readable name is not the one the server acts
 * on), or one that cannot be read closes the tunnel with an audit record. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy_internal.h"
#include "tls_sni.h"

bool tunnel_sni_pending(const struct conn *c)
{
	return c->sni_pending || c->sni_flushing;
}

static enum step_result refuse(struct conn *c, const char *reason, const char *detail)
{
	audit_decision(c, "connect", "deny", reason, NULL, NULL, detail);
	conn_close(c);
	return STEP_CLOSED;
}

/* Reads the agent's bytes into cin, up to the parser's cap: -1 on a read
 * error (the connection is closed), else whether bytes arrived. */
static int read_first_bytes(struct conn *c, bool *eof)
{
	int got = 0;
	while (c->cin.len < TLS_SNI_INPUT_MAX) {
		char chunk[4096];
		size_t room = TLS_SNI_INPUT_MAX - c->cin.len;
		ssize_t n =
			stream_read(&c->client, chunk, room < sizeof chunk ? room : sizeof chunk);
		if (n == STREAM_AGAIN)
			break;
		if (n == 0) {
			*eof = true;
			break;
		}
		if (n < 0 || buf_append(&c->cin, chunk, (size_t)n, NULL) < 0) {
			conn_close(c);
			return -1;
		}
		got = 1;
	}
	return got;
}

/* The verdict is in and its bytes are out: the buffers go (a long-lived
 * tunnel must not keep them) and the agent's EOF is passed on. */
static enum step_result after_verdict(struct conn *c)
{
	if (c->uout.len > 0)
		return STEP_WAIT;
	c->sni_flushing = false;
	buf_free(&c->uout);
	buf_free(&c->cin);
	if (c->sni_eof) {
		c->half_closed[0] = true;
		shutdown(c->upstream.fd, SHUT_WR);
	}
	return STEP_PROGRESS;
}

enum step_result tunnel_sni_step(struct conn *c)
{
	if (!c->sni_pending)
		return after_verdict(c);
	bool eof = false;
	int got = read_first_bytes(c, &eof);
	if (got < 0)
		return STEP_CLOSED;
	char name[TLS_SNI_NAME_MAX], detail[400];
	enum tls_sni_result r =
		tls_sni_parse((const uint8_t *)c->cin.data, c->cin.len, name, sizeof name);
	if (r == TLS_SNI_NEED_MORE) {
		if (!eof)
			return got ? STEP_PROGRESS : STEP_WAIT;
		conn_close(c); /* the agent gave up before its ClientHello was complete */
		return STEP_CLOSED;
	}
	if (r == TLS_SNI_FOUND && !tls_sni_matches(name, c->host)) {
		snprintf(detail, sizeof detail,
			 "TLS server name %s does not match the CONNECT target %s", name, c->host);
		return refuse(c, "sni_mismatch", detail);
	}
	if (r == TLS_SNI_ENCRYPTED) {
		snprintf(detail, sizeof detail,
			 "TLS ClientHello to %s hides the server name it asks for (encrypted "
			 "ClientHello): the readable name%s%s is only the outer one",
			 c->host, name[0] ? " " : "", name);
		return refuse(c, tls_sni_result_name(r), detail);
	}
	if (r == TLS_SNI_MALFORMED || r == TLS_SNI_TOO_LARGE) {
		snprintf(detail, sizeof detail,
			 "TLS ClientHello to %s could not be checked (%s, cap %d bytes)", c->host,
			 tls_sni_result_name(r), TLS_SNI_INPUT_MAX);
		return refuse(c, tls_sni_result_name(r), detail);
	}
	/* Not TLS, no server name, or the right one: the bytes go out first,
	 * then the tunnel splices (tunnel_sni_pending() holds it until then). */
	c->sni_pending = false;
	c->sni_flushing = true;
	c->sni_eof = eof;
	if (buf_append(&c->uout, c->cin.data, c->cin.len, NULL) < 0) {
		conn_close(c);
		return STEP_CLOSED;
	}
	buf_reset(&c->cin);
	return STEP_PROGRESS;
}
