/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/rocm_smi.h: the part of AMD's ROCm System Management
 * Interface library (ROCm SMI, librocm_smi64) the GPU meter uses for AMD
 * GPUs, loaded at run time with dlopen() as NVML is: no build or package
 * dependency, and the collector runs where the library is absent.
 *
 * The types and prototypes below are declared from ROCm SMI's public C API
 * (rocm_smi/rocm_smi.h, 5.x and later; Debian 12's librocm-smi-dev 5.2.3):
 * the same names, layouts and status codes, so the real library and the
 * tests' stand-in are called the same way.
 */
#ifndef KEPLER_COLLECTD_ROCM_SMI_H
#define KEPLER_COLLECTD_ROCM_SMI_H

#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"

/* rsmi_status_t: the codes this code tells apart (all others are errors) */
typedef int rsmi_status_t;
#define RSMI_STATUS_SUCCESS 0
#define RSMI_STATUS_INVALID_ARGS 1
#define RSMI_STATUS_NOT_SUPPORTED 2
#define RSMI_STATUS_FILE_ERROR 3 /* a sysfs file of the device is gone: the GPU went away */
#define RSMI_STATUS_PERMISSION 4
#define RSMI_STATUS_INIT_ERROR 8
#define RSMI_STATUS_NOT_FOUND 10
#define RSMI_STATUS_INSUFFICIENT_SIZE 11

/* rsmi_process_info_t */
typedef struct {
	uint32_t process_id;
	uint32_t pasid;
	uint64_t vram_usage;
	uint64_t sdma_usage;   /* microseconds */
	uint32_t cu_occupancy; /* compute units in use, percent */
} rsmi_process_info_t;

/* The library's entry points, resolved by name (NULL: the symbol is missing). */
struct kepler_rsmi {
	void *handle; /* dlopen's */
	char library[256];
	rsmi_status_t (*init)(uint64_t init_flags);
	rsmi_status_t (*shut_down)(void);
	rsmi_status_t (*status_string)(rsmi_status_t status, const char **string);
	rsmi_status_t (*num_monitor_devices)(uint32_t *num_devices);
	rsmi_status_t (*dev_name_get)(uint32_t dv_ind, char *name, size_t len);
	rsmi_status_t (*dev_unique_id_get)(uint32_t dv_ind, uint64_t *id);
	/* the energy accumulator: *counter x *resolution microjoules; *timestamp in ns */
	rsmi_status_t (*dev_energy_count_get)(uint32_t dv_ind, uint64_t *counter, float *resolution,
					      uint64_t *timestamp);
	/* average power, microwatts */
	rsmi_status_t (*dev_power_ave_get)(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *power_uw);
	rsmi_status_t (*compute_process_info_get)(rsmi_process_info_t *procs, uint32_t *num_items);
	rsmi_status_t (*compute_process_gpus_get)(uint32_t pid, uint32_t *dv_indices, uint32_t *num_devices);
};

/*
 * Load ROCm SMI from @library ("" or NULL: librocm_smi64.so, then its .so.7,
 * .so.6, .so.5 and /opt/rocm/lib) and initialise it. -ENOENT (no library),
 * -ENOSYS (not ROCm SMI), -ENODEV (rsmi_init failed: no amdgpu driver).
 */
int kepler_rsmi_open(const char *library, struct kepler_rsmi *ret, struct kepler_error *err);
/* rsmi_status_string's text, or "ROCm SMI status N". */
const char *kepler_rsmi_strerror(const struct kepler_rsmi *r, rsmi_status_t s);
void kepler_rsmi_close(struct kepler_rsmi *r);

#endif /* KEPLER_COLLECTD_ROCM_SMI_H */
