/* netbench.c - `netbench`, the load tool of the proxy benchmarks: argument
 * parsing and dispatch only. It talks to IPv4 literals it is given (loopback
 * or a namespace the benchmark created) and nothing else. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "netbench.h"
#include "parse.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: netbench serve-bulk ADDR PORT   each connection: \"N\\n\", then N bytes\n"
		"       netbench serve-http ADDR PORT   keep-alive HTTP/1.1, GET -> small body\n"
		"       netbench serve-rpc ADDR PORT    keep-alive JSON-RPC over HTTP POST\n"
		"       netbench serve-ws ADDR PORT     WebSocket echo (one connection at a time)\n"
		"       netbench bulk --connect ADDR:PORT [--proxy ADDR:PORT] --bytes N\n"
		"                      prints Gbit/s of one N-byte transfer\n"
		"       netbench ws --target ADDR:PORT [--proxy ADDR:PORT] --messages N\n"
		"                      prints messages/s of N echoed text messages\n"
		"       netbench http --target HOST:PORT [--proxy ADDR:PORT] --requests N\n"
		"                      [--conns C]  keep-alive GETs, one at a time per\n"
		"                      connection (default 16); prints req/s, mean, p50, p99\n"
		"       netbench idle --target ADDR:PORT --proxy ADDR:PORT --count N\n"
		"                      opens N CONNECT tunnels, prints \"ready N\", holds them\n"
		"                      until stdin reaches EOF\n"
		"Addresses are IPv4 literals; a target may be a name only with --proxy\n"
		"(sent in the CONNECT line): netbench never resolves names.\n");
}

struct client_opts {
	struct nb_addr target, proxy;
	int has_target, has_proxy;
	uint64_t number;
	uint64_t conns;
};

static int parse_client(int argc, char **argv, const char *count_flag, struct client_opts *o,
			os_error *err)
{
	for (int i = 2; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return os_error_set(err, EINVAL, "%s needs a value", a);
		if (!strcmp(a, "--connect") || !strcmp(a, "--target")) {
			if (nb_target_parse(v, &o->target, err) < 0)
				return os_error_prefix(err, "%s", a);
			o->has_target = 1;
		} else if (!strcmp(a, "--proxy")) {
			if (nb_addr_parse(v, &o->proxy, err) < 0)
				return os_error_prefix(err, "--proxy");
			o->has_proxy = 1;
		} else if (!strcmp(a, "--conns") && !strcmp(argv[1], "http")) {
			if (parse_u64_str(v, 1, 256, &o->conns, err) < 0)
				return os_error_prefix(err, "--conns");
		} else if (!strcmp(a, count_flag)) {
			if (parse_u64_str(v, 1, UINT64_C(1) << 40, &o->number, err) < 0)
				return os_error_prefix(err, "%s", a);
		} else {
			return os_error_set(err, EINVAL, "unknown option %s", a);
		}
	}
	if (!o->has_target || !o->number)
		return os_error_set(err, EINVAL, "%s needs a target and %s", argv[1], count_flag);
	return 0;
}

static int run(int argc, char **argv, os_error *err)
{
	const char *mode = argv[1];
	struct client_opts o = { 0 };
	struct nb_addr a;
	if (!strcmp(mode, "serve-bulk") || !strcmp(mode, "serve-http") ||
	    !strcmp(mode, "serve-rpc") || !strcmp(mode, "serve-ws")) {
		if (argc != 4)
			return os_error_set(err, EINVAL, "%s needs ADDR PORT", mode);
		if (nb_addr_parse2(argv[2], argv[3], &a, err) < 0)
			return -1;
		return mode[6] == 'b'	? nb_serve_bulk(&a, err)
		       : mode[6] == 'h' ? nb_serve_http(&a, err)
		       : mode[6] == 'w' ? nb_serve_ws(&a, err)
					: nb_serve_rpc(&a, err);
	}
	if (!strcmp(mode, "bulk")) {
		if (parse_client(argc, argv, "--bytes", &o, err) < 0)
			return -1;
		return nb_bulk(&o.target, o.has_proxy ? &o.proxy : NULL, o.number, err);
	}
	if (!strcmp(mode, "ws")) {
		if (parse_client(argc, argv, "--messages", &o, err) < 0)
			return -1;
		return nb_ws(&o.target, o.has_proxy ? &o.proxy : NULL, o.number, err);
	}
	if (!strcmp(mode, "http")) {
		if (parse_client(argc, argv, "--requests", &o, err) < 0)
			return -1;
		return nb_http(&o.target, o.has_proxy ? &o.proxy : NULL, o.number,
			       o.conns ? (unsigned)o.conns : 16, err);
	}
	if (!strcmp(mode, "idle")) {
		if (parse_client(argc, argv, "--count", &o, err) < 0)
			return -1;
		if (!o.has_proxy || o.number > NB_MAX_CONNS)
			return os_error_set(err, EINVAL, "idle needs --proxy and --count <= %d",
					    NB_MAX_CONNS);
		return nb_idle(&o.target, &o.proxy, (unsigned)o.number, err);
	}
	return os_error_set(err, EINVAL, "unknown mode \"%s\"", mode);
}

int main(int argc, char **argv)
{
	os_error err = { 0 };
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage();
		return argc < 2 ? 2 : 0;
	}
	if (run(argc, argv, &err) < 0) {
		fprintf(stderr, "netbench %s: %s\n", argv[1], err.msg);
		if (err.code == EINVAL)
			usage();
		return 1;
	}
	return 0;
}
