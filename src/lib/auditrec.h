/* auditrec.h - the one shape of every audit record the supervisor writes
 * (docs/supervisor.md "Audit records"): the proxy's decisions
 * (src/supervisor/egress/audit.c), the bypass monitor's and the split
 * backend's records all start here, so readers (`openshell sandbox logs
 * --audit`, `policy propose`) meet one schema. Never holds a secret. */
#ifndef OS_AUDITREC_H
#define OS_AUDITREC_H

#include <jansson.h>

/* {"ts": seconds since the epoch (UTC, a JSON number with sub-second
 * digits), "sandbox", "event", "decision", "reason"}; a NULL value leaves
 * its key out. The caller adds the event's own fields (host, dport, ...).
 * NULL when out of memory. */
json_t *auditrec_new(const char *sandbox, const char *event, const char *decision,
		     const char *reason);

#endif
