/* fuzz_policy_load.c - libFuzzer target for the policy loader, compiler and
 * decisions: any input is rejected cleanly or becomes a policy that can be
 * compiled and queried without crashing. */
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void query(const struct policy_gen *g)
{
	static const char *const chain[] = { "/usr/bin/curl", "/usr/bin/git" };
	const struct policy_doc *d = policy_gen_doc(g);
	for (size_t i = 0; i < d->n_networks; i++) {
		for (size_t j = 0; j < d->networks[i].n_endpoints; j++) {
			const struct policy_endpoint *ep = &d->networks[i].endpoints[j];
			struct policy_decision dec;
			policy_decide_connect(g, ep->host, ep->ports[0], chain, 2, &dec);
			if (dec.verdict != POLICY_DENY && dec.endpoint) {
				/* routing, and the rules of every matching endpoint */
				struct policy_decision r;
				policy_decide_routed_request(g, dec.endpoint, ep->host,
							     ep->ports[0], chain, 2, "DELETE",
							     "/a/b?x=1&x=%41", NULL, 0, &r);
			}
			policy_decide_request(g, ep, "GET", "/a/../b?q=1&r=%41", NULL, 0, &dec);
			policy_decide_request(g, ep, "POST", "/x/y", NULL, 0, &dec);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	os_error err = { 0 };
	if (policy_parse("fuzz.yaml", (const char *)data, size, &doc, &diag, &err) < 0) {
		policy_diag_free(&diag);
		return 0;
	}
	struct policy_gen *g = policy_compile(doc, &err);
	if (g) {
		query(g);
		policy_unref(g);
	}
	return 0;
}
