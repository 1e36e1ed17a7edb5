// SPDX-License-Identifier: Apache-2.0
/*
 * Loading NVML at run time: the library is the driver's (it must match the
 * kernel module), so it is never linked; dlopen() finds it on the loader's
 * path (LD_LIBRARY_PATH, e.g. /run/nvidia/driver/usr/lib64 in a container)
 * or at the path gpu.nvml-library names.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nvml.h"

/* The newest version of each versioned entry point first. */
struct symbol {
	const char *names[3];
	size_t offset;
	bool required;
};

#define SYM(field, required, ...)                                              \
	{                                                                      \
		{ __VA_ARGS__ }, offsetof(struct kepler_nvml, field), required \
	}

static const struct symbol symbols[] = {
	SYM(Init, true, "nvmlInit_v2", "nvmlInit"),
	SYM(Shutdown, true, "nvmlShutdown"),
	SYM(ErrorString, false, "nvmlErrorString"),
	SYM(DeviceGetCount, true, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
	SYM(DeviceGetHandleByIndex, true, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
	SYM(DeviceGetName, false, "nvmlDeviceGetName"),
	SYM(DeviceGetUUID, false, "nvmlDeviceGetUUID"),
	SYM(DeviceGetTotalEnergyConsumption, false, "nvmlDeviceGetTotalEnergyConsumption"),
	SYM(DeviceGetPowerUsage, false, "nvmlDeviceGetPowerUsage"),
	SYM(DeviceGetProcessUtilization, false, "nvmlDeviceGetProcessUtilization"),
	/* _v1 fills a shorter record than nvmlProcessInfo_t: never used */
	SYM(DeviceGetComputeRunningProcesses, false, "nvmlDeviceGetComputeRunningProcesses_v3",
	    "nvmlDeviceGetComputeRunningProcesses_v2"),
	SYM(DeviceGetGraphicsRunningProcesses, false, "nvmlDeviceGetGraphicsRunningProcesses_v3",
	    "nvmlDeviceGetGraphicsRunningProcesses_v2"),
	SYM(DeviceGetMigMode, false, "nvmlDeviceGetMigMode"),
	SYM(DeviceGetMaxMigDeviceCount, false, "nvmlDeviceGetMaxMigDeviceCount"),
	SYM(DeviceGetMigDeviceHandleByIndex, false, "nvmlDeviceGetMigDeviceHandleByIndex"),
	SYM(DeviceGetGpuInstanceId, false, "nvmlDeviceGetGpuInstanceId"),
	SYM(DeviceGetAttributes, false, "nvmlDeviceGetAttributes_v2", "nvmlDeviceGetAttributes"),
	SYM(GpmQueryDeviceSupport, false, "nvmlGpmQueryDeviceSupport"),
	SYM(GpmSampleAlloc, false, "nvmlGpmSampleAlloc"),
	SYM(GpmSampleFree, false, "nvmlGpmSampleFree"),
	SYM(GpmMigSampleGet, false, "nvmlGpmMigSampleGet"),
	SYM(GpmMetricsGet, false, "nvmlGpmMetricsGet"),
};

static void *resolve(void *handle, const struct symbol *s)
{
	for (size_t i = 0; i < 3 && s->names[i]; i++) {
		void *p = dlsym(handle, s->names[i]);

		if (p)
			return p;
	}
	return NULL;
}

int kepler_nvml_open(const char *library, struct kepler_nvml *ret, struct kepler_error *err)
{
	struct kepler_nvml n = { 0 };
	nvmlReturn_t r;

	dlerror();
	n.handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!n.handle) {
		const char *why = dlerror();

		return kepler_error_set(err, -ENOENT, "cannot load %s: %s", library,
					why ? why : "unknown error");
	}
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *p = resolve(n.handle, &symbols[i]);

		if (!p && symbols[i].required) {
			dlclose(n.handle);
			return kepler_error_set(err, -ENOSYS, "%s has no %s: not NVML, or too old", library,
						symbols[i].names[0]);
		}
		memcpy((char *)&n + symbols[i].offset, &p, sizeof(p));
	}
	if (!n.DeviceGetTotalEnergyConsumption && !n.DeviceGetPowerUsage) {
		dlclose(n.handle);
		return kepler_error_set(err, -ENOSYS,
					"%s has neither nvmlDeviceGetTotalEnergyConsumption nor "
					"nvmlDeviceGetPowerUsage",
					library);
	}
	r = n.Init();
	if (r != NVML_SUCCESS) {
		int e = kepler_error_set(err, -ENODEV, "nvmlInit failed: %s%s", kepler_nvml_strerror(&n, r),
					 r == NVML_ERROR_DRIVER_NOT_LOADED
						 ? " (is the nvidia kernel module loaded?)"
					 : r == NVML_ERROR_NO_PERMISSION ? " (the /dev/nvidia* device files)"
									 : "");

		dlclose(n.handle);
		return e;
	}
	*ret = n;
	return 0;
}

const char *kepler_nvml_strerror(const struct kepler_nvml *n, nvmlReturn_t r)
{
	static __thread char buf[32];
	const char *s = n && n->ErrorString ? n->ErrorString(r) : NULL;

	if (s && *s)
		return s;
	snprintf(buf, sizeof(buf), "NVML error %d", r);
	return buf;
}

void kepler_nvml_close(struct kepler_nvml *n)
{
	if (!n || !n->handle)
		return;
	n->Shutdown();
	dlclose(n->handle);
	memset(n, 0, sizeof(*n));
}
