/* cmd_gateway.c - `openshell gateway start|stop|status` for the local
 * gateway of the state dir. stop signals only the pid its own pid file
 * names, and only if that process is an openshell-gateway. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"

static pid_t gateway_pid(struct cli *cli)
{
	char path[PATH_MAX + 32], exe[PATH_MAX], link[64];
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	uint64_t pid = 0;
	snprintf(path, sizeof(path), "%s/gateway.pid", cli->client.state_dir);
	if (file_read_all(path, 64, &data, &len, NULL) < 0 ||
	    parse_u64(data, strcspn(data, "\n"), 2, INT32_MAX, &pid, NULL) < 0)
		return 0;
	snprintf(link, sizeof(link), "/proc/%llu/exe", (unsigned long long)pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	/* A rebuilt binary shows as "... (deleted)": still our gateway. */
	return str_has_suffix(exe, "/openshell-gateway") ||
			       str_has_suffix(exe, "/openshell-gateway (deleted)")
		       ? (pid_t)pid
		       : 0;
}

static int stop(struct cli *cli)
{
	pid_t pid = gateway_pid(cli);
	if (!pid) {
		printf("no gateway running for %s\n", cli->client.state_dir);
		return CLI_OK;
	}
	if (kill(pid, SIGTERM) < 0)
		return cli_fail("stopping gateway pid %d: %s", (int)pid, strerror(errno));
	for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	if (kill(pid, 0) == 0)
		return cli_fail("gateway pid %d did not stop within 10 s", (int)pid);
	printf("gateway stopped (sandboxes keep running; a new gateway re-adopts them)\n");
	return CLI_OK;
}

int cmd_gateway(struct cli *cli, int argc, char **argv)
{
	const char *sub = argc > 0 ? argv[0] : "";
	os_error err = { 0 };
	long status = 0;
	if (argc != 1)
		return cli_usage("usage: openshell gateway start|stop|status");
	if (!strcmp(sub, "stop"))
		return stop(cli);
	if (!strcmp(sub, "start")) {
		if (cli->client.explicit_gateway)
			return cli_fail("a gateway is configured (%s): start it where it runs",
					cli->client.url);
		if (gateway_pid(cli))
			return printf("gateway already running for %s\n", cli->client.state_dir),
			       CLI_OK;
		if (client_start_gateway(&cli->client, &err) < 0)
			return cli_fail("%s", err.msg);
		printf("gateway started (state in %s)\n", cli->client.state_dir);
		return CLI_OK;
	}
	if (!strcmp(sub, "status")) {
		_cleanup_json_ json_t *out = NULL;
		if (client_call(&cli->client, "GET", "/v1/gateway/status", NULL, &status, &out,
				&err) < 0) {
			printf("gateway: not running (%s)\n", cli->client.url);
			return CLI_FAIL;
		}
		if (status != 200)
			return cli_fail("%s",
					str_or(json_string_value(json_object_get(out, "message")),
					       "status failed"));
		json_object_set_new(out, "url", json_string(cli->client.url));
		cli_object(cli, out);
		return CLI_OK;
	}
	return cli_usage("unknown gateway command \"%s\"", sub);
}
