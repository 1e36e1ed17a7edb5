// SPDX-License-Identifier: Apache-2.0
/*
 * The GPU meter (gpu.h): per device, energy from NVML's counter (or power
 * integrated), idle and active parts, and the weights that split the active
 * part over processes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "gpu_internal.h"
#include "kepler/array.h"
#include "gpu_mig.h"
#include "kepler/snapshot.h"
#include "meter.h"

static void device_identity(struct kepler_gpu *g, unsigned i)
{
	struct kepler_gpu_device *d = &g->dev[i];
	nvmlDevice_t h = g->st[i].handle;
	unsigned current = 0, pending = 0;

	snprintf(d->zone, sizeof(d->zone), KEPLER_ZONE_GPU_PREFIX "%u", d->index);
	if (!g->nvml.DeviceGetName || g->nvml.DeviceGetName(h, d->name, sizeof(d->name)) != NVML_SUCCESS)
		snprintf(d->name, sizeof(d->name), "NVIDIA GPU");
	if (!g->nvml.DeviceGetUUID || g->nvml.DeviceGetUUID(h, d->uuid, sizeof(d->uuid)) != NVML_SUCCESS)
		snprintf(d->uuid, sizeof(d->uuid), "GPU-index-%u", d->index);
	d->name[sizeof(d->name) - 1] = d->uuid[sizeof(d->uuid) - 1] = '\0';
	if (g->nvml.DeviceGetMigMode && g->nvml.DeviceGetMigMode(h, &current, &pending) == NVML_SUCCESS)
		d->mig = current == 1;
}

/* MIG mode: its GPU instances, and whether GPM measures them (said in the device). */
static int mig_open(struct kepler_gpu *g, unsigned i)
{
	struct kepler_gpu_device *d = &g->dev[i];
	struct kepler_gpu_mig *m = &g->st[i].mig;
	int r = kepler_gpu_mig_open(&g->nvml, g->st[i].handle, m);

	d->mig_gpm = m->gpm;
	d->mig_instances = m->n;
	snprintf(d->mig_why, sizeof(d->mig_why), "%s", m->gpm ? "" : m->why);
	return r;
}

/* Energy counter if the device has one, else power; -ENOTSUP if neither answers. */
static int probe_energy(struct kepler_gpu *g, unsigned i, struct kepler_error *err)
{
	nvmlDevice_t h = g->st[i].handle;
	unsigned long long mj;
	unsigned int mw;
	nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;

	if (g->nvml.DeviceGetTotalEnergyConsumption) {
		r = g->nvml.DeviceGetTotalEnergyConsumption(h, &mj);
		if (r == NVML_SUCCESS)
			return 0;
	}
	if (g->nvml.DeviceGetPowerUsage && g->nvml.DeviceGetPowerUsage(h, &mw) == NVML_SUCCESS) {
		g->dev[i].power_integrated = true;
		return 0;
	}
	return kepler_error_set(err, -ENOTSUP,
				"GPU %u (%s): neither its energy counter nor its power can be read: %s",
				g->dev[i].index, g->dev[i].name, kepler_nvml_strerror(&g->nvml, r));
}

static int list_devices(struct kepler_gpu *g, struct kepler_error *err)
{
	unsigned count = 0;
	nvmlReturn_t r = g->nvml.DeviceGetCount(&count);

	if (r != NVML_SUCCESS)
		return kepler_error_set(err, -ENODEV, "nvmlDeviceGetCount: %s",
					kepler_nvml_strerror(&g->nvml, r));
	g->nvidia_listed = count;
	for (unsigned i = 0; i < count; i++) {
		unsigned k = g->n;
		struct kepler_error perr = { 0 };

		if (k == KEPLER_GPU_MAX_DEVICES ||
		    g->nvml.DeviceGetHandleByIndex(i, &g->st[k].handle) != NVML_SUCCESS) {
			g->ignored++;
			continue;
		}
		g->dev[k].index = i;
		device_identity(g, k);
		if (g->dev[k].mig && mig_open(g, k) < 0)
			return kepler_error_set(err, -ENOMEM, "out of memory");
		if (probe_energy(g, k, &perr) < 0) {
			g->ignored++;
			snprintf(g->dev[k].last_error, sizeof(g->dev[k].last_error), "%s", perr.msg);
			continue;
		}
		g->st[k].counter.max_watts = KEPLER_GPU_MAX_PLAUSIBLE_W;
		g->n++;
	}
	if (!g->n)
		return kepler_error_set(err, -ENOENT, "NVML lists %u GPU(s), none readable%s%s", count,
					g->dev[0].last_error[0] ? ": " : "", g->dev[0].last_error);
	return 0;
}

int kepler_gpu_open(const struct kepler_gpu_params *p, struct kepler_gpu **ret, struct kepler_error *err)
{
	struct kepler_gpu *g = calloc(1, sizeof(*g));
	int r;

	if (!g)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	g->idle_uw = p->idle_uw;
	r = kepler_nvml_open(p->library && *p->library ? p->library : "libnvidia-ml.so.1", &g->nvml, err);
	if (r == 0)
		r = list_devices(g, err);
	if (r == 0 || r == -ENOENT || r == -ENODEV || r == -ENOSYS) {
		/* AMD beside or instead: an error only when neither vendor has a GPU */
		struct kepler_error amd = { 0 };
		int ra = kepler_gpu_amd_list(g, p->rocm_library, &amd);

		if (ra == -ENOMEM)
			r = kepler_error_set(err, ra, "out of memory");
		else if (r < 0 && g->n)
			r = 0;
		else if (r < 0 && err)
			snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg), "; and %s",
				 amd.msg);
	}
	if (r < 0) {
		kepler_gpu_close(g);
		return r;
	}
	*ret = g;
	return 0;
}

static int fail(struct kepler_gpu *g, unsigned i, const char *call, nvmlReturn_t r)
{
	struct kepler_gpu_device *d = &g->dev[i];
	char why[64];

	snprintf(why, sizeof(why), "%s", kepler_nvml_strerror(&g->nvml, r));
	d->failed = true;
	d->read_errors++;
	snprintf(d->last_error, sizeof(d->last_error), "GPU %u: %s: %s%s", d->index, call, why,
		 r == NVML_ERROR_GPU_IS_LOST ? " (the GPU fell off the bus)" : "");
	return -EIO;
}

/* This interval's energy of device @i into d->delta_uj. */
static int read_energy(struct kepler_gpu *g, unsigned i, uint64_t mono_ns)
{
	struct kepler_gpu_device *d = &g->dev[i];
	struct device_state *st = &g->st[i];
	nvmlReturn_t r;

	d->delta_uj = 0;
	if (!d->power_integrated) {
		unsigned long long mj;
		uint64_t delta;

		r = g->nvml.DeviceGetTotalEnergyConsumption(st->handle, &mj);
		if (r != NVML_SUCCESS)
			return fail(g, i, "nvmlDeviceGetTotalEnergyConsumption", r);
		if (mj > UINT64_MAX / 1000)
			return fail(g, i, "nvmlDeviceGetTotalEnergyConsumption", NVML_ERROR_UNKNOWN);
		if (kepler_counter_update(&st->counter, (uint64_t)mj * 1000, mono_ns, &delta) ==
		    KEPLER_COUNTER_RESET)
			d->resets++;
		d->delta_uj = delta;
	} else {
		unsigned int mw;

		r = g->nvml.DeviceGetPowerUsage(st->handle, &mw);
		if (r != NVML_SUCCESS)
			return fail(g, i, "nvmlDeviceGetPowerUsage", r);
		if (st->power_primed && mono_ns > st->last_mono_ns) {
			/* trapezoid: (P0 + P1) / 2 x dt, in mW x ns = 1e-6 uJ; what is below 1 uJ carried */
			unsigned __int128 e = (unsigned __int128)(st->last_power_mw + mw) *
						      (mono_ns - st->last_mono_ns) / 2 +
					      st->power_rem;

			d->delta_uj = (uint64_t)(e / 1000000);
			st->power_rem = (uint64_t)(e % 1000000);
		}
		st->last_power_mw = mw;
		st->last_mono_ns = mono_ns;
		st->power_primed = true;
	}
	d->total_uj += d->delta_uj;
	return 0;
}

int kepler_gpu_add_weight(struct device_state *st, size_t *n, uint32_t pid, uint64_t w)
{
	for (size_t k = 0; k < *n; k++)
		if (st->weights[k].pid == pid) {
			st->weights[k].weight += w;
			return 0;
		}
	if (*n == st->weights_cap) {
		size_t cap = st->weights_cap ? 2 * st->weights_cap : 16;
		struct kepler_gpu_weight *p = realloc(st->weights, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		st->weights = p;
		st->weights_cap = cap;
	}
	st->weights[(*n)++] = (struct kepler_gpu_weight){ pid, w };
	return 0;
}

/*
 * buf (of *cap records, each size bytes) with room for at least need records:
 * the same or a larger buffer, or NULL (buf kept) when memory is short.
 */
static void *grow_buffer(void *buf, unsigned *cap, unsigned need, size_t size)
{
	void *p;

	if (need <= *cap)
		return buf;
	p = realloc(buf, (size_t)need * size);
	if (p)
		*cap = need;
	return p;
}

/*
 * The utilisation samples since the last read, in one call with the buffer
 * kept from the last interval: on a real H200 (driver 580) each call costs
 * about 1.9 ms of CPU, so there is no sizing call first. NVML answers
 * INSUFFICIENT_SIZE with the count it needs (the buffer then grows, with room
 * for samples that keep coming) and NOT_FOUND when it has none. Returns the
 * number read (0 if none or unsupported), -ENOMEM, -EIO.
 */
static long read_samples(struct kepler_gpu *g, unsigned i)
{
	struct device_state *st = &g->st[i];
	unsigned need = 32;

	for (int attempt = 0; attempt < 3; attempt++) {
		void *p = grow_buffer(st->samples, &st->samples_cap, need, sizeof(*st->samples));

		if (!p)
			return -ENOMEM;
		st->samples = p;
		unsigned count = st->samples_cap;
		nvmlReturn_t r = g->nvml.DeviceGetProcessUtilization(st->handle, st->samples, &count,
								     st->last_seen_us);
		if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED)
			return 0;
		if (r == NVML_SUCCESS)
			return count <= st->samples_cap ? (long)count : (long)st->samples_cap;
		if (r != NVML_ERROR_INSUFFICIENT_SIZE)
			return fail(g, i, "nvmlDeviceGetProcessUtilization", r);
		if (count > 65536)
			return fail(g, i, "nvmlDeviceGetProcessUtilization", NVML_ERROR_UNKNOWN);
		need = count + count / 4 + 4; /* samples keep coming between the two calls */
	}
	return fail(g, i, "nvmlDeviceGetProcessUtilization", NVML_ERROR_INSUFFICIENT_SIZE);
}

/*
 * Running compute (or graphics) processes into st->infos, in one call with
 * the buffer kept from the last interval (a second one when it grows); the
 * count, or -ENOMEM, -EIO.
 */
static long read_running(struct kepler_gpu *g, unsigned i,
			 nvmlReturn_t (*call)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *),
			 const char *what)
{
	struct device_state *st = &g->st[i];
	unsigned need = 8;

	if (!call)
		return 0;
	for (int attempt = 0; attempt < 3; attempt++) {
		void *p = grow_buffer(st->infos, &st->infos_cap, need, sizeof(*st->infos));

		if (!p)
			return -ENOMEM;
		st->infos = p;
		unsigned count = st->infos_cap;
		nvmlReturn_t r = call(st->handle, &count, st->infos);
		if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NOT_FOUND)
			return 0;
		if (r == NVML_SUCCESS)
			return count <= st->infos_cap ? (long)count : (long)st->infos_cap;
		if (r != NVML_ERROR_INSUFFICIENT_SIZE)
			return fail(g, i, what, r);
		if (count > 65536)
			return fail(g, i, what, NVML_ERROR_UNKNOWN);
		need = count + 4;
	}
	return fail(g, i, what, NVML_ERROR_INSUFFICIENT_SIZE);
}

/* The running processes (compute and graphics), each once, with its GPU instance under MIG; the count or negative. */
static long running_processes(struct kepler_gpu *g, unsigned i)
{
	struct device_state *st = &g->st[i];
	size_t n = 0;

	for (int kind = 0; kind < 2; kind++) {
		long c = read_running(g, i,
				      kind ? g->nvml.DeviceGetGraphicsRunningProcesses
					   : g->nvml.DeviceGetComputeRunningProcesses,
				      kind ? "nvmlDeviceGetGraphicsRunningProcesses"
					   : "nvmlDeviceGetComputeRunningProcesses");

		if (c < 0)
			return c;
		for (long k = 0; k < c; k++) {
			size_t j = 0;

			while (j < n && st->procs[j].pid != st->infos[k].pid)
				j++;
			if (j < n)
				continue;
			if (kepler_array_reserve((void **)&st->procs, &st->procs_cap, n + 1,
						 sizeof(*st->procs)) < 0)
				return -ENOMEM;
			st->procs[n++] = (struct mig_proc){ st->infos[k].pid, st->infos[k].gpuInstanceId };
		}
	}
	return (long)n;
}

/* The running processes, each weight 1 (the equal split); 0, or negative. */
static int running_weights(struct kepler_gpu *g, unsigned i, size_t *n)
{
	struct device_state *st = &g->st[i];
	long c = running_processes(g, i);

	for (long k = 0; k < c; k++)
		if (kepler_gpu_add_weight(st, n, st->procs[k].pid, 1) < 0)
			return -ENOMEM;
	return c < 0 ? (int)c : 0;
}

/*
 * MIG: each GPU instance's share of the active energy is its busy SMs
 * (GPM), split equally over its processes; an instance busy with no
 * process listed leaves its share unattributed (PID 0, never a process).
 * Without GPM, or when it measured nothing this interval: equally over
 * every process of the GPU.
 */
static int mig_weights(struct kepler_gpu *g, unsigned i, size_t *n)
{
	struct kepler_gpu_device *d = &g->dev[i];
	struct device_state *st = &g->st[i];
	bool busy = kepler_gpu_mig_sample(&g->nvml, st->handle, &st->mig);
	unsigned per[KEPLER_GPU_MIG_MAX_INSTANCES] = { 0 };
	long c = running_processes(g, i);
	uint64_t sum = 0;

	if (c < 0)
		return (int)c;
	for (long k = 0; k < c; k++) {
		const struct kepler_gpu_mig_instance *in = kepler_gpu_mig_find(&st->mig, st->procs[k].gi);

		if (in)
			per[in - st->mig.inst]++;
	}
	for (unsigned j = 0; busy && j < st->mig.n; j++)
		sum += st->mig.inst[j].busy;
	if (busy && sum) {
		for (unsigned j = 0; j < st->mig.n; j++)
			if (!per[j] && st->mig.inst[j].busy &&
			    kepler_gpu_add_weight(st, n, 0, st->mig.inst[j].busy) < 0)
				return -ENOMEM;
		for (long k = 0; k < c; k++) {
			const struct kepler_gpu_mig_instance *in =
				kepler_gpu_mig_find(&st->mig, st->procs[k].gi);
			/* 420: every count of processes up to 7 divides it, so equal shares stay equal */
			uint64_t w = in ? in->busy * 420 / per[in - st->mig.inst] : 0;

			if (kepler_gpu_add_weight(st, n, st->procs[k].pid, w) < 0)
				return -ENOMEM;
		}
		for (size_t k = 0; k < *n; k++)
			if (st->weights[k].pid == 0)
				st->weights[k].weight *= 420;
		d->rule = KEPLER_GPU_SPLIT_MIG;
		return 0;
	}
	for (long k = 0; k < c; k++)
		if (kepler_gpu_add_weight(st, n, st->procs[k].pid, 1) < 0)
			return -ENOMEM;
	if (*n)
		d->rule = KEPLER_GPU_SPLIT_EQUAL;
	return 0;
}

/* How this interval's active energy of device @i splits over processes. */
static int read_weights(struct kepler_gpu *g, unsigned i)
{
	struct kepler_gpu_device *d = &g->dev[i];
	struct device_state *st = &g->st[i];
	size_t n = 0;
	uint64_t sum = 0;
	unsigned long long seen = st->last_seen_us, newest = seen;
	long c;

	d->rule = KEPLER_GPU_SPLIT_NONE;
	d->nweights = 0;
	if (d->mig) {
		int r = mig_weights(g, i, &n);

		d->nweights = r < 0 ? 0 : n;
		d->weights = st->weights;
		return r;
	}
	c = g->nvml.DeviceGetProcessUtilization ? read_samples(g, i) : 0;
	if (c < 0)
		return (int)c;
	for (long k = 0; k < c; k++) {
		const nvmlProcessUtilizationSample_t *s = &st->samples[k];

		if (s->timeStamp <= seen)
			continue; /* an implementation that ignores lastSeenTimeStamp: never count a sample twice */
		if (s->timeStamp > newest)
			newest = s->timeStamp;
		if (s->pid == 0 || s->smUtil == 0 || s->smUtil > 100)
			continue; /* 0: idle in that sample; above 100: garbage, never weight */
		if (kepler_gpu_add_weight(st, &n, s->pid, s->smUtil) < 0)
			return -ENOMEM;
		sum += s->smUtil;
	}
	st->last_seen_us = newest;
	if (sum) {
		d->rule = KEPLER_GPU_SPLIT_SM;
	} else {
		int r;

		n = 0;
		r = running_weights(g, i, &n);
		if (r < 0)
			return r;
		if (n)
			d->rule = KEPLER_GPU_SPLIT_EQUAL;
	}
	d->nweights = n;
	d->weights = st->weights;
	return 0;
}

/* Idle and active parts of this interval's energy; learns the idle power when no process ran. */
static void split_idle(struct kepler_gpu *g, unsigned i, uint64_t interval_ns)
{
	struct kepler_gpu_device *d = &g->dev[i];
	unsigned __int128 idle;

	if (g->idle_uw) {
		d->idle_uw = g->idle_uw;
	} else if (d->rule == KEPLER_GPU_SPLIT_NONE && !d->failed && interval_ns) {
		uint64_t p_uw = (uint64_t)((unsigned __int128)d->delta_uj * 1000000000u / interval_ns);

		if (!d->idle_learned || p_uw < d->idle_uw) {
			d->idle_uw = p_uw;
			d->idle_learned = true;
		}
	}
	idle = (unsigned __int128)d->idle_uw * interval_ns / 1000000000u;
	d->idle_delta_uj = idle >= d->delta_uj ? d->delta_uj : (uint64_t)idle;
	d->active_delta_uj = d->delta_uj - d->idle_delta_uj;
}

int kepler_gpu_read(struct kepler_gpu *g, uint64_t mono_ns, struct kepler_error *err)
{
	int ret = 0;

	if (g->rsmi.handle && kepler_gpu_amd_processes(g) == -ENOMEM)
		return kepler_error_set(err, -ENOMEM, "out of memory reading the GPUs");

	for (unsigned i = 0; i < g->n; i++) {
		struct kepler_gpu_device *d = &g->dev[i];
		struct device_state *st = &g->st[i];
		uint64_t interval = st->primed && mono_ns > st->last_mono_ns ? mono_ns - st->last_mono_ns : 0;
		int r;

		d->failed = false;
		r = d->vendor == KEPLER_GPU_AMD ? kepler_gpu_amd_read_energy(g, i, mono_ns)
						: read_energy(g, i, mono_ns);
		if (r == 0 && !d->power_integrated)
			st->last_mono_ns = mono_ns; /* a failed read's interval is counted with the next */
		if (r == 0)
			r = d->vendor == KEPLER_GPU_AMD ? kepler_gpu_amd_weights(g, i) : read_weights(g, i);
		if (r == -ENOMEM)
			return kepler_error_set(err, -ENOMEM, "out of memory reading the GPUs");
		if (r < 0) {
			d->nweights = 0;
			d->rule = KEPLER_GPU_SPLIT_NONE;
			if (!ret)
				ret = kepler_error_set(err, -EIO, "%s", d->last_error);
		}
		split_idle(g, i, st->primed ? interval : 0);
		if (!st->primed)
			d->nweights = 0; /* priming: samples before the first read belong to no interval */
		st->primed = st->counter.primed || st->power_primed; /* once the energy has been read */
	}
	return ret;
}

unsigned kepler_gpu_count(const struct kepler_gpu *g)
{
	return g ? g->n : 0;
}

const struct kepler_gpu_device *kepler_gpu_device(const struct kepler_gpu *g, unsigned i)
{
	return &g->dev[i];
}

unsigned kepler_gpu_ignored(const struct kepler_gpu *g)
{
	return g ? g->ignored : 0;
}

void kepler_gpu_close(struct kepler_gpu *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < KEPLER_GPU_MAX_DEVICES; i++) {
		free(g->st[i].weights);
		free(g->st[i].samples);
		free(g->st[i].infos);
		free(g->st[i].procs);
		kepler_gpu_mig_close(&g->nvml, &g->st[i].mig);
	}
	kepler_nvml_close(&g->nvml);
	kepler_gpu_amd_close(g);
	free(g);
}
