/* session.c - the supervisor's side of the gateway session (see session.h):
 * dial, read the stream of pushed messages, apply policies through the
 * owner's callback, report their status and send heartbeats, redial with
 * capped exponential backoff. Nothing here can weaken enforcement: a policy
 * that fails to apply leaves the running one, and a dead gateway only means
 * retries. */
#include "session.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "buf.h"
#include "cleanup.h"
#include "execframe.h"
#include "json.h"
#include "log.h"
#include "trace.h"
#include "parse.h"
#include "session_net.h"
#include "session_stream.h"
#include "session_tls.h"

#define POSTS_MAX 8
#define POST_TIMEOUT_MS 5000
#define POST_REPLY_MAX 65536

struct post {
	struct gw_session *s;
	struct gw_conn *conn;
	struct buf in;
	char what[32];
};

struct gw_session {
	struct loop *loop;
	struct gw_session_options o;
	char id[SESSION_ID_MAX];
	char token[GW_SESSION_TOKEN_MAX + 1];
	struct gw_endpoint ep;
	SSL_CTX *tls; /* https: one context for every connection, else NULL */
	char last_fail[OS_ERROR_MSG_MAX]; /* why the last dial failed, logged once */
	struct gw_conn *stream; /* NULL while waiting to redial */
	struct session_stream reader;
	bool up; /* hello received on the current stream */
	struct loop_timer *redial, *beat;
	uint64_t backoff_ms;
	uint64_t applied; /* last revision loaded (0: none yet) */
	struct post *posts[POSTS_MAX];
	uint64_t cut_ms; /* test hook: pause before redialling after SIGUSR2 */
	struct loop_signal *cut_sig;
};

static void dial(struct gw_session *s);

static void post_done(struct post *p)
{
	for (size_t i = 0; i < POSTS_MAX; i++)
		if (p->s->posts[i] == p)
			p->s->posts[i] = NULL;
	gw_conn_close(p->conn);
	buf_free(&p->in);
	free(p);
}

/* The gateway answers with a status line and closes: log anything but 2xx. */
static void post_event(struct gw_conn *c, enum gw_conn_event ev, const char *data, size_t len,
		       const os_error *err, void *user)
{
	struct post *p = user;
	if (ev == GW_CONN_DATA) {
		if (buf_append(&p->in, data, len, NULL) == 0)
			return;
		ev = GW_CONN_END; /* a reply this long is not ours to read */
	}
	if (ev == GW_CONN_ERROR)
		log_warn("session: %s report not delivered: %s", p->what, err->msg);
	else if (ev == GW_CONN_TIMEOUT)
		log_warn("session: %s report: the gateway did not answer", p->what);
	else if (p->in.len < 12 || strncmp(p->in.data, "HTTP/1.1 2", 10) != 0)
		log_warn("session: %s report refused: %.200s", p->what,
			 p->in.data ? p->in.data : "(no answer)");
	post_done(p);
}

/* POSTs body to /v1/supervisor/sandboxes/ID/leaf on its own connection. */
static void post(struct gw_session *s, const char *leaf, const json_t *body)
{
	size_t slot = POSTS_MAX;
	for (size_t i = 0; i < POSTS_MAX && slot == POSTS_MAX; i++)
		if (!s->posts[i])
			slot = i;
	_cleanup_free_ char *text = json_to_string(body);
	_cleanup_buf_ struct buf req;
	char target[160], auth[GW_SESSION_TOKEN_MAX + 8];
	os_error err = { 0 };
	buf_init(&req, 64u << 20);
	if (slot == POSTS_MAX || !text) {
		log_warn("session: %s report dropped (%s)", leaf,
			 text ? "too many reports in flight" : "out of memory");
		return;
	}
	snprintf(target, sizeof(target), "/v1/supervisor/sandboxes/%s/%s", s->id, leaf);
	snprintf(auth, sizeof(auth), "Bearer %s", s->token);
	struct post *p = calloc(1, sizeof(*p));
	if (!p || http_write_request_line(&req, "POST", target, &err) < 0 ||
	    http_write_header(&req, "Host", s->ep.host, &err) < 0 ||
	    http_write_header(&req, "Authorization", auth, &err) < 0 ||
	    http_write_header(&req, "Content-Type", "application/json", &err) < 0 ||
	    http_write_content_length(&req, strlen(text), &err) < 0 ||
	    http_write_header(&req, "Connection", "close", &err) < 0 ||
	    http_write_head_end(&req, &err) < 0 || buf_append_str(&req, text, &err) < 0 ||
	    gw_conn_open(s->loop, &s->ep, s->tls, req.data, req.len, POST_TIMEOUT_MS, post_event, p,
			 &p->conn, &err) < 0) {
		log_warn("session: %s report not sent: %s", leaf,
			 err.msg[0] ? err.msg : "no memory");
		free(p);
		return;
	}
	p->s = s;
	buf_init(&p->in, POST_REPLY_MAX);
	snprintf(p->what, sizeof(p->what), "%s", leaf);
	s->posts[slot] = p;
}

static void report_policy(struct gw_session *s, uint64_t rev, bool loaded, const char *msg)
{
	_cleanup_json_ json_t *b =
		json_pack("{s:I, s:s, s:s}", "revision", (json_int_t)rev, "status",
			  loaded ? "loaded" : "failed", "message", msg ? msg : "");
	if (b)
		post(s, "policy-status", b);
}

static void apply_policy(struct gw_session *s, const struct session_msg *m)
{
	os_error err = { 0 };
	if (m->revision == s->applied) {
		/* Re-sent after a redial: already running, only the report was lost. */
		report_policy(s, m->revision, true, "");
		return;
	}
	if (s->o.apply(s->o.apply_user, m->policy, m->policy_len, m->revision, &err) < 0) {
		log_warn("session: policy revision %llu refused (running policy kept): %s",
			 (unsigned long long)m->revision, err.msg);
		report_policy(s, m->revision, false, err.msg);
		return;
	}
	s->applied = m->revision;
	log_info("session: policy revision %llu loaded", (unsigned long long)m->revision);
	report_policy(s, m->revision, true, "");
}

static int on_message(void *user, const struct session_msg *m, os_error *err)
{
	struct gw_session *s = user;
	switch (m->type) {
	case SESSION_MSG_HELLO:
		if (strcmp(m->sandbox, s->id) != 0)
			return os_error_set(err, EPROTO, "hello names sandbox %s, not %s",
					    m->sandbox, s->id);
		s->up = true;
		s->backoff_ms = 0;
		s->last_fail[0] = '\0';
		trace_mark("session-hello");
		log_info("session: connected to the gateway (policy revision %llu there)",
			 (unsigned long long)m->revision);
		return 0;
	case SESSION_MSG_POLICY:
		if (!s->up)
			return os_error_set(err, EPROTO, "policy before hello");
		apply_policy(s, m);
		return 0;
	case SESSION_MSG_PING:
		return 0;
	case SESSION_MSG_EXEC:
	case SESSION_MSG_TRANSFER:
	case SESSION_MSG_FORWARD:
		if (!s->up)
			return os_error_set(err, EPROTO, "exec before hello");
		if (s->o.exec)
			s->o.exec(s->o.exec_user, m);
		else
			log_warn("session: exec %s refused: this supervisor runs no exec",
				 m->exec_id);
		return 0;
	}
	return 0;
}

int gw_session_exec_request(const struct gw_session *s, const char *exec_id, struct buf *req,
			    os_error *err)
{
	char target[200], auth[GW_SESSION_TOKEN_MAX + 8];
	snprintf(target, sizeof(target), "/v1/supervisor/sandboxes/%s/exec/%s", s->id, exec_id);
	snprintf(auth, sizeof(auth), "Bearer %s", s->token);
	if (http_write_request_line(req, "POST", target, err) < 0 ||
	    http_write_header(req, "Host", s->ep.host, err) < 0 ||
	    http_write_header(req, "Authorization", auth, err) < 0 ||
	    http_write_header(req, "Upgrade", EXECFRAME_UPGRADE, err) < 0 ||
	    http_write_header(req, "Connection", "Upgrade", err) < 0 ||
	    http_write_content_length(req, 0, err) < 0 || http_write_head_end(req, err) < 0)
		return -1;
	return 0;
}

const struct gw_endpoint *gw_session_endpoint(const struct gw_session *s, SSL_CTX **tls)
{
	*tls = s->tls;
	return &s->ep;
}

static void schedule_redial(struct gw_session *s, uint64_t at_least_ms)
{
	s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : GW_SESSION_BACKOFF_MIN_MS;
	if (s->backoff_ms > GW_SESSION_BACKOFF_MAX_MS)
		s->backoff_ms = GW_SESSION_BACKOFF_MAX_MS;
	uint64_t wait = s->backoff_ms > at_least_ms ? s->backoff_ms : at_least_ms;
	loop_timer_set(s->redial, wait, 0, NULL);
}

static void drop_stream(struct gw_session *s, const char *why, uint64_t at_least_ms)
{
	if (s->up || why)
		log_warn("session: %s; redialling", why ? why : "stream closed");
	gw_conn_close(s->stream);
	s->stream = NULL;
	s->up = false;
	session_stream_free(&s->reader);
	schedule_redial(s, at_least_ms);
}

static void stream_event(struct gw_conn *c, enum gw_conn_event ev, const char *data, size_t len,
			 const os_error *cerr, void *user)
{
	struct gw_session *s = user;
	os_error err = { 0 };
	int r;
	switch (ev) {
	case GW_CONN_DATA:
		r = session_stream_feed(&s->reader, data, len, on_message, s, &err);
		if (r < 0) {
			drop_stream(s, err.msg, err.code == EACCES ? 2000 : 0);
			return;
		}
		if (r == 1) {
			drop_stream(s, "the gateway ended the session", 0);
			return;
		}
		return;
	case GW_CONN_END:
		drop_stream(s, s->up ? "the gateway closed the session" : NULL, 0);
		return;
	case GW_CONN_ERROR:
		if (s->up) {
			drop_stream(s, cerr->msg, 0);
			return;
		}
		/* Before a session: once per distinct reason, not once per retry
		 * (a wrong CA would otherwise fill the log every few seconds). */
		if (strcmp(s->last_fail, cerr->msg) != 0) {
			log_warn("session: cannot reach the gateway: %s; retrying", cerr->msg);
			snprintf(s->last_fail, sizeof(s->last_fail), "%s", cerr->msg);
		}
		drop_stream(s, NULL, 0);
		return;
	case GW_CONN_TIMEOUT:
		drop_stream(s, "no word from the gateway", 0);
		return;
	}
}

static void dial(struct gw_session *s)
{
	_cleanup_buf_ struct buf req;
	char target[160], auth[GW_SESSION_TOKEN_MAX + 8];
	os_error err = { 0 };
	buf_init(&req, 16384);
	snprintf(target, sizeof(target), "/v1/supervisor/sandboxes/%s/session", s->id);
	snprintf(auth, sizeof(auth), "Bearer %s", s->token);
	session_stream_init(&s->reader);
	if (http_write_request_line(&req, "GET", target, &err) < 0 ||
	    http_write_header(&req, "Host", s->ep.host, &err) < 0 ||
	    http_write_header(&req, "Authorization", auth, &err) < 0 ||
	    http_write_header(&req, "Accept", "application/x-ndjson", &err) < 0 ||
	    http_write_head_end(&req, &err) < 0 ||
	    gw_conn_open(s->loop, &s->ep, s->tls, req.data, req.len, GW_SESSION_WATCHDOG_MS,
			 stream_event, s, &s->stream, &err) < 0) {
		s->stream = NULL;
		session_stream_free(&s->reader);
		schedule_redial(s, 0);
	}
}

static void on_redial(struct loop *l, struct loop_timer *t, void *data)
{
	struct gw_session *s = data;
	if (!s->stream)
		dial(s);
}

static void on_beat(struct loop *l, struct loop_timer *t, void *data)
{
	struct gw_session *s = data;
	for (size_t i = 0; i < POSTS_MAX; i++)
		if (s->posts[i] && !strcmp(s->posts[i]->what, "heartbeat"))
			return; /* the last one is still on its way */
	_cleanup_json_ json_t *b = json_pack("{s:I}", "policy_revision", (json_int_t)s->applied);
	if (s->up && b)
		post(s, "heartbeat", b);
}

/* Test-only: OPENSHELL_TEST_SESSION_CUT_MS=N makes SIGUSR2 cut the stream
 * and wait N ms before redialling, so tests can watch the gateway react. */
static void on_cut(struct loop *l, struct loop_signal *sig, const struct signalfd_siginfo *si,
		   void *data)
{
	struct gw_session *s = data;
	if (loop_timer_armed(s->redial) && !s->stream) {
		loop_timer_set(s->redial, s->cut_ms, 0, NULL);
		return;
	}
	s->backoff_ms = 0;
	drop_stream(s, "stream cut (test hook)", s->cut_ms);
}

static int test_hook(struct gw_session *s, os_error *err)
{
	const char *v = getenv("OPENSHELL_TEST_SESSION_CUT_MS");
	if (!v)
		return 0;
	if (parse_u64_str(v, 1, 600000, &s->cut_ms, err) < 0)
		return os_error_prefix(err, "OPENSHELL_TEST_SESSION_CUT_MS");
	return loop_signal_add(s->loop, SIGUSR2, on_cut, s, &s->cut_sig, err);
}

/* https: the one verifying context; a CA for a plain gateway is a mistake
 * worth stopping for (the operator believes the link is protected). */
static int tls_setup(struct gw_session *s, const struct gw_session_options *o, os_error *err)
{
	if (!s->ep.tls && o->gateway_ca)
		return os_error_set(err, EINVAL,
				    "--gateway-ca %s needs an https:// --gateway (got %s)",
				    o->gateway_ca, o->gateway_url);
	if (!s->ep.tls)
		return 0;
	if (session_tls_ctx_new(o->gateway_ca, &s->tls, err) < 0)
		return -1;
	return 0;
}

int gw_session_new(struct loop *l, const struct gw_session_options *o, struct gw_session **out,
		   os_error *err)
{
	struct gw_session *s = calloc(1, sizeof(*s));
	if (!s)
		return os_error_set(err, ENOMEM, "out of memory");
	s->loop = l;
	s->o = *o;
	if (!o->apply || str_copy(s->id, sizeof(s->id), o->sandbox_id, err) < 0 ||
	    gw_session_parse_url(o->gateway_url, &s->ep, err) < 0 || tls_setup(s, o, err) < 0 ||
	    gw_session_read_token(o->token_file, s->token, sizeof(s->token), err) < 0 ||
	    loop_timer_add(l, 0, 0, on_redial, s, &s->redial, err) < 0 ||
	    loop_timer_add(l, GW_SESSION_HEARTBEAT_MS, GW_SESSION_HEARTBEAT_MS, on_beat, s,
			   &s->beat, err) < 0 ||
	    test_hook(s, err) < 0) {
		if (!o->apply)
			os_error_set(err, EINVAL, "session: no policy callback");
		gw_session_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

void gw_session_free(struct gw_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < POSTS_MAX; i++)
		if (s->posts[i])
			post_done(s->posts[i]);
	if (s->stream) {
		gw_conn_close(s->stream);
		session_stream_free(&s->reader);
	}
	if (s->redial)
		loop_timer_remove(s->redial);
	if (s->beat)
		loop_timer_remove(s->beat);
	if (s->cut_sig)
		loop_signal_remove(s->cut_sig);
	explicit_bzero(s->token, sizeof(s->token));
	SSL_CTX_free(s->tls);
	free(s);
}
