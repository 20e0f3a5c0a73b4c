/* k8s_client_internal.h - the client's state, shared by k8s_client.c and
 * k8s_watch.c only. Nothing outside the client may touch these fields. */
#ifndef OS_K8S_CLIENT_INTERNAL_H
#define OS_K8S_CLIENT_INTERNAL_H

#include <curl/curl.h>

#include "k8s_client.h"

struct k8s_client {
	struct k8s_creds creds;
	long timeout_ms, connect_timeout_ms, backoff_ms, max_retry_wait_ms, call_budget_ms;
	unsigned long calls;
	CURLSH *share; /* connection and TLS session cache across calls */
	long token_read_s; /* CLOCK_MONOTONIC second the token file was read */
};

/* A configured easy handle (TLS, auth, timeouts) for one request; the caller
 * sets the rest, attaches *headers and frees both. Counts one call. */
CURL *k8s_easy(struct k8s_client *c, const char *method, const char *path, long timeout_ms,
	       struct curl_slist **headers, os_error *err);

#endif
