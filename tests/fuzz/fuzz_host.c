/* fuzz_host.c - libFuzzer target for host names, host patterns, IP literals
 * and CIDRs (the CONNECT authority and policy text reach these). Checks that
 * normalisation is a fixed point and that a glob never matches its bare domain. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostglob.h"
#include "ssrf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_host(const char *in, size_t len)
{
	char out[HOST_NAME_CAP], again[HOST_NAME_CAP];
	if (host_normalize(in, len, out, sizeof out, NULL) < 0)
		return;
	size_t n = strlen(out);
	if (n == 0 || out[n - 1] == '.' || memchr(in, '\0', len))
		abort(); /* an embedded NUL must never be accepted */
	for (size_t i = 0; i < n; i++) {
		if ((out[i] >= 'A' && out[i] <= 'Z') || (unsigned char)out[i] >= 0x80)
			abort();
	}
	if (host_normalize(out, n, again, sizeof again, NULL) < 0 || strcmp(out, again) != 0)
		abort();
	(void)host_is_metadata_name(out);
}

static void check_pattern(const char *in, size_t len)
{
	char pat[HOST_NAME_CAP], again[HOST_NAME_CAP];
	if (host_pattern_normalize(in, len, pat, sizeof pat, NULL) < 0)
		return;
	size_t n = strlen(pat);
	if (host_pattern_normalize(pat, n, again, sizeof again, NULL) < 0 || strcmp(pat, again))
		abort();
	if (pat[0] == '*') {
		const char *bare = strchr(pat, '.') + 1;
		if (host_pattern_match(pat, bare) || !strchr(bare, '.'))
			abort(); /* never the bare domain; always two labels */
	} else if (!host_pattern_match(pat, pat)) {
		abort();
	}
}

static void check_ip(const char *s)
{
	struct ip_addr a;
	struct cidr c;
	char buf[64];
	if (ip_addr_parse(s, &a, NULL) == 0) {
		if (ip_addr_format(&a, buf, sizeof buf) < 0)
			abort();
		(void)ip_addr_classify(&a, NULL);
		(void)ssrf_check(&a, 443, NULL, 0, NULL);
	}
	if (cidr_parse(s, &c, NULL) == 0) {
		(void)cidr_overlaps_always_blocked(&c);
		if (ip_addr_parse(s, &a, NULL) == 0 && !cidr_contains(&c, &a))
			abort(); /* a bare address is its own /32 or /128 */
		if (cidr_contains(&c, &c.addr) != true)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 512)
		return 0;
	char s[513];
	memcpy(s, data, size);
	s[size] = '\0';
	check_host(s, size);
	check_pattern(s, size);
	check_ip(s);
	return 0;
}
