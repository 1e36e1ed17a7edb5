/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/gpu_internal.h: what the GPU meter's vendors share inside
 * the meter (gpu.c for NVIDIA through NVML, gpu_amd.c for AMD through ROCm
 * SMI). Not for the rest of the collector, which uses gpu.h.
 */
#ifndef KEPLER_COLLECTD_GPU_INTERNAL_H
#define KEPLER_COLLECTD_GPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "gpu_mig.h"
#include "meter.h"
#include "rocm_smi.h"

struct device_state {
	nvmlDevice_t handle;
	uint32_t amd_index;            /* AMD: ROCm SMI's device index */
	struct kepler_counter counter; /* energy counter, in uJ */
	uint64_t last_power_mw;        /* power_integrated */
	uint64_t last_mono_ns;
	uint64_t power_rem; /* power_integrated: energy below 1 uJ, in mW x ns */
	bool power_primed;
	unsigned long long last_seen_us; /* newest utilisation sample read */
	bool primed;
	struct kepler_gpu_weight *weights;
	size_t weights_cap;
	nvmlProcessUtilizationSample_t *samples;
	unsigned samples_cap;
	nvmlProcessInfo_t *infos;
	unsigned infos_cap;
	/* MIG mode: the GPU instances, and the running processes with theirs */
	struct kepler_gpu_mig mig;
	struct mig_proc {
		uint32_t pid;
		unsigned int gi;
	} * procs;
	size_t procs_cap;
};

struct kepler_gpu {
	struct kepler_nvml nvml;
	struct kepler_rsmi rsmi; /* AMD GPUs (gpu_amd.c); handle NULL: none */
	uint64_t idle_uw;
	unsigned n, ignored;
	unsigned nvidia_listed; /* devices NVML listed: AMD zones are numbered after them */
	/* AMD: the processes ROCm SMI listed in this read, and the devices each uses */
	rsmi_process_info_t *amd_procs;
	uint32_t *amd_proc_devs; /* a bit per AMD device index (< 32) for each of amd_procs */
	unsigned amd_nprocs, amd_procs_cap;
	struct kepler_gpu_device dev[KEPLER_GPU_MAX_DEVICES];
	struct device_state st[KEPLER_GPU_MAX_DEVICES];
};

/* Add @w to @pid's weight in @st's list of *@n (-ENOMEM). */
int kepler_gpu_add_weight(struct device_state *st, size_t *n, uint32_t pid, uint64_t w);

/*
 * AMD (gpu_amd.c). List ROCm SMI's devices after NVML's (0 and none when the
 * library is absent: @why says why, for the log); read device @i's energy
 * into its delta_uj (-EIO, said in the device); the processes of every AMD
 * device once per read; device @i's weights from them.
 */
int kepler_gpu_amd_list(struct kepler_gpu *g, const char *library, struct kepler_error *why);
int kepler_gpu_amd_read_energy(struct kepler_gpu *g, unsigned i, uint64_t mono_ns);
int kepler_gpu_amd_processes(struct kepler_gpu *g);
int kepler_gpu_amd_weights(struct kepler_gpu *g, unsigned i);
void kepler_gpu_amd_close(struct kepler_gpu *g);

#endif /* KEPLER_COLLECTD_GPU_INTERNAL_H */
