/* test_boundary.c - unit tests of the isolation backend contract's typestate,
 * the nftables fence document, the subnet overlap rule and the NFLOG packet
 * parser. Kernel behaviour is covered by tests/integration/test_boundary_*.py. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "netlink.h"
#include "nflog.h"
#include "nft.h"

/* --- typestate, with a fake backend that records calls -------------------- */

static struct {
	int attach, confirm, start, teardown;
	bool fail_confirm;
} fake;

static int f_attach(const struct backend_descriptor *d, const struct backend_context *c, void **st,
		    os_error *err)
{
	fake.attach++;
	*st = &fake;
	return 0;
}
static int f_endpoint(void *st, struct sockaddr_storage *a, socklen_t *l)
{
	return 0;
}
static int f_confirm(void *st, os_error *err)
{
	fake.confirm++;
	return fake.fail_confirm ? os_error_set(err, EPERM, "fence broken") : 0;
}
static int f_start(void *st, const json_t *spec, os_error *err)
{
	fake.start++;
	return 0;
}
static void f_teardown(void *st)
{
	fake.teardown++;
}
static const struct backend_ops fake_ops = {
	.name = "fake",
	.attach = f_attach,
	.proxy_endpoint = f_endpoint,
	.confirm = f_confirm,
	.start_agent = f_start,
	.teardown = f_teardown,
};
static const struct backend_descriptor desc = { .backend = "fake",
						.sandbox_id = "sb-1",
						.proxy_port = 3128 };

static void lifecycle_advances_and_consumes_handles(void **state)
{
	memset(&fake, 0, sizeof(fake));
	struct backend_instance *inst = NULL;
	backend_bound b = { 0 };
	backend_ready r = { 0 };
	backend_running run = { 0 };
	os_error err = { 0 };
	assert_int_equal(backend_attach_ops(&fake_ops, &desc, NULL, &inst, &b, &err), 0);
	assert_string_equal(backend_state_name(inst), "bound");
	assert_int_equal(backend_confirm(&b, &r, &err), 0);
	assert_null(b.inst); /* consumed */
	assert_int_equal(backend_confirm(&b, &r, &err), -1); /* cannot confirm twice */
	assert_int_equal(backend_start_agent(&r, NULL, &run, &err), 0);
	assert_string_equal(backend_state_name(inst), "running");
	assert_int_equal(fake.start, 1);
	backend_teardown(&inst);
	backend_teardown(&inst); /* idempotent */
	assert_null(inst);
	assert_int_equal(fake.teardown, 1);
}

static void failed_confirm_never_starts_the_agent(void **state)
{
	memset(&fake, 0, sizeof(fake));
	fake.fail_confirm = true;
	struct backend_instance *inst = NULL;
	backend_bound b = { 0 };
	backend_ready r = { 0 };
	backend_running run = { 0 };
	os_error err = { 0 };
	assert_int_equal(backend_attach_ops(&fake_ops, &desc, NULL, &inst, &b, &err), 0);
	assert_int_equal(backend_confirm(&b, &r, &err), -1);
	assert_non_null(strstr(err.msg, "confirm (fake): fence broken"));
	assert_string_equal(backend_state_name(inst), "failed");
	/* Neither a retry nor a forged ready handle gets past the failure. */
	assert_int_equal(backend_confirm(&b, &r, &err), -1);
	backend_ready forged = { .inst = inst };
	assert_int_equal(backend_start_agent(&forged, NULL, &run, &err), -1);
	assert_int_equal(fake.start, 0);
	backend_teardown(&inst);
	assert_int_equal(fake.teardown, 1);
}

static void unknown_backend_and_bad_ids_are_refused(void **state)
{
	os_error err = { 0 };
	struct backend_instance *inst = NULL;
	backend_bound b = { 0 };
	struct backend_descriptor d = desc;
	d.backend = "nope";
	assert_int_equal(backend_attach(&d, NULL, &inst, &b, &err), -1);
	assert_non_null(strstr(err.msg, "unknown isolation backend 'nope'"));
	assert_non_null(backend_find("inpod"));
	assert_int_equal(backend_check_sandbox_id("sb_1.ok-2", &err), 0);
	assert_int_equal(backend_check_sandbox_id("bad id", &err), -1);
	assert_non_null(strstr(err.msg, "byte 3"));
	assert_int_equal(backend_check_sandbox_id("-x", &err), -1);
	assert_int_equal(backend_check_sandbox_id("", &err), -1);
}

/* --- subnet overlap ---------------------------------------------------------- */

static void prefixes_overlap_by_shorter_mask(void **state)
{
	uint32_t n = 0x0ac80300; /* 10.200.3.0 */
	assert_true(ipv4_prefixes_overlap(n, 24, 0x0ac80301, 32));
	assert_true(ipv4_prefixes_overlap(n, 24, 0x0a000000, 8));
	assert_false(ipv4_prefixes_overlap(n, 24, 0x0ac80400, 24));
	assert_false(ipv4_prefixes_overlap(n, 24, 0xc0000200, 24));
}

/* --- nftables fence document -------------------------------------------------- */

static struct nft_fence_spec fence(const char *prefix)
{
	struct nft_fence_spec s = { .proxy_port = 3128,
				    .log_prefix = prefix,
				    .nflog_group = 7,
				    .log_rate_per_sec = 20,
				    .log_burst = 40 };
	inet_pton(AF_INET, "10.200.0.1", &s.proxy_addr);
	return s;
}

static void fence_is_structural_and_complete(void **state)
{
	os_error err = { 0 };
	/* A hostile prefix stays a JSON string value: no extra rule appears. */
	struct nft_fence_spec s = fence("x\" ; flush ruleset ; \"");
	json_t *doc = nft_fence_ruleset(&s, &err);
	assert_non_null(doc);
	json_t *cmds = json_object_get(doc, "nftables");
	assert_int_equal(json_array_size(cmds), 4 + 7 + 3);
	char *text = json_dumps(doc, JSON_COMPACT);
	assert_non_null(strstr(text, "\"policy\":\"drop\""));
	assert_non_null(strstr(text, "\"right\":\"10.200.0.1\""));
	assert_non_null(strstr(text, "\"right\":3128"));
	assert_non_null(strstr(text, "\"type\":\"tcp reset\""));
	assert_non_null(strstr(text, "\"expr\":\"port-unreachable\""));
	assert_non_null(strstr(text, "\"family\":\"inet\"")); /* IPv4 and IPv6 alike */
	free(text);
	json_decref(doc);
}

static void fence_rejects_bad_spec(void **state)
{
	os_error err = { 0 };
	char longp[200];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	struct nft_fence_spec s = fence(longp);
	assert_null(nft_fence_ruleset(&s, &err));
	assert_non_null(strstr(err.msg, "log prefix"));
	s = fence("ok ");
	s.proxy_port = 0;
	assert_null(nft_fence_ruleset(&s, &err));
	s = fence("ok ");
	json_t *doc = nft_fence_ruleset(&s, &err); /* control */
	assert_non_null(doc);
	json_decref(doc);
}

/* The transparent path's nat chain: redirects only the listed ports, never
 * loopback or the supervisor's side of the veth, DNS over both transports,
 * and the accepts it inserts into the fence name exactly the listeners. */
static void redirect_is_narrow(void **state)
{
	os_error err = { 0 };
	struct nft_redirect_spec s = { .tcp_ports = { 80, 443 },
				       .n_tcp_ports = 2,
				       .tcp_to = 40001,
				       .dns_to = 40053,
				       .dns_tcp_to = 40054 };
	inet_pton(AF_INET, "10.200.0.1", &s.keep_addr);
	json_t *doc = nft_redirect_ruleset(&s, &err);
	assert_non_null(doc);
	/* chain, three inserted accepts, the TCP, the DNS-over-TCP and the DNS redirect */
	assert_int_equal(json_array_size(json_object_get(doc, "nftables")), 7);
	char *text = json_dumps(doc, JSON_COMPACT);
	assert_non_null(strstr(text, "\"type\":\"nat\""));
	assert_non_null(strstr(text, "\"op\":\"!=\",\"left\":{\"meta\":{\"key\":\"oifname\"}},"
				     "\"right\":\"lo\""));
	assert_non_null(strstr(text, "\"right\":\"10.200.0.1\""));
	assert_non_null(strstr(text, "\"set\":[80,443]"));
	assert_non_null(strstr(text, "{\"redirect\":{\"port\":40001}}"));
	assert_non_null(strstr(text, "{\"redirect\":{\"port\":40053}}"));
	/* TCP to 53 goes to the stub's TCP listener, before the listed ports' rule */
	const char *dns_tcp = strstr(text, "{\"redirect\":{\"port\":40054}}");
	assert_non_null(dns_tcp);
	assert_true(dns_tcp < strstr(text, "{\"redirect\":{\"port\":40001}}"));
	assert_non_null(strstr(text, "\"field\":\"dport\"}},\"right\":40054}"));
	assert_non_null(strstr(text, "\"right\":\"127.0.0.1\""));
	assert_null(strstr(text, "\"policy\":\"drop\"")); /* the fence is not redefined */
	free(text);
	json_decref(doc);
	/* No TCP ports: no TCP redirect, the DNS ones stay. */
	s.n_tcp_ports = 0;
	doc = nft_redirect_ruleset(&s, &err);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "nftables")), 6);
	json_decref(doc);
	/* A port 0, or ports without a listener, are refused. */
	s.n_tcp_ports = 2;
	s.tcp_ports[1] = 0;
	assert_null(nft_redirect_ruleset(&s, &err));
	s.tcp_ports[1] = 443;
	s.tcp_to = 0;
	assert_null(nft_redirect_ruleset(&s, &err));
}

/* --- NFLOG payload parser ----------------------------------------------------- */

static void parses_ipv4_tcp(void **state)
{
	uint8_t p[40] = { 0x45, 0,   0, 40, 0,	 0, 0x40, 0,  64,   6,	  0,	0,
			  10,	200, 0, 2,  203, 0, 113,  10, 0x9c, 0x40, 0x1f, 0x90 };
	struct nflog_packet pkt = { 0 };
	os_error err = { 0 };
	assert_int_equal(nflog_parse_payload(p, sizeof(p), &pkt, &err), 0);
	assert_int_equal(pkt.family, AF_INET);
	assert_string_equal(nflog_proto_name(pkt.proto), "tcp");
	assert_string_equal(pkt.dst, "203.0.113.10");
	assert_string_equal(pkt.src, "10.200.0.2");
	assert_true(pkt.has_ports);
	assert_int_equal(pkt.dport, 8080);
	assert_int_equal(pkt.sport, 40000);
}

static void rejects_truncated_or_lying_headers(void **state)
{
	uint8_t p[40] = { 0x45, 0, 0, 40, 0, 0, 0, 0, 64, 17, 0, 0, 10, 200, 0, 2, 1, 2, 3, 4 };
	struct nflog_packet pkt = { 0 };
	os_error err = { 0 };
	assert_int_equal(nflog_parse_payload(p, 19, &pkt, &err), -1);
	assert_non_null(strstr(err.msg, "IPv4 header truncated"));
	p[0] = 0x4f; /* IHL 60 > 22 bytes available */
	assert_int_equal(nflog_parse_payload(p, 22, &pkt, &err), -1);
	p[0] = 0x45; /* UDP header cut to 2 bytes */
	assert_int_equal(nflog_parse_payload(p, 22, &pkt, &err), -1);
	assert_non_null(strstr(err.msg, "udp header truncated"));
	p[0] = 0x75;
	assert_int_equal(nflog_parse_payload(p, 40, &pkt, &err), -1);
	assert_int_equal(nflog_parse_payload(p, 0, &pkt, &err), -1);
	p[0] = 0x45; /* control: the whole header parses */
	assert_int_equal(nflog_parse_payload(p, 28, &pkt, &err), 0);
}

static void parses_ipv6_udp(void **state)
{
	uint8_t p[48] = { 0x60, 0, 0, 0, 0, 8, 17, 64 };
	p[8] = 0xfd; /* src fd00::2, dst 2001:db8::1 */
	p[23] = 2;
	p[24] = 0x20;
	p[25] = 0x01;
	p[26] = 0x0d;
	p[27] = 0xb8;
	p[39] = 1;
	p[42] = 0;
	p[43] = 53;
	struct nflog_packet pkt = { 0 };
	os_error err = { 0 };
	assert_int_equal(nflog_parse_payload(p, sizeof(p), &pkt, &err), 0);
	assert_int_equal(pkt.family, AF_INET6);
	assert_string_equal(pkt.dst, "2001:db8::1");
	assert_int_equal(pkt.dport, 53);
	assert_int_equal(nflog_parse_payload(p, 39, &pkt, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lifecycle_advances_and_consumes_handles),
		cmocka_unit_test(failed_confirm_never_starts_the_agent),
		cmocka_unit_test(unknown_backend_and_bad_ids_are_refused),
		cmocka_unit_test(prefixes_overlap_by_shorter_mask),
		cmocka_unit_test(fence_is_structural_and_complete),
		cmocka_unit_test(fence_rejects_bad_spec),
		cmocka_unit_test(redirect_is_narrow),
		cmocka_unit_test(parses_ipv4_tcp),
		cmocka_unit_test(rejects_truncated_or_lying_headers),
		cmocka_unit_test(parses_ipv6_udp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
