/* fuzz_jsonrpc.c - libFuzzer target for the JSON-RPC envelope parser and
 * the MCP checks on top of it. Oracles: no crash or leak; a payload either
 * fails with a fault and an error message, or succeeds with n messages
 * (1..JSONRPC_BATCH_MAX) each classified consistently (requests and answers
 * carry an id, calls a method of bounded length without control bytes);
 * re-serialised by jansson and parsed again it gives the same messages. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

static void check_msg(const struct jsonrpc_msg *m)
{
	bool call = m->kind == JSONRPC_REQUEST || m->kind == JSONRPC_NOTIFICATION;
	if (call != (m->method != NULL))
		abort();
	if ((m->kind == JSONRPC_NOTIFICATION) != (m->id == NULL))
		abort();
	if (call) {
		size_t n = strlen(m->method);
		if (n == 0 || n > JSONRPC_METHOD_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)m->method[i] < 0x20)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonrpc_payload p;
	enum jsonrpc_fault fault;
	os_error err = { 0 };
	if (jsonrpc_parse((const char *)data, size, 1 << 16, &p, &fault, &err) < 0) {
		if (fault == JSONRPC_FAULT_NONE || !err.msg[0] || p.root)
			abort();
		return 0;
	}
	if (p.n == 0 || p.n > JSONRPC_BATCH_MAX || (!p.batch && p.n != 1))
		abort();
	for (size_t i = 0; i < p.n; i++)
		check_msg(&p.msgs[i]);
	const char *tools[JSONRPC_BATCH_MAX];
	for (int batches_ok = 0; batches_ok < 2; batches_ok++)
		if (jsonrpc_mcp_check(&p, batches_ok, tools, &err) == 0)
			for (size_t i = 0; i < p.n; i++)
				if (tools[i] && strcmp(p.msgs[i].method, "tools/call") != 0)
					abort();
	char *again = json_dumps(p.root, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!again)
		abort();
	struct jsonrpc_payload q;
	if (jsonrpc_parse(again, strlen(again), 1 << 20, &q, &fault, &err) < 0 || q.n != p.n)
		abort();
	for (size_t i = 0; i < p.n; i++)
		if (q.msgs[i].kind != p.msgs[i].kind ||
		    (p.msgs[i].method && strcmp(q.msgs[i].method, p.msgs[i].method) != 0))
			abort();
	jsonrpc_payload_free(&q);
	free(again);
	jsonrpc_payload_free(&p);
	return 0;
}
