/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/zones.h: the one place a snapshot's energy zones are put
 * together. It owns the CPU meter (meters/meter.h: RAPL, hwmon, a model,
 * fake, Redfish), the GPUs (gpu_zones.h) and the rule of `platform-other`,
 * and hands the ledger its zones in a snapshot's order: the meter's
 * (package, core, uncore, dram, psys, platform), one per GPU, then
 * platform-other. The names come from kepler/snapshot.h's one list.
 */
#ifndef KEPLER_COLLECTD_ZONES_H
#define KEPLER_COLLECTD_ZONES_H

#include <stdbool.h>
#include <stdint.h>

#include "baseline.h"
#include "kepler/config.h"
#include "kepler/error.h"
#include "ledger.h"
#include "meter.h"

struct kepler_zones;

/*
 * Open the meter and the GPUs @cfg names, say which and why (this is the
 * collector's glue, so it logs). Errors, logged: the meter's
 * (kepler_meter_open()), the GPUs' (kepler_gpu_zones_open()), -ENOSPC when
 * they make more zones than a snapshot holds, -ENOMEM.
 */
int kepler_zones_open(const struct kepler_config *cfg, struct kepler_zones **ret);

/*
 * Read the meter, then the GPUs, at @s (one window with the CPU counters
 * just sampled); log counter resets and wraparounds. 0, or the meter's
 * error (a zone that could not be read counts 0 this interval; the message
 * in @err); the GPUs log their own failures.
 */
int kepler_zones_read(struct kepler_zones *z, const struct kepler_meter_sample *s, struct kepler_error *err);

/* The CPU meter, for the idle baseline (valid until close). */
const struct kepler_meter *kepler_zones_meter(const struct kepler_zones *z);

/*
 * Fill @in's zones: the meter's, with @baseline (by meter zone, as many as
 * it has), one per GPU weighed over in->procs, then platform-other when a
 * platform meter is beside RAPL. @in's other fields are set before
 * (first, mono_ns, procs). -ENOMEM, -ENOSPC (from the GPUs).
 */
int kepler_zones_input(struct kepler_zones *z, const struct kepler_baseline *baseline,
		       struct kepler_ledger_input *in);

/* GPU zones in use (privileges keep the driver's devices open for them). */
/* The processes the GPUs named in the last read (kepler_gpu_zones_pids()). */
size_t kepler_zones_gpu_pids(const struct kepler_zones *z, uint32_t *out, size_t max);
unsigned kepler_zones_gpus(const struct kepler_zones *z);

/* "package (rapl), core (rapl), platform-other (...); 2 GPU zone(s) (nvml)" (or rocm-smi) into @buf. */
void kepler_zones_describe(const struct kepler_zones *z, char *buf, size_t size);

void kepler_zones_close(struct kepler_zones *z);

#endif /* KEPLER_COLLECTD_ZONES_H */
