// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for kepler-push's parsers: the first byte chooses. 0:
 * the input is exposition text, read back as samples and put into both a
 * remote-write and an OTLP request, both encoded (labels of any shape,
 * escapes, lines cut anywhere, series repeated); 1: the input is an OTLP
 * receiver's answer (ExportMetricsServiceResponse), a network peer's bytes.
 * Parsing may fail; it must never crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>

#include "otlp.h"
#include "remote_write.h"
#include "samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void text(const char *p, size_t n)
{
	struct push_samples set = PUSH_SAMPLES_INIT;
	struct push_request *rw = push_request_new();
	struct push_otlp *o = push_otlp_new();
	struct push_otlp_node node = { "host", "node", "" };
	void *body;
	size_t len;

	if (rw && o && push_samples_parse(&set, p, n) == 0) {
		/* twice: the second snapshot's samples join the first's series */
		if (push_request_add(rw, set.v, set.n, 1000) == 0 &&
		    push_request_add(rw, set.v, set.n, 2000) == 0 &&
		    push_request_encode(rw, &body, &len) == 0)
			free(body);
		if (push_otlp_add(o, set.v, set.n, 1000) == 0 && push_otlp_add(o, set.v, set.n, 2000) == 0 &&
		    push_otlp_encode(o, &node, &body, &len) == 0)
			free(body);
	}
	push_samples_free(&set);
	push_request_free(rw);
	push_otlp_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];

	if (!size)
		return 0;
	if (data[0] == 0)
		text((const char *)data + 1, size - 1);
	else
		push_otlp_rejected(data + 1, size - 1, why, sizeof(why));
	return 0;
}
