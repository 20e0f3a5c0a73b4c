/* kube_host.h - how the gateway hosts the kubernetes driver: opens it from
 * [openshell.drivers.kubernetes], checks the configured RuntimeClasses,
 * reconciles on the loop, and watches Pods from a helper thread that only
 * posts wake-ups. Never falls back to another class or driver. */
#ifndef OS_GATEWAY_KUBE_HOST_H
#define OS_GATEWAY_KUBE_HOST_H

#include <jansson.h>

#include "config.h"
#include "error.h"

struct gateway;
struct kube_host;

/* Opens the driver (gw->driver) and the host state (gw->kube). Credentials:
 * in-cluster first, then $KUBECONFIG, then ~/.kube/config. The configuration
 * must outlive the gateway's driver. */
int kube_host_open(struct gateway *gw, const struct config *cfg, os_error *err);

/* Once the loop runs the lifecycle: checks the classes (logging missing ones),
 * then arms the periodic resync, the wake-up fd and the watch thread. */
int kube_host_start(struct gateway *gw, os_error *err);

/* Stops the watch thread and releases everything; NULL-safe. Call before
 * loop_free. */
void kube_host_free(struct gateway *gw);

/* For GET /v1/gateway/status: {"ok", "namespace", "topology",
 * "runtime_classes": [{"name", "role", "available", "error"}], "missing",
 * "watch", "checked_at"}. */
json_t *kube_host_status(struct gateway *gw);

#endif
