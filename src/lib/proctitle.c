/* proctitle.c - see proctitle.h. The argv strings are contiguous in the
 * area the kernel set up; /proc/PID/cmdline reads that area, so rewriting
 * it (NUL-filled after the title) is what ps and pgrep -f show. */
#include "proctitle.h"

#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>

static char *area;
static size_t area_len;

void proctitle_init(int argc, char **argv)
{
	if (argc < 1 || !argv[0])
		return;
	char *end = argv[0] + strlen(argv[0]) + 1;
	/* Only as far as the strings are one run: never into the environment. */
	for (int i = 1; i < argc && argv[i] == end; i++)
		end = argv[i] + strlen(argv[i]) + 1;
	area = argv[0];
	area_len = (size_t)(end - argv[0]);
}

void proctitle_set(const char *title, const char *comm)
{
	if (comm)
		prctl(PR_SET_NAME, comm, 0, 0, 0);
	if (!area || area_len < 2)
		return;
	size_t n = strlen(title);
	if (n > area_len - 1)
		n = area_len - 1;
	memset(area, 0, area_len);
	memcpy(area, title, n);
}
