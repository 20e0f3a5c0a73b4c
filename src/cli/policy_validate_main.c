/* policy_validate_main.c - thin `openshell` entry point for
 * `openshell policy validate FILE...` until the full CLI absorbs it.
 * Prints `FILE: ok` or every error of FILE; exit 0 when all are valid, else 1. */
#include <stdio.h>
#include <string.h>

#include "policy.h"

static int usage(FILE *out)
{
	fprintf(out, "usage: openshell policy validate FILE...\n");
	return out == stdout ? 0 : 2;
}

static int validate_one(const char *path)
{
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	os_error err = { 0 };
	if (policy_load_file(path, &doc, &diag, &err) == 0) {
		printf("%s: ok\n", path);
		policy_doc_free(doc);
		return 0;
	}
	if (diag.n == 0)
		fprintf(stderr, "%s\n", err.msg);
	for (size_t i = 0; i < diag.n; i++)
		fprintf(stderr, "%s\n", diag.msgs[i]);
	if (diag.n >= POLICY_MAX_ERRORS)
		fprintf(stderr, "%s: too many errors, stopped after %d\n", path, POLICY_MAX_ERRORS);
	policy_diag_free(&diag);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout);
	if (argc < 4 || strcmp(argv[1], "policy") != 0 || strcmp(argv[2], "validate") != 0)
		return usage(stderr);
	int status = 0;
	for (int i = 3; i < argc; i++)
		status |= validate_one(argv[i]);
	return status;
}
