// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for a BMC's answer to DCMI Get Power Reading (ipmi.h),
 * untrusted (a BMC that lies, or one compromised): the bytes from the
 * completion code on. Parsing may fail; it must never crash or read out of
 * bounds, and a reading it accepts is what the answer's current-power
 * field says, in milliwatts (at most 65,535 W), from an answer of 19 bytes
 * or more with completion code 0, group 0xDC and the measurement active.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kepler_error err = { 0 };
	uint8_t *rs = malloc(size ? size : 1); /* exactly @size: reading past it is caught */
	uint64_t mw = UINT64_MAX;

	if (!rs)
		return 0;
	memcpy(rs, data, size);
	if (kepler_dcmi_power_reading(rs, size, &mw, &err) == 0) {
		if (size < KEPLER_DCMI_POWER_READING_LEN || rs[0] || rs[1] != KEPLER_DCMI_GROUP ||
		    !(rs[18] & 0x40) || mw != ((uint64_t)rs[2] | (uint64_t)rs[3] << 8) * 1000u)
			abort();
	} else if (!err.msg[0]) {
		abort(); /* every refusal says why */
	}
	free(rs);
	return 0;
}
