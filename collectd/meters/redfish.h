/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/redfish.h: the whole server's power from its BMC over
 * Redfish (DMTF DSP0266), as a platform meter beside RAPL.
 *
 *   redfish_config.c  Kepler's BMC file (nodes: {NODE: BMC}, bmcs: {BMC:
 *                     {endpoint, username, password, insecure}}), refused
 *                     when others may read it
 *   redfish_parse.c   the BMC's JSON documents (untrusted input: fuzzed)
 *   meter_redfish.c   the poller thread (session login, chassis power) and
 *                     the meter source that integrates its samples
 */
#ifndef KEPLER_COLLECTD_REDFISH_H
#define KEPLER_COLLECTD_REDFISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"

#define KEPLER_REDFISH_FIELD_MAX 512

/* One BMC, as the file gives it. */
struct kepler_redfish_bmc {
	char id[128];
	char endpoint[KEPLER_REDFISH_FIELD_MAX]; /* https://10.0.0.5 (no path) */
	char username[KEPLER_REDFISH_FIELD_MAX];
	char password[KEPLER_REDFISH_FIELD_MAX];
	char ca_file[KEPLER_REDFISH_FIELD_MAX]; /* kepler-c's addition (caFile): the CA to verify it by */
	bool insecure;                          /* do not verify its certificate */
	uint8_t cipher_suite;                   /* IPMI: the RMCP+ cipher suite (cipherSuite, default 3) */
	uint8_t privilege;                      /* IPMI: the session's, KEPLER_BMC_PRIVILEGE_* */
	char workarounds[128];                  /* IPMI: libfreeipmi's workarounds, comma-separated names */
};

/* IPMI privilege levels, as the specification numbers them */
#define KEPLER_BMC_PRIVILEGE_USER 2
#define KEPLER_BMC_PRIVILEGE_OPERATOR 3
#define KEPLER_BMC_PRIVILEGE_ADMIN 4

/*
 * Read the BMC file @path and return the BMC of node @node. Errors, each
 * naming the file: -EACCES (others may read it: chmod o-rwx, or a Secret's
 * defaultMode 0440), -ENOENT (no such file, or no entry for @node, or no
 * such BMC), -EINVAL (not YAML, a field missing or too long, an endpoint
 * that is not http(s)://).
 */
int kepler_redfish_config_load(const char *path, const char *node, struct kepler_redfish_bmc *ret,
			       struct kepler_error *err);

/*
 * The same file for Redfish (@ipmi false) or for IPMI over the LAN: then
 * the endpoint must be lanplus://HOST[:PORT] and cipherSuite, if given,
 * 0 to 17 (-EINVAL otherwise).
 */
int kepler_bmc_config_load(const char *path, const char *node, bool ipmi, struct kepler_redfish_bmc *ret,
			   struct kepler_error *err);

/* The power documents of a chassis, in the order they are preferred. */
enum kepler_redfish_form {
	KEPLER_REDFISH_ENVIRONMENT = 0, /* EnvironmentMetrics: PowerWatts.Reading (Redfish 2020.4+) */
	KEPLER_REDFISH_POWER,           /* the legacy Power: PowerControl[0].PowerConsumedWatts */
};

/*
 * @json (a collection): the first member's @odata.id into @ret (a path that
 * starts with /redfish/v1/). -EPROTO with what is wrong.
 */
int kepler_redfish_first_member(const char *json, size_t len, char *ret, size_t size,
				struct kepler_error *err);

/*
 * @json (a Chassis): the path of its power document, EnvironmentMetrics if
 * it links one, else Power, and which it is. -ENOENT (neither), -EPROTO.
 */
int kepler_redfish_power_link(const char *json, size_t len, char *ret, size_t size,
			      enum kepler_redfish_form *ret_form, struct kepler_error *err);

/*
 * @json (a power document of @form): the watts, a finite number from 0 to
 * 100 kW, into @ret_mw (milliwatts). -ENODATA (no reading: null, absent),
 * -EPROTO (not JSON, not a number, out of range).
 */
int kepler_redfish_watts(const char *json, size_t len, enum kepler_redfish_form form, uint64_t *ret_mw,
			 struct kepler_error *err);

/* @s as a JSON string literal, quotes included, into @ret. -EINVAL when it does not fit. */
int kepler_redfish_json_string(const char *s, char *ret, size_t size);

#endif /* KEPLER_COLLECTD_REDFISH_H */
