/* driver_host.h - how the gateway hosts its compute driver: picks it from
 * the registry by gateway.default_driver, drives it through the vtable only
 * (event fd + dispatch on the loop, periodic resync, health), reconciles
 * and persists what reconcile changed. Never falls back to another driver. */
#ifndef OS_GATEWAY_DRIVER_HOST_H
#define OS_GATEWAY_DRIVER_HOST_H

#include <jansson.h>

#include "config.h"
#include "error.h"

struct gateway;
struct driver_host;

/* Opens gw->driver (and gw->host). The configuration must outlive it. */
int driver_host_open(struct gateway *gw, const struct config *cfg, os_error *err);

/* Once the loop runs the lifecycle: a first dispatch (e.g. the RuntimeClass
 * check) and reconcile, then the driver's background work, its event fd and
 * the periodic resync. A no-op for a driver without dispatch. */
int driver_host_start(struct gateway *gw, os_error *err);

/* Removes the host's loop watches; NULL-safe. Call before loop_free and
 * before freeing the driver. */
void driver_host_free(struct gateway *gw);

/* For GET /v1/gateway/status: the driver's health, or NULL. */
json_t *driver_host_health(struct gateway *gw);

/* openshell-gateway --check-config: checks the gateway section and the
 * selected driver's (read-only; starts nothing). *report is always set:
 * {"ok", "driver", DRIVER: {...}}; returns < 0 with err naming the key. */
int driver_host_check_config(const struct config *cfg, json_t **report, os_error *err);

#endif
