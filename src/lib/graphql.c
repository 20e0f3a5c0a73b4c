/* graphql.c - the executable-document grammar (spec section 2) over the
 * lexer, and the root fields of the selected operation. Only what a policy
 * can judge is kept: each operation's and fragment's top-level selections
 * (fields by name, never by alias; spreads; inline fragments, whose
 * selections are top-level too). Nested selections are parsed as strictly
 * and then dropped. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphql.h"
#include "graphql_internal.h"

enum item_kind { ITEM_FIELD, ITEM_SPREAD, ITEM_INLINE };

struct item {
	enum item_kind kind;
	struct gq_token name; /* field or fragment name */
	int child; /* ITEM_INLINE: its selection set */
	int next; /* next item of the same set, or -1 */
};

struct def {
	bool fragment;
	enum graphql_op_type type;
	struct gq_token name; /* len 0: anonymous operation */
	int set;
};

struct parser {
	struct gq_lexer lx;
	unsigned depth;
	struct item *items;
	size_t n_items, cap_items;
	int *set_first; /* per set: its first item, or -1 */
	size_t n_sets, cap_sets;
	struct def *defs;
	size_t n_defs, cap_defs;
	struct gq_token *spreads; /* every spread, nested ones too */
	size_t n_spreads, cap_spreads;
};

/* Growth is bounded by the token cap: each entry consumes a token. arrp
 * points at the array pointer (read and written with memcpy: it may be
 * any object pointer type). */
static int grow(struct parser *P, void *arrp, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	void *arr;
	memcpy(&arr, arrp, sizeof arr);
	size_t nc = *cap ? *cap * 2 : 16;
	void *p = reallocarray(arr, nc, size);
	if (!p)
		return os_error_set(P->lx.err, ENOMEM, "out of memory parsing a GraphQL document");
	memcpy(arrp, &p, sizeof p);
	*cap = nc;
	return 0;
}

static int next(struct parser *P)
{
	return gq_next(&P->lx);
}

static const struct gq_token *cur(const struct parser *P)
{
	return &P->lx.cur;
}

static int fail_here(struct parser *P, const char *what)
{
	const struct gq_token *t = cur(P);
	if (t->kind == GQ_EOF)
		return gq_fail(&P->lx, t, "expected %s, found the end of the document", what);
	return gq_fail(&P->lx, t, "expected %s, found '%.*s'", what,
		       (int)(t->len > 40 ? 40 : t->len), t->p);
}

static int expect_punct(struct parser *P, char c)
{
	char what[8] = { '\'', c, '\'', 0 };
	if (!gq_is_punct(cur(P), c))
		return fail_here(P, what);
	return next(P);
}

static bool is_name(const struct gq_token *t, const char *s)
{
	return t->kind == GQ_NAME && t->len == strlen(s) && !memcmp(t->p, s, t->len);
}

static int take_name(struct parser *P, const char *what, struct gq_token *out)
{
	if (cur(P)->kind != GQ_NAME)
		return fail_here(P, what);
	if (out)
		*out = *cur(P);
	return next(P);
}

static int enter(struct parser *P)
{
	if (++P->depth > GRAPHQL_DEPTH_MAX)
		return gq_fail(&P->lx, cur(P), "the document nests deeper than %d levels",
			       GRAPHQL_DEPTH_MAX);
	return 0;
}

static int parse_value(struct parser *P, bool is_const);

/* [ Value* ] or { (Name : Value)* } */
static int parse_compound(struct parser *P, bool is_const)
{
	char close = cur(P)->punct == '[' ? ']' : '}';
	if (enter(P) < 0 || next(P) < 0)
		return -1;
	while (!gq_is_punct(cur(P), close)) {
		if (close == '}' &&
		    (take_name(P, "an object field name", NULL) < 0 || expect_punct(P, ':') < 0))
			return -1;
		if (parse_value(P, is_const) < 0)
			return -1;
	}
	P->depth--;
	return next(P);
}

static int parse_value(struct parser *P, bool is_const)
{
	const struct gq_token *t = cur(P);
	if (gq_is_punct(t, '$')) {
		if (is_const)
			return gq_fail(&P->lx, t, "a variable is not allowed in a constant value");
		if (next(P) < 0)
			return -1;
		return take_name(P, "a variable name", NULL);
	}
	if (gq_is_punct(t, '[') || gq_is_punct(t, '{'))
		return parse_compound(P, is_const);
	if (t->kind == GQ_INT || t->kind == GQ_FLOAT || t->kind == GQ_STRING ||
	    t->kind == GQ_NAME) /* true, false, null and enum values are names */
		return next(P);
	return fail_here(P, "a value");
}

/* ( Name : Value ... ) */
static int parse_arguments(struct parser *P, bool is_const)
{
	if (!gq_is_punct(cur(P), '('))
		return 0;
	if (next(P) < 0)
		return -1;
	do {
		if (take_name(P, "an argument name", NULL) < 0 || expect_punct(P, ':') < 0 ||
		    parse_value(P, is_const) < 0)
			return -1;
	} while (!gq_is_punct(cur(P), ')'));
	return next(P);
}

static int parse_directives(struct parser *P, bool is_const)
{
	while (gq_is_punct(cur(P), '@')) {
		if (next(P) < 0 || take_name(P, "a directive name", NULL) < 0 ||
		    parse_arguments(P, is_const) < 0)
			return -1;
	}
	return 0;
}

/* Name, [Type] and either followed by ! */
static int parse_type(struct parser *P)
{
	if (gq_is_punct(cur(P), '[')) {
		if (enter(P) < 0 || next(P) < 0 || parse_type(P) < 0 || expect_punct(P, ']') < 0)
			return -1;
		P->depth--;
	} else if (take_name(P, "a type", NULL) < 0) {
		return -1;
	}
	return gq_is_punct(cur(P), '!') ? next(P) : 0;
}

/* ( $name : Type = default @directives ... ) */
static int parse_variable_definitions(struct parser *P)
{
	if (!gq_is_punct(cur(P), '('))
		return 0;
	if (next(P) < 0)
		return -1;
	do {
		if (expect_punct(P, '$') < 0 || take_name(P, "a variable name", NULL) < 0 ||
		    expect_punct(P, ':') < 0 || parse_type(P) < 0)
			return -1;
		if (gq_is_punct(cur(P), '=') && (next(P) < 0 || parse_value(P, true) < 0))
			return -1;
		if (parse_directives(P, true) < 0)
			return -1;
	} while (!gq_is_punct(cur(P), ')'));
	return next(P);
}

static int new_set(struct parser *P)
{
	if (grow(P, &P->set_first, &P->cap_sets, P->n_sets, sizeof *P->set_first) < 0)
		return -1;
	P->set_first[P->n_sets] = -1;
	return (int)P->n_sets++;
}

static int add_item(struct parser *P, int set, int *last, enum item_kind k,
		    const struct gq_token *name, int child)
{
	if (grow(P, &P->items, &P->cap_items, P->n_items, sizeof *P->items) < 0)
		return -1;
	int i = (int)P->n_items++;
	P->items[i] = (struct item){ .kind = k, .child = child, .next = -1 };
	if (name)
		P->items[i].name = *name;
	if (*last < 0)
		P->set_first[set] = i;
	else
		P->items[*last].next = i;
	*last = i;
	return 0;
}

static int parse_selection_set(struct parser *P, bool keep, int *set_out);

static int parse_spread(struct parser *P, bool keep, int set, int *last)
{
	if (next(P) < 0)
		return -1;
	const struct gq_token *t = cur(P);
	if (t->kind == GQ_NAME && !is_name(t, "on")) { /* ...FragmentName */
		struct gq_token name = *t;
		if (grow(P, &P->spreads, &P->cap_spreads, P->n_spreads, sizeof *P->spreads) < 0)
			return -1;
		P->spreads[P->n_spreads++] = name;
		if (next(P) < 0 || parse_directives(P, false) < 0)
			return -1;
		return keep ? add_item(P, set, last, ITEM_SPREAD, &name, -1) : 0;
	}
	if (is_name(t, "on") && (next(P) < 0 || take_name(P, "a type condition", NULL) < 0))
		return -1;
	int child = -1;
	if (parse_directives(P, false) < 0 || parse_selection_set(P, keep, &child) < 0)
		return -1;
	return keep ? add_item(P, set, last, ITEM_INLINE, NULL, child) : 0;
}

/* Alias? Name Arguments? Directives? SelectionSet? */
static int parse_field(struct parser *P, bool keep, int set, int *last)
{
	struct gq_token name;
	if (take_name(P, "a field, '...' or '}'", &name) < 0)
		return -1;
	if (gq_is_punct(cur(P), ':') && /* that was the alias: the field follows */
	    (next(P) < 0 || take_name(P, "a field name after the alias", &name) < 0))
		return -1;
	if (parse_arguments(P, false) < 0 || parse_directives(P, false) < 0)
		return -1;
	if (gq_is_punct(cur(P), '{') && parse_selection_set(P, false, NULL) < 0)
		return -1;
	return keep ? add_item(P, set, last, ITEM_FIELD, &name, -1) : 0;
}

/* { Selection+ }; keep: record its selections (a root-level set). */
static int parse_selection_set(struct parser *P, bool keep, int *set_out)
{
	int set = -1, last = -1;
	if (keep && (set = new_set(P)) < 0)
		return -1;
	if (set_out)
		*set_out = set;
	if (enter(P) < 0 || expect_punct(P, '{') < 0)
		return -1;
	do {
		int rc = cur(P)->kind == GQ_SPREAD ? parse_spread(P, keep, set, &last)
						   : parse_field(P, keep, set, &last);
		if (rc < 0)
			return -1;
	} while (!gq_is_punct(cur(P), '}'));
	P->depth--;
	return next(P);
}

static int add_def(struct parser *P, const struct def *d)
{
	if (grow(P, &P->defs, &P->cap_defs, P->n_defs, sizeof *P->defs) < 0)
		return -1;
	P->defs[P->n_defs++] = *d;
	return 0;
}

static int parse_fragment(struct parser *P)
{
	struct def d = { .fragment = true };
	if (next(P) < 0)
		return -1;
	if (is_name(cur(P), "on"))
		return gq_fail(&P->lx, cur(P), "a fragment cannot be named 'on'");
	if (take_name(P, "a fragment name", &d.name) < 0)
		return -1;
	if (!is_name(cur(P), "on"))
		return fail_here(P, "'on' and a type condition");
	if (next(P) < 0 || take_name(P, "a type condition", NULL) < 0 ||
	    parse_directives(P, false) < 0 || parse_selection_set(P, true, &d.set) < 0)
		return -1;
	return add_def(P, &d);
}

static int parse_operation(struct parser *P)
{
	struct def d = { .type = GRAPHQL_QUERY };
	if (!gq_is_punct(cur(P), '{')) { /* not the query shorthand */
		char type[16] = "";
		memcpy(type, cur(P)->p, cur(P)->len < sizeof type ? cur(P)->len : sizeof type - 1);
		d.type = (enum graphql_op_type)graphql_op_type_parse(type);
		if (next(P) < 0)
			return -1;
		if (cur(P)->kind == GQ_NAME && take_name(P, "", &d.name) < 0)
			return -1;
		if (parse_variable_definitions(P) < 0 || parse_directives(P, false) < 0)
			return -1;
	}
	if (parse_selection_set(P, true, &d.set) < 0)
		return -1;
	return add_def(P, &d);
}

static int parse_document(struct parser *P)
{
	static const char *const type_system[] = { "schema", "scalar", "type",	"interface",
						   "union",  "enum",   "input", "directive",
						   "extend", NULL };
	if (cur(P)->kind == GQ_EOF)
		return gq_fail(&P->lx, cur(P), "the document is empty");
	while (cur(P)->kind != GQ_EOF) {
		const struct gq_token *t = cur(P);
		int rc;
		if (gq_is_punct(t, '{') || is_name(t, "query") || is_name(t, "mutation") ||
		    is_name(t, "subscription")) {
			rc = parse_operation(P);
		} else if (is_name(t, "fragment")) {
			rc = parse_fragment(P);
		} else {
			bool ts = t->kind == GQ_STRING;
			for (size_t i = 0; !ts && type_system[i]; i++)
				ts = is_name(t, type_system[i]);
			if (ts)
				return gq_fail(&P->lx, t,
					       "type system definitions are not executable (only "
					       "operations and fragments may be sent)");
			return fail_here(P, "an operation or a fragment");
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

static bool tok_eq(const struct gq_token *a, const struct gq_token *b)
{
	return a->len == b->len && !memcmp(a->p, b->p, a->len);
}

/* The fragment named like t, or NULL. */
static const struct def *find_fragment(const struct parser *P, const struct gq_token *t)
{
	for (size_t i = 0; i < P->n_defs; i++)
		if (P->defs[i].fragment && tok_eq(&P->defs[i].name, t))
			return &P->defs[i];
	return NULL;
}

/* Names are unique per kind; an anonymous operation stands alone; every
 * spread names a fragment the document defines. */
static int check_names(struct parser *P)
{
	size_t ops = 0;
	bool anonymous = false;
	for (size_t i = 0; i < P->n_defs; i++) {
		const struct def *d = &P->defs[i];
		ops += !d->fragment;
		anonymous |= !d->fragment && !d->name.len;
		for (size_t j = 0; d->name.len && j < i; j++)
			if (P->defs[j].fragment == d->fragment &&
			    tok_eq(&P->defs[j].name, &d->name))
				return gq_fail(&P->lx, &d->name, "%s '%.*s' is defined twice",
					       d->fragment ? "fragment" : "operation",
					       (int)d->name.len, d->name.p);
	}
	if (!ops)
		return os_error_set(P->lx.err, EINVAL,
				    "the document contains no operation (only fragments)");
	if (anonymous && ops > 1)
		return os_error_set(P->lx.err, EINVAL,
				    "an anonymous operation must be the only operation in the "
				    "document");
	for (size_t i = 0; i < P->n_spreads; i++)
		if (!find_fragment(P, &P->spreads[i]))
			return gq_fail(&P->lx, &P->spreads[i], "fragment '%.*s' is not defined",
				       (int)P->spreads[i].len, P->spreads[i].p);
	return 0;
}

struct collect {
	struct parser *P;
	unsigned char *state; /* per def: 0 unseen, 1 being expanded, 2 done */
	struct graphql_operation *op;
};

static int add_field(struct collect *C, const struct gq_token *t)
{
	struct graphql_operation *op = C->op;
	for (size_t i = 0; i < op->n_fields; i++)
		if (strlen(op->fields[i]) == t->len && !memcmp(op->fields[i], t->p, t->len))
			return 0;
	if (op->n_fields == GRAPHQL_FIELDS_MAX)
		return os_error_set(C->P->lx.err, EINVAL,
				    "the operation selects more than %d root fields",
				    GRAPHQL_FIELDS_MAX);
	char *s = strndup(t->p, t->len);
	if (!s)
		return os_error_set(C->P->lx.err, ENOMEM, "out of memory");
	op->fields[op->n_fields++] = s;
	return 0;
}

/* The root fields of a set, through inline fragments and spreads (each
 * fragment once: a field set does not grow by expanding it twice). A
 * fragment that spreads itself is refused (the specification forbids
 * cycles; its fields could never be known). depth bounds the recursion
 * through fragment chains. */
static int collect(struct collect *C, int set, unsigned depth)
{
	if (depth > GRAPHQL_DEPTH_MAX)
		return os_error_set(C->P->lx.err, EINVAL,
				    "fragments nest deeper than %d levels at the root",
				    GRAPHQL_DEPTH_MAX);
	for (int i = C->P->set_first[set]; i >= 0; i = C->P->items[i].next) {
		const struct item *it = &C->P->items[i];
		int rc = 0;
		if (it->kind == ITEM_FIELD) {
			rc = add_field(C, &it->name);
		} else if (it->kind == ITEM_INLINE) {
			rc = collect(C, it->child, depth + 1);
		} else {
			const struct def *f = find_fragment(C->P, &it->name);
			size_t fi = (size_t)(f - C->P->defs);
			if (C->state[fi] == 1)
				return gq_fail(&C->P->lx, &it->name,
					       "fragment '%.*s' spreads itself (a cycle)",
					       (int)it->name.len, it->name.p);
			if (C->state[fi] == 0) {
				C->state[fi] = 1;
				rc = collect(C, f->set, depth + 1);
				C->state[fi] = 2;
			}
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const struct def *select_operation(struct parser *P, const char *name)
{
	const struct def *only = NULL;
	size_t ops = 0;
	for (size_t i = 0; i < P->n_defs; i++) {
		const struct def *d = &P->defs[i];
		if (d->fragment)
			continue;
		ops++;
		only = d;
		if (name && *name && d->name.len == strlen(name) &&
		    !memcmp(d->name.p, name, d->name.len))
			return d;
	}
	if (name && *name)
		os_error_set(P->lx.err, EINVAL, "operationName \"%.128s\" was not found", name);
	else if (ops > 1)
		os_error_set(P->lx.err, EINVAL,
			     "the document has %zu operations but no operationName", ops);
	else
		return only;
	return NULL;
}

static int build(struct parser *P, const char *operation_name, struct graphql_operation *out)
{
	const struct def *d = select_operation(P, operation_name);
	if (!d)
		return -1;
	out->type = d->type;
	if (d->name.len && !(out->name = strndup(d->name.p, d->name.len)))
		return os_error_set(P->lx.err, ENOMEM, "out of memory");
	out->fields = calloc(GRAPHQL_FIELDS_MAX, sizeof *out->fields);
	unsigned char *state = calloc(P->n_defs, sizeof *state);
	struct collect C = { .P = P, .state = state, .op = out };
	int rc = out->fields && state ? collect(&C, d->set, 0)
				      : os_error_set(P->lx.err, ENOMEM, "out of memory");
	free(state);
	if (rc == 0)
		qsort(out->fields, out->n_fields, sizeof *out->fields, cmp_str);
	return rc;
}

int graphql_classify(const char *doc, size_t len, const char *operation_name,
		     struct graphql_operation *out, os_error *err)
{
	memset(out, 0, sizeof *out);
	struct parser P = { 0 };
	int rc = gq_lex_init(&P.lx, doc, len, err);
	if (rc == 0)
		rc = parse_document(&P);
	if (rc == 0)
		rc = check_names(&P);
	if (rc == 0)
		rc = build(&P, operation_name, out);
	if (rc < 0)
		graphql_operation_free(out);
	free(P.items);
	free(P.set_first);
	free(P.defs);
	free(P.spreads);
	return rc;
}

void graphql_operation_free(struct graphql_operation *op)
{
	for (size_t i = 0; op->fields && i < op->n_fields; i++)
		free(op->fields[i]);
	free(op->fields);
	free(op->name);
	memset(op, 0, sizeof *op);
}

const char *graphql_op_type_name(enum graphql_op_type t)
{
	return t == GRAPHQL_MUTATION	   ? "mutation"
	       : t == GRAPHQL_SUBSCRIPTION ? "subscription"
					   : "query";
}

int graphql_op_type_parse(const char *s)
{
	static const char *const names[] = { "query", "mutation", "subscription" };
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}
