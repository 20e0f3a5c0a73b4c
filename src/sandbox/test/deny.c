/* deny.c - sandbox-deny, a test-only helper: installs a seccomp filter that
 * makes chosen syscalls fail with a chosen errno, then execs a command. Used to
 * simulate kernels without Landlock or seccomp. Never installed or shipped.
 * usage: sandbox-deny NAME:ERRNO[:ARG0] ... -- COMMAND [ARGS...] */
#include <errno.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "decimal_arg.h"

static int add_rule(scmp_filter_ctx ctx, char *spec)
{
	char *name = spec, *e = strchr(spec, ':'), *a0 = NULL;
	long long code, arg;
	if (!e)
		return -1;
	*e++ = '\0';
	if ((a0 = strchr(e, ':')))
		*a0++ = '\0';
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR || decimal_arg(e, 1, 4095, &code) < 0)
		return -1;
	if (!a0)
		return seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)code), nr, 0);
	if (decimal_arg(a0, 0, UINT32_MAX, &arg) < 0)
		return -1;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)code), nr, 1,
				SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)arg, 0));
}

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int i = 1;
	if (!ctx)
		return 125;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (add_rule(ctx, argv[i]) < 0) {
			fprintf(stderr, "sandbox-deny: bad rule %s\n", argv[i]);
			return 2;
		}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: sandbox-deny NAME:ERRNO[:ARG0]... -- COMMAND...\n");
		return 2;
	}
	if (seccomp_load(ctx) < 0) {
		fprintf(stderr, "sandbox-deny: seccomp_load failed\n");
		return 125;
	}
	execv(argv[i + 1], argv + i + 1);
	perror("sandbox-deny: execv");
	return 127;
}
