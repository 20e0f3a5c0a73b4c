/* registry.c - the compute drivers by name. Adding a driver is adding its
 * folder and one line here; a host never names a driver's internals. */
#include <string.h>

#include "driver_registry.h"

static const struct driver_entry *const entries[] = {
	&driver_entry_local,
	&driver_entry_kubernetes,
};

const struct driver_entry *driver_registry_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof entries / sizeof entries[0]; i++)
		if (!strcmp(entries[i]->name, name))
			return entries[i];
	return NULL;
}

const char *driver_registry_names(void)
{
	return "local, kubernetes";
}
