/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/ipmi.h: the whole server's power from its BMC over IPMI,
 * with DCMI's Get Power Reading (DCMI 1.5, section 6.6.1: NetFn 0x2C
 * group extension, command 0x02, group 0xDC), as a platform meter beside
 * the CPU's, for the servers that have IPMI and no Redfish.
 *
 *   ipmi_dcmi.c   the request's bytes and the answer's parser (untrusted
 *                 input: fuzzed, tests/fuzz/fuzz_dcmi.c)
 *   meter_ipmi.c  libfreeipmi: in-band (/dev/ipmi0, opened at start while
 *                 privileged) or RMCP+ over the LAN (Kepler's BMC file,
 *                 lanplus://HOST[:PORT]), polled on a thread (polled.h)
 */
#ifndef KEPLER_COLLECTD_IPMI_H
#define KEPLER_COLLECTD_IPMI_H

#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"

#define KEPLER_DCMI_NETFN 0x2c
#define KEPLER_DCMI_CMD_GET_POWER_READING 0x02
#define KEPLER_DCMI_GROUP 0xdc
/* The answer: completion code, group, current, minimum, maximum, average (u16 W each), time stamp, period, state. */
#define KEPLER_DCMI_POWER_READING_LEN 19

/*
 * The request as libfreeipmi's ipmi_cmd_raw() takes it (the command, then
 * its data: group 0xDC, mode 1 = system power statistics, two reserved
 * bytes) into @buf (at least 5 bytes); returns its length.
 */
size_t kepler_dcmi_power_request(uint8_t *buf);

/*
 * The answer @rs (@len bytes from the completion code on): the current
 * power in milliwatts into *@ret_mw. -EIO for a completion code other
 * than 0 (named when it is a known one: DCMI not supported, privilege too
 * low, ...), -EPROTO (too short, another group), -ENODATA (the BMC says
 * its power measurement is not active).
 */
int kepler_dcmi_power_reading(const uint8_t *rs, size_t len, uint64_t *ret_mw, struct kepler_error *err);

#endif /* KEPLER_COLLECTD_IPMI_H */
