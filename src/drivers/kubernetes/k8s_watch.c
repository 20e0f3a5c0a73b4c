/* k8s_watch.c - streaming watches (one JSON event per line) with
 * resourceVersion tracking, bookmarks and 410 Gone, and "wait until" on top.
 * It never trusts an event's size: each line is capped, and a malformed
 * line ends the watch with an error rather than being skipped. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cleanup.h"
#include "json.h"
#include "k8s_client_internal.h"
#include "parse.h"

int k8s_watch_parse_line(const char *line, size_t len, json_t **root, const char **type,
			 json_t **object, os_error *err)
{
	*root = json_parse_strict(line, len, K8S_WATCH_LINE_MAX, err);
	if (!*root)
		return os_error_prefix(err, "watch event");
	*type = json_string_value(json_object_get(*root, "type"));
	*object = json_object_get(*root, "object");
	if (!json_is_object(*root) || !*type || !json_is_object(*object)) {
		json_decref(*root);
		*root = NULL;
		return os_error_set(err, EPROTO,
				    "watch event: expected {\"type\": string, \"object\": object}");
	}
	return 0;
}

struct watch_state {
	CURL *h;
	struct buf line;
	char *rv;
	size_t rv_cap;
	k8s_watch_fn fn;
	void *ctx;
	int outcome; /* 0 running, 1 stopped by fn, K8S_WATCH_GONE, -1 error */
	long http;
	os_error *err;
};

static void note_rv(struct watch_state *w, const json_t *obj)
{
	const char *rv = json_string_value(
		json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	if (rv && strlen(rv) < w->rv_cap)
		memcpy(w->rv, rv, strlen(rv) + 1);
}

static int handle_event(struct watch_state *w, const char *line, size_t len)
{
	_cleanup_json_ json_t *root = NULL;
	const char *type;
	json_t *obj;
	if (k8s_watch_parse_line(line, len, &root, &type, &obj, w->err) < 0)
		return -1;
	if (strcmp(type, "ERROR") == 0) {
		json_int_t code = json_integer_value(json_object_get(obj, "code"));
		if (code == 410)
			return K8S_WATCH_GONE;
		const char *msg = json_string_value(json_object_get(obj, "message"));
		return os_error_set(w->err, EIO, "watch: error %lld: %s", (long long)code,
				    msg ? msg : "(no message)");
	}
	note_rv(w, obj);
	if (strcmp(type, "BOOKMARK") == 0)
		return 0;
	return w->fn(w->ctx, type, obj, w->err);
}

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct watch_state *w = ud;
	size_t n = size * nmemb;
	if (!w->http)
		curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->http);
	if (buf_append(&w->line, ptr, n, w->err) < 0) {
		w->outcome = -1;
		return 0;
	}
	if (w->http != 200)
		return n; /* an error Status: collected whole, read after the call */
	char *nl;
	while ((nl = memchr(w->line.data, '\n', w->line.len))) {
		size_t len = (size_t)(nl - w->line.data);
		int r = len ? handle_event(w, w->line.data, len) : 0;
		buf_consume(&w->line, len + 1);
		if (r != 0) {
			w->outcome = r;
			return 0; /* aborts the transfer */
		}
	}
	return n;
}

int k8s_watch(struct k8s_client *c, const char *collection, char *resource_version, size_t rv_cap,
	      long timeout_s, k8s_watch_fn fn, void *ctx, os_error *err)
{
	_cleanup_free_ char *path = NULL;
	char rv_q[256];
	struct curl_slist *hdrs = NULL;
	struct watch_state w = {
		.rv = resource_version, .rv_cap = rv_cap, .fn = fn, .ctx = ctx, .err = err
	};
	if (k8s_query_escape(resource_version, rv_q, sizeof rv_q, err) < 0 ||
	    asprintf(&path, "%s%cwatch=1&allowWatchBookmarks=true&timeoutSeconds=%ld%s%s",
		     collection, strchr(collection, '?') ? '&' : '?', timeout_s,
		     *rv_q ? "&resourceVersion=" : "", rv_q) < 0)
		return os_error_set(err, ENOMEM, "watch %s: cannot build the path", collection);
	w.h = k8s_easy(c, "GET", path, (timeout_s + 15) * 1000, &hdrs, err);
	if (!w.h) {
		curl_slist_free_all(hdrs);
		return -1;
	}
	buf_init(&w.line, K8S_WATCH_LINE_MAX);
	curl_easy_setopt(w.h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(w.h, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(w.h, CURLOPT_WRITEDATA, &w);
	CURLcode cc = curl_easy_perform(w.h);
	curl_easy_getinfo(w.h, CURLINFO_RESPONSE_CODE, &w.http);
	curl_easy_cleanup(w.h);
	curl_slist_free_all(hdrs);
	int result = w.outcome;
	if (result == 0 && cc != CURLE_OK)
		result = os_error_set(err, EIO, "watch %s: %s", collection, curl_easy_strerror(cc));
	else if (result == 0 && w.http == 410)
		result = K8S_WATCH_GONE;
	else if (result == 0 && w.http != 200) {
		struct k8s_status st;
		k8s_status_from_body(w.http, w.line.data, w.line.len, &st);
		result = os_error_set(err, EIO, "watch %s: HTTP %ld %s: %s", collection, w.http,
				      st.reason, st.message);
	}
	buf_free(&w.line);
	return result < 0 ? -1 : result;
}

/* ---- wait for one object ---- */

struct wait_ctx {
	k8s_cond_fn cond;
	void *ctx;
};

static int wait_event(void *ud, const char *type, const json_t *obj, os_error *err)
{
	struct wait_ctx *wc = ud;
	return wc->cond(wc->ctx, strcmp(type, "DELETED") == 0 ? NULL : obj, err);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Lists the one object; 1 done, 0 not yet (rv set for the watch), < 0 error. */
static int wait_list(struct k8s_client *c, const char *collection, const char *sel,
		     struct wait_ctx *wc, char *rv, size_t rv_cap, os_error *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_json_ json_t *list = NULL;
	if (asprintf(&path, "%s%cfieldSelector=%s", collection, strchr(collection, '?') ? '&' : '?',
		     sel) < 0)
		return os_error_set(err, ENOMEM, "wait: out of memory");
	if (k8s_call(c, "GET", path, NULL, NULL, &list, NULL, err) < 0)
		return -1;
	const char *lrv = json_string_value(
		json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
	json_t *items = json_object_get(list, "items");
	if (!lrv || strlen(lrv) >= rv_cap || (items && !json_is_array(items)))
		return os_error_set(err, EPROTO, "GET %s: not a list answer", path);
	memcpy(rv, lrv, strlen(lrv) + 1);
	return wc->cond(wc->ctx, json_array_size(items) ? json_array_get(items, 0) : NULL, err);
}

int k8s_wait_object(struct k8s_client *c, const char *collection, const char *name,
		    k8s_cond_fn cond, void *ctx, long timeout_ms, os_error *err)
{
	char sel[512], q[512], rv[128] = "";
	struct wait_ctx wc = { cond, ctx };
	_cleanup_free_ char *wpath = NULL;
	long deadline = now_ms() + timeout_ms;
	if (str_format(sel, sizeof sel, err, "metadata.name=%s", name) < 0 ||
	    k8s_query_escape(sel, q, sizeof q, err) < 0)
		return -1;
	if (asprintf(&wpath, "%s%cfieldSelector=%s", collection,
		     strchr(collection, '?') ? '&' : '?', q) < 0)
		return os_error_set(err, ENOMEM, "wait: out of memory");
	bool relist = true;
	for (;;) {
		if (relist) {
			int r = wait_list(c, collection, q, &wc, rv, sizeof rv, err);
			if (r != 0)
				return r < 0 ? -1 : 0;
			relist = false;
		}
		long left = deadline - now_ms();
		if (left <= 0)
			return os_error_set(err, ETIMEDOUT, "timed out after %ld ms waiting for %s",
					    timeout_ms, name);
		int r = k8s_watch(c, wpath, rv, sizeof rv, (left + 999) / 1000, wait_event, &wc,
				  err);
		if (r < 0)
			return -1;
		if (r == 1)
			return 0;
		relist = r == K8S_WATCH_GONE; /* expired: start over from a fresh list */
	}
}
