/* k8s_client.c - one REST call to the Kubernetes API over libcurl: TLS with
 * the cluster CA, client certificate or bearer token, a timeout on every call,
 * bounded answers, retries with backoff on 429/5xx, readable API errors.
 * It never retries a write that may have been applied (a POST only on 429). */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cleanup.h"
#include "json.h"
#include "k8s_client_internal.h"
#include "log.h"
#include "parse.h"

static void curl_slist_freep(struct curl_slist **l)
{
	curl_slist_free_all(*l);
}
#define _cleanup_slist_ __attribute__((cleanup(curl_slist_freep)))

struct k8s_client *k8s_client_new(struct k8s_creds *creds, const struct k8s_client_opts *opts,
				  os_error *err)
{
	struct k8s_client *c = calloc(1, sizeof *c);
	if (!c) {
		k8s_creds_free(creds);
		os_error_set(err, ENOMEM, "kubernetes client: out of memory");
		return NULL;
	}
	c->creds = *creds; /* ownership moves into the client */
	memset(creds, 0, sizeof *creds);
	c->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 30000;
	c->connect_timeout_ms = opts && opts->connect_timeout_ms ? opts->connect_timeout_ms : 5000;
	c->backoff_ms = opts && opts->backoff_ms ? opts->backoff_ms : 200;
	c->max_retry_wait_ms = opts && opts->max_retry_wait_ms ? opts->max_retry_wait_ms : 10000;
	c->call_budget_ms = opts ? opts->call_budget_ms : 0;
	if (!c->creds.server) {
		k8s_client_free(c);
		os_error_set(err, EINVAL, "kubernetes client: no server address");
		return NULL;
	}
	/* One connection for a whole lifecycle instead of a TLS handshake per call.
	 * The client is used by one thread at a time, so no share locks. */
	c->share = curl_share_init();
	if (!c->share || curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) ||
	    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION)) {
		k8s_client_free(c);
		os_error_set(err, ENOMEM, "kubernetes client: cannot set up the connection cache");
		return NULL;
	}
	return c;
}

void k8s_client_free(struct k8s_client *c)
{
	if (!c)
		return;
	if (c->share)
		curl_share_cleanup(c->share);
	k8s_creds_free(&c->creds);
	free(c);
}

const struct k8s_creds *k8s_client_creds(const struct k8s_client *c)
{
	return &c->creds;
}

unsigned long k8s_client_calls(const struct k8s_client *c)
{
	return c->calls;
}

static void set_blob(CURL *h, CURLoption opt, const struct k8s_blob *b)
{
	struct curl_blob blob = { .data = b->data, .len = b->len, .flags = CURL_BLOB_COPY };
	curl_easy_setopt(h, opt, &blob);
}

/* A configured easy handle for one request; headers owned by the caller. */
CURL *k8s_easy(struct k8s_client *c, const char *method, const char *path, long timeout_ms,
	       struct curl_slist **headers, os_error *err)
{
	_cleanup_free_ char *url = NULL;
	CURL *h = curl_easy_init();
	if (!h || asprintf(&url, "%s%s", c->creds.server, path) < 0) {
		if (h)
			curl_easy_cleanup(h);
		os_error_set(err, ENOMEM, "%s %s: cannot set up the request", method, path);
		return NULL;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_PROXY, ""); /* never through an ambient proxy */
	curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	/* HTTP/1.1: one request per connection at a time, and an error answer
	 * sent before the body is read still arrives whole. */
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (c->creds.ca.data)
		set_blob(h, CURLOPT_CAINFO_BLOB, &c->creds.ca);
	if (c->creds.cert.data) {
		set_blob(h, CURLOPT_SSLCERT_BLOB, &c->creds.cert);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		set_blob(h, CURLOPT_SSLKEY_BLOB, &c->creds.key);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	*headers = curl_slist_append(*headers, "Accept: application/json");
	if (c->creds.token.data) {
		_cleanup_free_ char *auth = NULL;
		if (asprintf(&auth, "Authorization: Bearer %s", c->creds.token.data) < 0) {
			curl_easy_cleanup(h);
			os_error_set(err, ENOMEM, "%s %s: out of memory", method, path);
			return NULL;
		}
		*headers = curl_slist_append(*headers, auth);
		explicit_bzero(auth, strlen(auth));
	}
	c->calls++;
	return h;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;
	return buf_append(b, ptr, n, NULL) < 0 ? 0 : n;
}

struct answer {
	long http;
	long retry_after_s;
	struct buf body;
};

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct answer *a = ud;
	size_t n = size * nmemb;
	static const char name[] = "retry-after:";
	if (n > sizeof name && str_ieq(ptr, sizeof name - 1, name, sizeof name - 1)) {
		const char *v = ptr + sizeof name - 1;
		size_t len = n - (sizeof name - 1);
		while (len && (*v == ' ' || *v == '\t'))
			v++, len--;
		while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
			len--;
		uint64_t s;
		if (parse_u64(v, len, 0, 60, &s, NULL) == 0)
			a->retry_after_s = (long)s;
	}
	return n;
}

/* One attempt; 0 with a->http set when an answer arrived, else -1. */
static int attempt(struct k8s_client *c, const char *method, const char *path, const char *body,
		   const char *content_type, struct answer *a, CURLcode *cc, os_error *err)
{
	_cleanup_slist_ struct curl_slist *hdrs = NULL;
	CURL *h = k8s_easy(c, method, path, c->timeout_ms, &hdrs, err);
	char ct[128];
	if (!h)
		return -1;
	if (body) {
		snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
		hdrs = curl_slist_append(hdrs, ct);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &a->body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	*cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->http);
	curl_easy_cleanup(h);
	if (*cc == CURLE_WRITE_ERROR)
		return os_error_set(err, EMSGSIZE, "%s %s: answer larger than %u bytes", method,
				    path, K8S_RESPONSE_MAX);
	/* A server may refuse (401, 403) and close before reading our body: its
	 * answer is still the most useful thing to report. */
	if (*cc != CURLE_OK && a->http >= 400 && a->body.len) {
		*cc = CURLE_OK;
		return 0;
	}
	if (*cc != CURLE_OK)
		return os_error_set(err, EIO, "%s %s: %s (server %s)", method, path,
				    curl_easy_strerror(*cc), c->creds.server);
	return 0;
}

/* 429 means "not processed, come back"; a 5xx to a POST may have been applied
 * (a 504 after the write), so only idempotent methods retry those. */
static bool retryable(const char *method, long http)
{
	if (http == 429)
		return true;
	if (strcmp(method, "POST") == 0)
		return false;
	return http == 500 || http == 502 || http == 503 || http == 504;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Maps an HTTP status to an errno-style code for callers that only look there. */
static int status_errno(long http)
{
	switch (http) {
	case 400:
	case 422:
		return EINVAL;
	case 401:
	case 403:
		return EACCES;
	case 404:
		return ENOENT;
	case 409:
		return EEXIST;
	case 410:
		return ESTALE;
	case 429:
		return EBUSY;
	default:
		return EIO;
	}
}

static long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Why a retry happens, in the log: the operator sees throttling (429 with
 * the server's Retry-After), server errors and timeouts as such. */
static void log_retry(const char *method, const char *path, const struct answer *a, CURLcode cc,
		      int attempt_no, long wait_ms)
{
	if (a->http == 429)
		log_warn("kubernetes: %s %s: HTTP 429 Too Many Requests (Retry-After %s%ld s): "
			 "retry %d of %d in %ld ms",
			 method, path, a->retry_after_s >= 0 ? "" : "none, backoff ",
			 a->retry_after_s >= 0 ? a->retry_after_s : 0, attempt_no, K8S_RETRIES,
			 wait_ms);
	else if (a->http >= 500)
		log_warn("kubernetes: %s %s: HTTP %ld: retry %d of %d in %ld ms", method, path,
			 a->http, attempt_no, K8S_RETRIES, wait_ms);
	else
		log_warn("kubernetes: %s %s: %s: retry %d of %d in %ld ms", method, path,
			 curl_easy_strerror(cc), attempt_no, K8S_RETRIES, wait_ms);
}

static long mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Projected tokens rotate well within an hour: re-read the file each minute. */
static int refresh_token(struct k8s_client *c, os_error *err)
{
	if (!c->creds.token.path || mono_s() - c->token_read_s < 60)
		return 0;
	if (c->token_read_s && k8s_creds_refresh_token(&c->creds, err) < 0)
		return -1;
	c->token_read_s = mono_s();
	return 0;
}

int k8s_call(struct k8s_client *c, const char *method, const char *path, const json_t *body,
	     const char *content_type, json_t **out, struct k8s_status *st, os_error *err)
{
	_cleanup_free_ char *text = body ? json_to_string(body) : NULL;
	struct k8s_status local;
	struct answer a = { 0 };
	CURLcode cc = CURLE_OK;
	long delay = c->backoff_ms;
	int r = -1;
	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);
	if (refresh_token(c, err) < 0)
		return -1;
	if (body && !text)
		return os_error_set(err, ENOMEM, "%s %s: cannot serialise the body", method, path);
	long deadline = c->call_budget_ms ? mono_ms() + c->call_budget_ms : 0;
	for (int i = 0;; i++) {
		buf_init(&a.body, K8S_RESPONSE_MAX);
		a.http = 0;
		a.retry_after_s = -1;
		r = attempt(c, method, path, text, content_type ? content_type : "application/json",
			    &a, &cc, err);
		bool connect_failed = r < 0 && cc == CURLE_COULDNT_CONNECT;
		if (i >= K8S_RETRIES || !(connect_failed || (r == 0 && retryable(method, a.http))))
			break;
		long wait = a.retry_after_s >= 0 ? a.retry_after_s * 1000 : delay;
		if (wait > c->max_retry_wait_ms)
			wait = c->max_retry_wait_ms;
		/* Out of budget: the last answer stands (a 429 is reported as such). */
		if (deadline && mono_ms() + wait >= deadline)
			break;
		log_retry(method, path, &a, cc, i + 1, wait);
		buf_free(&a.body);
		sleep_ms(wait);
		delay *= 2;
	}
	_cleanup_buf_ struct buf resp = a.body;
	if (r < 0)
		return -1;
	st->http = a.http;
	if (a.http < 200 || a.http > 299) {
		k8s_status_from_body(a.http, resp.data, resp.len, st);
		return os_error_set(err, status_errno(a.http), "%s %s: HTTP %ld %s: %s", method,
				    path, a.http, st->reason, st->message);
	}
	if (out) {
		*out = json_parse_strict(resp.data ? resp.data : "", resp.len, K8S_RESPONSE_MAX,
					 err);
		if (!*out)
			return os_error_prefix(err, "%s %s: answer", method, path);
	}
	return 0;
}

void k8s_status_from_body(long http, const char *body, size_t len, struct k8s_status *st)
{
	_cleanup_json_ json_t *j = NULL;
	st->http = http;
	st->reason[0] = st->message[0] = '\0';
	if (body && len)
		j = json_parse_strict(body, len, K8S_RESPONSE_MAX, NULL);
	const char *reason = j ? json_string_value(json_object_get(j, "reason")) : NULL;
	const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
	snprintf(st->reason, sizeof st->reason, "%s", reason ? reason : "");
	if (msg)
		snprintf(st->message, sizeof st->message, "%s", msg);
	else if (body && len) /* not a Status object: quote the start of the text */
		snprintf(st->message, sizeof st->message, "%.*s", (int)(len < 300 ? len : 300),
			 body);
	else
		snprintf(st->message, sizeof st->message, "(empty answer)");
	/* Control characters from the peer never reach a terminal or log line. */
	for (char *p = st->message; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	for (char *p = st->reason; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
}

int k8s_query_escape(const char *s, char *out, size_t cap, os_error *err)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
			     ch == '~';
		if (n + 4 > cap)
			return os_error_set(err, ENAMETOOLONG, "query value too long");
		if (plain) {
			out[n++] = (char)ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	out[n] = '\0';
	return 0;
}
