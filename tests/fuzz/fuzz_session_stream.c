/* fuzz_session_stream.c - libFuzzer target for the supervisor's reader of
 * the gateway session stream (response head, chunked framing, NDJSON
 * messages). Oracles: no crash or over-read; every message handed out is
 * well-formed (policy text NUL-free and within its cap, hello with an id,
 * exec with a hex id and an argv);
 * the result and the messages do not depend on how the bytes are split. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "session_stream.h"

struct digest {
	uint64_t n, h;
};

static void mix(struct digest *d, const void *p, size_t len)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < len; i++)
		d->h = (d->h ^ b[i]) * 1099511628211ull;
}

static int on_msg(void *user, const struct session_msg *m, os_error *err)
{
	struct digest *d = user;
	if (m->type == SESSION_MSG_POLICY &&
	    (m->revision == 0 || m->policy_len > SESSION_POLICY_MAX ||
	     strlen(m->policy) != m->policy_len))
		abort();
	if (m->type == SESSION_MSG_HELLO && (!m->sandbox || !*m->sandbox))
		abort();
	if (m->type == SESSION_MSG_EXEC &&
	    (!m->exec_id || strlen(m->exec_id) < 16 || strlen(m->exec_id) >= SESSION_EXEC_ID_MAX ||
	     strspn(m->exec_id, "0123456789abcdef") != strlen(m->exec_id) || !m->exec_argv))
		abort();
	d->n++;
	mix(d, &m->type, sizeof(m->type));
	mix(d, &m->revision, sizeof(m->revision));
	if (m->policy)
		mix(d, m->policy, m->policy_len);
	if (m->exec_id)
		mix(d, m->exec_id, strlen(m->exec_id));
	return 0;
}

static int run(const char *in, size_t n, const uint8_t *steps, size_t nsteps, struct digest *d)
{
	struct session_stream s;
	os_error err = { 0 };
	int r = 0;
	size_t off = 0, k = 0;
	session_stream_init(&s);
	while (off < n && r == 0) {
		size_t add = nsteps ? (size_t)steps[k++ % nsteps] % 16 + 1 : n;
		if (add > n - off)
			add = n - off;
		r = session_stream_feed(&s, in + off, add, on_msg, d, &err);
		off += add;
	}
	session_stream_free(&s);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* byte 0: how many split-pattern bytes follow */
	size_t nsteps = data[0] % 8;
	if (1 + nsteps > size)
		return 0;
	const char *in = (const char *)data + 1 + nsteps;
	size_t n = size - 1 - nsteps;
	struct digest a = { 0, 14695981039346656037ull }, b = a;
	int ra = run(in, n, NULL, 0, &a);
	int rb = run(in, n, data + 1, nsteps ? nsteps : 0, &b);
	if (nsteps == 0)
		return 0;
	/* A refusal may differ in detail (a 4xx body waited for), never in kind. */
	if ((ra < 0) != (rb < 0) || (ra >= 0 && (ra != rb || a.n != b.n || a.h != b.h)))
		abort();
	return 0;
}
