/* cmd_sandbox.c - `openshell sandbox create|list|get|delete|stop|start|logs`.
 * create runs the agent in the foreground unless --detach (attach.c); every wait shows a progress line and ends on Error with the
 * gateway's reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "attach.h"
#include "cli.h"
#include "json.h"
#include "parse.h"
#include "trace.h"

#define WAIT_S 120

static const char *const list_cols[] = { "name", "phase", "id", "exit_code", "message", NULL };

/* A wait polls every POLL_MS: a GET costs the gateway well under a
 * millisecond, and the poll interval is added to every create's latency. */
#define POLL_MS 50

static void nap(void)
{
	nanosleep(&(struct timespec){ .tv_nsec = POLL_MS * 1000 * 1000 }, NULL);
}

static bool phase_in(const json_t *row, const char *const phases[])
{
	const char *p = json_string_value(json_object_get(row, "phase"));
	for (size_t i = 0; p && phases[i]; i++)
		if (!strcmp(p, phases[i]))
			return true;
	return false;
}

/* Polls the sandbox until its phase is one of phases (or gone, when gone_ok).
 * created: it is known to exist, and a lost gateway must not read as "no
 * sandbox". */
static json_t *wait_phase_of(struct cli *cli, const char *name, const char *const phases[],
			     bool gone_ok, bool created)
{
	char path[512];
	bool tty = isatty(STDERR_FILENO);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", name);
	for (int i = 0; i < WAIT_S * (1000 / POLL_MS); i++) {
		json_t *row = NULL;
		long status = 0;
		os_error err = { 0 };
		if (client_call(&cli->client, "GET", path, NULL, &status, &row, &err) < 0 &&
		    created)
			return cli_fail("sandbox %s created; its state is unknown because the "
					"gateway stopped answering: %s",
					name, err.msg),
			       NULL;
		if (status == 0)
			return cli_fail("%s", err.msg), NULL;
		if (status == 404 && gone_ok) {
			json_decref(row);
			return json_object();
		}
		if (status != 200) {
			cli_fail("%s", str_or(json_string_value(json_object_get(row, "message")),
					      "lookup failed"));
			json_decref(row);
			return NULL;
		}
		if (phase_in(row, phases)) {
			if (tty)
				fprintf(stderr, "\r\033[K");
			return row;
		}
		if (tty)
			fprintf(stderr, "\r\033[Kwaiting for %s: %s", name,
				json_string_value(json_object_get(row, "phase")));
		json_decref(row);
		nap();
	}
	cli_fail("timed out after %d s waiting for sandbox %s", WAIT_S, name);
	return NULL;
}

json_t *cli_wait_phase(struct cli *cli, const char *name, const char *const phases[], bool gone_ok)
{
	return wait_phase_of(cli, name, phases, gone_ok, false);
}

static int add_kv(json_t *obj, const char *kv, const char *flag)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return cli_usage("%s %s: expected KEY=VALUE", flag, kv);
	_cleanup_free_ char *k = str_ndup(kv, (size_t)(eq - kv));
	json_object_set_new(obj, k, json_string(eq + 1));
	return 0;
}

/* Parses create's flags into the API body; *detach set by --detach. */
static int create_body(int argc, char **argv, json_t *body, bool *detach, struct attach_opts *fg)
{
	json_t *env = json_object(), *labels = json_object(), *provs = json_array();
	json_object_set_new(body, "env", env);
	json_object_set_new(body, "labels", labels);
	json_object_set_new(body, "providers", provs);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--")) {
			json_t *cmd = json_array();
			for (int j = i + 1; j < argc; j++)
				json_array_append_new(cmd, json_string(argv[j]));
			if (json_array_size(cmd) == 0)
				return json_decref(cmd), cli_usage("no command after --");
			json_object_set_new(body, "command", cmd);
			break;
		}
		if (!strcmp(a, "--detach") || !strcmp(a, "-d")) {
			*detach = true;
			continue;
		}
		if (!strcmp(a, "--verbose") || !strcmp(a, "-v") || !strcmp(a, "--rm")) {
			fg->verbose |= a[2] != 'r';
			fg->rm |= a[2] == 'r';
			continue;
		}
		/* As docker users type it; stdin is always forwarded, so -i only
		 * says so. */
		bool tty = !strcmp(a, "--tty") || !strcmp(a, "-t") || !strcmp(a, "-it") ||
			   !strcmp(a, "-ti");
		if (tty || !strcmp(a, "--interactive") || !strcmp(a, "-i")) {
			fg->tty |= tty;
			continue;
		}
		if (!v)
			return cli_usage("%s: missing value", a);
		i++;
		if (!strcmp(a, "--name"))
			json_object_set_new(body, "name", json_string(v));
		else if (!strcmp(a, "--policy")) {
			_cleanup_free_ char *y = cli_read_file(v);
			if (!y)
				return CLI_FAIL;
			json_object_set_new(body, "policy", json_string(y));
		} else if (!strcmp(a, "--provider"))
			json_array_append_new(provs, json_string(v));
		else if (!strcmp(a, "--env")) {
			if (add_kv(env, v, a))
				return CLI_USAGE;
		} else if (!strcmp(a, "--label")) {
			if (add_kv(labels, v, a))
				return CLI_USAGE;
		} else if (!strcmp(a, "--runtime-class"))
			json_object_set_new(body, "runtime_class_name", json_string(v));
		else if (!strcmp(a, "--image"))
			json_object_set_new(body, "image", json_string(v));
		else
			return cli_usage("sandbox create: unknown option %s", a);
	}
	return 0;
}

/* One sandbox as the API shows it: its fields, then (when the driver reports
 * them) a table of its Pods and any condition that explains a wait. */
static void print_sandbox(struct cli *cli, const json_t *row)
{
	static const char *const pod_cols[] = { "name", "component", "phase", "runtimeClassName",
						NULL };
	if (cli->json) {
		cli_object(cli, row);
		return;
	}
	_cleanup_json_ json_t *top = json_deep_copy(row);
	const json_t *pods = json_object_get(row, "pods"), *c;
	size_t i;
	json_object_del(top, "pods");
	json_object_del(top, "conditions");
	cli_object(cli, top);
	json_array_foreach (json_object_get(row, "conditions"), i, c) {
		const char *msg = json_string_value(json_object_get(c, "message"));
		if (msg && *msg)
			printf("%-17s %s: %s\n", "condition",
			       str_or(json_string_value(json_object_get(c, "type")), "?"), msg);
	}
	if (!json_is_array(pods))
		return;
	putchar('\n');
	if (json_array_size(pods))
		cli_table(cli, pods, pod_cols, "pods");
	else
		printf("no pods\n");
}

struct settle_watch {
	const char *const *phases;
	bool settled, gone;
};

static int on_settle_event(const char *line, size_t len, void *user)
{
	struct settle_watch *w = user;
	_cleanup_json_ json_t *ev = json_loadb(line, len, 0, NULL);
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (!type)
		return -1; /* not a watch event: the poll below decides */
	if (!strcmp(type, "DELETED"))
		w->gone = true;
	else if (strcmp(type, "SYNCED") != 0)
		w->settled = phase_in(json_object_get(ev, "sandbox"), w->phases);
	return w->settled || w->gone ? -1 : 0;
}

/* Waits for a phase in phases by watching (the gateway pushes the change the
 * moment it is saved), then reads the row once. A watch that ends, fails or
 * is refused (an older gateway) leaves the wait to the poll, which also
 * owns every error message. */
static json_t *wait_settled(struct cli *cli, const char *name, const char *const phases[],
			    bool created)
{
	char seg[256], path[512];
	struct settle_watch w = { .phases = phases };
	if (cli_segment(seg, sizeof(seg), name) == 0) {
		snprintf(path, sizeof(path), "/v1/sandboxes?watch=1&name=%s&timeout_s=%d", seg,
			 WAIT_S);
		(void)client_stream_lines(&cli->client, path, on_settle_event, &w, NULL);
	}
	return wait_phase_of(cli, name, phases, false, created);
}

static int create(struct cli *cli, int argc, char **argv)
{
	static const char *const settled[] = { "Ready",	    "Error",  "Stopped",
					       "Succeeded", "Failed", NULL };
	_cleanup_json_ json_t *body = json_object(), *made = NULL, *row = NULL;
	bool detach = false;
	bool created = false;
	struct attach_opts fg = { 0 };
	int rc = create_body(argc, argv, body, &detach, &fg);
	if (rc)
		return rc;
	if (detach && fg.rm)
		return cli_usage("sandbox create: --rm deletes the sandbox when its agent ends, "
				 "which --detach does not wait for");
	if (detach && fg.tty)
		return cli_usage("sandbox create: --tty gives the agent this terminal, which "
				 "--detach leaves (use `openshell sandbox connect` later)");
	if (!detach) /* the agent's own stdio, for this client to attach to */
		json_object_set_new(body, "attach", attach_request(&fg));
	trace_init("cli");
	trace_mark("create-sent");
	if (!(made = cli_create_call(cli, body, &created)))
		return CLI_FAIL;
	trace_mark("create-answered");
	const char *name = json_string_value(json_object_get(made, "name"));
	if (!(row = wait_settled(cli, name, settled, created)))
		return CLI_FAIL;
	trace_mark("settled-seen %s", json_string_value(json_object_get(row, "phase")));
	/* Ready, or already over (the agent finished, or setting up failed): the
	 * foreground run shows its output either way. */
	if (!detach)
		return attach_foreground(cli, name, row, &fg);
	print_sandbox(cli, row);
	if (!phase_in(row, (const char *const[]){ "Ready", NULL }))
		return cli_fail("sandbox %s did not become Ready: %s", name,
				json_string_value(json_object_get(row, "message")));
	return CLI_OK;
}

static int simple(struct cli *cli, const char *method, const char *name, const char *action,
		  const char *const wait_for[], bool gone_ok)
{
	char seg[256], path[512];
	long status = 0;
	if (cli_segment(seg, sizeof(seg), name) < 0)
		return CLI_USAGE;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s%s%s", seg, action ? "/" : "",
		 action ? action : "");
	_cleanup_json_ json_t *out = cli_api(cli, method, path, NULL, &status), *row = NULL;
	if (!out)
		return CLI_FAIL;
	if (!wait_for) {
		cli_object(cli, out);
		return CLI_OK;
	}
	if (!(row = cli_wait_phase(cli, seg, wait_for, gone_ok)))
		return CLI_FAIL;
	if (json_object_size(row) == 0) {
		if (!cli->json)
			printf("sandbox %s deleted\n", seg);
		return CLI_OK;
	}
	print_sandbox(cli, row);
	return phase_in(row, (const char *const[]){ "Error", "Failed", NULL }) ? CLI_FAIL : CLI_OK;
}

/* `sandbox get NAME`: the sandbox, then its backend objects as the driver
 * sees them (Pods with phase and RuntimeClass; "-" when a Pod has none). */
static int get(struct cli *cli, const char *name)
{
	char seg[256], path[512];
	long status = 0;
	if (cli_segment(seg, sizeof(seg), name) < 0)
		return CLI_USAGE;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", seg);
	_cleanup_json_ json_t *out = cli_api(cli, "GET", path, NULL, &status);
	if (!out)
		return CLI_FAIL;
	print_sandbox(cli, out);
	return CLI_OK;
}

/* The phase as a table shows it: a sandbox that lost its supervisor session
 * says so beside Provisioning (-o json keeps the API's fields). */
static void phase_shown(json_t *sb)
{
	const char *session = json_string_value(json_object_get(sb, "session"));
	const char *phase = json_string_value(json_object_get(sb, "phase"));
	if (!session || !phase)
		return;
	char text[96];
	snprintf(text, sizeof text, "%s (session %s)", phase, session);
	json_object_set_new(sb, "phase", json_string(text));
}

/* One watch event as a table row (EVENT NAME PHASE MESSAGE) or raw NDJSON. */
static int print_event(const char *line, size_t len, void *user)
{
	struct cli *cli = user;
	if (cli->json) {
		printf("%.*s\n", (int)len, line);
	} else {
		_cleanup_json_ json_t *ev = json_loadb(line, len, 0, NULL);
		const char *type = json_string_value(json_object_get(ev, "type"));
		json_t *sb = json_object_get(ev, "sandbox");
		phase_shown(sb);
		const char *name = json_string_value(json_object_get(sb, "name"));
		const char *phase = json_string_value(json_object_get(sb, "phase"));
		const char *msg = json_string_value(json_object_get(sb, "message"));
		if (!type)
			return cli_fail("watch: malformed event from the gateway"), -1;
		if (strcmp(type, "SYNCED") != 0)
			printf("%-9s %-24s %-13s %s\n", type, name ? name : "-",
			       phase ? phase : "-", msg ? msg : "");
	}
	fflush(stdout);
	return 0;
}

static int watch(struct cli *cli)
{
	os_error err = { 0 };
	if (client_ensure(&cli->client, &err) < 0)
		return cli_fail("%s", err.msg);
	if (!cli->json)
		printf("%-9s %-24s %-13s %s\n", "EVENT", "NAME", "PHASE", "MESSAGE");
	if (client_stream_lines(&cli->client, "/v1/sandboxes?watch=1", print_event, cli, &err) < 0)
		return cli_fail("%s", err.msg);
	return CLI_OK;
}

int cmd_sandbox(struct cli *cli, int argc, char **argv)
{
	static const char *const ready[] = { "Ready",	  "Error",  "Stopped",
					     "Succeeded", "Failed", NULL };
	static const char *const stopped[] = { "Stopped", "Error", "Succeeded", "Failed", NULL };
	const char *sub = argc > 0 ? argv[0] : "";
	long status = 0;
	if (!strcmp(sub, "create"))
		return create(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "list") && argc == 1) {
		_cleanup_json_ json_t *out = cli_api(cli, "GET", "/v1/sandboxes", NULL, &status);
		if (!out)
			return CLI_FAIL;
		size_t i;
		json_t *sb;
		json_array_foreach (json_object_get(out, "sandboxes"), i, sb)
			if (!cli->json)
				phase_shown(sb);
		cli_table(cli, json_object_get(out, "sandboxes"), list_cols, "sandboxes");
		return CLI_OK;
	}
	if (!strcmp(sub, "list") && argc == 2 &&
	    (!strcmp(argv[1], "--watch") || !strcmp(argv[1], "-w")))
		return watch(cli);
	if (!strcmp(sub, "logs"))
		return cmd_logs(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "exec"))
		return cmd_exec(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "connect"))
		return cmd_connect(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "upload"))
		return cmd_upload(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "download"))
		return cmd_download(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "port-forward"))
		return cmd_port_forward(cli, argc - 1, argv + 1);
	if (argc != 2)
		return cli_usage(
			"usage: openshell sandbox "
			"create|list|get|delete|stop|start|logs|exec|connect|upload|download|"
			"port-forward "
			"[NAME]");
	if (!strcmp(sub, "get"))
		return get(cli, argv[1]);
	if (!strcmp(sub, "delete"))
		return simple(cli, "DELETE", argv[1], NULL, (const char *const[]){ NULL }, true);
	if (!strcmp(sub, "stop"))
		return simple(cli, "POST", argv[1], "stop", stopped, false);
	if (!strcmp(sub, "start"))
		return simple(cli, "POST", argv[1], "start", ready, false);
	return cli_usage("unknown sandbox command \"%s\"", sub);
}
