/* policy_fixture.h - the cmocka group fixture of the policy decision tests:
 * a policy text parsed and compiled into the group's state, then released. */
#ifndef OS_TEST_POLICY_FIXTURE_H
#define OS_TEST_POLICY_FIXTURE_H

#include <stdio.h>

#include "policy.h"

static inline int policy_fixture_setup(void **state, const char *name, const char *text, size_t len)
{
	struct policy_doc *doc = NULL;
	os_error err = { 0 };
	if (policy_parse(name, text, len, &doc, NULL, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	*state = policy_compile(doc, &err);
	return *state ? 0 : -1;
}

static inline int policy_fixture_teardown(void **state)
{
	policy_unref(*state);
	return 0;
}

#endif
