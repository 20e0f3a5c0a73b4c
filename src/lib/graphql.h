/* graphql.h - a strict parser for GraphQL executable documents (the
 * October 2021 specification's lexical and executable grammar) as they
 * cross the proxy: it finds the operation a request selects and the root
 * fields that operation really selects, after aliases are seen through and
 * fragments (spreads and inline) are expanded. Type system definitions,
 * duplicate or missing names and every lexical error are refused with the
 * line and column; nesting and token counts are capped so hostile
 * documents cost bounded work. It never executes or validates against a
 * schema: the proxy needs only what a policy can name. */
#ifndef OS_GRAPHQL_H
#define OS_GRAPHQL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Nesting of selection sets, values and types (apollo-parser's limit
 * upstream uses), and tokens per document. */
#define GRAPHQL_DEPTH_MAX 128
#define GRAPHQL_TOKEN_MAX 20000
/* Distinct root fields one operation may select. */
#define GRAPHQL_FIELDS_MAX 256

enum graphql_op_type { GRAPHQL_QUERY = 0, GRAPHQL_MUTATION, GRAPHQL_SUBSCRIPTION };

struct graphql_operation {
	enum graphql_op_type type;
	char *name; /* NULL for an anonymous operation */
	char **fields; /* sorted, distinct root field names (not aliases) */
	size_t n_fields;
};

/* Parses len bytes of document text and selects the operation named
 * operation_name (NULL or "": the document's only operation). On failure
 * err says what and where ("line 3, column 7: ..."), out is left empty. */
int graphql_classify(const char *doc, size_t len, const char *operation_name,
		     struct graphql_operation *out, os_error *err);
void graphql_operation_free(struct graphql_operation *op);

const char *graphql_op_type_name(enum graphql_op_type t);
/* "query" / "mutation" / "subscription" -> 0, or -1. */
int graphql_op_type_parse(const char *s);

#endif
