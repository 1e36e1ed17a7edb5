// SPDX-License-Identifier: Apache-2.0
/*
 * A GPU in MIG mode (gpu_mig.h): its GPU instances and, through GPM, the
 * SMs each kept busy over an interval.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_mig.h"

static bool has_gpm(const struct kepler_nvml *nv)
{
	return nv->GpmQueryDeviceSupport && nv->GpmSampleAlloc && nv->GpmSampleFree && nv->GpmMigSampleGet &&
	       nv->GpmMetricsGet;
}

/* The GPU instances: one MIG device each, with its instance id and SM count. */
static void list_instances(const struct kepler_nvml *nv, nvmlDevice_t device, struct kepler_gpu_mig *m)
{
	unsigned int max = 0;
	nvmlReturn_t r;

	if (!nv->DeviceGetMaxMigDeviceCount || !nv->DeviceGetMigDeviceHandleByIndex ||
	    !nv->DeviceGetGpuInstanceId) {
		snprintf(m->why, sizeof(m->why), "this NVML cannot list GPU instances");
		return;
	}
	r = nv->DeviceGetMaxMigDeviceCount(device, &max);
	if (r != NVML_SUCCESS) {
		snprintf(m->why, sizeof(m->why), "nvmlDeviceGetMaxMigDeviceCount: %s",
			 kepler_nvml_strerror(nv, r));
		return;
	}
	for (unsigned int i = 0; i < max && m->n < KEPLER_GPU_MIG_MAX_INSTANCES; i++) {
		struct kepler_gpu_mig_instance *in = &m->inst[m->n];
		nvmlDeviceAttributes_t a;
		nvmlDevice_t mig;
		unsigned int gi;

		if (nv->DeviceGetMigDeviceHandleByIndex(device, i, &mig) != NVML_SUCCESS ||
		    nv->DeviceGetGpuInstanceId(mig, &gi) != NVML_SUCCESS)
			continue; /* an empty slot (NOT_FOUND) */
		if (kepler_gpu_mig_find(m, gi))
			continue; /* another compute instance of an instance listed */
		memset(&a, 0, sizeof(a));
		in->gi = gi;
		in->sms = nv->DeviceGetAttributes && nv->DeviceGetAttributes(mig, &a) == NVML_SUCCESS &&
					  a.multiprocessorCount && a.multiprocessorCount <= 1024
				  ? a.multiprocessorCount
				  : 1;
		m->n++;
	}
	if (!m->n)
		snprintf(m->why, sizeof(m->why), "no GPU instance listed");
}

int kepler_gpu_mig_open(const struct kepler_nvml *nv, nvmlDevice_t device, struct kepler_gpu_mig *m)
{
	nvmlGpmSupport_t support = { .version = NVML_GPM_SUPPORT_VERSION };
	nvmlReturn_t r;

	memset(m, 0, sizeof(*m));
	list_instances(nv, device, m);
	if (!m->n)
		return 0;
	if (!has_gpm(nv)) {
		snprintf(m->why, sizeof(m->why), "this NVML has no GPM (driver 520 or later)");
		return 0;
	}
	r = nv->GpmQueryDeviceSupport(device, &support);
	if (r != NVML_SUCCESS || !support.isSupportedDevice) {
		snprintf(m->why, sizeof(m->why), "GPM: %s",
			 r != NVML_SUCCESS ? kepler_nvml_strerror(nv, r)
					   : "not supported on this GPU (Hopper and later)");
		return 0;
	}
	m->get = calloc(1, sizeof(*m->get));
	if (!m->get)
		return -ENOMEM;
	for (unsigned int i = 0; i < m->n; i++)
		for (int k = 0; k < 2; k++) {
			r = nv->GpmSampleAlloc(&m->inst[i].sample[k]);
			if (r != NVML_SUCCESS) {
				snprintf(m->why, sizeof(m->why), "nvmlGpmSampleAlloc: %s",
					 kepler_nvml_strerror(nv, r));
				kepler_gpu_mig_close(nv, m);
				list_instances(nv, device, m);
				return 0;
			}
		}
	m->gpm = true;
	return 0;
}

/* One instance's SM utilisation between its last two samples, as busy SMs x 1e6; false if not known. */
static bool instance_busy(const struct kepler_nvml *nv, struct kepler_gpu_mig *m,
			  struct kepler_gpu_mig_instance *in)
{
	nvmlGpmMetricsGet_t *g = m->get;
	double v;

	memset(g, 0, sizeof(*g));
	g->version = NVML_GPM_METRICS_GET_VERSION;
	g->numMetrics = 1;
	g->sample1 = in->sample[!in->cur];
	g->sample2 = in->sample[in->cur];
	g->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
	if (nv->GpmMetricsGet(g) != NVML_SUCCESS || g->metrics[0].nvmlReturn != NVML_SUCCESS)
		return false;
	v = g->metrics[0].value;
	if (!isfinite(v) || v < 0 || v > 100.5)
		return false; /* garbage is never a weight */
	in->busy = (uint64_t)llround((v > 100 ? 100 : v) / 100.0 * in->sms * 1e6);
	return true;
}

bool kepler_gpu_mig_sample(const struct kepler_nvml *nv, nvmlDevice_t device, struct kepler_gpu_mig *m)
{
	bool all = m->gpm && m->n;

	for (unsigned int i = 0; i < m->n; i++)
		m->inst[i].busy = 0;
	if (!m->gpm)
		return false;
	for (unsigned int i = 0; i < m->n; i++) {
		struct kepler_gpu_mig_instance *in = &m->inst[i];
		int next = !in->cur;

		if (nv->GpmMigSampleGet(device, in->gi, in->sample[next]) != NVML_SUCCESS) {
			in->primed = false; /* the next good sample starts over */
			all = false;
			continue;
		}
		in->cur = next;
		if (!in->primed || !instance_busy(nv, m, in))
			all = false;
		in->primed = true;
	}
	return all;
}

const struct kepler_gpu_mig_instance *kepler_gpu_mig_find(const struct kepler_gpu_mig *m, unsigned int gi)
{
	for (unsigned int i = 0; i < m->n; i++)
		if (m->inst[i].gi == gi)
			return &m->inst[i];
	return NULL;
}

void kepler_gpu_mig_close(const struct kepler_nvml *nv, struct kepler_gpu_mig *m)
{
	for (unsigned int i = 0; i < m->n; i++)
		for (int k = 0; k < 2; k++)
			if (m->inst[i].sample[k] && nv->GpmSampleFree)
				nv->GpmSampleFree(m->inst[i].sample[k]);
	free(m->get);
	memset(m->inst, 0, sizeof(m->inst));
	m->get = NULL;
	m->gpm = false;
	m->n = 0;
}
