/* denials.c - a fixed ring of the sandbox's recent denials (see denials.h). */
#include "denials.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct kept {
	char time[32];
	char error[40];
	char reason[48];
	char policy[96];
	char host[256];
	uint16_t port;
	char method[32];
	char path[512];
	char binary[256];
};

struct denials {
	struct kept ring[DENIALS_KEPT];
	uint64_t total; /* denials ever recorded; ring index = total % KEPT */
};

struct denials *denials_new(void)
{
	return calloc(1, sizeof(struct denials));
}

void denials_free(struct denials *d)
{
	free(d);
}

static void keep(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

void denials_record(struct denials *d, const struct denial *rec)
{
	if (!d)
		return;
	struct kept *k = &d->ring[d->total % DENIALS_KEPT];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(k->time, sizeof k->time, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	keep(k->error, sizeof k->error, rec->error);
	keep(k->reason, sizeof k->reason, rec->reason);
	keep(k->policy, sizeof k->policy, rec->policy);
	keep(k->host, sizeof k->host, rec->host);
	k->port = rec->port;
	keep(k->method, sizeof k->method, rec->method);
	keep(k->path, sizeof k->path, rec->path);
	keep(k->binary, sizeof k->binary, rec->binary);
	d->total++;
}

/* Empty fields are left out, as in the audit log. */
static void set_str(json_t *o, const char *key, const char *v)
{
	if (v[0])
		json_object_set_new(o, key, json_string(v));
}

json_t *denials_json(const struct denials *d, size_t last)
{
	json_t *list = json_array();
	uint64_t n = d->total < DENIALS_KEPT ? d->total : DENIALS_KEPT;
	if (n > last)
		n = last;
	for (uint64_t i = 0; list && i < n; i++) {
		const struct kept *k = &d->ring[(d->total - 1 - i) % DENIALS_KEPT];
		json_t *o = json_object();
		if (!o) {
			json_decref(list);
			return NULL;
		}
		set_str(o, "time", k->time);
		set_str(o, "error", k->error);
		set_str(o, "reason", k->reason);
		set_str(o, "policy", k->policy);
		set_str(o, "host", k->host);
		if (k->port)
			json_object_set_new(o, "port", json_integer(k->port));
		set_str(o, "method", k->method);
		set_str(o, "path", k->path);
		set_str(o, "binary", k->binary);
		json_array_append_new(list, o);
	}
	if (!list)
		return NULL;
	return json_pack("{s:o, s:I}", "denials", list, "dropped",
			 (json_int_t)(d->total > DENIALS_KEPT ? d->total - DENIALS_KEPT : 0));
}
