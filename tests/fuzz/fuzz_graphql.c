/* fuzz_graphql.c - libFuzzer target for the GraphQL document parser. The
 * first input line (up to 64 bytes) is the operationName, the rest the
 * document. Checks the answer's invariants (sorted distinct root fields
 * within the cap, each a GraphQL name; positions on every lexical and
 * grammar error) and aborts on any violation. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_name(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') ||
		      ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'z')))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[65] = "";
	const char *doc = (const char *)data;
	const char *nl = memchr(data, '\n', size < 65 ? size : 65);
	if (nl) {
		memcpy(name, data, (size_t)(nl - doc));
		name[nl - doc] = 0;
		size -= (size_t)(nl - doc) + 1;
		doc = nl + 1;
	}
	struct graphql_operation op;
	os_error err = { 0 };
	if (graphql_classify(doc, size, name, &op, &err) < 0) {
		if (!err.msg[0] || op.fields || op.name)
			abort();
		return 0;
	}
	if (op.n_fields == 0 || op.n_fields > GRAPHQL_FIELDS_MAX)
		abort(); /* a selection set is never empty */
	for (size_t i = 0; i < op.n_fields; i++) {
		if (!is_name(op.fields[i]) || (i && strcmp(op.fields[i - 1], op.fields[i]) >= 0))
			abort();
	}
	if (op.name && (!is_name(op.name) || (name[0] && strcmp(op.name, name) != 0)))
		abort();
	graphql_operation_free(&op);
	return 0;
}
