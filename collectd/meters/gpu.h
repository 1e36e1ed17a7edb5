/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/gpu.h: the GPU meter, beside the CPU meter: NVIDIA GPUs
 * through NVML (nvml.h) and AMD GPUs through ROCm SMI (rocm_smi.h,
 * gpu_amd.c), one zone per device ("gpu0", "gpu1", ...; AMD's after
 * NVIDIA's). What follows is NVML's side; ROCm SMI's is the same with its
 * calls: the energy accumulator (rsmi_dev_energy_count_get, counter x
 * resolution) or the average power integrated, and the weights from the
 * process list (rsmi_compute_process_info_get): each process's compute-unit
 * occupancy, else an equal split over the device's processes.
 *
 * Per device and interval:
 *   energy  nvmlDeviceGetTotalEnergyConsumption (mJ since the driver
 *           loaded) as a counter that never goes back (a driver reload is a
 *           reset: delta 0); where the device has no energy counter, its
 *           power (nvmlDeviceGetPowerUsage) integrated over the real
 *           elapsed time (trapezoid), said at open;
 *   idle    the configured idle power (gpu.idle-power) x interval, else the
 *           lowest power seen in an interval when no process ran on the
 *           device (Kepler's rule), else 0; never above the energy;
 *   active  energy - idle;
 *   weights how the active part splits over processes: each process's SM
 *           utilisation summed over every sample NVML took since the last
 *           read (nvmlDeviceGetProcessUtilization with its time-stamp
 *           protocol); if no sample shows any, an equal split over the
 *           running compute and graphics processes; if none ran, nothing
 *           (the active energy is the device's unattributed remainder).
 */
#ifndef KEPLER_COLLECTD_GPU_H
#define KEPLER_COLLECTD_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "kepler/error.h"
#include "nvml.h"

/* GPUs read: a snapshot holds KEPLER_MAX_ZONES zones, the CPU and platform zones beside these. */
#define KEPLER_GPU_MAX_DEVICES 32
/* No GPU board draws 5 kW: a counter jumping further is a reset, never energy. */
#define KEPLER_GPU_MAX_PLAUSIBLE_W 5000

struct kepler_gpu_params {
	const char *library;      /* "libnvidia-ml.so.1", or a path */
	const char *rocm_library; /* "" or NULL: ROCm SMI where it is installed; else a path */
	uint64_t idle_uw;         /* configured idle power per device; 0: learned */
};

/* How a device's active energy was split in the last read. */
enum kepler_gpu_rule {
	KEPLER_GPU_SPLIT_NONE = 0, /* no process ran: all unattributed */
	KEPLER_GPU_SPLIT_SM,       /* by SM utilisation samples */
	KEPLER_GPU_SPLIT_EQUAL,    /* no utilisation: equally over the running processes */
	KEPLER_GPU_SPLIT_MIG,      /* MIG: over GPU instances by busy SMs (GPM), equally within one */
	KEPLER_GPU_SPLIT_CU,       /* AMD: by the processes' compute-unit occupancy */
};

enum kepler_gpu_vendor { KEPLER_GPU_NVIDIA, KEPLER_GPU_AMD };

struct kepler_gpu_weight {
	uint32_t pid; /* host PID, as NVML reports it */
	uint64_t weight;
};

struct kepler_gpu_device {
	enum kepler_gpu_vendor vendor;
	unsigned index; /* the vendor library's device index */
	char zone[16];  /* "gpu0" */
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	bool power_integrated; /* no energy counter: power x time */
	bool mig;              /* MIG mode on: split per GPU instance (gpu_mig.h) */
	bool mig_gpm;          /* ... by GPM's busy SMs; else equally over its processes */
	unsigned mig_instances;
	char mig_why[160]; /* MIG without GPM: why */
	/* the last read */
	uint64_t total_uj, delta_uj, idle_delta_uj, active_delta_uj;
	uint64_t idle_uw;  /* idle power used (configured or learned; 0 before one is known) */
	bool idle_learned; /* idle_uw is the lowest power seen with no process */
	bool failed;       /* the read failed: delta 0, last good reading kept */
	enum kepler_gpu_rule rule;
	size_t nweights;
	const struct kepler_gpu_weight *weights; /* valid until the next read */
	/* since open */
	uint64_t resets, read_errors;
	char last_error[160]; /* the last failure, "" if none yet */
};

struct kepler_gpu;

/*
 * Load NVML (kepler_nvml_open) and list its devices. Errors: -ENOENT (no
 * library, or no device), -ENOSYS, -ENODEV, -ENOMEM, with the reason in
 * @err. Devices beyond KEPLER_GPU_MAX_DEVICES are left out (counted in
 * kepler_gpu_ignored()).
 */
int kepler_gpu_open(const struct kepler_gpu_params *p, struct kepler_gpu **ret, struct kepler_error *err);

/*
 * Read every device at monotonic time @mono_ns. The first read primes the
 * counters (deltas 0). A device that fails keeps delta 0 and its last good
 * reading (the next good read counts both intervals; a reading that went
 * back is a reset, never invented energy); the first failure is described
 * in @err and -EIO returned, every other device still read. -ENOMEM.
 */
int kepler_gpu_read(struct kepler_gpu *g, uint64_t mono_ns, struct kepler_error *err);

unsigned kepler_gpu_count(const struct kepler_gpu *g);
/* Device @i (< count), valid until kepler_gpu_close(). */
const struct kepler_gpu_device *kepler_gpu_device(const struct kepler_gpu *g, unsigned i);
/* Devices NVML listed that are not read (beyond the maximum, or whose handle failed). */
unsigned kepler_gpu_ignored(const struct kepler_gpu *g);

/* NULL is fine. */
void kepler_gpu_close(struct kepler_gpu *g);

#endif /* KEPLER_COLLECTD_GPU_H */
