// SPDX-License-Identifier: Apache-2.0
/*
 * A snapshot's energy zones (zones.h): the meter's, the GPUs', and
 * platform-other, the part of a platform meter's energy no other zone
 * explains.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_zones.h"
#include "kepler/log.h"
#include "node.h"
#include "zones.h"

#define MINUTE_NS (60ULL * 1000000000ULL)

struct kepler_zones {
	struct kepler_meter *meter;
	struct kepler_gpu_zones *gpu; /* NULL: no GPU meter */
	struct meter_seen {
		uint64_t resets, wraps; /* counts already logged */
		uint64_t last_warn_ns;  /* when a reset was last logged (monotonic) */
	} seen[KEPLER_MAX_ZONES];
	/* platform-other: intervals whose CPU and GPU zones drew more than the platform, and the excess */
	uint64_t clipped, clipped_said, clipped_warn_ns;
	uint64_t rest_debt;
};

/* Each BMC reading at debug level: what the platform energy is integrated from. */
static void log_bmc_sample(void *ctx, uint64_t mono_ns, uint64_t mw)
{
	kepler_debug("%s reading: %llu mW at %llu ns", (const char *)ctx, (unsigned long long)mw,
		     (unsigned long long)mono_ns);
}

/* Open the configured meter and say which it is and why. */
static int open_meter(const struct kepler_config *cfg, struct kepler_meter **ret)
{
	struct kepler_meter_attempts attempts;
	struct kepler_meter_params params;
	struct kepler_error err = { 0 };
	char node[256];
	const char *prov;
	int r;

	kepler_meter_params_from_config(cfg, &params);
	kepler_node_name(cfg, node, sizeof(node));
	if (params.redfish && !(params.redfish_node && params.redfish_node[0]))
		params.redfish_node = node;
	if (params.ipmi && !(params.ipmi_node && params.ipmi_node[0]))
		params.ipmi_node = node;
	params.bmc_on_sample = log_bmc_sample;
	params.bmc_ctx = params.ipmi ? "ipmi" : "redfish";
	r = kepler_meter_open(&params, &attempts, ret, &err);
	for (unsigned i = 0; i < attempts.count; i++)
		kepler_log(r < 0 ? KEPLER_LOG_ERROR : KEPLER_LOG_INFO, "meter %s not used: %s",
			   kepler_meter_source_name(attempts.tried[i].source), attempts.tried[i].err.msg);
	if (r < 0) {
		if (params.redfish && strstr(err.msg, "BMC"))
			kepler_err("platform.redfish: %s", err.msg);
		else if (params.ipmi && strstr(err.msg, "IPMI"))
			kepler_err("platform.ipmi: %s", err.msg);
		else if (params.source != KEPLER_METER_AUTO)
			kepler_err("meter.source %s: %s", kepler_meter_source_name(params.source), err.msg);
		return r;
	}
	if (kepler_meter_source(*ret) == KEPLER_METER_MODEL)
		kepler_warn("no energy meter in use: node energy is estimated by a power model "
			    "(zones marked source=model), not measured");
	kepler_info("energy source %s", kepler_meter_describe(*ret));
	prov = kepler_meter_provenance(*ret);
	if (prov)
		kepler_info("power model: %s", prov);
	return 0;
}

int kepler_zones_open(const struct kepler_config *cfg, struct kepler_zones **ret)
{
	struct kepler_zones *z = calloc(1, sizeof(*z));
	int r;

	if (!z)
		return -ENOMEM;
	r = open_meter(cfg, &z->meter);
	if (r == 0)
		r = kepler_gpu_zones_open(cfg, &z->gpu);
	if (r == 0 && kepler_meter_zone_count(z->meter) + kepler_gpu_zones_count(z->gpu) +
				      kepler_meter_has_platform(z->meter) >
			      KEPLER_MAX_ZONES) {
		kepler_err(
			"%u CPU zones and %u GPUs are more than the %d zones a snapshot holds: leave some out "
			"(rapl.zones)",
			kepler_meter_zone_count(z->meter), kepler_gpu_zones_count(z->gpu), KEPLER_MAX_ZONES);
		r = -ENOSPC;
	}
	if (r < 0) {
		kepler_zones_close(z);
		return r;
	}
	*ret = z;
	return 0;
}

/*
 * Meter events in the log: a counter reset (its step is not counted as
 * energy) as a warning, at most once a minute per zone with the count of
 * those in between; a wraparound, which is normal and counted across, at
 * debug level.
 */
static void log_meter_events(struct kepler_zones *z, uint64_t mono)
{
	for (unsigned i = 0; i < kepler_meter_zone_count(z->meter) && i < KEPLER_MAX_ZONES; i++) {
		const struct kepler_meter_zone *mz = kepler_meter_zone(z->meter, i);
		struct meter_seen *s = &z->seen[i];

		if (mz->wraps > s->wraps)
			kepler_debug("meter zone %s: counter wrapped around (%llu since start)", mz->name,
				     (unsigned long long)mz->wraps);
		s->wraps = mz->wraps;
		if (mz->resets > s->resets && (!s->last_warn_ns || mono - s->last_warn_ns >= MINUTE_NS)) {
			kepler_warn("meter zone %s: %llu counter reset(s) since the last warning (%llu since "
				    "start): the counter went back or jumped implausibly; that step is not "
				    "counted as energy",
				    mz->name, (unsigned long long)(mz->resets - s->resets),
				    (unsigned long long)mz->resets);
			s->resets = mz->resets;
			s->last_warn_ns = mono;
		}
	}
}

int kepler_zones_read(struct kepler_zones *z, const struct kepler_meter_sample *s, struct kepler_error *err)
{
	int r = kepler_meter_read(z->meter, s, err);

	log_meter_events(z, s->mono_ns);
	kepler_gpu_zones_read(z->gpu, s->mono_ns);
	return r;
}

const struct kepler_meter *kepler_zones_meter(const struct kepler_zones *z)
{
	return z->meter;
}

size_t kepler_zones_gpu_pids(const struct kepler_zones *z, uint32_t *out, size_t max)
{
	return z->gpu ? kepler_gpu_zones_pids(z->gpu, out, max) : 0;
}

unsigned kepler_zones_gpus(const struct kepler_zones *z)
{
	return kepler_gpu_zones_count(z->gpu);
}

/* The meter's zones, as read last, with this interval's idle baselines. */
static void add_meter_zones(struct kepler_zones *z, const struct kepler_baseline *baseline,
			    struct kepler_ledger_input *in)
{
	in->nzones = kepler_meter_zone_count(z->meter);
	for (unsigned i = 0; i < in->nzones; i++) {
		const struct kepler_meter_zone *mz = kepler_meter_zone(z->meter, i);

		in->zones[i] = (struct kepler_ledger_zone_in){
			.name = mz->name,
			.path = mz->path,
			.source = mz->source,
			.delta_uj = mz->delta_uj,
			.baseline = baseline[i],
			.meter_resets = mz->resets,
			.meter_wraps = mz->wraps,
		};
	}
}

/* An interval in which the explained zones drew more than the platform: counted, logged once a minute. */
static void count_clipped(struct kepler_zones *z, uint64_t mono_ns, uint64_t explained, uint64_t platform_uj)
{
	z->clipped++;
	if (z->clipped_warn_ns && mono_ns - z->clipped_warn_ns < MINUTE_NS)
		return;
	kepler_warn("platform-other: %llu interval(s) since the last warning in which package, dram "
		    "and the GPUs drew more than the platform meter (%llu > %llu uJ in this one, with "
		    "what earlier ones owed): platform-other 0, the excess taken from the next "
		    "intervals (%llu since start)",
		    (unsigned long long)(z->clipped - z->clipped_said), (unsigned long long)explained,
		    (unsigned long long)platform_uj, (unsigned long long)z->clipped);
	z->clipped_said = z->clipped;
	z->clipped_warn_ns = mono_ns;
}

/*
 * With a platform meter beside RAPL: the zone `platform-other`, the part of
 * the platform's energy that no other zone explains: platform - package -
 * dram - each GPU, so that those zones add up to the platform exactly.
 * Never below 0: an interval in which they drew more (meters read at
 * slightly different instants, or a platform meter that lags, like a BMC
 * polled every few seconds) gives 0, and the excess is taken from the
 * next intervals' platform-other, so that over time the sums still hold
 * to the microjoule. Such intervals are counted and logged at most once a
 * minute (those in which the platform meter had nothing new are not).
 */
static void add_platform_rest(struct kepler_zones *z, struct kepler_ledger_input *in)
{
	int platform = -1;
	uint64_t explained = 0, platform_uj;

	if (!kepler_meter_has_platform(z->meter) || in->nzones >= KEPLER_MAX_ZONES)
		return;
	for (unsigned i = 0; i < in->nzones; i++) {
		const char *name = in->zones[i].name;

		if (!strcmp(name, KEPLER_ZONE_PLATFORM))
			platform = (int)i;
		else if (!strcmp(name, KEPLER_ZONE_PACKAGE) || !strcmp(name, KEPLER_ZONE_DRAM) ||
			 in->zones[i].device)
			explained += in->zones[i].delta_uj;
	}
	if (platform < 0)
		return;
	platform_uj = in->zones[platform].delta_uj;
	in->zones[in->nzones] = (struct kepler_ledger_zone_in){
		.name = KEPLER_ZONE_PLATFORM_OTHER,
		.path = "platform - package - dram - gpu",
		.source = in->zones[platform].source,
	};
	if (in->first)
		z->rest_debt = 0;
	explained += z->rest_debt;
	z->rest_debt = 0;
	if (platform_uj >= explained)
		in->zones[in->nzones].delta_uj = platform_uj - explained;
	else if (!in->first)
		z->rest_debt = explained - platform_uj;
	/* (a platform meter with nothing new, a BMC between readings, is no clipping) */
	if (!in->first && platform_uj && platform_uj < explained)
		count_clipped(z, in->mono_ns, explained, platform_uj);
	in->nzones++;
}

int kepler_zones_input(struct kepler_zones *z, const struct kepler_baseline *baseline,
		       struct kepler_ledger_input *in)
{
	int r;

	add_meter_zones(z, baseline, in);
	r = kepler_gpu_zones_input(z->gpu, in);
	if (r < 0)
		return r;
	add_platform_rest(z, in);
	return 0;
}

void kepler_zones_describe(const struct kepler_zones *z, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < kepler_meter_zone_count(z->meter) && o < size; i++) {
		const struct kepler_meter_zone *mz = kepler_meter_zone(z->meter, i);

		o += (size_t)snprintf(buf + o, size - o, "%s %s (%s)", i ? "," : "", mz->name,
				      kepler_source_name(mz->source));
	}
	if (kepler_meter_has_platform(z->meter) && o < size)
		o += (size_t)snprintf(buf + o, size - o,
				      ", " KEPLER_ZONE_PLATFORM_OTHER " (platform - package - dram - GPUs)");
	if (kepler_gpu_zones_count(z->gpu) && o < size)
		snprintf(buf + o, size - o, "; %u GPU zone(s) (%s)", kepler_gpu_zones_count(z->gpu),
			 kepler_gpu_zones_libraries(z->gpu));
}

void kepler_zones_close(struct kepler_zones *z)
{
	if (!z)
		return;
	kepler_meter_close(z->meter);
	kepler_gpu_zones_close(z->gpu);
	free(z);
}
