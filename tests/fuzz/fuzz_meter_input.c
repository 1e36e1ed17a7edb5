// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for what the meters read from outside: the numbers in
 * sysfs files (first byte even) and power model files (first byte odd).
 * Parsing may fail; it must never crash, leak or read out of bounds, and a
 * model that parses must give finite, non-negative watts.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meter_internal.h"
#include "power_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kepler_power_model m;
	struct kepler_error err;
	uint64_t v;

	if (size == 0)
		return 0;
	if (!(data[0] & 1)) {
		kepler_sysfs_parse_u64((const char *)data + 1, size - 1, "energy_uj", &v, &err);
		return 0;
	}
	if (kepler_power_model_parse((const char *)data + 1, size - 1, "fuzz.yaml", &m, &err) == 0) {
		double x[KEPLER_FEATURE_COUNT] = { 4, 2, 0.5 };

		for (unsigned z = 0; z < m.nzones; z++) {
			double w = kepler_power_model_watts(&m, z, x);

			if (!(w >= 0) || !isfinite(w))
				abort();
		}
	}
	return 0;
}
