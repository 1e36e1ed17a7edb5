/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/gpu_mig.h: a GPU in MIG mode, split into GPU instances.
 * NVML has no per-process utilisation there (nvmlDeviceGetProcessUtilization
 * is not supported), but on Hopper and later GPM measures each instance's
 * SMs: the share of the GPU's active energy an instance gets is its busy
 * SMs over the interval (SM utilisation x its SM count) against the
 * others', and within an instance its processes share equally. Without GPM
 * (Ampere, an older driver) the GPU's active energy is split equally over
 * its processes, as before, and the collector says so once at start.
 */
#ifndef KEPLER_COLLECTD_GPU_MIG_H
#define KEPLER_COLLECTD_GPU_MIG_H

#include <stdbool.h>
#include <stdint.h>

#include "nvml.h"

/* An A100/H100 holds at most 7 GPU instances. */
#define KEPLER_GPU_MIG_MAX_INSTANCES 8

struct kepler_gpu_mig_instance {
	unsigned int gi;  /* GPU instance id, as nvmlProcessInfo_t's gpuInstanceId */
	unsigned int sms; /* its SMs */
	nvmlGpmSample_t sample[2];
	int cur; /* sample[cur] is the newest */
	bool primed;
	/* the last interval: busy SMs x 1e6 (SM utilisation as a fraction x sms x 1e6); 0 if unknown */
	uint64_t busy;
};

struct kepler_gpu_mig {
	bool gpm; /* every instance sampled by GPM */
	unsigned n;
	struct kepler_gpu_mig_instance inst[KEPLER_GPU_MIG_MAX_INSTANCES];
	nvmlGpmMetricsGet_t *get;
	char why[160]; /* without GPM: why not */
};

/*
 * List @device's GPU instances and prepare GPM. Never fails: without GPM
 * (a symbol missing, the device unsupported, a call refused) m->gpm is
 * false and m->why says why. -ENOMEM only.
 */
int kepler_gpu_mig_open(const struct kepler_nvml *nv, nvmlDevice_t device, struct kepler_gpu_mig *m);

/*
 * Sample every instance: each one's busy SMs since the last call into
 * inst[].busy. True when GPM gave them for this interval (not on the first
 * call, nor when a call failed: the caller then splits equally).
 */
bool kepler_gpu_mig_sample(const struct kepler_nvml *nv, nvmlDevice_t device, struct kepler_gpu_mig *m);

/* The instance of @gi, or NULL. */
const struct kepler_gpu_mig_instance *kepler_gpu_mig_find(const struct kepler_gpu_mig *m, unsigned int gi);

/* Free the samples; a zeroed struct is fine. */
void kepler_gpu_mig_close(const struct kepler_nvml *nv, struct kepler_gpu_mig *m);

#endif /* KEPLER_COLLECTD_GPU_MIG_H */
