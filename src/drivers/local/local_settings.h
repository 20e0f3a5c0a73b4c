/* local_settings.h - the [openshell.drivers.local] settings that name files
 * the supervisors read (hosts_file, upstream_ca_file) and the binaries, checked
 * when the gateway starts: a missing or unparsable one fails the start naming
 * the setting and the file, instead of every later create failing without
 * either. */
#ifndef OS_DRIVERS_LOCAL_SETTINGS_H
#define OS_DRIVERS_LOCAL_SETTINGS_H

#include "config.h"
#include "error.h"

int local_settings_check(const struct config *cfg, const char *supervisor, const char *sandbox,
			 os_error *err);

#endif
