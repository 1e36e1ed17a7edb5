// SPDX-License-Identifier: Apache-2.0
/*
 * The IPMI platform meter: a polled meter (polled.h) whose poll sends DCMI
 * Get Power Reading through libfreeipmi (ipmi.h).
 *
 * In-band (platform.ipmi.config-file empty): the host's IPMI device
 * (/dev/ipmi0, root's) is opened here, at start, while the collector is
 * still privileged, and kept: it cannot be opened again once privileges
 * are dropped, so a failing command is reported and the next poll tries
 * the same device again.
 *
 * Over the LAN (lanplus://HOST[:PORT] in Kepler's BMC file): an RMCP+
 * session at the file's privilege (User by default, as DCMI asks) and
 * cipher suite (3 by default),
 * opened by the poller; a command that fails (the BMC went away, the
 * session timed out) closes it, and the next poll opens a new one, so a
 * BMC that comes back is read again. The session timeout is
 * platform.ipmi.timeout; libfreeipmi retransmits within it.
 */
#include <errno.h>
#include <freeipmi/freeipmi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/clock.h"
#include "kepler/log.h"

#include "ipmi.h"
#include "meter_internal.h"
#include "polled.h"
#include "redfish.h"

struct ipmi {
	struct kepler_redfish_bmc bmc; /* LAN: from the BMC file */
	unsigned workarounds;          /* LAN: IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_* */
	bool inband;
	char host[KEPLER_REDFISH_FIELD_MAX];
	unsigned timeout_ms;
	ipmi_ctx_t ctx;
	bool open;
	struct kepler_polled *polled;
};

/* @what failed: libfreeipmi's message, as an error. */
static int ctx_error(struct ipmi *im, const char *what, struct kepler_error *err)
{
	int code = ipmi_ctx_errnum(im->ctx);
	int r = code == IPMI_ERR_SESSION_TIMEOUT || code == IPMI_ERR_IPMI_ERROR ? -ETIMEDOUT
		: code == IPMI_ERR_USERNAME_INVALID || code == IPMI_ERR_PASSWORD_INVALID ||
				code == IPMI_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED ||
				code == IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE
			? -EACCES
			: -EIO;

	return kepler_error_set(err, r, "%s %s: %s", what, im->inband ? "in-band" : im->host,
				ipmi_ctx_errormsg(im->ctx));
}

/* LAN: a new context, the last one closed (libfreeipmi's is not reopened after a failure). */
static int fresh_context(struct ipmi *im, struct kepler_error *err)
{
	if (im->ctx) {
		if (im->open)
			ipmi_ctx_close(im->ctx);
		ipmi_ctx_destroy(im->ctx);
	}
	im->open = false;
	im->ctx = ipmi_ctx_create();
	return im->ctx ? 0 : kepler_error_set(err, -ENOMEM, "out of memory (libfreeipmi)");
}

/* LAN: a session, if none is open. */
static int ensure_session(struct ipmi *im, struct kepler_error *err)
{
	int r;

	if (im->open)
		return 0;
	if (!im->ctx && (r = fresh_context(im, err)) < 0)
		return r;
	if (ipmi_ctx_open_outofband_2_0(im->ctx, im->host, im->bmc.username, im->bmc.password, NULL, 0,
					im->bmc.privilege, im->bmc.cipher_suite, im->timeout_ms, 0,
					im->workarounds, 0) < 0) {
		struct kepler_error scratch = { 0 };

		r = ctx_error(im, "IPMI session to", err);
		fresh_context(im, &scratch); /* the next poll tries again from the start (NULL: made then) */
		return r;
	}
	im->open = true;
	return 0;
}

/* One poll (polled.h): DCMI Get Power Reading, in milliwatts. */
static int poll_power(void *src, uint64_t *ret_mw, struct kepler_error *err)
{
	struct ipmi *im = src;
	uint8_t rq[8], rs[64];
	size_t n = kepler_dcmi_power_request(rq);
	int len, r = im->inband ? 0 : ensure_session(im, err);

	if (r < 0)
		return r;
	len = ipmi_cmd_raw(im->ctx, IPMI_BMC_IPMB_LUN_BMC, KEPLER_DCMI_NETFN, rq, (unsigned)n, rs,
			   sizeof(rs));
	if (len < 0) {
		struct kepler_error scratch = { 0 };

		r = ctx_error(im, "DCMI power reading from", err);
		if (!im->inband) /* the next poll opens a new session */
			fresh_context(im, &scratch);
		return r;
	}
	/* the answer as ipmi_cmd_raw() gives it: the command, then the completion code and data */
	if (len < 1 || rs[0] != KEPLER_DCMI_CMD_GET_POWER_READING)
		return kepler_error_set(err, -EPROTO, "DCMI power reading: an answer to another command");
	return kepler_dcmi_power_reading(rs + 1, (size_t)len - 1, ret_mw, err);
}

static int ipmi_read(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err)
{
	return kepler_polled_read_zone(((struct ipmi *)m->priv)->polled, m, s, err);
}

static void ipmi_close(struct kepler_meter *m)
{
	struct ipmi *im = m->priv;

	if (!im)
		return;
	kepler_polled_stop(im->polled); /* waits for a poll in progress (at most the timeout) */
	if (im->ctx) {
		if (im->open || im->inband)
			ipmi_ctx_close(im->ctx);
		ipmi_ctx_destroy(im->ctx);
	}
	explicit_bzero(&im->bmc, sizeof(im->bmc));
	free(im);
	m->priv = NULL;
}

static const struct kepler_meter_ops ipmi_ops = {
	.read = ipmi_read,
	.close = ipmi_close,
};

/* The BMC file's workarounds (FreeIPMI's names, as its tools take them) as libfreeipmi's flags. */
static int parse_workarounds(struct ipmi *im, struct kepler_error *err)
{
	static const struct {
		const char *name;
		unsigned flag;
	} known[] = {
		{ "authcap", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_AUTHENTICATION_CAPABILITIES },
		{ "intel20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_INTEL_2_0_SESSION },
		{ "supermicro20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUPERMICRO_2_0_SESSION },
		{ "sun20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUN_2_0_SESSION },
		{ "opensesspriv", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE },
		{ "integritycheckvalue",
		  IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NON_EMPTY_INTEGRITY_CHECK_VALUE },
		{ "nochecksumcheck", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NO_CHECKSUM_CHECK },
	};
	char list[sizeof(im->bmc.workarounds)], *save = NULL;

	snprintf(list, sizeof(list), "%s", im->bmc.workarounds);
	for (char *w = strtok_r(list, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		size_t i = 0;

		while (i < sizeof(known) / sizeof(known[0]) && strcmp(known[i].name, w))
			i++;
		if (i == sizeof(known) / sizeof(known[0]))
			return kepler_error_set(
				err, -EINVAL,
				"IPMI workaround '%s' is unknown (authcap, intel20, supermicro20, "
				"sun20, opensesspriv, integritycheckvalue, nochecksumcheck)",
				w);
		im->workarounds |= known[i].flag;
	}
	return 0;
}

/* In-band: the host's IPMI device, found and opened now (root's). */
static int open_inband(struct ipmi *im, struct kepler_error *err)
{
	int r = ipmi_ctx_find_inband(im->ctx, NULL, 0, 0, 0, NULL, 0, 0);

	if (r < 0)
		return ctx_error(im, "IPMI device", err);
	if (r == 0)
		return kepler_error_set(
			err, -ENOENT,
			"no in-band IPMI device (/dev/ipmi0: load ipmi_si and ipmi_devintf, "
			"run as root), or give platform.ipmi.config-file for the BMC over the LAN");
	im->open = true;
	return 0;
}

int kepler_meter_ipmi_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			   struct kepler_error *err)
{
	struct ipmi *im = calloc(1, sizeof(*im));
	struct kepler_meter_zone *z;
	char what[160];
	struct kepler_polled_params pp = {
		.kind = "ipmi",
		.what = what,
		.poll_ns = p->ipmi_poll_ns,
		.poll = poll_power,
		.src = im,
		.on_sample = p->bmc_on_sample,
		.ctx = p->bmc_ctx,
	};
	int r;

	if (!im)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	m->priv = im;
	m->ops = &ipmi_ops;
	im->timeout_ms = (unsigned)((p->ipmi_timeout_ns ? p->ipmi_timeout_ns : 5000000000ULL) / 1000000ULL);
	im->inband = !p->ipmi_config || !p->ipmi_config[0];
	if (!im->inband) {
		r = kepler_bmc_config_load(p->ipmi_config, p->ipmi_node ? p->ipmi_node : "", true, &im->bmc,
					   err);
		if (r < 0)
			return r;
		snprintf(im->host, sizeof(im->host), "%s", im->bmc.endpoint + strlen("lanplus://"));
		r = parse_workarounds(im, err);
		if (r < 0)
			return r;
	}
	im->ctx = ipmi_ctx_create();
	if (!im->ctx)
		return kepler_error_set(err, -ENOMEM, "out of memory (libfreeipmi)");
	if (im->inband && (r = open_inband(im, err)) < 0)
		return r;
	z = kepler_meter_add_zone(m, "platform", KEPLER_SOURCE_IPMI, 1, err);
	if (!z)
		return err ? err->code : -ENOMEM;
	snprintf(z->parts[0].name, sizeof(z->parts[0].name), "%s", im->inband ? "in-band" : im->bmc.id);
	if (asprintf(&z->parts[0].path, "%s", im->inband ? "ipmi:in-band" : im->bmc.endpoint) < 0) {
		z->parts[0].path = NULL;
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	m->states[0][0].kind = KEPLER_PART_NONE;
	r = kepler_meter_zone_finish(z, 0, err);
	if (r < 0)
		return r;
	snprintf(what, sizeof(what), "ipmi %s", im->inband ? "in-band" : im->bmc.id);
	return kepler_polled_start(&pp, &im->polled, err);
}
