/* propose.h - `openshell policy propose`'s pure part: denials from audit
 * records aggregated (one entry per host/port/binary/method/path pattern,
 * with a count), the smallest policy change that allows them, and that
 * change applied to a policy tree (JSON, as yaml_to_json gives it). An L7
 * denial gets an allow rule on the endpoint that judged it (a request is
 * judged by one endpoint's rules only, docs/policy.md "Decision (L4)": a
 * second policy would not allow it); an L4 denial gets a new policy naming
 * the endpoint and the caller's binary. No I/O. */
#ifndef OS_CLI_PROPOSE_H
#define OS_CLI_PROPOSE_H

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "yamltree.h"

/* Adds one audit record: counted when it is a deny. */
void propose_add(json_t *denials, const json_t *rec);

/* What the denials call for: {"rules": [{policy, host, port, method, path,
 * count, binaries, reason}], "policies": [{name, host, port, binaries,
 * count, reason}], "skipped": [{reason, why, count, what}]}. */
json_t *propose_plan(const json_t *denials);

/* Applies plan to policy (a tree from propose_yaml_json); -1 with err when an
 * endpoint the plan names is no longer there. */
int propose_apply(json_t *policy, const json_t *plan, os_error *err);

/* A YAML tree as JSON: plain scalars that are integers or booleans typed,
 * everything else strings (what the policy loader reads them as). */
json_t *propose_yaml_json(const struct ynode *n);

#endif
