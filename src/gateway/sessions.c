/* sessions.c - the gateway's live supervisor sessions (see gateway.h): one
 * stream per sandbox, opened by the supervisor with its own token, on which
 * policy revisions are pushed the moment they are stored, plus pings. A
 * session counts as live only while its stream is open AND its supervisor
 * keeps sending heartbeats (a frozen supervisor holds its socket open). The
 * gateway never dials a sandbox. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "gateway.h"
#include "json.h"
#include "log.h"
#include "trace.h"
#include "loop.h"

#define PING_MS 2000
#define HEARTBEAT_TIMEOUT_MS 4000
#define SESSIONS_MAX 4096

int api_check_policy(const char *yaml, os_error *err);

struct session_entry {
	char id[64];
	struct conn *c;
	uint64_t last_beat_ms;
};

struct sessions {
	struct session_entry *v;
	size_t n, cap;
	struct loop_timer *ping;
	uint64_t last_ping_ms; /* when the ping timer last ran */
};

static struct session_entry *find(struct gateway *gw, const char *id)
{
	struct sessions *s = gw->sessions;
	for (size_t i = 0; s && i < s->n; i++)
		if (!strcmp(s->v[i].id, id))
			return &s->v[i];
	return NULL;
}

static int send_msg(struct conn *c, json_t *msg)
{
	_cleanup_free_ char *text = json_dumps(msg, JSON_COMPACT);
	if (!text)
		return -1;
	size_t n = strlen(text);
	text[n] = '\n'; /* json_dumps left room for the NUL we replace */
	return server_conn_send(c, text, n + 1);
}

static void on_ping(struct loop *l, struct loop_timer *t, void *data)
{
	struct gateway *gw = data;
	struct sessions *s = gw->sessions;
	uint64_t now = loop_now_ms();
	_cleanup_json_ json_t *ping = json_pack("{s:s}", "type", "ping");
	/* A gateway whose loop stalled (a slow spawn) could not read the
	 * heartbeats meanwhile: that is not the supervisors' fault. */
	bool stalled = now - s->last_ping_ms > 2 * PING_MS;
	s->last_ping_ms = now;
	for (size_t i = 0; i < s->n; i++) {
		if (stalled)
			s->v[i].last_beat_ms = now;
		if (ping)
			send_msg(s->v[i].c, ping);
	}
}

static int ensure(struct gateway *gw, os_error *err)
{
	if (gw->sessions)
		return 0;
	struct sessions *s = calloc(1, sizeof(*s));
	if (!s)
		return os_error_set(err, ENOMEM, "sessions");
	if (loop_timer_add(gw->loop, PING_MS, PING_MS, on_ping, gw, &s->ping, err) < 0) {
		free(s);
		return -1;
	}
	s->last_ping_ms = loop_now_ms();
	gw->sessions = s;
	return 0;
}

/* The newest revision the gateway accepted (it would pass validation now):
 * what the supervisor should run. Revisions the gateway refused are skipped. */
static json_t *deliverable(struct gateway *gw, const char *id, json_int_t *newest)
{
	_cleanup_json_ json_t *revs = NULL;
	*newest = 0;
	if (store_policy_list(gw->store, id, &revs, NULL) < 0)
		return NULL;
	*newest = json_integer_value(json_object_get(json_array_get(revs, 0), "revision"));
	size_t i;
	json_t *r;
	json_array_foreach (revs, i, r) {
		const char *yaml = json_string_value(json_object_get(r, "policy"));
		os_error err = { 0 };
		if (yaml && api_check_policy(yaml, &err) == 0)
			return json_incref(r);
	}
	return NULL;
}

static int greet(struct gateway *gw, const char *id, struct conn *c)
{
	json_int_t newest = 0;
	_cleanup_json_ json_t *rev = deliverable(gw, id, &newest);
	_cleanup_json_ json_t *hello = json_pack("{s:s, s:s, s:I}", "type", "hello", "sandbox", id,
						 "policy_revision", newest);
	if (!hello || send_msg(c, hello) < 0)
		return -1;
	if (!rev)
		return 0;
	_cleanup_json_ json_t *push = json_pack("{s:s, s:O, s:O}", "type", "policy", "revision",
						json_object_get(rev, "revision"), "policy",
						json_object_get(rev, "policy"));
	return push ? send_msg(c, push) : -1;
}

struct drive_req {
	struct gateway *gw;
	char id[64];
};

static void drive_now(struct loop *l, void *data)
{
	struct drive_req *r = data;
	lifecycle_drive_one(r->gw, r->id);
	free(r);
}

int sessions_attach(struct gateway *gw, const char *id, struct conn *c, os_error *err)
{
	if (ensure(gw, err) < 0)
		return -1;
	struct sessions *s = gw->sessions;
	struct session_entry *e = find(gw, id);
	if (e) {
		/* The supervisor redialled: its old stream is dead or half-open. */
		struct conn *old = e->c;
		e->c = c;
		server_conn_close(old);
	} else {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			struct session_entry *v =
				cap <= SESSIONS_MAX ? realloc(s->v, cap * sizeof(*v)) : NULL;
			if (!v)
				return os_error_set(err, ENOMEM, "too many supervisor sessions");
			s->v = v;
			s->cap = cap;
		}
		e = &s->v[s->n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->id, sizeof(e->id), "%s", id);
		e->c = c;
	}
	e->last_beat_ms = loop_now_ms();
	trace_mark("session-opened %s", id);
	log_info("sandbox %s: supervisor session opened", id);
	/* A live session is what Ready waits for: drive this sandbox now, not
	 * at the next tick (up to 300 ms on every create and start). Only this
	 * one: a burst of 50 sessions must not cost 50 passes over everything. */
	struct drive_req *r = calloc(1, sizeof(*r));
	if (r) {
		r->gw = gw;
		snprintf(r->id, sizeof r->id, "%s", id);
		if (loop_defer(gw->loop, drive_now, r, NULL, NULL) < 0)
			free(r);
	}
	if (greet(gw, id, c) < 0)
		return os_error_set(err, EIO, "sandbox %s: greeting the supervisor failed", id);
	return 0;
}

void sessions_detach(struct gateway *gw, struct conn *c)
{
	struct sessions *s = gw->sessions;
	for (size_t i = 0; s && i < s->n; i++) {
		if (s->v[i].c != c)
			continue;
		log_info("sandbox %s: supervisor session closed", s->v[i].id);
		s->v[i] = s->v[--s->n];
		return;
	}
}

bool sessions_live(struct gateway *gw, const char *id)
{
	struct session_entry *e = find(gw, id);
	uint64_t now = loop_now_ms();
	if (e && now - gw->sessions->last_ping_ms > 2 * PING_MS)
		return true; /* our own loop stalled: heartbeats may be queued unread */
	return e && now - e->last_beat_ms <= HEARTBEAT_TIMEOUT_MS;
}

void sessions_heartbeat(struct gateway *gw, const char *id)
{
	struct session_entry *e = find(gw, id);
	if (e)
		e->last_beat_ms = loop_now_ms();
}

bool sessions_push_policy(struct gateway *gw, const char *id, int64_t revision, const char *yaml)
{
	struct session_entry *e = find(gw, id);
	if (!e)
		return false;
	_cleanup_json_ json_t *push = json_pack("{s:s, s:I, s:s}", "type", "policy", "revision",
						(json_int_t)revision, "policy", yaml);
	return push && send_msg(e->c, push) == 0;
}

bool sessions_push(struct gateway *gw, const char *id, json_t *msg)
{
	struct session_entry *e = find(gw, id);
	return e && send_msg(e->c, msg) == 0;
}

void sessions_free(struct gateway *gw)
{
	struct sessions *s = gw->sessions;
	if (!s)
		return;
	/* Closing tells each supervisor at once; it redials the next gateway. */
	while (s->n > 0) {
		size_t n = s->n;
		server_conn_close(s->v[n - 1].c); /* detaches: s->n shrinks */
		if (s->n == n)
			s->n--;
	}
	if (s->ping)
		loop_timer_remove(s->ping);
	free(s->v);
	free(s);
	gw->sessions = NULL;
}
