/* boundary_bench.c - boundary-bench: times attach + confirm + teardown of a
 * backend (default inpod) over N cycles and reports the median, plus the fd
 * count before and after so leak tests can use it. Never starts an agent. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "parse.h"
#include "proxy.h"

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One full cycle; the proxy placeholder stands in for the proxy confirm dials. */
static int cycle(const struct backend_descriptor *d, os_error *err)
{
	struct backend_instance *inst = NULL;
	backend_bound bound = { 0 };
	backend_ready ready = { 0 };
	struct sockaddr_storage pa;
	socklen_t pl;
	void *px = NULL;
	int rc = -1;
	if (backend_attach(d, NULL, &inst, &bound, err) < 0)
		goto out;
	if (backend_proxy_endpoint(&bound, &pa, &pl, err) < 0 ||
	    proxy_placeholder_ops.start((struct sockaddr *)&pa, pl, &px, err) < 0)
		goto out;
	if (backend_confirm(&bound, &ready, err) < 0)
		goto out;
	rc = 0;
out:
	backend_teardown(&inst);
	if (px)
		proxy_placeholder_ops.stop(px);
	return rc;
}

int main(int argc, char **argv)
{
	uint64_t cycles = 50;
	struct backend_descriptor d = { .backend = "inpod",
					.sandbox_id = "bench",
					.proxy_port = 3128 };
	os_error err = { 0 };
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--cycles") == 0 &&
		    parse_u64_str(argv[i + 1], 1, 1000000, &cycles, &err) == 0)
			continue;
		if (strcmp(argv[i], "--backend") == 0) {
			d.backend = argv[i + 1];
			continue;
		}
		fprintf(stderr, "usage: boundary-bench [--cycles N] [--backend NAME]\n");
		return 2;
	}
	double *t = calloc(cycles, sizeof(*t));
	if (!t)
		return 1;
	int fds_before = count_fds();
	for (uint64_t i = 0; i < cycles; i++) {
		double t0 = now_ms();
		if (cycle(&d, &err) < 0) {
			fprintf(stderr, "boundary-bench: cycle %llu: %s\n", (unsigned long long)i,
				err.msg);
			free(t);
			return 1;
		}
		t[i] = now_ms() - t0;
	}
	int fds_after = count_fds();
	qsort(t, cycles, sizeof(*t), cmp_double);
	printf("{\"cycles\":%llu,\"median_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f,"
	       "\"fds_before\":%d,\"fds_after\":%d}\n",
	       (unsigned long long)cycles, t[cycles / 2], t[0], t[cycles - 1], fds_before,
	       fds_after);
	free(t);
	return 0;
}
