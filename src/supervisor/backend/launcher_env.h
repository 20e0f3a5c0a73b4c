/* launcher_env.h - the whole environment the supervisor gives
 * openshell-sandbox (agent start and exec alike): PATH, plus, in sanitizer
 * builds only, the sanitizer options. Nothing of it reaches the agent: the
 * launcher hands the agent the launch spec's environment. */
#pragma once

/* Sanitizer options longer than this are not passed on (the launcher then
 * runs with the sanitizers' defaults, leak checking still off). */
#define LAUNCHER_SAN_OPTIONS_CAP 2048

struct launcher_env {
	char *envp[4];
	char asan[LAUNCHER_SAN_OPTIONS_CAP];
	char ubsan[LAUNCHER_SAN_OPTIONS_CAP];
};

/* Fills e; e->envp stays valid as long as e does. Call before fork: it reads
 * this process's environment. */
void launcher_env_init(struct launcher_env *e);
