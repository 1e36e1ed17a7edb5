/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/gpu_zones.h: the collector's side of the GPU meter (meters/gpu.h):
 * opens it as gpu.* says and logs what it found, logs a device's failures
 * and recoveries once each, and turns each device's per-PID weights into
 * the ledger's device zones (weights by the interval's process list; the
 * share of PIDs the informer did not list stays unattributed).
 */
#ifndef KEPLER_COLLECTD_GPU_ZONES_H
#define KEPLER_COLLECTD_GPU_ZONES_H

#include <stdint.h>

#include "kepler/config.h"
#include "ledger.h"

struct kepler_gpu_zones;

/*
 * Open the GPU meter of @cfg (gpu.enabled, gpu.nvml-library,
 * gpu.idle-power). With gpu.enabled auto and no NVML or no GPU, 0 and *ret
 * NULL (logged once at info level: the collector runs CPU-only). Errors
 * (logged): -EINVAL (a bad gpu.idle-power), and with gpu.enabled true the
 * meter's own (-ENOENT, -ENOSYS, -ENODEV).
 */
int kepler_gpu_zones_open(const struct kepler_config *cfg, struct kepler_gpu_zones **ret);

/* Read the devices (right after the CPU meter: the same window); logs failures once. NULL: nothing. */
void kepler_gpu_zones_read(struct kepler_gpu_zones *g, uint64_t mono_ns);

/*
 * Append one device zone per GPU to @in (after the CPU meter's zones),
 * with weights over in->procs. -ENOMEM, -ENOSPC (too many zones); @in is
 * then unchanged. The weights stay valid until the next call.
 */
int kepler_gpu_zones_input(struct kepler_gpu_zones *g, struct kepler_ledger_input *in);

/* The libraries its devices are read through: "nvml", "rocm-smi" or "nvml, rocm-smi". */
const char *kepler_gpu_zones_libraries(const struct kepler_gpu_zones *g);

/* Zones it adds (0 for NULL). */
/* The PIDs of the processes the GPUs named in the last read (each once), at most @max, into @out. */
size_t kepler_gpu_zones_pids(const struct kepler_gpu_zones *g, uint32_t *out, size_t max);
unsigned kepler_gpu_zones_count(const struct kepler_gpu_zones *g);

void kepler_gpu_zones_close(struct kepler_gpu_zones *g);

#endif /* KEPLER_COLLECTD_GPU_ZONES_H */
