/* k8s_main.h - shared by the openshell-k8s-driver harness's two files:
 * argument parsing and set-up (k8s_main.c) and the commands (k8s_cmds.c).
 * Only main() and these commands print. */
#ifndef OS_K8S_MAIN_H
#define OS_K8S_MAIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "driver.h"
#include "k8s_render.h"

#define EXIT_ERR 1
#define EXIT_USAGE 2

struct opts {
	const char *config, *kubeconfig, *context, *state_dir;
	const char *sets[64];
	size_t n_sets;
	const char *id, *name, *runtime_class, *image, *policy, *spec_json, *resource_version;
	const char *args[4];
	size_t n_args;
	long ready_timeout_s, call_timeout_s, watch_for_s;
	bool stats;
};

struct env {
	struct opts *o;
	struct config *cfg;
	struct k8s_settings s; /* moved into drv once connected */
	struct driver *drv;
};

/* Prints "openshell-k8s-driver: WHAT: MESSAGE" on stderr; returns code. */
int k8s_fail(int code, const char *what, const os_error *err);
void k8s_print_json(const json_t *j);
/* Credentials, client and driver (e->s moves into the driver). */
int k8s_connect_driver(struct env *e, os_error *err);
/* Runs o->args[0]; returns the exit code. */
int k8s_run_command(struct env *e);

#endif
