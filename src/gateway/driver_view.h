/* driver_view.h - what the gateway shows of a sandbox's backend: the driver's
 * live status (Pods with their phase and RuntimeClass) beside the stored row,
 * and the policy summary a driver request carries. Never exposes a secret or
 * lets the view change the stored record. */
#ifndef OS_GATEWAY_DRIVER_VIEW_H
#define OS_GATEWAY_DRIVER_VIEW_H

#include <jansson.h>

struct gateway;

/* Adds the driver's "pods" and "conditions" (when the driver reports them)
 * to view, or "status_error" when the backend could not be read. row is not
 * modified. */
void driver_view_add_status(struct gateway *gw, const json_t *row, json_t *view);

/* {"restricts_binaries": bool, "yaml": text} for a policy that already
 * validated (driver.h "policy"); NULL when it does not parse. */
json_t *driver_view_policy(const char *yaml);

#endif
