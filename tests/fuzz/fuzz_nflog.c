/* fuzz_nflog.c - the NFLOG payload parser on arbitrary bytes: the logged
 * packet headers are crafted by the sandboxed workload. Must never read
 * past the copied length, whatever the headers claim. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nflog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size heap copy so ASan catches any over-read. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	if (size)
		memcpy(copy, data, size);
	struct nflog_packet pkt = { 0 };
	os_error err = { 0 };
	if (nflog_parse_payload(copy, size, &pkt, &err) == 0 && pkt.family == 0)
		abort(); /* success must always name a family */
	free(copy);
	return 0;
}
