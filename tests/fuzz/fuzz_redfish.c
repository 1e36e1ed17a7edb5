// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the BMC's Redfish documents, all untrusted (a BMC
 * that lies, is compromised, or sits behind something that is): the first
 * byte picks the parser, the rest is the document.
 *   0 a collection (its first member's @odata.id)
 *   1 a Chassis (its power document's link)
 *   2 an EnvironmentMetrics document (PowerWatts.Reading)
 *   3 a legacy Power document (PowerControl[0].PowerConsumedWatts)
 * Parsing may fail; it must never crash, leak or read out of bounds, and
 * what it returns must follow the rules: a path under /redfish/v1/ without
 * quotes, spaces or "..", watts from 0 to 100 kW.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redfish.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *p)
{
	if (strncmp(p, "/redfish/v1/", 12) || strpbrk(p, " \"\\") || strstr(p, ".."))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[KEPLER_REDFISH_FIELD_MAX], *doc;
	struct kepler_error err = { 0 };
	enum kepler_redfish_form form;
	uint64_t mw;

	if (size < 1)
		return 0;
	doc = malloc(size); /* not terminated: the parser takes a length */
	if (!doc)
		return 0;
	memcpy(doc, data + 1, size - 1);
	switch (data[0] % 4) {
	case 0:
		if (kepler_redfish_first_member(doc, size - 1, path, sizeof(path), &err) == 0)
			check_path(path);
		break;
	case 1:
		if (kepler_redfish_power_link(doc, size - 1, path, sizeof(path), &form, &err) == 0)
			check_path(path);
		break;
	default:
		if (kepler_redfish_watts(doc, size - 1,
					 data[0] % 4 == 2 ? KEPLER_REDFISH_ENVIRONMENT : KEPLER_REDFISH_POWER,
					 &mw, &err) == 0 &&
		    mw > 100000000ULL)
			abort();
		break;
	}
	free(doc);
	return 0;
}
