/* session_stream.c - reader of the gateway session stream (see
 * session_stream.h): strict response head, strict chunked framing, capped
 * NDJSON lines, typed messages. Never trusts a length it did not check and
 * never passes on a message it could not fully validate. */
#include "session_stream.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "cleanup.h"
#include "execframe.h"
#include "json.h"

enum { ST_HEAD, ST_BODY, ST_DONE, ST_FAILED };

void session_stream_init(struct session_stream *s)
{
	memset(s, 0, sizeof(*s));
	struct http_limits lim = { .line_max = 1024, .head_max = SESSION_HEAD_MAX };
	http_parser_init(&s->hp, &lim);
	/* A session lasts as long as the sandbox: the total is not capped,
	 * each line is. */
	http_chunked_init(&s->ch, UINT64_MAX);
	buf_init(&s->raw, SESSION_HEAD_MAX + SESSION_LINE_MAX);
	buf_init(&s->line, SESSION_LINE_MAX);
}

void session_stream_free(struct session_stream *s)
{
	buf_free(&s->raw);
	buf_free(&s->line);
}

static int fail(struct session_stream *s, os_error *err)
{
	s->state = ST_FAILED;
	return -1;
}

static int get_revision(const json_t *o, const char *key, uint64_t min, uint64_t *out,
			os_error *err)
{
	int64_t v = 0;
	if (json_get_int(o, key, true, (int64_t)min, INT64_MAX, &v, err) < 0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int exec_size(const json_t *o, struct session_msg *m, os_error *err)
{
	int64_t rows = 0, cols = 0;
	if (json_get_int(o, "rows", false, 0, 65535, &rows, err) < 0 ||
	    json_get_int(o, "cols", false, 0, 65535, &cols, err) < 0)
		return -1;
	m->exec_rows = (uint16_t)rows;
	m->exec_cols = (uint16_t)cols;
	return 0;
}

static int exec_argv(const json_t *o, struct session_msg *m, os_error *err)
{
	const json_t *a = json_object_get(o, "argv");
	size_t i, n = json_array_size(a);
	const json_t *v;
	if (!json_is_array(a) || n < 1 || n > SESSION_EXEC_ARGV_MAX)
		return os_error_set(err, EPROTO, "exec message: argv must hold 1..%d strings",
				    SESSION_EXEC_ARGV_MAX);
	json_array_foreach (a, i, v)
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return os_error_set(err, EPROTO,
					    "exec message: argv[%zu] is not a string without NUL",
					    i);
	m->exec_argv = a;
	return 1;
}

static bool exec_id_ok(const char *id)
{
	size_t n = strlen(id);
	return n >= 16 && n < SESSION_EXEC_ID_MAX && strspn(id, "0123456789abcdef") == n;
}

/* {"type":"transfer","id":HEX,"op":"upload"|"download","path":P} */
static int transfer_msg(const json_t *o, struct session_msg *m, os_error *err)
{
	static const char *const keys[] = { "type", "id", "op", "path", NULL };
	const char *op = NULL;
	m->type = SESSION_MSG_TRANSFER;
	if (json_check_keys(o, keys, "transfer message", err) < 0 ||
	    json_get_string(o, "id", true, &m->exec_id, err) < 0 ||
	    json_get_string(o, "op", true, &op, err) < 0 ||
	    json_get_string(o, "path", true, &m->transfer_path, err) < 0)
		return err->code = EPROTO, -1;
	size_t pl = json_string_length(json_object_get(o, "path"));
	if (!exec_id_ok(m->exec_id) || (strcmp(op, "upload") && strcmp(op, "download")) ||
	    pl == 0 || pl > SESSION_TRANSFER_PATH_MAX || strlen(m->transfer_path) != pl)
		return os_error_set(err, EPROTO, "transfer message: bad id, op or path");
	m->transfer_upload = !strcmp(op, "upload");
	return 1;
}

/* {"type":"forward","id":HEX,"port":N} */
static int forward_msg(const json_t *o, struct session_msg *m, os_error *err)
{
	static const char *const keys[] = { "type", "id", "port", NULL };
	int64_t port = 0;
	m->type = SESSION_MSG_FORWARD;
	if (json_check_keys(o, keys, "forward message", err) < 0 ||
	    json_get_string(o, "id", true, &m->exec_id, err) < 0 ||
	    json_get_int(o, "port", true, 1, 65535, &port, err) < 0)
		return err->code = EPROTO, -1;
	if (!exec_id_ok(m->exec_id))
		return os_error_set(err, EPROTO, "forward message: bad id");
	m->forward_port = (uint16_t)port;
	return 1;
}

int session_msg_parse(const char *line, size_t len, json_t **holder, struct session_msg *m,
		      os_error *err)
{
	static const char *const hello_keys[] = { "type", "sandbox", "policy_revision", NULL };
	static const char *const policy_keys[] = { "type", "revision", "policy", NULL };
	static const char *const ping_keys[] = { "type", NULL };
	static const char *const exec_keys[] = { "type", "id",	 "argv",  "tty", "rows",
						 "cols", "term", "agent", NULL };
	const char *type = NULL;
	memset(m, 0, sizeof(*m));
	*holder = json_parse_strict(line, len, SESSION_LINE_MAX, err);
	if (!*holder)
		return os_error_prefix(err, "session message");
	json_t *o = *holder;
	if (!json_is_object(o) || json_get_string(o, "type", true, &type, err) < 0)
		return os_error_set(err, EPROTO,
				    "session message: expected an object with a "
				    "string \"type\"");
	if (!strcmp(type, "hello")) {
		m->type = SESSION_MSG_HELLO;
		if (json_check_keys(o, hello_keys, "hello", err) < 0 ||
		    json_get_string(o, "sandbox", true, &m->sandbox, err) < 0 ||
		    get_revision(o, "policy_revision", 0, &m->revision, err) < 0)
			return err->code = EPROTO, -1;
		if (!*m->sandbox || strlen(m->sandbox) >= SESSION_ID_MAX)
			return os_error_set(err, EPROTO, "hello: bad sandbox id");
		return 1;
	}
	if (!strcmp(type, "policy")) {
		m->type = SESSION_MSG_POLICY;
		if (json_check_keys(o, policy_keys, "policy message", err) < 0 ||
		    get_revision(o, "revision", 1, &m->revision, err) < 0 ||
		    json_get_string(o, "policy", true, &m->policy, err) < 0)
			return err->code = EPROTO, -1;
		m->policy_len = json_string_length(json_object_get(o, "policy"));
		if (m->policy_len > SESSION_POLICY_MAX || strlen(m->policy) != m->policy_len)
			return os_error_set(err, EPROTO,
					    "policy message: revision %llu is over %u bytes or "
					    "holds a NUL",
					    (unsigned long long)m->revision, SESSION_POLICY_MAX);
		return 1;
	}
	if (!strcmp(type, "ping")) {
		m->type = SESSION_MSG_PING;
		if (json_check_keys(o, ping_keys, "ping", err) < 0)
			return err->code = EPROTO, -1;
		return 1;
	}
	if (!strcmp(type, "exec")) {
		m->type = SESSION_MSG_EXEC;
		if (json_check_keys(o, exec_keys, "exec message", err) < 0 ||
		    json_get_string(o, "id", true, &m->exec_id, err) < 0 ||
		    json_get_bool(o, "tty", false, &m->exec_tty, err) < 0 ||
		    exec_size(o, m, err) < 0 ||
		    json_get_string(o, "term", false, &m->exec_term, err) < 0 ||
		    json_get_bool(o, "agent", false, &m->exec_agent, err) < 0)
			return err->code = EPROTO, -1;
		if (m->exec_term && (!m->exec_tty || !execframe_term_ok(m->exec_term)))
			return os_error_set(err, EPROTO, "exec message: bad term");
		if (!exec_id_ok(m->exec_id))
			return os_error_set(err, EPROTO, "exec message: bad id");
		/* The agent's stdio were set up when it started: nothing of a
		 * command may come with it. */
		if (m->exec_agent && (json_object_get(o, "argv") || m->exec_tty || m->exec_rows ||
				      m->exec_cols || m->exec_term))
			return os_error_set(err, EPROTO,
					    "exec message: \"agent\" takes no argv, tty, size or "
					    "term");
		return m->exec_agent ? 1 : exec_argv(o, m, err);
	}
	if (!strcmp(type, "transfer"))
		return transfer_msg(o, m, err);
	if (!strcmp(type, "forward"))
		return forward_msg(o, m, err);
	return 0;
}

/* Appends decoded body bytes; each complete line becomes a message. */
static int take_body(struct session_stream *s, const char *p, size_t n, session_msg_fn cb,
		     void *user, os_error *err)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t part = nl ? (size_t)(nl - p) : n;
		if (buf_append(&s->line, p, part, err) < 0)
			return os_error_set(err, EMSGSIZE, "session message over %u bytes",
					    SESSION_LINE_MAX);
		if (!nl)
			return 0;
		p += part + 1;
		n -= part + 1;
		if (s->line.len == 0)
			continue; /* blank lines are keep-alive filler */
		_cleanup_json_ json_t *holder = NULL;
		struct session_msg m;
		int r = session_msg_parse(s->line.data, s->line.len, &holder, &m, err);
		buf_reset(&s->line);
		if (r < 0 || (r == 1 && cb(user, &m, err) < 0))
			return -1;
		s->messages++;
	}
	return 0;
}

/* A refused session: the status and the gateway's own words when present. */
static int refused(struct session_stream *s, size_t head, os_error *err)
{
	char msg[256] = "";
	size_t n = s->raw.len - head, j = 0;
	for (size_t i = 0; i < n && j + 1 < sizeof(msg); i++) {
		unsigned char c = (unsigned char)s->raw.data[head + i];
		msg[j++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
	}
	msg[j] = '\0';
	return os_error_set(err, s->status == 401 || s->status == 403 ? EACCES : EPROTO,
			    "gateway refused the session: HTTP %d%s%s", s->status, j ? ": " : "",
			    msg);
}

static int read_head(struct session_stream *s, os_error *err)
{
	struct http_response resp;
	size_t head = 0;
	int r = http_parse_response(&s->hp, s->raw.data, s->raw.len, &resp, &head, err);
	if (r == HTTP_PARSE_NEED_MORE)
		return 0;
	if (r < 0)
		return os_error_prefix(err, "session response head");
	s->status = resp.status;
	if (resp.status != 200) {
		/* Wait for a short error body: it says why (wrong token, other sandbox). */
		uint64_t want = resp.framing.has_content_length ? resp.framing.content_length : 0;
		if (want <= 4096 && s->raw.len - head < want) {
			http_parser_reset(&s->hp);
			return 0;
		}
		return refused(s, head, err);
	}
	if (http_response_body(&resp, false, false) != HTTP_BODY_CHUNKED)
		return os_error_set(err, EPROTO, "session response is not chunked");
	buf_consume(&s->raw, head);
	s->state = ST_BODY;
	return 1;
}

static int read_body(struct session_stream *s, session_msg_fn cb, void *user, os_error *err)
{
	while (s->raw.len > 0) {
		size_t used = 0;
		struct http_slice d = { 0 };
		int r = http_chunked_feed(&s->ch, s->raw.data, s->raw.len, &used, &d, err);
		if (r < 0)
			return os_error_prefix(err, "session stream framing");
		/* d points into raw: take it before consuming. */
		if (r == HTTP_PARSE_DATA && take_body(s, d.p, d.len, cb, user, err) < 0)
			return -1;
		buf_consume(&s->raw, used);
		if (r == HTTP_PARSE_DONE) {
			s->state = ST_DONE;
			return 1;
		}
		if (r == HTTP_PARSE_NEED_MORE)
			return 0;
	}
	return 0;
}

int session_stream_feed(struct session_stream *s, const char *data, size_t len, session_msg_fn cb,
			void *user, os_error *err)
{
	if (s->state == ST_DONE || s->state == ST_FAILED)
		return os_error_set(err, EPROTO, "session stream already ended");
	if (buf_append(&s->raw, data, len, err) < 0)
		return fail(s, err);
	if (s->state == ST_HEAD) {
		int r = read_head(s, err);
		if (r < 0)
			return fail(s, err);
		if (r == 0)
			return 0;
	}
	int r = read_body(s, cb, user, err);
	if (r < 0)
		return fail(s, err);
	return r;
}
