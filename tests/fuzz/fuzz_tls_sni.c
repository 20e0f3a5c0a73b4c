/* fuzz_tls_sni.c - libFuzzer target for the ClientHello server-name reader
 * of L4 tunnels (tls_sni.c): the agent's first bytes reach it unfiltered.
 * Checks that a name is NUL-free printable ASCII within the cap, and that
 * every prefix of an input that gave a verdict is a prefix the parser
 * waited on or judged the same way (no verdict flips with more bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls_sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[TLS_SNI_NAME_MAX], again[TLS_SNI_NAME_MAX];
	if (size > TLS_SNI_INPUT_MAX)
		size = TLS_SNI_INPUT_MAX;
	enum tls_sni_result r = tls_sni_parse(data, size, name, sizeof name);
	if (r == TLS_SNI_FOUND) {
		size_t n = strlen(name);
		if (n == 0 || n >= sizeof name)
			abort();
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)name[i] <= 0x20 || (unsigned char)name[i] >= 0x7f)
				abort();
		(void)tls_sni_matches(name, "example.com");
	}
	/* A verdict never depends on bytes after the ones it was made on. */
	if (r != TLS_SNI_NEED_MORE && size > 0) {
		size_t cut = size / 2;
		enum tls_sni_result p = tls_sni_parse(data, cut, again, sizeof again);
		if (p != TLS_SNI_NEED_MORE && p != TLS_SNI_TOO_LARGE && p != r)
			abort();
		if (p == TLS_SNI_FOUND && strcmp(name, again) != 0)
			abort();
	}
	return 0;
}
