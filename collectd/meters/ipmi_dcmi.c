// SPDX-License-Identifier: Apache-2.0
/* DCMI Get Power Reading: the request's bytes and the answer's parser (ipmi.h). */
#include <errno.h>

#include "ipmi.h"

size_t kepler_dcmi_power_request(uint8_t *buf)
{
	buf[0] = KEPLER_DCMI_CMD_GET_POWER_READING;
	buf[1] = KEPLER_DCMI_GROUP;
	buf[2] = 0x01; /* system power statistics */
	buf[3] = 0x00;
	buf[4] = 0x00;
	return 5;
}

/* What a completion code means, for the ones a BMC answers this command with. */
static const char *completion_name(uint8_t cc)
{
	switch (cc) {
	case 0xc1: return "invalid command: the BMC has no DCMI power reading";
	case 0xc3: return "timeout in the BMC";
	case 0xc7:
	case 0xc8: return "request length invalid";
	case 0xcc: return "invalid data field (mode not supported)";
	case 0xd4:
		return "insufficient privilege (this BMC wants a higher privilege: privilege in the BMC file)";
	case 0xd5: return "not supported in the present state";
	case 0xd6: return "disabled";
	case 0xff: return "unspecified error";
	default: return "";
	}
}

static uint16_t u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

int kepler_dcmi_power_reading(const uint8_t *rs, size_t len, uint64_t *ret_mw, struct kepler_error *err)
{
	if (len < 1)
		return kepler_error_set(err, -EPROTO, "DCMI power reading: an empty answer");
	if (rs[0] != 0) {
		const char *name = completion_name(rs[0]);

		return kepler_error_set(err, -EIO, "DCMI power reading: completion code 0x%02x%s%s", rs[0],
					name[0] ? ", " : "", name);
	}
	if (len < KEPLER_DCMI_POWER_READING_LEN)
		return kepler_error_set(err, -EPROTO, "DCMI power reading: %zu bytes, need %d", len,
					KEPLER_DCMI_POWER_READING_LEN);
	if (rs[1] != KEPLER_DCMI_GROUP)
		return kepler_error_set(err, -EPROTO, "DCMI power reading: group 0x%02x, not 0xdc", rs[1]);
	if (!(rs[18] & 0x40))
		return kepler_error_set(err, -ENODATA,
					"DCMI power reading: the BMC's power measurement is not active");
	*ret_mw = (uint64_t)u16(rs + 2) * 1000u;
	return 0;
}
