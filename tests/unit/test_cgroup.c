/* test_cgroup.c - the pure part of src/supervisor/backend/cgroup.c: which hierarchy
 * holds the pids and memory controllers, chosen from mountinfo text (v1,
 * v2, hybrid hosts, escaped mount points, malformed lines). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "parse.h"

/* cgroup.controllers of the cgroup2 mounts a fixture has. */
struct v2_mount {
	const char *mount, *controllers;
};

static int fake_controllers(const char *mount, char *buf, size_t cap, void *user)
{
	for (const struct v2_mount *m = user; m && m->mount; m++)
		if (strcmp(m->mount, mount) == 0)
			return str_copy(buf, cap, m->controllers, NULL);
	return -1;
}

static void parse_ok(const char *text, const struct v2_mount *v2, struct cgroup_layout *lay)
{
	os_error err = { 0 };
	int rc = cgroup_layout_parse(text, strlen(text), fake_controllers, (void *)v2, lay, &err);
	if (rc < 0)
		fail_msg("parse failed: %s", err.msg);
}

/* This host's shape: v1 hierarchies plus an empty v2 "unified" mount. */
static const char hybrid[] =
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static void v1_hierarchies_are_chosen_not_the_empty_unified_mount(void **state)
{
	const struct v2_mount v2[] = { { "/sys/fs/cgroup/unified", "" }, { NULL, NULL } };
	struct cgroup_layout lay;
	parse_ok(hybrid, v2, &lay);
	assert_int_equal(lay.pids.version, CGROUP_V1);
	assert_string_equal(lay.pids.root, "/sys/fs/cgroup/pids");
	assert_int_equal(lay.memory.version, CGROUP_V1);
	assert_string_equal(lay.memory.root, "/sys/fs/cgroup/memory");
	/* ... but it is where the sandbox's membership cgroup goes. */
	assert_int_equal(lay.unified.version, CGROUP_V2);
	assert_string_equal(lay.unified.root, "/sys/fs/cgroup/unified");
}

static void no_cgroup2_mount_leaves_no_membership_hierarchy(void **state)
{
	const char text[] = "39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
	struct cgroup_layout lay;
	parse_ok(text, NULL, &lay);
	assert_int_equal(lay.pids.version, CGROUP_V1);
	assert_int_equal(lay.unified.version, CGROUP_NONE);
}

static void unified_mount_without_controllers_is_never_chosen(void **state)
{
	/* Only the empty v2 mount and a v1 hierarchy without pids/memory. */
	const char text[] =
		"32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	const struct v2_mount v2[] = { { "/sys/fs/cgroup/unified", "\n" }, { NULL, NULL } };
	struct cgroup_layout lay;
	parse_ok(text, v2, &lay);
	assert_int_equal(lay.pids.version, CGROUP_NONE);
	assert_int_equal(lay.memory.version, CGROUP_NONE);
}

static void v2_unified_host_uses_its_controllers(void **state)
{
	const char text[] = "22 1 0:5 / /proc rw,nosuid - proc proc rw\n"
			    "27 23 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 "
			    "- cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
	const struct v2_mount v2[] = {
		{ "/sys/fs/cgroup", "cpuset cpu io memory hugetlb pids rdma misc\n" },
		{ NULL, NULL },
	};
	struct cgroup_layout lay;
	parse_ok(text, v2, &lay);
	assert_int_equal(lay.pids.version, CGROUP_V2);
	assert_string_equal(lay.pids.root, "/sys/fs/cgroup");
	assert_int_equal(lay.memory.version, CGROUP_V2);
	assert_string_equal(lay.memory.root, "/sys/fs/cgroup");
}

static void v2_controller_names_match_whole_words(void **state)
{
	/* "pids_x" and "memoryless" must not pass for pids and memory. */
	const char text[] = "27 23 0:24 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
	const struct v2_mount v2[] = { { "/sys/fs/cgroup", "cpu pids_x memoryless\n" },
				       { NULL, NULL } };
	struct cgroup_layout lay;
	parse_ok(text, v2, &lay);
	assert_int_equal(lay.pids.version, CGROUP_NONE);
	assert_int_equal(lay.memory.version, CGROUP_NONE);
}

static void v2_mount_whose_controllers_cannot_be_read_is_skipped(void **state)
{
	const char text[] = "27 23 0:24 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
	struct cgroup_layout lay;
	parse_ok(text, NULL, &lay);
	assert_int_equal(lay.pids.version, CGROUP_NONE);
	/* Unreadable controllers still leave a hierarchy to be a member of. */
	assert_int_equal(lay.unified.version, CGROUP_V2);
}

static void mixed_host_takes_each_controller_where_it_is(void **state)
{
	/* pids bound to v1; memory left to the v2 hierarchy. The v2 listing
	 * naming pids too must not displace the v1 one. */
	const char text[] = "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
			    "39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
	const struct v2_mount v2[] = { { "/sys/fs/cgroup/unified", "memory pids" },
				       { NULL, NULL } };
	struct cgroup_layout lay;
	parse_ok(text, v2, &lay);
	assert_int_equal(lay.pids.version, CGROUP_V1);
	assert_string_equal(lay.pids.root, "/sys/fs/cgroup/pids");
	assert_int_equal(lay.memory.version, CGROUP_V2);
	assert_string_equal(lay.memory.root, "/sys/fs/cgroup/unified");
}

static void comounted_v1_and_escaped_mount_point(void **state)
{
	/* "memory,pids" on one hierarchy whose mount point has a space. */
	const char text[] = "50 31 0:40 / /cg/my\\040tree rw,relatime master:3 - cgroup none "
			    "rw,memory,pids\n";
	struct cgroup_layout lay;
	parse_ok(text, NULL, &lay);
	assert_int_equal(lay.pids.version, CGROUP_V1);
	assert_string_equal(lay.pids.root, "/cg/my tree");
	assert_string_equal(lay.memory.root, "/cg/my tree");
}

static void first_v1_mount_of_a_hierarchy_wins(void **state)
{
	const char text[] = "39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
			    "60 31 0:36 / /mnt/pids rw - cgroup cgroup rw,pids\n";
	struct cgroup_layout lay;
	parse_ok(text, NULL, &lay);
	assert_string_equal(lay.pids.root, "/sys/fs/cgroup/pids");
}

static void option_names_are_whole_words(void **state)
{
	/* name=pids is a named hierarchy, not the pids controller. */
	const char text[] = "40 31 0:37 / /sys/fs/cgroup/x rw - cgroup cgroup rw,name=pids\n";
	struct cgroup_layout lay;
	parse_ok(text, NULL, &lay);
	assert_int_equal(lay.pids.version, CGROUP_NONE);
}

static void malformed_lines_are_errors_naming_the_line(void **state)
{
	const char *bad[] = {
		"39 31 0:36 / /sys/fs/cgroup/pids rw cgroup cgroup rw,pids\n", /* no "-" */
		"1 0 0:1 / /p rw - tmpfs tmpfs rw\n2 1 0:36 / /p rw - cgroup\n", /* line 2 short */
		"39 31 0:36 / /p\\04 rw - cgroup cgroup rw,pids\n", /* truncated escape */
		"39 31 0:36 / /p\\000 rw - cgroup cgroup rw,pids\n", /* NUL byte */
		"39 31 0:36 / relative rw - cgroup cgroup rw,pids\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		os_error err = { 0 };
		struct cgroup_layout lay;
		assert_int_equal(cgroup_layout_parse(bad[i], strlen(bad[i]), fake_controllers, NULL,
						     &lay, &err),
				 -1);
		assert_non_null(strstr(err.msg, "mountinfo line"));
	}
	/* Positive control: the same first line, well formed, parses. */
	struct cgroup_layout lay;
	parse_ok("39 31 0:36 / /p rw - cgroup cgroup rw,pids\n", NULL, &lay);
	assert_string_equal(lay.pids.root, "/p");
}

/* Without limits only the cgroup2 membership directory may be made (where
 * this process may make it), and destroy removes it again. */
static void no_limits_make_at_most_the_membership_directory(void **state)
{
	struct cgroup_limits none = { 0, 0 };
	struct sandbox_cgroups cg = { .n = 1 };
	os_error err = { 0 };
	if (cgroup_create("unit-membership", &none, &cg, &err) < 0) {
		/* Not root, or a read-only cgroupfs: nothing may be left. */
		assert_int_equal(cg.n, 0);
		return;
	}
	assert_true(cg.n <= 1);
	if (cg.n == 1) {
		assert_int_equal(cg.v2, 0);
		const char *tail = "/openshell/unit-membership";
		size_t dl = strlen(cg.dirs[0]), tl = strlen(tail);
		assert_true(dl > tl && strcmp(cg.dirs[0] + dl - tl, tail) == 0);
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", cg.n ? cg.dirs[0] : "/nonexistent");
	assert_int_equal(cgroup_destroy(&cg, &err), 0);
	assert_int_equal(cg.n, 0);
	assert_int_equal(cg.v2, -1);
	assert_int_equal(access(dir, F_OK), -1);
}

static void ids_that_are_not_a_name_are_refused(void **state)
{
	struct cgroup_limits lim = { 20, 0 };
	struct sandbox_cgroups cg;
	const char *bad[] = { "", ".", "..", "a/b" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		os_error err = { 0 };
		assert_int_equal(cgroup_create(bad[i], &lim, &cg, &err), -1);
		assert_int_equal(err.code, EINVAL);
		assert_int_equal(cg.n, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(v1_hierarchies_are_chosen_not_the_empty_unified_mount),
		cmocka_unit_test(unified_mount_without_controllers_is_never_chosen),
		cmocka_unit_test(no_cgroup2_mount_leaves_no_membership_hierarchy),
		cmocka_unit_test(v2_unified_host_uses_its_controllers),
		cmocka_unit_test(v2_controller_names_match_whole_words),
		cmocka_unit_test(v2_mount_whose_controllers_cannot_be_read_is_skipped),
		cmocka_unit_test(mixed_host_takes_each_controller_where_it_is),
		cmocka_unit_test(comounted_v1_and_escaped_mount_point),
		cmocka_unit_test(first_v1_mount_of_a_hierarchy_wins),
		cmocka_unit_test(option_names_are_whole_words),
		cmocka_unit_test(malformed_lines_are_errors_naming_the_line),
		cmocka_unit_test(no_limits_make_at_most_the_membership_directory),
		cmocka_unit_test(ids_that_are_not_a_name_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
