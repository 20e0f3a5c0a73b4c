/* cmd_logs.c - `openshell sandbox logs NAME [-f] [--since D|T] [--audit]`:
 * the supervisor's log (and the agent's output), or with --audit its
 * decision records, streamed from the gateway. --since keeps what is newer
 * (a line without a time of its own goes with the record before it, or,
 * before the first timed one, with the first: the agent may write before
 * the supervisor's first record);
 * --audit prints a table unless -o json (the raw JSON lines) or -o yaml. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit_read.h"
#include "cleanup.h"
#include "cli.h"
#include "json.h"
#include "parse.h"

#define AUDIT_ROW "%-20s %-8s %-26s %-32s %-7s %-30s %s\n"

struct logs_view {
	struct cli *cli;
	bool audit;
	bool has_since;
	double since;
	bool keep; /* the last timed line was new enough */
	bool timed_seen; /* a line with a time came already */
	char *pending; /* untimed lines before the first timed one */
	size_t pending_len;
};

/* Holds an untimed line until the first timed one says whether it goes. */
static void hold(struct logs_view *v, const char *line, size_t len)
{
	char *p = realloc(v->pending, v->pending_len + len + 1);
	if (!p)
		return; /* out of memory: the line is dropped, never misplaced */
	memcpy(p + v->pending_len, line, len);
	p[v->pending_len + len] = '\n';
	v->pending = p;
	v->pending_len += len + 1;
}

static void release(struct logs_view *v, bool print)
{
	if (print && v->pending_len)
		printf("%.*s", (int)v->pending_len, v->pending);
	free(v->pending);
	v->pending = NULL;
	v->pending_len = 0;
}

static void host_port(const struct audit_fields *f, char *out, size_t cap)
{
	bool v6 = strchr(f->host, ':') != NULL;
	if (!strcmp(f->host, "-") && !f->port)
		snprintf(out, cap, "-");
	else if (!f->port)
		snprintf(out, cap, "%s", f->host);
	else
		snprintf(out, cap, "%s%s%s:%lld", v6 ? "[" : "", f->host, v6 ? "]" : "",
			 (long long)f->port);
}

static void audit_row(const json_t *rec)
{
	struct audit_fields f;
	char when[32], hp[300];
	audit_fields_of(rec, &f);
	audit_time_format(rec, when, sizeof when);
	host_port(&f, hp, sizeof hp);
	printf(AUDIT_ROW, when, f.decision, f.reason, hp, f.method, f.path, f.binary);
}

static int on_line(const char *line, size_t len, void *user)
{
	struct logs_view *v = user;
	_cleanup_json_ json_t *rec = json_loadb(line, len, 0, NULL);
	double t;
	bool timed = rec && audit_record_time(rec, &t);
	if (v->has_since && timed) {
		v->keep = t >= v->since;
		if (!v->timed_seen)
			release(v, v->keep && !v->audit);
		v->timed_seen = true;
	}
	if (v->has_since && !timed && !v->timed_seen) {
		hold(v, line, len);
		return 0;
	}
	if (v->has_since && !v->keep)
		return 0;
	if (!v->audit || !rec || (v->cli->json && !v->cli->yaml))
		printf("%.*s\n", (int)len, line);
	else if (v->cli->yaml)
		cli_yaml_dump(rec, stdout);
	else
		audit_row(rec);
	fflush(stdout);
	return 0;
}

int cmd_logs(struct cli *cli, int argc, char **argv)
{
	static const char usage[] =
		"sandbox logs NAME [--follow] [--since DURATION|TIME] [--audit]";
	struct logs_view v = { .cli = cli };
	const char *name = NULL;
	bool follow = false;
	os_error err = { 0 };
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f")) {
			follow = true;
		} else if (!strcmp(argv[i], "--audit")) {
			v.audit = true;
		} else if (!strcmp(argv[i], "--since")) {
			if (++i >= argc)
				return cli_usage("--since needs a value: %s", usage);
			v.has_since = true;
			if (audit_since_parse(argv[i], (double)time(NULL), &v.since, &err) < 0)
				return cli_usage("%s", err.msg);
		} else if (!name) {
			name = argv[i];
		} else {
			return cli_usage("sandbox logs: unexpected %s", argv[i]);
		}
	}
	char seg[256], path[512];
	if (!name)
		return cli_usage("%s", usage);
	if (cli_segment(seg, sizeof(seg), name) < 0)
		return CLI_USAGE;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", seg);
	long status = 0;
	_cleanup_json_ json_t *row = cli_api(cli, "GET", path, NULL, &status);
	if (!row)
		return CLI_FAIL;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/logs%s%s%s", seg,
		 follow || v.audit ? "?" : "", follow ? "follow=1" : "",
		 v.audit ? (follow ? "&audit=1" : "audit=1") : "");
	if (v.audit && !cli->json)
		printf(AUDIT_ROW, "TIME", "DECISION", "REASON", "HOST:PORT", "METHOD", "PATH",
		       "BINARY");
	/* Plain logs without --since pass through untouched (agent output need
	 * not be lines). */
	int rc = !v.audit && !v.has_since
			 ? client_stream(&cli->client, path, STDOUT_FILENO, &err)
			 : client_stream_lines(&cli->client, path, on_line, &v, &err);
	/* No timed line at all: nothing says the held lines are old. */
	release(&v, !v.audit);
	if (rc < 0)
		return cli_fail("%s", err.msg);
	return CLI_OK;
}
