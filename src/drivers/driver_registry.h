/* driver_registry.h - the compute drivers a host can open, by name (the
 * gateway's default_driver): each entry builds its driver from the
 * configuration and checks that configuration without starting anything.
 * A host talks to a driver only through this and driver.h, never through a
 * driver's own headers or structs. */
#ifndef OS_DRIVER_REGISTRY_H
#define OS_DRIVER_REGISTRY_H

#include <jansson.h>

#include "config.h"
#include "driver.h"
#include "error.h"

/* What the host lends a driver it opens. */
struct driver_env {
	const char *state_dir; /* the host's state directory */
};

struct driver_entry {
	const char *name;
	/* Builds the driver from its section of cfg, which must outlive it.
	 * Errors name the key path ("drivers.kubernetes.namespace: ..."). */
	int (*open)(const struct config *cfg, const struct driver_env *env, struct driver **out,
		    os_error *err);
	/* Validates the driver's section and what it names (binaries, the
	 * cluster's namespace and RuntimeClasses) with read-only look-ups only.
	 * *report (always set when the configuration could be read) says what
	 * was checked; returns < 0 with err naming the first problem. */
	int (*check)(const struct config *cfg, const struct driver_env *env, json_t **report,
		     os_error *err);
};

extern const struct driver_entry driver_entry_local;
extern const struct driver_entry driver_entry_kubernetes;

/* NULL when no driver has that name. */
const struct driver_entry *driver_registry_find(const char *name);

/* "local, kubernetes": for messages. */
const char *driver_registry_names(void);

#endif
