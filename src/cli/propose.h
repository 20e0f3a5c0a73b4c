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
#include "policy.h"
#include "yamltree.h"

/* Adds one audit record: counted when it is a deny. */
void propose_add(json_t *denials, const json_t *rec);

/* Whether policy g still denies what denial d (an entry of the denials)
 * asked for: the caller's binary to host:port, then method and path. */
bool propose_still_denied(const struct policy_gen *g, const json_t *d);

/* What the denials that g (the policy in force) still denies call for:
 * {"rules": [{policy, host, port, method, path, count, binaries, reason}],
 * "policies": [{name, host, port, binaries, count, reason}], "skipped":
 * [{reason, why, count, what}], "allowed": N (denials g allows by now)}.
 * Each denial a rule or policy covers is marked "planned". */
json_t *propose_plan(json_t *denials, const struct policy_gen *g);

/* Applies plan to policy (a tree from propose_yaml_json); -1 with err when an
 * endpoint the plan names is no longer there. */
int propose_apply(json_t *policy, const json_t *plan, os_error *err);

/* A YAML tree as JSON: plain scalars that are integers or booleans typed,
 * everything else strings (what the policy loader reads them as). */
json_t *propose_yaml_json(const struct ynode *n);

#endif
