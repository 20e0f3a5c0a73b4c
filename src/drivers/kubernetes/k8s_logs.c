/* k8s_logs.c - `openshell sandbox logs` for Kubernetes sandboxes, from the
 * kubelet through the API (pods/log), never on the gateway's loop: each
 * request gets a pipe whose read end the gateway streams (non-blocking, as
 * it streams a local sandbox's log file) and a detached thread, on its own
 * client, that copies GET .../pods/POD/log (follow=true when following)
 * into the write end. The thread ends when the log does (the container
 * ended, or all of it was sent), when the reader went away (EPIPE), or at a
 * bounded time without follow. Which log: the agent's (the combined Pod's
 * container, which carries the supervisor's lines too, as a local
 * sandbox's log does; the workload Pod's in dedicated-supervisor), or with
 * audit the supervisor's decision records (its JSON lines with "event").
 * Why the API and not the supervisor's session: in dedicated-supervisor
 * the agent's output never passes the supervisor, and the kubelet already
 * keeps it; the chart's RBAC grants pods/log for this (docs/kubernetes.md). */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "k8s_client_internal.h"
#include "k8s_driver.h"
#include "log.h"
#include "parse.h"

#define LOG_STREAMS_MAX 16 /* concurrent log requests; more: EBUSY */
#define LOG_ONCE_TIMEOUT_MS 30000 /* a whole log without follow */
#define AUDIT_LINE_MAX (256 * 1024) /* an audit line longer than this is dropped */

static atomic_int streams;

struct log_job {
	struct k8s_client *client;
	char path[768];
	int fd; /* the pipe's write end */
	bool audit; /* only the supervisor's decision records */
	bool follow;
	struct buf line; /* audit: the line being read */
	bool failed;
};

static bool write_all_or_stop(struct log_job *j, const char *p, size_t n)
{
	os_error err = { 0 };
	if (fd_write_all(j->fd, p, n, &err) == 0)
		return true;
	j->failed = true; /* EPIPE: the client went away */
	return false;
}

/* Audit: whole lines only, and only decision records (JSON with "event"). */
static bool pass_audit(struct log_job *j, const char *p, size_t n)
{
	if (buf_append(&j->line, p, n, NULL) < 0)
		buf_reset(&j->line); /* an over-long line: dropped, not split */
	char *nl;
	while (j->line.data && (nl = memchr(j->line.data, '\n', j->line.len))) {
		size_t len = (size_t)(nl - j->line.data) + 1;
		bool record = len > 7 && !memcmp(j->line.data, "{\"ts\":", 6) &&
			      memmem(j->line.data, len, "\"event\"", 7);
		if (record && !write_all_or_stop(j, j->line.data, len))
			return false;
		buf_consume(&j->line, len);
	}
	return true;
}

static size_t on_log(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct log_job *j = ud;
	size_t n = size * nmemb;
	bool ok = j->audit ? pass_audit(j, ptr, n) : write_all_or_stop(j, ptr, n);
	return ok ? n : 0; /* 0 aborts the transfer */
}

static void *log_main(void *arg)
{
	struct log_job *j = arg;
	os_error err = { 0 };
	struct curl_slist *hdrs = NULL;
	/* Following: as long as the container runs (the API ends the stream
	 * when it ends); once: a bounded read of what there is. */
	CURL *h = k8s_easy(j->client, "GET", j->path, j->follow ? 0 : LOG_ONCE_TIMEOUT_MS, &hdrs,
			   &err);
	if (h) {
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_log);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, j);
		curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
		CURLcode cc = curl_easy_perform(h);
		if (cc != CURLE_OK && !j->failed) {
			long http = 0;
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
			char msg[256];
			int w = snprintf(
				msg, sizeof msg, "openshell: reading the Pod's log failed: %s%s\n",
				curl_easy_strerror(cc),
				http ? " (the API refused it; see the gateway's log)" : "");
			if (w > 0)
				write_all_or_stop(j, msg,
						  (size_t)w < sizeof msg ? (size_t)w
									 : sizeof msg - 1);
			log_warn("kubernetes: GET %s: %s (HTTP %ld)", j->path,
				 curl_easy_strerror(cc), http);
		}
		curl_easy_cleanup(h);
	} else {
		log_warn("kubernetes: log of %s: %s", j->path, err.msg);
	}
	curl_slist_free_all(hdrs);
	close(j->fd);
	k8s_client_free(j->client);
	buf_free(&j->line);
	free(j);
	atomic_fetch_sub(&streams, 1);
	return NULL;
}

/* The Pod and container whose log is asked for. */
static int log_source(struct k8s_driver *k, const json_t *record, bool audit, char *pod,
		      size_t pcap, const char **container, os_error *err)
{
	const char *topo = json_string_value(
		json_object_get(json_object_get(record, "placement"), "topology"));
	bool dedicated = topo && !strcmp(topo, "dedicated-supervisor");
	/* A combined Pod's one container log carries the agent's own output
	 * beside the supervisor's records: an agent could print lines that look
	 * like decision records, so they are never offered as the audit. */
	if (audit && !dedicated)
		return os_error_set(
			err, ENOTSUP,
			"--audit is not available in the combined topology: the Pod's "
			"log mixes the agent's output with the supervisor's records, so "
			"they cannot be told apart (read the supervisor's records with "
			"the dedicated-supervisor topology)");
	*container = dedicated && audit ? "supervisor" : "agent";
	return k8s_object_name(record,
			       dedicated ? (audit ? "-supervisor" : "-workload") : "-sandbox", pod,
			       pcap, err);
}

int k8s_logs(struct driver *d, const json_t *record, bool audit, bool follow, int *fd,
	     os_error *err)
{
	struct k8s_driver *k = (struct k8s_driver *)d;
	char coll[512], pod[96];
	const char *container = "agent";
	if (k8s_collection(k, &k8s_kinds[0], coll, sizeof coll, err) < 0 ||
	    log_source(k, record, audit, pod, sizeof pod, &container, err) < 0)
		return -1;
	if (atomic_fetch_add(&streams, 1) >= LOG_STREAMS_MAX) {
		atomic_fetch_sub(&streams, 1);
		return os_error_set(err, EBUSY, "%d log streams are open already; try again later",
				    LOG_STREAMS_MAX);
	}
	struct log_job *j = calloc(1, sizeof *j);
	int p[2] = { -1, -1 };
	if (!j ||
	    str_format(j->path, sizeof j->path, err, "%s/%s/log?container=%s%s", coll, pod,
		       container, follow ? "&follow=true" : "") < 0 ||
	    pipe2(p, O_CLOEXEC) < 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) < 0) {
		if (!err->msg[0])
			os_error_errno(err, "log stream");
		goto fail;
	}
	j->fd = p[1];
	j->audit = audit;
	j->follow = follow;
	buf_init(&j->line, AUDIT_LINE_MAX);
	if (!(j->client = k8s_host_client(err)))
		goto fail;
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &attr, log_main, j);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		os_error_errno(err, "starting a log stream");
		k8s_client_free(j->client);
		goto fail;
	}
	*fd = p[0];
	return 0;
fail:
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	free(j);
	atomic_fetch_sub(&streams, 1);
	return -1;
}
