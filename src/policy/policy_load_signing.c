/* policy_load_signing.c - the credential keys of an endpoint that change
 * what is sent rather than where: AWS SigV4 signing (credential_signing,
 * signing_service, signing_region) and request_body_credential_rewrite.
 * Values and combinations follow OpenShell (crates/openshell-policy
 * NetworkEndpointDef and its validator: MissingSigningService,
 * UnknownCredentialSigning, CredentialSigningWithBodyRewrite; docs
 * providers/aws-sigv4.mdx). One addition: the signing keys come from the
 * endpoint's credential_binding provider, so signing needs one. */
#include <stdlib.h>
#include <string.h>

#include "policy_load_int.h"

/* A lower-case AWS name (service `bedrock`, region `us-east-1`). */
static bool aws_name_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n &&
	       s[0] != '-' && s[n - 1] != '-';
}

static void load_name(struct lctx *c, const struct ynode *v, const char *what, char **out)
{
	const char *s;
	if (!get_str(c, v, what, &s))
		return;
	if (!aws_name_ok(s)) {
		lerr_expected(c, v, what);
		return;
	}
	*out = ldup(c, s);
}

bool load_signing_field(struct lctx *c, const char *k, const struct ynode *v,
			struct policy_endpoint *ep)
{
	static const char *const modes[] = { "sigv4", "sigv4:body", "sigv4:no_body", NULL };
	if (!strcmp(k, "request_body_credential_rewrite")) {
		get_bool(c, v, &ep->request_body_credential_rewrite);
	} else if (!strcmp(k, "credential_signing")) {
		const char *s;
		if (!get_str(c, v, "sigv4, sigv4:body or sigv4:no_body", &s))
			return true;
		for (size_t i = 0; modes[i]; i++)
			if (!strcmp(s, modes[i]))
				ep->signing = (enum policy_signing)(POLICY_SIGN_SIGV4 + i);
		if (ep->signing == POLICY_SIGN_NONE)
			lerr(c, v,
			     "unknown credential_signing '%.64s' (expected sigv4, sigv4:body or "
			     "sigv4:no_body)",
			     s);
	} else if (!strcmp(k, "signing_service")) {
		load_name(c, v, "an AWS service name such as bedrock, s3 or sts",
			  &ep->signing_service);
	} else if (!strcmp(k, "signing_region")) {
		load_name(c, v, "an AWS region such as us-east-1", &ep->signing_region);
	} else {
		return false;
	}
	return true;
}

void check_signing_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	const struct ynode *sign = ynode_map_get(n, "credential_signing");
	const struct ynode *body = ynode_map_get(n, "request_body_credential_rewrite");
	bool inspected = policy_protocol_inspected(ep->protocol);
	size_t old = c->plen;
	if (body && ep->request_body_credential_rewrite && !inspected) {
		kp_push(c, ".request_body_credential_rewrite");
		lerr(c, body,
		     "requires protocol: rest (bodies are only read on inspected endpoints)");
	} else if (!sign) {
		const char *k = ynode_map_get(n, "signing_service")  ? "signing_service"
				: ynode_map_get(n, "signing_region") ? "signing_region"
								     : NULL;
		if (k) {
			kp_push(c, ".%s", k);
			lwarn(c, ynode_map_get(n, k), "ignored without credential_signing");
		}
		free(ep->signing_service); /* nothing of them is kept */
		free(ep->signing_region);
		ep->signing_service = ep->signing_region = NULL;
	} else if (ep->signing == POLICY_SIGN_NONE) {
		/* its value was refused above */
	} else if (ep->protocol != POLICY_PROTO_REST) {
		kp_push(c, ".credential_signing");
		lerr(c, sign, "requires protocol: rest (requests are signed one by one)");
	} else if (!ep->signing_service && !ynode_map_get(n, "signing_service")) {
		kp_push(c, ".credential_signing");
		lerr(c, sign, "signing_service is required with credential_signing");
	} else if (ep->request_body_credential_rewrite) {
		kp_push(c, ".credential_signing");
		lerr(c, sign,
		     "cannot be combined with request_body_credential_rewrite (a signed body "
		     "cannot change after signing)");
	} else if (!ep->credential_provider) {
		kp_push(c, ".credential_signing");
		lerr(c, sign,
		     "needs credential_binding.provider: the provider holding AWS_ACCESS_KEY_ID "
		     "and AWS_SECRET_ACCESS_KEY the proxy signs with");
	}
	kp_pop(c, old);
}
