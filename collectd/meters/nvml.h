/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/nvml.h: the part of NVIDIA's Management Library (NVML)
 * the GPU meter uses, loaded at run time with dlopen(): kepler-collectd has
 * no build or package dependency on the driver, and runs CPU-only where the
 * library is absent.
 *
 * The types and prototypes below are declared from NVML's public C API
 * (nvml.h of the CUDA toolkit, API version 11+): the same names, layouts
 * and return codes, so the real libnvidia-ml.so.1 and the tests' stand-in
 * are called the same way.
 */
#ifndef KEPLER_COLLECTD_NVML_H
#define KEPLER_COLLECTD_NVML_H

#include <stdbool.h>

#include "kepler/error.h"

/* nvmlReturn_t: the codes this code tells apart (NVML has more; all are errors) */
typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_UNKNOWN 999

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

typedef struct nvmlDevice_st *nvmlDevice_t;

/* nvmlProcessUtilizationSample_t */
typedef struct {
	unsigned int pid;
	unsigned long long timeStamp; /* CPU time stamp, microseconds */
	unsigned int smUtil;          /* SM (3D/compute) utilisation, percent */
	unsigned int memUtil;
	unsigned int encUtil;
	unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

/* nvmlProcessInfo_t as the _v2 and _v3 running-process calls fill it */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;     /* MIG: 0xFFFFFFFF when not in a GPU instance */
	unsigned int computeInstanceId; /* MIG: 0xFFFFFFFF likewise */
} nvmlProcessInfo_t;

/* MIG: a GPU instance's device (nvmlDeviceGetMigDeviceHandleByIndex) has these attributes. */
typedef struct {
	unsigned int multiprocessorCount; /* SMs of the instance */
	unsigned int sharedCopyEngineCount;
	unsigned int sharedDecoderCount;
	unsigned int sharedEncoderCount;
	unsigned int sharedJpegCount;
	unsigned int sharedOfaCount;
	unsigned int gpuInstanceSliceCount;
	unsigned int computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

/*
 * GPM (GPU performance monitoring, Hopper and later): two samples of a
 * GPU instance (nvmlGpmMigSampleGet) give its metrics over the time
 * between them (nvmlGpmMetricsGet).
 */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

#define NVML_GPM_SUPPORT_VERSION 1
typedef struct {
	unsigned int version; /* NVML_GPM_SUPPORT_VERSION */
	unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

#define NVML_GPM_METRIC_SM_UTIL 2 /* percentage of SMs busy, 0.0 - 100.0 */
typedef struct {
	unsigned int metricId;   /* in */
	nvmlReturn_t nvmlReturn; /* out: this metric's status */
	double value;            /* out, valid when nvmlReturn is NVML_SUCCESS */
	struct {
		char *shortName, *longName, *unit;
	} metricInfo;
} nvmlGpmMetric_t;

/*
 * nvmlGpmMetricsGet_t. NVML sizes metrics[] by NVML_GPM_METRIC_MAX, which
 * grows between versions of its header (98, 210, ...) while the library
 * reads numMetrics entries: room for KEPLER_GPM_METRICS_ROOM, more than any.
 */
#define NVML_GPM_METRICS_GET_VERSION 1
#define KEPLER_GPM_METRICS_ROOM 512
typedef struct {
	unsigned int version;    /* NVML_GPM_METRICS_GET_VERSION */
	unsigned int numMetrics; /* entries of metrics[] asked */
	nvmlGpmSample_t sample1, sample2;
	nvmlGpmMetric_t metrics[KEPLER_GPM_METRICS_ROOM];
} nvmlGpmMetricsGet_t;

/* The library's entry points, resolved by name (NULL: the symbol is missing). */
struct kepler_nvml {
	void *handle; /* dlopen's */
	nvmlReturn_t (*Init)(void);
	nvmlReturn_t (*Shutdown)(void);
	const char *(*ErrorString)(nvmlReturn_t);
	nvmlReturn_t (*DeviceGetCount)(unsigned int *count);
	nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int index, nvmlDevice_t *device);
	nvmlReturn_t (*DeviceGetName)(nvmlDevice_t device, char *name, unsigned int length);
	nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t device, char *uuid, unsigned int length);
	nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t device, unsigned long long *energy_mj);
	nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t device, unsigned int *power_mw);
	nvmlReturn_t (*DeviceGetProcessUtilization)(nvmlDevice_t device,
						    nvmlProcessUtilizationSample_t *samples,
						    unsigned int *count, unsigned long long last_seen_us);
	nvmlReturn_t (*DeviceGetComputeRunningProcesses)(nvmlDevice_t device, unsigned int *count,
							 nvmlProcessInfo_t *infos);
	nvmlReturn_t (*DeviceGetGraphicsRunningProcesses)(nvmlDevice_t device, unsigned int *count,
							  nvmlProcessInfo_t *infos);
	nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t device, unsigned int *current, unsigned int *pending);
	/* MIG and GPM */
	nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t device, unsigned int *count);
	nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t device, unsigned int index,
							nvmlDevice_t *mig);
	nvmlReturn_t (*DeviceGetGpuInstanceId)(nvmlDevice_t mig, unsigned int *id);
	nvmlReturn_t (*DeviceGetAttributes)(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes);
	nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t device, nvmlGpmSupport_t *support);
	nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t *sample);
	nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t sample);
	nvmlReturn_t (*GpmMigSampleGet)(nvmlDevice_t device, unsigned int gpu_instance_id,
					nvmlGpmSample_t sample);
	nvmlReturn_t (*GpmMetricsGet)(nvmlGpmMetricsGet_t *metrics);
};

/*
 * dlopen() @library ("libnvidia-ml.so.1", or a path) and resolve the entry
 * points, then nvmlInit_v2(). Errors: -ENOENT (no such library: no NVIDIA
 * driver here), -ENOSYS (a required symbol is missing), -ENODEV (nvmlInit
 * failed: the driver is not loaded, no permission), each with the reason
 * in @err. On error nothing stays loaded.
 */
int kepler_nvml_open(const char *library, struct kepler_nvml *ret, struct kepler_error *err);

/* NVML's text for @r ("Not Supported"), or "NVML error <r>". */
const char *kepler_nvml_strerror(const struct kepler_nvml *n, nvmlReturn_t r);

/* nvmlShutdown() and dlclose(); a zeroed struct is fine. */
void kepler_nvml_close(struct kepler_nvml *n);

#endif /* KEPLER_COLLECTD_NVML_H */
