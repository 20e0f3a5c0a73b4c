/* main.c - openshell-gateway: reads the configuration (CLI > OPENSHELL_*
 * env > file > default), opens the state dir (database, keys, admin token,
 * all 0600), opens the driver the registry names (driver_host.c),
 * reconciles, and serves the API until SIGTERM/SIGINT. Sandboxes outlive
 * the gateway; a restart re-adopts them. --check-config FILE only checks
 * the configuration and the driver's view of it, and starts nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "fdutil.h"
#include "gateway.h"
#include "json.h"
#include "driver_host.h"
#include "log.h"
#include "trace.h"
#include "loop.h"
#include "parse.h"
#include "proctitle.h"
#include "state_lock.h"

extern char **environ;

static const char usage_text[] =
	"usage: openshell-gateway [--config FILE] [--listen ADDR:PORT|none]\n"
	"         [--unix-socket PATH] [--state-dir DIR] [--log-level LEVEL]\n"
	"         [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
	"         [--set SECTION.KEY=VALUE]...\n"
	"       openshell-gateway --check-config FILE [--set SECTION.KEY=VALUE]...\n"
	"Every key is also read from OPENSHELL_<SECTION>_<KEY> (docs/settings.md).\n"
	"--check-config validates FILE and the selected driver's section (a\n"
	"kubernetes one against the cluster, read-only), prints a JSON report\n"
	"on stdout and exits 0 (OK) or 1, without starting anything.\n";

/* On a log that is JSON lines (gateway.log), the usage is one record too. */
static void usage(FILE *f)
{
	if (f == stderr && log_is_json())
		log_info("%s", usage_text);
	else
		fputs(usage_text, f);
}

static int parse_args(int argc, char **argv, struct config *cfg, const char **check, os_error *err)
{
	static const char *const map[][2] = { { "--listen", "gateway.listen_address" },
					      { "--unix-socket", "gateway.unix_socket" },
					      { "--state-dir", "gateway.state_dir" },
					      { "--log-level", "gateway.log_level" },
					      { "--tls-cert", "gateway.tls_cert_file" },
					      { "--tls-key", "gateway.tls_key_file" },
					      { "--tls-client-ca", "gateway.tls_client_ca_file" } };
	const char *file = NULL;
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 >= argc)
			return os_error_set(err, EINVAL, "%s: missing value", argv[i]);
		const char *a = argv[i], *v = argv[i + 1], *key = NULL;
		for (size_t k = 0; k < ARRAY_SIZE(map); k++)
			if (!strcmp(a, map[k][0]))
				key = map[k][1];
		if (!strcmp(a, "--config") || !strcmp(a, "--check-config")) {
			if (file)
				return os_error_set(err, EINVAL,
						    "%s: a configuration file was "
						    "already given",
						    a);
			file = v;
			if (!strcmp(a, "--check-config"))
				*check = v;
			continue;
		}
		if (!strcmp(a, "--set")) {
			char name[256];
			const char *eq = strchr(v, '=');
			if (!eq || (size_t)(eq - v) >= sizeof(name))
				return os_error_set(err, EINVAL,
						    "--set %s: expected SECTION.KEY=VALUE", v);
			memcpy(name, v, (size_t)(eq - v));
			name[eq - v] = '\0';
			if (config_set_cli(cfg, name, eq + 1, err) < 0)
				return -1;
			continue;
		}
		if (!key)
			return os_error_set(err, EINVAL, "unknown option %s", a);
		if (config_set_cli(cfg, key, v, err) < 0)
			return -1;
	}
	if (file && config_load_file(cfg, file, err) < 0)
		return -1;
	return config_load_env(cfg, environ, err);
}

static int default_state_dir(char *out, size_t cap, os_error *err)
{
	const char *home = getenv("HOME");
	if (geteuid() == 0 || !home)
		return str_copy(out, cap, "/var/lib/openshell", err);
	return str_format(out, cap, err, "%s/.local/state/openshell", home);
}

static int open_state(struct gateway *gw, const struct config *cfg, int *lock_fd, os_error *err)
{
	const char *sd = config_get_string(cfg, "gateway", "state_dir");
	char path[PATH_MAX + 64];
	if (sd ? str_copy(gw->state_dir, sizeof(gw->state_dir), sd, err)
	       : default_state_dir(gw->state_dir, sizeof(gw->state_dir), err) < 0)
		return -1;
	/* 0711: agents (another uid) must traverse to their workspace; nothing
	 * here is listable, and every secret file is 0600. */
	if (dir_create_parents(gw->state_dir, 0711) < 0)
		return os_error_errno(err, "creating state dir %s", gw->state_dir);
	if (chmod(gw->state_dir, 0711) < 0)
		return os_error_errno(err, "chmod 0711 %s", gw->state_dir);
	/* Before anything in the directory is touched: it may be another's. */
	if (state_lock_take(gw->state_dir, lock_fd, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/secrets.key", gw->state_dir);
	if (secret_key_load_or_create(path, &gw->key, err) < 0)
		return -1;
	/* The operator's token (the Helm chart's Secret) or our own, made once. */
	const char *tf = config_get_string(cfg, "gateway", "admin_token_file");
	snprintf(path, sizeof(path), "%s/admin.token", gw->state_dir);
	if (tf ? secret_token_load(tf, gw->admin_token, err) < 0
	       : secret_token_load_or_create(path, gw->admin_token, err) < 0)
		return os_error_prefix(err, "admin token");
	snprintf(path, sizeof(path), "%s/gateway.db", gw->state_dir);
	return store_open(path, &gw->store, err);
}

static void on_signal(struct loop *l, struct loop_signal *s, const struct signalfd_siginfo *si,
		      void *data)
{
	log_info("signal %u: shutting down (sandboxes keep running)", si->ssi_signo);
	loop_stop(l);
}

static int serve(struct gateway *gw, const struct config *cfg, os_error *err)
{
	char sock[PATH_MAX + 32], pidf[PATH_MAX + 32], pid[32];
	const char *tcp = config_get_string(cfg, "gateway", "listen_address");
	const char *us = config_get_string(cfg, "gateway", "unix_socket");
	if (!us) {
		snprintf(sock, sizeof(sock), "%s/gateway.sock", gw->state_dir);
		us = sock;
	}
	if (tcp && (!strcmp(tcp, "none") || !*tcp))
		tcp = NULL;
	snprintf(gw->url, sizeof(gw->url), "unix:%s", us);
	struct gateway_listen ls = {
		.tcp = tcp,
		.unix_path = us,
		.tls_cert = config_get_string(cfg, "gateway", "tls_cert_file"),
		.tls_key = config_get_string(cfg, "gateway", "tls_key_file"),
		.tls_client_ca = config_get_string(cfg, "gateway", "tls_client_ca_file"),
	};
	if (loop_new(&gw->loop, err) < 0 ||
	    loop_signal_add(gw->loop, SIGTERM, on_signal, gw, NULL, err) < 0 ||
	    loop_signal_add(gw->loop, SIGINT, on_signal, gw, NULL, err) < 0 ||
	    server_start(gw, &ls, err) < 0 || lifecycle_start(gw, err) < 0 ||
	    driver_host_start(gw, err) < 0)
		return -1;
	snprintf(pidf, sizeof(pidf), "%s/gateway.pid", gw->state_dir);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (file_write_atomic(pidf, pid, strlen(pid), 0600, err) < 0)
		return -1;
	const char *tls = ls.tls_client_ca ? " (mTLS)" : ls.tls_cert ? " (TLS)" : "";
	log_info("openshell-gateway %s serving on %s%s%s%s (state %s)", GW_VERSION, tcp ? tcp : "",
		 tcp ? tls : "", tcp ? " and " : "", us, gw->state_dir);
	int rc = loop_run(gw->loop, err);
	unlink(pidf);
	unlink(us);
	return rc;
}

/* Only the configuration and what it names: the report on stdout, the
 * verdict (OK, or what is wrong and where) on stderr. */
static int check_config(const struct config *cfg, const char *file)
{
	os_error err = { 0 };
	_cleanup_json_ json_t *report = NULL;
	int r = driver_host_check_config(cfg, &report, &err);
	if (r < 0 && report)
		json_object_set_new(report, "error", json_string(err.msg));
	_cleanup_free_ char *text = report ? json_dumps(report, JSON_INDENT(2)) : NULL;
	if (text)
		printf("%s\n", text);
	if (r < 0) {
		fprintf(stderr, "openshell-gateway: %s: %s\n", file, err.msg);
		return 1;
	}
	fprintf(stderr, "openshell-gateway: %s: OK\n", file);
	return 0;
}

int main(int argc, char **argv)
{
	struct gateway gw = { 0 };
	os_error err = { 0 };
	const char *check = NULL;
	int code = 1;
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return usage(stdout), 0;
	if (argc == 2 && !strcmp(argv[1], "--version"))
		return printf("openshell-gateway %s\n", GW_VERSION) < 0;
	proctitle_init(argc, argv); /* before parsing: it copies nothing, argv stays ours */
	signal(SIGPIPE, SIG_IGN);
	/* Until the configured level is known: flag and config errors are records too. */
	log_init("openshell-gateway", LOG_LVL_INFO, LOG_FMT_AUTO, STDERR_FILENO);
	trace_init("gateway");
	struct config *cfg = config_new(config_sections_all, config_sections_all_len, &err);
	if (!cfg || parse_args(argc, argv, cfg, &check, &err) < 0) {
		if (check) { /* the file (or an override) is what is wrong */
			_cleanup_json_ json_t *rep =
				json_pack("{s:b, s:s}", "ok", false, "error", err.msg);
			_cleanup_free_ char *text = rep ? json_dumps(rep, JSON_INDENT(2)) : NULL;
			if (text)
				printf("%s\n", text);
			fprintf(stderr, "openshell-gateway: %s\n", err.msg);
			config_free(cfg);
			return 1;
		}
		fprintf(stderr, "openshell-gateway: %s\n", err.msg);
		usage(stderr);
		config_free(cfg);
		return 2;
	}
	enum log_level lvl = LOG_LVL_INFO;
	log_level_parse(str_or(config_get_string(cfg, "gateway", "log_level"), "info"), &lvl);
	log_init("openshell-gateway", lvl, LOG_FMT_AUTO, STDERR_FILENO);
	if (check) {
		code = check_config(cfg, check);
		config_free(cfg);
		return code;
	}
	_cleanup_close_ int lock_fd = -1; /* held until we exit */
	if (open_state(&gw, cfg, &lock_fd, &err) < 0 || driver_host_open(&gw, cfg, &err) < 0 ||
	    serve(&gw, cfg, &err) < 0)
		log_error("%s", err.msg);
	else
		code = 0;
	server_free(gw.server);
	if (gw.tick)
		loop_timer_remove(gw.tick);
	driver_host_free(&gw);
	loop_free(gw.loop);
	if (gw.driver)
		gw.driver->ops->free(gw.driver);
	store_close(gw.store);
	storage_faults_free(&gw);
	config_free(cfg);
	return code;
}
