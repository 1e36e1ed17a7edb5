// SPDX-License-Identifier: Apache-2.0
/*
 * AMD GPUs in the GPU meter (gpu.h), through ROCm SMI (rocm_smi.h): the
 * same zones, idle rule and split as NVIDIA's, from ROCm SMI's calls.
 *
 *   energy  rsmi_dev_energy_count_get: an accumulator whose counts are
 *           `resolution` microjoules each (15.3 uJ on MI2xx), as a counter
 *           that never goes back (a reset counts 0); where the device has
 *           none, rsmi_dev_power_ave_get (uW) integrated over the real
 *           elapsed time, said at open;
 *   weights rsmi_compute_process_info_get lists the processes on any AMD
 *           GPU, and rsmi_compute_process_gpus_get which devices each uses.
 *           On a device, each process weighs its compute-unit occupancy
 *           (percent) where any of them has one, else they share equally.
 *           ROCm SMI gives a process one occupancy, not one per device: a
 *           process on two GPUs weighs the same on both.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"
#include "kepler/snapshot.h"

/* ROCm SMI's devices after NVML's, up to the meter's maximum. */
int kepler_gpu_amd_list(struct kepler_gpu *g, const char *library, struct kepler_error *why)
{
	uint32_t count = 0;
	rsmi_status_t s;
	int r = kepler_rsmi_open(library, &g->rsmi, why);

	if (r < 0)
		return r;
	s = g->rsmi.num_monitor_devices(&count);
	if (s != RSMI_STATUS_SUCCESS) {
		r = kepler_error_set(why, -ENODEV, "rsmi_num_monitor_devices: %s",
				     kepler_rsmi_strerror(&g->rsmi, s));
		kepler_rsmi_close(&g->rsmi);
		return r;
	}
	for (uint32_t i = 0; i < count; i++) {
		unsigned k = g->n;
		struct kepler_gpu_device *d = &g->dev[k];
		struct device_state *st = &g->st[k];
		uint64_t id = 0, v, ts;
		float res;

		if (k == KEPLER_GPU_MAX_DEVICES || i >= 32) {
			g->ignored++;
			continue;
		}
		memset(d, 0, sizeof(*d));
		d->vendor = KEPLER_GPU_AMD;
		d->index = i;
		st->amd_index = i;
		snprintf(d->zone, sizeof(d->zone), KEPLER_ZONE_GPU_PREFIX "%u", g->nvidia_listed + i);
		if (!g->rsmi.dev_name_get ||
		    g->rsmi.dev_name_get(i, d->name, sizeof(d->name)) != RSMI_STATUS_SUCCESS)
			snprintf(d->name, sizeof(d->name), "AMD GPU");
		d->name[sizeof(d->name) - 1] = '\0';
		if (g->rsmi.dev_unique_id_get && g->rsmi.dev_unique_id_get(i, &id) == RSMI_STATUS_SUCCESS)
			snprintf(d->uuid, sizeof(d->uuid), "GPU-%016llx", (unsigned long long)id);
		else
			snprintf(d->uuid, sizeof(d->uuid), "AMD-index-%u", i);
		s = RSMI_STATUS_NOT_SUPPORTED;
		if (g->rsmi.dev_energy_count_get)
			s = g->rsmi.dev_energy_count_get(i, &v, &res, &ts);
		if (s != RSMI_STATUS_SUCCESS && g->rsmi.dev_power_ave_get &&
		    g->rsmi.dev_power_ave_get(i, 0, &v) == RSMI_STATUS_SUCCESS) {
			d->power_integrated = true;
			s = RSMI_STATUS_SUCCESS;
		}
		if (s != RSMI_STATUS_SUCCESS) {
			char text[160];

			snprintf(
				text, sizeof(text),
				"AMD GPU %u (%.60s): neither its energy counter nor its power can be read: %s",
				i, d->name, kepler_rsmi_strerror(&g->rsmi, s));
			memcpy(d->last_error, text,
			       sizeof(text) < sizeof(d->last_error) ? sizeof(text) : sizeof(d->last_error));
			d->last_error[sizeof(d->last_error) - 1] = '\0';
			g->ignored++;
			continue;
		}
		st->counter.max_watts = KEPLER_GPU_MAX_PLAUSIBLE_W;
		g->n++;
	}
	if (!count) {
		r = kepler_error_set(why, -ENOENT, "ROCm SMI (%s) lists no AMD GPU", g->rsmi.library);
		kepler_rsmi_close(&g->rsmi); /* not asked again at every read */
	}
	return r;
}

static int fail(struct kepler_gpu *g, unsigned i, const char *call, rsmi_status_t s)
{
	struct kepler_gpu_device *d = &g->dev[i];

	d->failed = true;
	d->read_errors++;
	snprintf(d->last_error, sizeof(d->last_error), "AMD GPU %u: %s: %s%s", d->index, call,
		 kepler_rsmi_strerror(&g->rsmi, s),
		 s == RSMI_STATUS_FILE_ERROR || s == RSMI_STATUS_NOT_FOUND ? " (the GPU went away?)" : "");
	return -EIO;
}

int kepler_gpu_amd_read_energy(struct kepler_gpu *g, unsigned i, uint64_t mono_ns)
{
	struct kepler_gpu_device *d = &g->dev[i];
	struct device_state *st = &g->st[i];
	rsmi_status_t s;
	uint64_t v, ts, delta;
	float res;

	d->delta_uj = 0;
	if (!d->power_integrated) {
		long double uj;

		s = g->rsmi.dev_energy_count_get(st->amd_index, &v, &res, &ts);
		if (s != RSMI_STATUS_SUCCESS)
			return fail(g, i, "rsmi_dev_energy_count_get", s);
		uj = (long double)v * res;
		if (!(res > 0) || !(uj < 1.8e19L))
			return fail(g, i, "rsmi_dev_energy_count_get", RSMI_STATUS_INVALID_ARGS);
		if (kepler_counter_update(&st->counter, (uint64_t)uj, mono_ns, &delta) ==
		    KEPLER_COUNTER_RESET)
			d->resets++;
		d->delta_uj = delta;
	} else {
		s = g->rsmi.dev_power_ave_get(st->amd_index, 0, &v);
		if (s != RSMI_STATUS_SUCCESS)
			return fail(g, i, "rsmi_dev_power_ave_get", s);
		if (v > (uint64_t)KEPLER_GPU_MAX_PLAUSIBLE_W * 1000000)
			return fail(g, i, "rsmi_dev_power_ave_get", RSMI_STATUS_INVALID_ARGS);
		if (st->power_primed && mono_ns > st->last_mono_ns) {
			/* trapezoid in uW x ns = 1e-9 uJ (last_power_mw holds uW here); the rest carried */
			unsigned __int128 e = (unsigned __int128)(st->last_power_mw + v) *
						      (mono_ns - st->last_mono_ns) / 2 +
					      st->power_rem;

			d->delta_uj = (uint64_t)(e / 1000000000u);
			st->power_rem = (uint64_t)(e % 1000000000u);
		}
		st->last_power_mw = v;
		st->last_mono_ns = mono_ns;
		st->power_primed = true;
	}
	d->total_uj += d->delta_uj;
	return 0;
}

/* Every process on an AMD GPU, and the devices each uses, once per read. */
int kepler_gpu_amd_processes(struct kepler_gpu *g)
{
	uint32_t n = g->amd_procs_cap;
	rsmi_status_t s;

	g->amd_nprocs = 0;
	if (!g->rsmi.compute_process_info_get)
		return 0;
	for (int tries = 0; tries < 3; tries++) {
		if (n == 0 || n > g->amd_procs_cap) {
			unsigned cap = n > 16 ? n + 16 : 16;
			rsmi_process_info_t *p = realloc(g->amd_procs, cap * sizeof(*p));
			uint32_t *dv = p ? realloc(g->amd_proc_devs, cap * sizeof(*dv)) : NULL;

			if (p)
				g->amd_procs = p;
			if (!p || !dv)
				return -ENOMEM;
			g->amd_proc_devs = dv;
			g->amd_procs_cap = cap;
		}
		n = g->amd_procs_cap;
		s = g->rsmi.compute_process_info_get(g->amd_procs, &n);
		if (s == RSMI_STATUS_SUCCESS)
			break;
		if (s != RSMI_STATUS_INSUFFICIENT_SIZE)
			return 0; /* none this interval: the devices' energy unattributed */
		n = g->amd_procs_cap * 2;
	}
	if (s != RSMI_STATUS_SUCCESS || n > g->amd_procs_cap)
		return 0;
	g->amd_nprocs = n;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t dv[32], nd = 32;

		g->amd_proc_devs[k] = 0;
		if (!g->rsmi.compute_process_gpus_get ||
		    g->rsmi.compute_process_gpus_get(g->amd_procs[k].process_id, dv, &nd) !=
			    RSMI_STATUS_SUCCESS)
			continue;
		for (uint32_t j = 0; j < nd && j < 32; j++)
			if (dv[j] < 32)
				g->amd_proc_devs[k] |= 1u << dv[j];
	}
	return 0;
}

int kepler_gpu_amd_weights(struct kepler_gpu *g, unsigned i)
{
	struct kepler_gpu_device *d = &g->dev[i];
	struct device_state *st = &g->st[i];
	uint32_t bit = 1u << st->amd_index;
	uint64_t sum = 0;
	size_t n = 0;

	d->rule = KEPLER_GPU_SPLIT_NONE;
	d->nweights = 0;
	for (unsigned k = 0; k < g->amd_nprocs; k++)
		if ((g->amd_proc_devs[k] & bit) && g->amd_procs[k].cu_occupancy <= 100)
			sum += g->amd_procs[k].cu_occupancy;
	for (unsigned k = 0; k < g->amd_nprocs; k++) {
		const rsmi_process_info_t *p = &g->amd_procs[k];

		if (!(g->amd_proc_devs[k] & bit) || p->process_id == 0)
			continue;
		if (sum && (p->cu_occupancy == 0 || p->cu_occupancy > 100))
			continue; /* idle on it this interval, or garbage: never weight */
		if (kepler_gpu_add_weight(st, &n, p->process_id, sum ? p->cu_occupancy : 1) < 0)
			return -ENOMEM;
	}
	if (n)
		d->rule = sum ? KEPLER_GPU_SPLIT_CU : KEPLER_GPU_SPLIT_EQUAL;
	d->nweights = n;
	d->weights = st->weights;
	return 0;
}

void kepler_gpu_amd_close(struct kepler_gpu *g)
{
	free(g->amd_procs);
	free(g->amd_proc_devs);
	g->amd_procs = NULL;
	g->amd_proc_devs = NULL;
	kepler_rsmi_close(&g->rsmi);
}
