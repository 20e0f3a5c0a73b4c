/* secret_echo.c - upstreams that hold a secret, and scrubbing their answers
 * (see secret_echo.h). */
#include "secret_echo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct upstream_mark {
	char host[256];
	uint16_t port;
};

struct secret_echo {
	struct upstream_mark marks[SECRET_ECHO_UPSTREAMS_MAX];
	size_t n;
	bool all; /* more upstreams than marks: every one is scrubbed */
};

int secret_echo_new(struct secret_echo **out, os_error *err)
{
	*out = calloc(1, sizeof **out);
	return *out ? 0 : os_error_set(err, ENOMEM, "out of memory");
}

void secret_echo_free(struct secret_echo *g)
{
	free(g);
}

void secret_echo_mark(struct secret_echo *g, const char *host, uint16_t port)
{
	if (!g || secret_echo_marked(g, host, port))
		return;
	if (g->n == SECRET_ECHO_UPSTREAMS_MAX || strlen(host) >= sizeof g->marks[0].host) {
		g->all = true;
		return;
	}
	struct upstream_mark *m = &g->marks[g->n++];
	memcpy(m->host, host, strlen(host) + 1);
	m->port = port;
}

bool secret_echo_marked(const struct secret_echo *g, const char *host, uint16_t port)
{
	if (!g)
		return false;
	if (g->all)
		return true;
	for (size_t i = 0; i < g->n; i++)
		if (g->marks[i].port == port && strcasecmp(g->marks[i].host, host) == 0)
			return true;
	return false;
}

size_t secret_echo_mask(const struct credentials *creds, const struct inference_routes *inf,
			char *data, size_t len)
{
	return credentials_mask(creds, data, len) + inference_mask_keys(inf, data, len);
}

size_t secret_echo_max_len(const struct credentials *creds, const struct inference_routes *inf)
{
	size_t a = credentials_max_len(creds), b = inference_max_key_len(inf);
	return a > b ? a : b;
}
