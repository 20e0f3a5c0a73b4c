/* nb_http.c - `netbench http`: a keep-alive HTTP/1.1 load client that is
 * independent of wrk, so the proxy benchmarks can check wrk's latency
 * figures. Each of C connections runs in its own thread, one request at a
 * time (GET, then the whole Content-Length answer), until N requests are
 * done in all; it prints requests/s, the mean, p50 and p99 latency and the
 * mean Little's law allows (C / rate), which a sound client's mean matches.
 * Through a proxy the request is absolute-form; the target may then be a
 * name, which only the proxy resolves. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "netbench.h"

#define NB_HTTP_CONNS_MAX 256
#define NB_HTTP_RESP_MAX 65536

struct worker {
	const struct nb_addr *dial;
	const char *request;
	size_t request_len;
	atomic_int_fast64_t *left; /* signed: it goes below 0 when done */
	double *lat; /* seconds, one per request done */
	uint64_t n, cap;
	os_error err;
	pthread_t th;
};

/* Content-Length of a complete head (0 when absent), -1 when malformed. */
static long long content_length(const char *head, size_t len)
{
	const char *p = head;
	while ((p = memchr(p, '\n', (size_t)(head + len - p))) != NULL) {
		p++;
		if ((size_t)(head + len - p) > 15 && !strncasecmp(p, "content-length:", 15)) {
			char *end = NULL;
			long long v = strtoll(p + 15, &end, 10);
			return end == p + 15 || v < 0 ? -1 : v;
		}
	}
	return 0;
}

/* One answer: the head, then its body; only 200 counts. */
static int read_answer(int fd, char *buf, os_error *err)
{
	size_t have = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, NB_HTTP_RESP_MAX - have);
		if (r <= 0)
			return os_error_set(err, r == 0 ? EPIPE : errno,
					    "the server closed or failed mid-answer");
		have += (size_t)r;
		char *end = memmem(buf, have, "\r\n\r\n", 4);
		if (!end) {
			if (have == NB_HTTP_RESP_MAX)
				return os_error_set(err, EMSGSIZE, "answer head too large");
			continue;
		}
		size_t head = (size_t)(end - buf) + 4;
		if (have < 12 || strncmp(buf, "HTTP/1.1 200", 12) != 0)
			return os_error_set(err, EPROTO, "answer is not a 200: %.40s", buf);
		long long body = content_length(buf, head);
		if (body < 0 || (unsigned long long)body > NB_HTTP_RESP_MAX - head)
			return os_error_set(err, EPROTO, "bad Content-Length");
		while (have < head + (size_t)body) {
			r = read(fd, buf + have, head + (size_t)body - have);
			if (r <= 0)
				return os_error_set(err, EPIPE, "the server closed mid-body");
			have += (size_t)r;
		}
		if (have != head + (size_t)body)
			return os_error_set(err, EPROTO, "bytes after the answer (pipelining?)");
		return 0;
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char *buf = malloc(NB_HTTP_RESP_MAX);
	int fd = buf ? nb_connect(w->dial, 30, &w->err) : -1;
	if (!buf)
		os_error_set(&w->err, ENOMEM, "out of memory");
	while (fd >= 0 && atomic_fetch_sub(w->left, 1) > 0) {
		double t0 = nb_now();
		if (write(fd, w->request, w->request_len) != (ssize_t)w->request_len) {
			os_error_set(&w->err, errno, "sending the request");
			break;
		}
		if (read_answer(fd, buf, &w->err) < 0)
			break;
		if (w->n < w->cap)
			w->lat[w->n++] = nb_now() - t0;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int nb_http(const struct nb_addr *target, const struct nb_addr *proxy, uint64_t requests,
	    unsigned conns, os_error *err)
{
	char req[512];
	if (conns == 0 || conns > NB_HTTP_CONNS_MAX)
		return os_error_set(err, EINVAL, "--conns: 1 to %d", NB_HTTP_CONNS_MAX);
	if (!proxy && target->sin.sin_family != AF_INET)
		return os_error_set(err, EINVAL,
				    "without --proxy the target must be an IPv4 literal");
	int n = snprintf(req, sizeof req, "GET %s%s/ HTTP/1.1\r\nHost: %s\r\n\r\n",
			 proxy ? "http://" : "", proxy ? target->text : "", target->text);
	if (n < 0 || (size_t)n >= sizeof req)
		return os_error_set(err, EINVAL, "target too long");
	atomic_int_fast64_t left = (int_fast64_t)requests;
	struct worker *w = calloc(conns, sizeof *w);
	double *all = calloc(requests, sizeof *all);
	if (!w || !all) {
		free(w);
		free(all);
		return os_error_set(err, ENOMEM, "out of memory for %llu latencies",
				    (unsigned long long)requests);
	}
	double t0 = nb_now();
	for (unsigned i = 0; i < conns; i++) {
		w[i] = (struct worker){ .dial = proxy ? proxy : target,
					.request = req,
					.request_len = (size_t)n,
					.left = &left,
					.lat = malloc(requests * sizeof(double)),
					.cap = requests };
		if (!w[i].lat || pthread_create(&w[i].th, NULL, work, &w[i]) != 0) {
			os_error_set(err, ENOMEM, "starting connection %u", i);
			conns = i;
			break;
		}
	}
	uint64_t done = 0;
	for (unsigned i = 0; i < conns; i++) {
		pthread_join(w[i].th, NULL);
		if (w[i].err.code && !err->code)
			*err = w[i].err;
		memcpy(all + done, w[i].lat, w[i].n * sizeof(double));
		done += w[i].n;
		free(w[i].lat);
	}
	double secs = nb_now() - t0;
	free(w);
	if (err->code || done == 0) {
		free(all);
		return err->code ? -1 : os_error_set(err, EIO, "no request completed");
	}
	double sum = 0;
	for (uint64_t i = 0; i < done; i++)
		sum += all[i];
	qsort(all, done, sizeof *all, cmp_double);
	double rate = (double)done / secs;
	printf("req/s=%.1f mean_ms=%.3f p50_ms=%.3f p99_ms=%.3f little_mean_ms=%.3f conns=%u "
	       "requests=%llu\n",
	       rate, sum / (double)done * 1e3, all[done / 2] * 1e3, all[done * 99 / 100] * 1e3,
	       (double)conns / rate * 1e3, conns, (unsigned long long)done);
	free(all);
	return 0;
}
