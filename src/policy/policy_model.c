/* policy_model.c - ownership of the policy model: freeing a (possibly half
 * built) policy_doc and diagnostics, and the stable names of its enums.
 * Must tolerate every partially filled structure the loader can leave. */
#include <stdlib.h>

#include "policy_load_int.h"

void policy_rules_free(struct policy_rule *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].method);
		free(r[i].path);
		for (size_t q = 0; q < r[i].n_query; q++) {
			free(r[i].query[q].name);
			for (size_t g = 0; g < r[i].query[q].n_globs; g++)
				free(r[i].query[q].globs[g]);
			free(r[i].query[q].globs);
		}
		free(r[i].query);
		if (r[i].tool) {
			for (size_t g = 0; g < r[i].tool->n_globs; g++)
				free(r[i].tool->globs[g]);
			free(r[i].tool->globs);
			free(r[i].tool->name);
			free(r[i].tool);
		}
		policy_graphql_ops_free(r[i].graphql, r[i].graphql ? 1 : 0);
	}
	free(r);
}

static void endpoint_free(struct policy_endpoint *ep)
{
	free(ep->host);
	free(ep->ports);
	policy_rules_free(ep->rules, ep->n_rules);
	policy_rules_free(ep->deny_rules, ep->n_deny);
	free(ep->allowed_ips);
	free(ep->credential_provider);
	free(ep->path);
	free(ep->signing_service);
	free(ep->signing_region);
	policy_graphql_ops_free(ep->graphql_registry, ep->n_graphql_registry);
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void policy_doc_free(struct policy_doc *doc)
{
	if (!doc)
		return;
	free(doc->source);
	strv_free(doc->read_only, doc->n_read_only);
	strv_free(doc->read_write, doc->n_read_write);
	policy_middlewares_free(doc->middlewares, doc->n_middlewares);
	for (size_t i = 0; i < doc->n_networks; i++) {
		struct policy_network *n = &doc->networks[i];
		free(n->name);
		for (size_t j = 0; n->endpoints && j < n->n_endpoints; j++)
			endpoint_free(&n->endpoints[j]);
		free(n->endpoints);
		for (size_t j = 0; j < n->n_binaries; j++)
			free(n->binaries[j].path);
		free(n->binaries);
	}
	free(doc->networks);
	strv_free(doc->warnings, doc->n_warnings);
	free(doc);
}

void policy_diag_free(struct policy_diag *d)
{
	if (!d)
		return;
	strv_free(d->msgs, d->n);
	d->msgs = NULL;
	d->n = 0;
}

const char *policy_access_name(enum policy_access a)
{
	switch (a) {
	case POLICY_ACCESS_READ_ONLY:
		return "read-only";
	case POLICY_ACCESS_READ_WRITE:
		return "read-write";
	case POLICY_ACCESS_FULL:
		return "full";
	default:
		return "none";
	}
}

const char *policy_reason_name(enum policy_reason r)
{
	static const char *const names[POLICY_R_COUNT_] = {
		[POLICY_R_ALLOWED] = "allowed",
		[POLICY_R_NO_ENDPOINT] = "no_matching_endpoint",
		[POLICY_R_PORT_NOT_ALLOWED] = "port_not_allowed",
		[POLICY_R_BINARY_NOT_ALLOWED] = "binary_not_allowed",
		[POLICY_R_BINARY_UNKNOWN] = "binary_unknown",
		[POLICY_R_INVALID_HOST] = "invalid_host",
		[POLICY_R_METADATA_HOST] = "metadata_host",
		[POLICY_R_SSRF_ALWAYS_BLOCKED] = "ssrf_always_blocked",
		[POLICY_R_SSRF_INTERNAL] = "ssrf_internal_address",
		[POLICY_R_SSRF_CONTROL_PLANE_PORT] = "ssrf_control_plane_port",
		[POLICY_R_PATH_REJECTED] = "path_rejected",
		[POLICY_R_INVALID_METHOD] = "invalid_method",
		[POLICY_R_DENY_RULE] = "deny_rule",
		[POLICY_R_NO_MATCHING_RULE] = "no_matching_rule",
		[POLICY_R_NOT_INSPECTED] = "not_inspected",
		[POLICY_R_CREDENTIAL_ENDPOINT_MISMATCH] = "credential_endpoint_mismatch",
		[POLICY_R_METHOD_OVERRIDE_DENIED] = "method_override_denied",
		[POLICY_R_RPC_INVALID] = "rpc_invalid",
		[POLICY_R_GRAPHQL_INVALID] = "graphql_invalid",
		[POLICY_R_GRAPHQL_UNREGISTERED] = "graphql_persisted_query_unregistered",
	};
	if ((unsigned)r >= POLICY_R_COUNT_ || !names[r])
		return "unknown";
	return names[r];
}

const char *policy_verdict_name(enum policy_verdict v)
{
	return v == POLICY_ALLOW ? "allow" : v == POLICY_AUDIT ? "audit" : "deny";
}
