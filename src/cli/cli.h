/* cli.h - shared pieces of the `openshell` commands: the global options,
 * calling the API with errors printed the one way, tables and -o json. Only
 * the commands print; nothing here exits the process. */
#ifndef OS_CLI_H
#define OS_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "client.h"

/* Exit codes. */
#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2
#define CLI_TIMEOUT 124

struct cli {
	struct client client;
	bool json; /* -o json or -o yaml: structured output */
	bool yaml; /* -o yaml: written as YAML (cli_yaml.c) */
	const char *gateway; /* --gateway */
};

/* Calls the API after making sure a gateway runs. Returns the body on a
 * 2xx status; otherwise prints "openshell: MESSAGE" and returns NULL with
 * *status set (0 when the gateway could not be reached). */
json_t *cli_api(struct cli *cli, const char *method, const char *path, const json_t *body,
		long *status);

/* Prints an error line and returns CLI_FAIL / CLI_USAGE. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints rows (array of objects) as a table with the given columns, or as
 * JSON under key when -o json. */
void cli_table(struct cli *cli, const json_t *rows, const char *const cols[], const char *key);
/* Prints one object as "key: value" lines, or JSON. */
void cli_object(struct cli *cli, const json_t *obj);

/* v as a YAML document on f (-o yaml); < 0 when the emitter failed. */
int cli_yaml_dump(const json_t *v, FILE *f);

/* Polls sandbox NAME until its phase is one of phases (or it is gone, when
 * gone_ok: an empty object), with a progress line on a terminal; NULL after
 * printing why when the wait failed. */
json_t *cli_wait_phase(struct cli *cli, const char *name, const char *const phases[], bool gone_ok);

/* Reads a whole file (policy YAML) into a malloc'd string; prints on error. */
char *cli_read_file(const char *path);

/* create_call.c: POST /v1/sandboxes with a client request id, asked again
 * when the answer is lost. The created sandbox, or NULL (printed why). */
json_t *cli_create_call(struct cli *cli, json_t *body, bool *created);

/* Escapes a path segment (names are validated server-side; this only stops '/'
 * and '?' from changing the route). */
int cli_segment(char *out, size_t cap, const char *name);

int cmd_sandbox(struct cli *cli, int argc, char **argv);
/* cmd_logs.c: sandbox logs. */
int cmd_logs(struct cli *cli, int argc, char **argv);
/* cmd_exec.c: sandbox exec / sandbox connect. */
int cmd_exec(struct cli *cli, int argc, char **argv);
int cmd_connect(struct cli *cli, int argc, char **argv);
/* cmd_files.c: sandbox upload / download. */
int cmd_upload(struct cli *cli, int argc, char **argv);
int cmd_download(struct cli *cli, int argc, char **argv);
/* cmd_forward.c: sandbox port-forward. */
int cmd_port_forward(struct cli *cli, int argc, char **argv);
/* One framed session (docs/exec.md) on POST /v1/sandboxes/NAME/ACTION
 * ("exec", or "attach" for a foreground create's agent) with body: stdin
 * forwarded, stdout and stderr apart, with tty the terminal raw and its
 * size followed. The command's exit code; 125 when it could not start, 1
 * when the connection was lost (said on stderr). */
/* The caller's terminal size (stdin's, else stdout's); 0 x 0 without one. */
void cli_win_size(uint16_t *rows, uint16_t *cols);
int cli_exec_stream(struct cli *cli, const char *name, const char *action, const char *body,
		    bool tty);
int cmd_policy(struct cli *cli, int argc, char **argv);
/* Polls revision rev of the policies at path until it is no longer pending:
 * CLI_OK loaded, CLI_FAIL failed, CLI_TIMEOUT after timeout_s. */
int cli_wait_revision(struct cli *cli, const char *path, json_int_t rev, uint64_t timeout_s);
/* cmd_propose.c: policy propose. */
int cmd_propose(struct cli *cli, int argc, char **argv);
int cmd_provider(struct cli *cli, int argc, char **argv);
int cmd_inference(struct cli *cli, int argc, char **argv);
int cmd_gateway(struct cli *cli, int argc, char **argv);

#endif
