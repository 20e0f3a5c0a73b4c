/* auditrec.c - see auditrec.h. */
#include "auditrec.h"

#include <time.h>

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v)
		json_object_set_new(o, k, json_string(v));
}

json_t *auditrec_new(const char *sandbox, const char *event, const char *decision,
		     const char *reason)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "ts", json_real((double)ts.tv_sec + (double)ts.tv_nsec / 1e9));
	set_str(o, "sandbox", sandbox);
	set_str(o, "event", event);
	set_str(o, "decision", decision);
	set_str(o, "reason", reason);
	return o;
}
