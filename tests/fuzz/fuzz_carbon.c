// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for kepler-carbon's providers' answers, all untrusted (a
 * provider that lies, is broken, or a proxy between): the first byte picks
 * the parser, the rest is the answer (not NUL-terminated: the parsers take
 * a length).
 *   0 Electricity Maps (latest or history)   1 the UK Carbon Intensity API
 *   2 WattTime's forecast                    3 WattTime's login
 *   4 the static table (key "gcp:europe-west1")
 * Parsing may fail; it must never crash, leak or read out of bounds, and
 * every value it returns must be an intensity: 0 < mg/kWh <= 100,000,000.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct carbon_values out;
	struct kepler_error err = { 0 };
	char *doc, *token = NULL, source[256];

	if (size < 1)
		return 0;
	doc = malloc(size);
	if (!doc)
		return 0;
	memcpy(doc, data + 1, size - 1);
	out.n = 0;
	switch (data[0] % 5) {
	case 0: carbon_parse_electricitymaps(doc, size - 1, &out, &err); break;
	case 1: carbon_parse_uk_grid(doc, size - 1, &out, &err); break;
	case 2: carbon_parse_watttime(doc, size - 1, &out, &err); break;
	case 3:
		if (carbon_parse_watttime_login(doc, size - 1, &token, &err) == 0 && (!token || !*token))
			abort();
		free(token);
		break;
	default:
		carbon_static_lookup(doc, size - 1, "gcp:europe-west1", 1, &out, source, sizeof(source),
				     &err);
		break;
	}
	for (size_t i = 0; i < out.n; i++)
		if (!out.v[i].mg_kwh || out.v[i].mg_kwh > 100000000u ||
		    out.v[i].kind >= KEPLER_CARBON_KIND_COUNT)
			abort();
	free(doc);
	return 0;
}
