/* exec.c - the gateway's part of `sandbox exec` (docs/exec.md): a client's
 * upgraded connection waits here, under its exec id, until the sandbox's
 * supervisor dials back with the same id and its own sandbox token; the
 * server then relays bytes between the two without reading them. A client
 * whose relay never comes gets a 504 after EXEC_ATTACH_MS. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "log.h"
#include "loop.h"

#define PARKED_MAX 256

struct parked {
	struct gateway *gw;
	char id[EXEC_ID_HEX + 1];
	char sandbox[64];
	struct conn *c;
	struct loop_timer *timer;
};

struct execs {
	struct parked *v[PARKED_MAX];
};

static void drop(struct gateway *gw, struct parked *p)
{
	for (size_t i = 0; i < PARKED_MAX; i++)
		if (gw->execs->v[i] == p)
			gw->execs->v[i] = NULL;
	loop_timer_remove(p->timer);
	free(p);
}

static void on_timeout(struct loop *l, struct loop_timer *t, void *data)
{
	struct parked *p = data;
	struct conn *c = p->c;
	char sandbox[64];
	memcpy(sandbox, p->sandbox, sizeof sandbox);
	drop(p->gw, p);
	log_warn("exec in sandbox %s: the supervisor did not dial back within %d s", sandbox,
		 EXEC_ATTACH_MS / 1000);
	server_conn_fail(c, 504, "exec_timeout",
			 "the sandbox's supervisor did not start the command in time (is its "
			 "session live? does its backend support exec?)");
}

int exec_park(struct gateway *gw, const char *sandbox, const char *exec_id, struct conn *c,
	      os_error *err)
{
	if (!gw->execs && !(gw->execs = calloc(1, sizeof(*gw->execs))))
		return os_error_set(err, ENOMEM, "exec table");
	size_t slot = PARKED_MAX;
	for (size_t i = 0; i < PARKED_MAX && slot == PARKED_MAX; i++)
		if (!gw->execs->v[i])
			slot = i;
	if (slot == PARKED_MAX)
		return os_error_set(err, EBUSY, "too many exec requests waiting (max %d)",
				    PARKED_MAX);
	struct parked *p = calloc(1, sizeof(*p));
	if (!p)
		return os_error_set(err, ENOMEM, "exec table");
	p->gw = gw;
	p->c = c;
	snprintf(p->id, sizeof p->id, "%s", exec_id);
	snprintf(p->sandbox, sizeof p->sandbox, "%s", sandbox);
	if (loop_timer_add(gw->loop, EXEC_ATTACH_MS, 0, on_timeout, p, &p->timer, err) < 0) {
		free(p);
		return -1;
	}
	gw->execs->v[slot] = p;
	return 0;
}

int exec_attach(struct gateway *gw, const char *sandbox, const char *exec_id, struct conn *relay,
		os_error *err)
{
	for (size_t i = 0; gw->execs && i < PARKED_MAX; i++) {
		struct parked *p = gw->execs->v[i];
		/* Both must match: a token for one sandbox never reaches another's client. */
		if (!p || strcmp(p->id, exec_id) != 0 || strcmp(p->sandbox, sandbox) != 0)
			continue;
		struct conn *client = p->c;
		drop(gw, p);
		server_conn_relay(client, relay);
		return 0;
	}
	return os_error_set(err, ENOENT, "no exec %s is waiting in sandbox %s", exec_id, sandbox);
}

void exec_forget(struct gateway *gw, struct conn *c)
{
	for (size_t i = 0; gw->execs && i < PARKED_MAX; i++)
		if (gw->execs->v[i] && gw->execs->v[i]->c == c)
			drop(gw, gw->execs->v[i]);
}

void execs_free(struct gateway *gw)
{
	for (size_t i = 0; gw->execs && i < PARKED_MAX; i++)
		if (gw->execs->v[i])
			drop(gw, gw->execs->v[i]);
	free(gw->execs);
	gw->execs = NULL;
}
