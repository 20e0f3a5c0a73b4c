/* upstream_trust.c - the lazily loaded, shared upstream trust (see
 * upstream_trust.h). The proxy has one loop thread, so the list of trusts
 * needs no lock; it must never hand out a context whose system roots are not
 * loaded. */
#include "upstream_trust.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tlsctx.h"

struct upstream_trust {
	struct upstream_trust *next;
	char *extra_ca_file; /* NULL: none */
	SSL_CTX *ctx; /* the operator's CA from the start; system roots once loaded */
	bool system_loaded;
	unsigned refs;
};

static struct upstream_trust *trusts; /* every trust of this process */

static bool same_file(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int trust_new(const char *extra_ca_file, struct upstream_trust **out, os_error *err)
{
	const struct tls_client_config cfg = {
		.ca_file = extra_ca_file,
		.ca_adds_to_system = true,
		.system_later = true,
		.ca_what = "--upstream-ca",
	};
	struct upstream_trust *t = calloc(1, sizeof *t);
	if (!t || (extra_ca_file && !(t->extra_ca_file = strdup(extra_ca_file)))) {
		free(t);
		return os_error_set(err, ENOMEM, "upstream trust: out of memory");
	}
	if (tls_ctx_new_client(&cfg, &t->ctx, err) < 0) {
		free(t->extra_ca_file);
		free(t);
		return os_error_prefix(err, "creating upstream TLS context");
	}
	*out = t;
	return 0;
}

int upstream_trust_get(const char *extra_ca_file, struct upstream_trust **out, os_error *err)
{
	for (struct upstream_trust *t = trusts; t; t = t->next)
		if (same_file(t->extra_ca_file, extra_ca_file)) {
			t->refs++;
			*out = t;
			return 0;
		}
	struct upstream_trust *t = NULL;
	if (trust_new(extra_ca_file, &t, err) < 0)
		return -1;
	t->refs = 1;
	t->next = trusts;
	trusts = t;
	*out = t;
	return 0;
}

void upstream_trust_put(struct upstream_trust *t)
{
	if (!t || --t->refs > 0)
		return;
	for (struct upstream_trust **p = &trusts; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
	SSL_CTX_free(t->ctx);
	free(t->extra_ca_file);
	free(t);
}

SSL_CTX *upstream_trust_ctx(struct upstream_trust *t, os_error *err)
{
	if (!t->system_loaded) {
		if (tls_ctx_add_system_trust(t->ctx, err) < 0)
			return NULL;
		t->system_loaded = true;
	}
	return t->ctx;
}

bool upstream_trust_loaded(const struct upstream_trust *t)
{
	return t->system_loaded;
}
