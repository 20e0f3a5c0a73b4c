/* fuzz_execframe.c - libFuzzer target for the exec stream's frame decoder
 * (bytes a client sends through the gateway to a supervisor's exec relay).
 * Beyond memory safety: a decoded frame never spans more than the input,
 * and re-encoding every decoded frame gives back exactly the bytes taken. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "execframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf again;
	buf_init(&again, 2 * EXECFRAME_MAX_PAYLOAD);
	size_t at = 0;
	for (;;) {
		struct execframe f;
		long n = execframe_take(data + at, size - at, &f, NULL);
		if (n <= 0)
			break;
		if ((size_t)n > size - at || f.len + EXECFRAME_HEAD != (size_t)n)
			abort();
		uint32_t v;
		uint16_t r, c;
		(void)execframe_u32(&f, &v);
		(void)execframe_resize(&f, &r, &c);
		if (execframe_put(&again, f.type, f.payload, f.len, NULL) < 0)
			abort();
		at += (size_t)n;
	}
	if (again.len != at || (at && memcmp(again.data, data, at) != 0))
		abort();
	buf_free(&again);
	return 0;
}
