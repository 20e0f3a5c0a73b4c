/* driver_host.c - the gateway's side of every compute driver, through the
 * registry and the driver vtable only: the driver's event fd on the loop,
 * dispatch on wake-ups and every resync_ms, and a reconcile pass after each
 * change whose record updates are written back. It never touches a
 * driver's private state and never uses the store off the loop. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "driver_host.h"
#include "driver_registry.h"
#include "gateway.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "parse.h"

struct driver_host {
	struct loop_io *io;
	struct loop_timer *resync;
};

static const char *selected(const struct config *cfg)
{
	return str_or(config_get_string(cfg, "gateway", "default_driver"), "local");
}

static const struct driver_entry *find_entry(const struct config *cfg, os_error *err)
{
	const struct driver_entry *e = driver_registry_find(selected(cfg));
	if (!e)
		os_error_set(err, EINVAL,
			     "gateway.default_driver: unknown driver \"%s\" (known: %s)",
			     selected(cfg), driver_registry_names());
	return e;
}

int driver_host_open(struct gateway *gw, const struct config *cfg, os_error *err)
{
	const struct driver_entry *e = find_entry(cfg, err);
	struct driver_env env = { .state_dir = gw->state_dir };
	if (!e)
		return -1;
	gw->host = calloc(1, sizeof *gw->host);
	if (!gw->host)
		return os_error_set(err, ENOMEM, "driver host: out of memory");
	return e->open(cfg, &env, &gw->driver, err);
}

/* One reconcile over every sandbox the store knows; rows whose record the
 * driver changed (ungated, failed closed) are written back, then the
 * lifecycle pass turns that into the sandbox phase. */
static void reconcile_pass(struct gateway *gw)
{
	const char *name = gw->driver->ops->name;
	_cleanup_json_ json_t *rows = NULL, *before = json_array(), *report = NULL;
	os_error err = { 0 };
	if (!before || store_sandbox_list(gw->store, &rows, &err) < 0) {
		log_warn("%s reconcile: %s", name, err.msg);
		return;
	}
	size_t n = json_array_size(rows);
	_cleanup_free_ json_t **recs = calloc(n + 1, sizeof *recs);
	if (!recs)
		return;
	for (size_t i = 0; i < n; i++) {
		recs[i] = json_object_get(json_array_get(rows, i), "record");
		json_array_append_new(before, json_deep_copy(recs[i]));
	}
	int r = gw->driver->ops->reconcile(gw->driver, recs, n, &report, &err);
	bool changed = false;
	for (size_t i = 0; i < n; i++) {
		json_t *row = json_array_get(rows, i);
		os_error werr = { 0 };
		if (json_equal(json_array_get(before, i), recs[i]))
			continue;
		changed = true;
		/* ESTALE: an API call wrote the row meanwhile; the next pass sees it. */
		if (store_sandbox_update(gw->store, row, &werr) == 0)
			server_sandboxes_changed(gw);
		else if (werr.code != ESTALE)
			log_warn("%s reconcile: saving %s: %s", name,
				 json_string_value(json_object_get(row, "name")), werr.msg);
	}
	if (r < 0)
		log_warn("%s reconcile: %s", name, err.msg);
	size_t i;
	json_t *e;
	json_array_foreach (report, i, e) {
		_cleanup_free_ char *line = json_dumps(e, JSON_COMPACT);
		log_info("%s reconcile: %s", name, line ? line : "?");
	}
	if (changed)
		lifecycle_tick(gw);
}

static void dispatch(struct gateway *gw, unsigned why)
{
	os_error err = { 0 };
	int r = gw->driver->ops->dispatch(gw->driver, why, &err);
	if (r < 0)
		log_warn("%s driver: %s", gw->driver->ops->name, err.msg);
	else if (r > 0)
		reconcile_pass(gw);
}

static void on_event(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	dispatch(data, DRIVER_DISPATCH_EVENT);
}

static void on_resync(struct loop *l, struct loop_timer *t, void *data)
{
	dispatch(data, DRIVER_DISPATCH_RESYNC);
}

int driver_host_start(struct gateway *gw, os_error *err)
{
	const struct driver_ops *ops = gw->driver->ops;
	struct driver_host *h = gw->host;
	if (!ops->dispatch)
		return 0;
	/* lifecycle_start reconciled once but does not persist records. */
	dispatch(gw, DRIVER_DISPATCH_RESYNC);
	/* Started after the loop watches SIGTERM/SIGINT: a helper thread
	 * inherits the blocked mask, so the signals always reach the loop. */
	if (ops->host_start && ops->host_start(gw->driver, err) < 0)
		return -1;
	int fd = ops->event_fd ? ops->event_fd(gw->driver) : -1;
	if (fd >= 0 && loop_io_add(gw->loop, fd, LOOP_IN, 0, on_event, gw, &h->io, err) < 0)
		return -1;
	if (ops->resync_ms && loop_timer_add(gw->loop, ops->resync_ms, ops->resync_ms, on_resync,
					     gw, &h->resync, err) < 0)
		return -1;
	return 0;
}

void driver_host_free(struct gateway *gw)
{
	struct driver_host *h = gw->host;
	if (!h)
		return;
	if (h->io)
		loop_io_remove(h->io);
	if (h->resync)
		loop_timer_remove(h->resync);
	free(h);
	gw->host = NULL;
}

json_t *driver_host_health(struct gateway *gw)
{
	const struct driver_ops *ops = gw->driver->ops;
	return ops->health ? ops->health(gw->driver) : NULL;
}

static int check_gateway(const struct config *cfg, os_error *err)
{
	enum log_level lvl;
	const char *ll = config_get_string(cfg, "gateway", "log_level");
	if (ll && log_level_parse(ll, &lvl) < 0)
		return os_error_set(
			err, EINVAL,
			"gateway.log_level: '%s' is not one of debug, info, warn, error", ll);
	return 0;
}

int driver_host_check_config(const struct config *cfg, json_t **report, os_error *err)
{
	const struct driver_entry *e;
	struct driver_env env = { .state_dir = config_get_string(cfg, "gateway", "state_dir") };
	_cleanup_json_ json_t *sub = NULL;
	int r = check_gateway(cfg, err);
	*report = json_pack("{s:b, s:s}", "ok", false, "driver", selected(cfg));
	if (!*report)
		return os_error_set(err, ENOMEM, "out of memory");
	if (r < 0)
		return -1;
	if (!(e = find_entry(cfg, err)))
		return -1;
	r = e->check(cfg, &env, &sub, err);
	if (sub)
		json_object_set(*report, e->name, sub);
	json_object_set_new(*report, "ok", json_boolean(r == 0));
	return r;
}
