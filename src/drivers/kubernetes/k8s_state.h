/* k8s_state.h - the harness's record store: one JSON file per sandbox in a
 * directory (the gateway will keep the same records in SQLite). Writes are
 * atomic (temp file + rename); ids are validated before becoming file names. */
#ifndef OS_K8S_STATE_H
#define OS_K8S_STATE_H

#include <jansson.h>

#include "error.h"

/* ENOENT when the sandbox has no record. */
int k8s_state_read(const char *dir, const char *id, json_t **record, os_error *err);
int k8s_state_write(const char *dir, const json_t *record, os_error *err);
int k8s_state_remove(const char *dir, const char *id, os_error *err);
/* Every record, as a JSON array (sorted by id). */
int k8s_state_list(const char *dir, json_t **records, os_error *err);

#endif
