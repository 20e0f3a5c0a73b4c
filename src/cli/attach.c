/* attach.c - the foreground `sandbox create` (see attach.h). The agent's
 * stdio travel as exec frames (POST .../attach, cli_exec_stream), so its
 * stdout and stderr stay apart and byte-exact. Beside them the supervisor's
 * log is followed, where the agent's output (copied there) and the
 * supervisor's own JSON records (and the launcher's "openshell-sandbox:"
 * lines) meet: the records are told apart and kept back (warnings and
 * errors excepted), so a run that works shows only what the agent printed.
 * A sandbox that cannot be attached (it failed or ended first, or its
 * driver cannot) is shown from that log alone. A signal does not kill the
 * CLI: it asks the gateway to stop the sandbox, and the streams then end as
 * they do. */
#include "attach.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "execframe.h"
#include "json.h"
#include "parse.h"

#define KEPT_MAX 64 /* supervisor messages kept back to show on failure */

struct attach {
	const struct attach_opts *o;
	bool records_only; /* the agent's output comes attached: drop it here */
	char *kept[KEPT_MAX];
	size_t n_kept, dropped;
};

/* The log, followed on a thread of its own while the agent is attached. */
struct follower {
	struct client client; /* a copy: each call has its own connection */
	char path[512];
	struct attach *a;
	os_error err;
	pthread_t thread;
	bool running;
};

struct stopper {
	struct cli *cli;
	char path[512];
	volatile sig_atomic_t fired;
};

enum line_kind { AGENT, OURS, OURS_WARNING };

/* One of our components' lines (a warning or an error among them), or the
 * agent's. */
static enum line_kind kind_of(const char *line, size_t len)
{
	if (str_has_prefix(line, "openshell-sandbox: ") ||
	    str_has_prefix(line, "openshell-supervisor: "))
		return OURS;
	if (len == 0 || line[0] != '{')
		return AGENT;
	_cleanup_json_ json_t *rec = json_loadb(line, len, 0, NULL);
	const char *comp = json_string_value(json_object_get(rec, "component"));
	const char *lvl = json_string_value(json_object_get(rec, "level"));
	if (!comp || !str_has_prefix(comp, "openshell-") ||
	    !json_is_string(json_object_get(rec, "msg")))
		return AGENT;
	return lvl && (!strcmp(lvl, "warn") || !strcmp(lvl, "error")) ? OURS_WARNING : OURS;
}

/* An agent's last output without a newline runs into the next record in the
 * shared log: where that record starts. */
static size_t record_start(const char *line, size_t len)
{
	static const char mark[] = "{\"ts\":\"";
	for (const char *p = line + 1; p && p < line + len;
	     p = memchr(p + 1, '{', (size_t)(line + len - p - 1))) {
		if ((size_t)(line + len - p) > strlen(mark) && !memcmp(p, mark, strlen(mark)) &&
		    kind_of(p, (size_t)(line + len - p)) != AGENT)
			return (size_t)(p - line);
	}
	return len;
}

static int on_line(const char *line, size_t len, void *user)
{
	struct attach *a = user;
	enum line_kind k = kind_of(line, len);
	if (k == AGENT) {
		size_t cut = len ? record_start(line, len) : 0;
		if (!a->records_only)
			fwrite(line, 1, cut, stdout);
		if (cut < len) {
			fflush(stdout);
			return on_line(line + cut, len - cut, user);
		}
		if (!a->records_only) {
			putchar('\n');
			fflush(stdout);
		}
		return 0;
	}
	if (a->o->verbose || k == OURS_WARNING) {
		fprintf(stderr, "%.*s\n", (int)len, line);
		return 0;
	}
	if (a->n_kept == KEPT_MAX) {
		free(a->kept[0]);
		memmove(a->kept, a->kept + 1, (KEPT_MAX - 1) * sizeof(char *));
		a->n_kept--;
		a->dropped++;
	}
	a->kept[a->n_kept++] = str_ndup(line, len);
	return 0;
}

static void show_kept(struct attach *a)
{
	if (a->dropped)
		fprintf(stderr, "(%zu earlier supervisor messages: openshell sandbox logs)\n",
			a->dropped);
	for (size_t i = 0; i < a->n_kept; i++)
		fprintf(stderr, "%s\n", a->kept[i] ? a->kept[i] : "");
}

static void *follow_log(void *data)
{
	struct follower *f = data;
	if (client_stream_lines(&f->client, f->path, on_line, f->a, &f->err) < 0)
		fprintf(stderr, "openshell: the supervisor's log: %s\n", f->err.msg);
	return NULL;
}

static void *wait_for_signal(void *data)
{
	struct stopper *s = data;
	sigset_t set;
	int sig = 0;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		long status = 0;
		json_t *out = NULL;
		os_error err = { 0 };
		if (!s->fired)
			fprintf(stderr,
				"\nopenshell: stopping the sandbox (signal %d; use --detach "
				"to leave it running)\n",
				sig);
		s->fired = 1;
		if (client_call(&s->cli->client, "POST", s->path, NULL, &status, &out, &err) < 0)
			fprintf(stderr, "openshell: stopping: %s\n", err.msg);
		json_decref(out);
	}
	return NULL;
}

/* From here on a signal stops the sandbox instead of the CLI. SIGWINCH is
 * blocked while the threads are made, so that only this one takes it: its
 * poll must wake to pass a terminal's new size on. */
static int catch_signals(struct stopper *s, const char *name, struct follower *f)
{
	sigset_t set, winch;
	pthread_t t;
	snprintf(s->path, sizeof(s->path), "/v1/sandboxes/%s/stop", name);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0 ||
	    pthread_sigmask(SIG_BLOCK, &winch, NULL) != 0 ||
	    pthread_create(&t, NULL, wait_for_signal, s) != 0)
		return -1;
	pthread_detach(t);
	if (f)
		f->running = pthread_create(&f->thread, NULL, follow_log, f) == 0;
	return pthread_sigmask(SIG_UNBLOCK, &winch, NULL) != 0 ? -1 : 0;
}

/* ask: send the DELETE (else the gateway deletes it itself: wait only). */
static int remove_sandbox(struct cli *cli, const char *name, bool ask)
{
	char path[512];
	long status = 0;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", name);
	_cleanup_json_ json_t *out = ask ? cli_api(cli, "DELETE", path, NULL, &status) : NULL;
	if (ask && !out)
		return -1;
	_cleanup_json_ json_t *gone =
		cli_wait_phase(cli, name, (const char *const[]){ NULL }, true);
	return gone ? 0 : -1;
}

/* The terminal part of the request: its size and TERM with -t. */
static json_t *tty_request(const struct attach_opts *o)
{
	if (!o->tty)
		return json_pack("{s:b}", "tty", 0);
	uint16_t rows = 0, cols = 0;
	cli_win_size(&rows, &cols);
	json_t *req = json_pack("{s:b}", "tty", 1);
	/* A size only when there is one: 0 x 0 leaves the terminal's default. */
	if (req && rows && cols) {
		json_object_set_new(req, "rows", json_integer(rows));
		json_object_set_new(req, "cols", json_integer(cols));
	}
	const char *term = getenv("TERM");
	if (req && execframe_term_ok(term))
		json_object_set_new(req, "term", json_string(term));
	return req;
}

json_t *attach_request(const struct attach_opts *o)
{
	json_t *req = tty_request(o);
	/* --rm the gateway's job: a CLI killed on the way cannot delete it. */
	if (req && o->rm)
		json_object_set_new(req, "remove", json_true());
	return req;
}

/* Whether the settled sandbox waits for this client: Ready (its
 * supervisor holds the agent's stdio until we come) with attach in its
 * spec (the driver took it). */
static bool attachable(const json_t *row)
{
	const char *phase = json_string_value(json_object_get(row, "phase"));
	return phase && !strcmp(phase, "Ready") &&
	       json_is_object(json_object_get(json_object_get(row, "spec"), "attach"));
}

int attach_foreground(struct cli *cli, const char *name, const json_t *row,
		      const struct attach_opts *o)
{
	static const char *const over[] = { "Error", "Stopped", "Succeeded", "Failed", NULL };
	static const char *const over_or_going[] = { "Error",  "Stopped",  "Succeeded",
						     "Failed", "Deleting", NULL };
	struct attach a = { .o = o, .records_only = attachable(row) };
	static struct stopper stop; /* the signal thread outlives this frame */
	struct follower f = { .client = cli->client, .a = &a }; /* joined before we return */
	stop.cli = cli;
	os_error err = { 0 };
	int rc = CLI_FAIL, code = CLI_FAIL;
	_cleanup_json_ json_t *end = NULL;
	snprintf(f.path, sizeof(f.path), "/v1/sandboxes/%s/logs?follow=1", name);
	if (catch_signals(&stop, name, a.records_only ? &f : NULL) < 0)
		return cli_fail("cannot watch for Ctrl-C");
	if (a.records_only)
		code = cli_exec_stream(cli, name, "attach", "{}", o->tty);
	else if (client_stream_lines(&cli->client, f.path, on_line, &a, &err) < 0) {
		cli_fail("%s", err.msg);
		goto out;
	}
	/* With --rm an attached sandbox is deleted by the gateway as its agent
	 * ends: gone (or going) is over too, and its status came attached. */
	bool self_removing = a.records_only && o->rm;
	end = cli_wait_phase(cli, name, self_removing ? over_or_going : over, self_removing);
	if (f.running)
		pthread_join(f.thread, NULL); /* the log ends with the sandbox */
	f.running = false;
	if (!end)
		goto out;
	const char *phase = json_string_value(json_object_get(end, "phase"));
	bool failed = phase && !strcmp(phase, "Error");
	if (failed && !o->verbose)
		show_kept(&a);
	if (failed)
		cli_fail("sandbox %s: %s", name,
			 str_or(json_string_value(json_object_get(end, "message")), "failed"));
	const json_t *ec = json_object_get(end, "exit_code");
	rc = stop.fired		    ? 130
	     : failed		    ? CLI_FAIL
	     : a.records_only	    ? code /* the status the attached stream ended with */
	     : !json_is_integer(ec) ? CLI_FAIL
				    : (int)json_integer_value(ec);
	/* Stopped (Ctrl-C) or Error: no agent ended, so the gateway keeps it. */
	bool gateway_removes =
		self_removing && !failed && (!phase || strcmp(phase, "Stopped") != 0);
	if (o->rm && remove_sandbox(cli, name, !gateway_removes) < 0 && rc == 0)
		rc = CLI_FAIL;
out:
	if (f.running)
		pthread_join(f.thread, NULL);
	for (size_t i = 0; i < a.n_kept; i++)
		free(a.kept[i]);
	return rc;
}
