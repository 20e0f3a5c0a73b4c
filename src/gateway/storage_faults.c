/* storage_faults.c - what the gateway does when its state directory cannot
 * be written (a full disk, a quota, an I/O error): each failure is logged
 * once per sandbox and kind, the sandbox's public message says what was not
 * saved (the row itself cannot carry it: writing it is what failed), and the
 * lifecycle pass backs off until a write succeeds again. Never aborts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway.h"
#include "log.h"

#define PASS_MS_MIN 300
#define PASS_MS_MAX 10000

bool storage_is_full(int code)
{
	return code == ENOSPC || code == EDQUOT;
}

void storage_fault(struct gateway *gw, const char *id, const char *name, const char *what,
		   const os_error *err)
{
	char note[OS_ERROR_MSG_MAX + 96];
	snprintf(note, sizeof(note), "the gateway could not save this sandbox's state (%s): %s",
		 what, err->msg);
	gw->storage_failed_in_pass = true;
	if (!gw->storage_notes)
		gw->storage_notes = json_object();
	const char *key = id && *id ? id : "";
	const char *had = json_string_value(json_object_get(gw->storage_notes, key));
	if (had && !strcmp(had, note))
		return; /* already logged: the pass retries it quietly with back-off */
	json_object_set_new(gw->storage_notes, key, json_string(note));
	log_error("sandbox %s: %s: %s (retrying with back-off)", name && *name ? name : "?", what,
		  err->msg);
}

void storage_ok(struct gateway *gw, const char *id, const char *name)
{
	if (!gw->storage_notes || !json_object_get(gw->storage_notes, id))
		return;
	json_object_del(gw->storage_notes, id);
	log_info("sandbox %s: its state is saved again", name && *name ? name : id);
}

const char *storage_note(const struct gateway *gw, const char *id)
{
	return gw->storage_notes ? json_string_value(json_object_get(gw->storage_notes, id)) : NULL;
}

uint64_t storage_next_pass_ms(struct gateway *gw)
{
	uint64_t ms = gw->pass_ms ? gw->pass_ms : PASS_MS_MIN;
	if (gw->storage_failed_in_pass)
		ms = ms * 2 > PASS_MS_MAX ? PASS_MS_MAX : ms * 2;
	else
		ms = PASS_MS_MIN;
	if (ms == PASS_MS_MIN && gw->pass_ms > PASS_MS_MIN)
		log_info("storage writes succeed again: the lifecycle pass is back to every %u ms",
			 PASS_MS_MIN);
	gw->storage_failed_in_pass = false;
	gw->pass_ms = ms;
	return ms;
}

void storage_faults_free(struct gateway *gw)
{
	json_decref(gw->storage_notes);
	gw->storage_notes = NULL;
}
