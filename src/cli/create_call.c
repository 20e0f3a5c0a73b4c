/* create_call.c - `sandbox create`'s POST, safe to repeat: it carries a
 * client request id, so when the answer is lost (the gateway died after
 * saving, or stalled) the CLI asks again and learns what happened instead
 * of guessing. Never reports "nothing happened" when something may have. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "cli.h"
#include "json.h"

static int new_request_id(char out[33])
{
	unsigned char raw[16];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* One POST; a transport error leaves *status 0 and says in err why. */
static json_t *post(struct cli *cli, const json_t *body, long *status, os_error *err)
{
	json_t *out = NULL;
	*status = 0;
	if (client_ensure(&cli->client, err) < 0 ||
	    client_call(&cli->client, "POST", "/v1/sandboxes", body, status, &out, err) < 0)
		return NULL;
	return out ? out : json_object();
}

static json_t *refused(json_t *out, long status)
{
	const char *msg = json_string_value(json_object_get(out, "message"));
	cli_fail("%s (HTTP %ld)", msg ? msg : "the gateway refused the request", status);
	json_decref(out);
	return NULL;
}

json_t *cli_create_call(struct cli *cli, json_t *body, bool *created)
{
	char rid[33];
	long status = 0;
	os_error first = { 0 }, again = { 0 };
	const char *name = json_string_value(json_object_get(body, "name"));
	*created = false;
	if (new_request_id(rid) < 0) {
		cli_fail("sandbox create: no random bytes for its request id: %s", strerror(errno));
		return NULL;
	}
	json_object_set_new(body, "client_request_id", json_string(rid));
	json_t *out = post(cli, body, &status, &first);
	/* Refused before anything was sent: nothing happened, say so. */
	if (!out && first.code == ECONNREFUSED) {
		cli_fail("%s", first.msg);
		return NULL;
	}
	if (!out) {
		/* Sent, but the answer was lost: ask again with the same id (a
		 * local gateway that died is started again and re-adopts). */
		fprintf(stderr,
			"openshell: the create was sent but no answer came (%s); asking again\n",
			first.msg);
		out = post(cli, body, &status, &again);
	}
	if (!out) {
		cli_fail(
			"sandbox %s%s%s: the create was sent, but its state is unknown because the "
			"gateway did not answer (%s) and still does not (%s); `openshell sandbox "
			"list` shows whether it exists once the gateway is back",
			name ? "\"" : "", name ? name : "(unnamed)", name ? "\"" : "", first.msg,
			again.msg);
		return NULL;
	}
	if (status < 200 || status >= 300)
		return refused(out, status);
	*created = true;
	return out;
}
