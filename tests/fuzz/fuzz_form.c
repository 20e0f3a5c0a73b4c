/* fuzz_form.c - libFuzzer target for the form-body `_method` reader
 * (request_shape.c): a POSTed body reaches it as the agent wrote it. The
 * first byte picks the kind, the next up to 70 the multipart boundary (up
 * to a NUL). Checks the result is within bounds: every override found is a
 * non-empty upper-case method token, never more than the maximum. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request_shape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum form_kind kind = (enum form_kind)(data[0] % 4);
	data++, size--;
	char boundary[80];
	size_t bl = 0;
	while (bl < size && bl < 70 && data[bl])
		bl++;
	memcpy(boundary, data, bl);
	boundary[bl] = '\0';
	if (bl < size)
		bl++; /* the NUL */
	if (kind == FORM_MULTIPART && boundary[0] == '\0')
		kind = FORM_MULTIPART_INVALID; /* request_form_kind never yields an empty one */
	struct method_overrides o = { 0 };
	char why[96];
	int r = request_form_overrides(kind, boundary, (const char *)data + bl, size - bl, &o, why,
				       sizeof why);
	if (r == 0 && o.n > SHAPE_OVERRIDES_MAX)
		abort();
	for (size_t i = 0; r == 0 && i < o.n; i++) {
		size_t n = strlen(o.method[i]);
		if (n == 0 || n >= SHAPE_METHOD_MAX)
			abort();
		for (size_t k = 0; k < n; k++)
			if (!((o.method[i][k] >= 'A' && o.method[i][k] <= 'Z') ||
			      o.method[i][k] == '-' || o.method[i][k] == '_'))
				abort();
	}
	return 0;
}
