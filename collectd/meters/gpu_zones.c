// SPDX-License-Identifier: Apache-2.0
/*
 * The GPU meter in the collector (gpu_zones.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/array.h"
#include "gpu.h"
#include "gpu_zones.h"
#include "kepler/log.h"

struct pid_index {
	uint32_t pid;
	uint32_t index;
};

struct kepler_gpu_zones {
	struct kepler_gpu *gpu;
	bool idle_configured;
	struct {
		bool failing;
		uint64_t resets;
	} seen[KEPLER_GPU_MAX_DEVICES];
	uint64_t *weights; /* devices x nprocs */
	size_t weights_cap;
	struct pid_index *pids;
	size_t pids_cap;
};

/* gpu.idle-power: watts, a decimal number; into microwatts. */
static int parse_idle_power(const char *s, uint64_t *ret)
{
	char *end;
	double w;

	errno = 0;
	w = strtod(s && *s ? s : "0", &end);
	if (errno || (s && *s && (end == s || *end)) || !(w >= 0 && w <= 100000)) {
		kepler_err("gpu.idle-power: '%s' is not a power in watts from 0 to 100000 (e.g. 35.5)", s);
		return -EINVAL;
	}
	*ret = (uint64_t)llround(w * 1e6);
	return 0;
}

static void describe(const struct kepler_gpu *gpu, uint64_t idle_uw)
{
	for (unsigned i = 0; i < kepler_gpu_count(gpu); i++) {
		const struct kepler_gpu_device *d = kepler_gpu_device(gpu, i);

		kepler_info("%s GPU %u: %s %s, zone %s, energy from %s, idle %s; %s",
			    d->vendor == KEPLER_GPU_AMD ? "AMD" : "NVIDIA", d->index, d->name, d->uuid,
			    d->zone,
			    d->power_integrated ? "its power integrated over time (no energy counter)"
						: "its energy counter",
			    idle_uw ? "configured (gpu.idle-power)" : "the lowest power seen with no process",
			    d->vendor == KEPLER_GPU_AMD
				    ? "processes by their compute-unit occupancy (ROCm SMI), else equally"
				    : "processes by their SM samples (NVML), else equally");
		if (d->mig && d->mig_gpm)
			kepler_info(
				"GPU %u: MIG mode is on, %u GPU instance(s): its active energy is split "
				"over them by their busy SMs (GPM), and equally over each one's processes",
				d->index, d->mig_instances);
		else if (d->mig)
			kepler_warn(
				"GPU %u: MIG mode is on and GPM is not available (%s): its active energy is "
				"split equally over its processes, whatever each GPU instance does "
				"(see docs/energy-sources.md)",
				d->index, d->mig_why);
	}
	if (kepler_gpu_ignored(gpu))
		kepler_warn("%u GPU(s) not read (more than %d, or unreadable)", kepler_gpu_ignored(gpu),
			    KEPLER_GPU_MAX_DEVICES);
}

int kepler_gpu_zones_open(const struct kepler_config *cfg, struct kepler_gpu_zones **ret)
{
	struct kepler_gpu_params p = { .library = cfg->collectd.gpu_nvml_library,
				       .rocm_library = cfg->collectd.gpu_rocm_library };
	struct kepler_error err = { 0 };
	struct kepler_gpu_zones *g;
	struct kepler_gpu *gpu;
	int r;

	*ret = NULL;
	if (cfg->collectd.gpu_enabled == KEPLER_GPU_OFF)
		return 0;
	if (parse_idle_power(cfg->collectd.gpu_idle_power, &p.idle_uw) < 0)
		return -EINVAL;
	r = kepler_gpu_open(&p, &gpu, &err);
	if (r < 0 && cfg->collectd.gpu_enabled == KEPLER_GPU_AUTO) {
		kepler_info("no GPU meter: %s (GPU energy not measured; gpu.enabled false silences this)",
			    err.msg);
		return 0;
	}
	if (r < 0) {
		kepler_err("gpu.enabled true: %s", err.msg);
		return r;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		kepler_gpu_close(gpu);
		kepler_err("out of memory");
		return -ENOMEM;
	}
	g->gpu = gpu;
	g->idle_configured = p.idle_uw != 0;
	describe(gpu, p.idle_uw);
	*ret = g;
	return 0;
}

void kepler_gpu_zones_read(struct kepler_gpu_zones *g, uint64_t mono_ns)
{
	struct kepler_error err = { 0 };

	if (!g)
		return;
	if (kepler_gpu_read(g->gpu, mono_ns, &err) == -ENOMEM)
		kepler_warn("GPU meter: %s", err.msg);
	for (unsigned i = 0; i < kepler_gpu_count(g->gpu); i++) {
		const struct kepler_gpu_device *d = kepler_gpu_device(g->gpu, i);

		if (d->failed && !g->seen[i].failing)
			kepler_warn("%s; its energy is not counted until it answers again (none is invented)",
				    d->last_error);
		else if (!d->failed && g->seen[i].failing)
			kepler_info("GPU %u answers again", d->index);
		g->seen[i].failing = d->failed;
		if (d->resets > g->seen[i].resets)
			kepler_warn(
				"GPU %u: its energy counter went back (a driver reload?): that step is not "
				"counted (%llu since start)",
				d->index, (unsigned long long)d->resets);
		g->seen[i].resets = d->resets;
	}
}

static int by_pid(const void *a, const void *b)
{
	const struct pid_index *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The interval's processes by PID (a running one before a terminated one of the same PID). */
static int index_pids(struct kepler_gpu_zones *g, const struct kepler_ledger_input *in)
{
	size_t n = 0;

	if (in->nprocs > g->pids_cap) {
		struct pid_index *p = realloc(g->pids, in->nprocs * sizeof(*p));

		if (!p)
			return -ENOMEM;
		g->pids = p;
		g->pids_cap = in->nprocs;
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < in->nprocs; i++)
			if ((in->procs[i].state == KEPLER_STATE_RUNNING) == (pass == 0))
				g->pids[n++] = (struct pid_index){ in->procs[i].pid, (uint32_t)i };
	qsort(g->pids, n, sizeof(*g->pids), by_pid); /* not stable: the pass order is kept below */
	return 0;
}

static const struct pid_index *find_pid(const struct kepler_gpu_zones *g, size_t n, uint32_t pid,
					const struct kepler_ledger_input *in)
{
	struct pid_index key = { pid, 0 };
	const struct pid_index *hit = bsearch(&key, g->pids, n, sizeof(*g->pids), by_pid);

	if (!hit)
		return NULL;
	while (hit > g->pids && hit[-1].pid == pid)
		hit--;
	for (const struct pid_index *p = hit; p < g->pids + n && p->pid == pid; p++)
		if (in->procs[p->index].state == KEPLER_STATE_RUNNING)
			return p;
	return hit;
}

int kepler_gpu_zones_input(struct kepler_gpu_zones *g, struct kepler_ledger_input *in)
{
	unsigned ndev = kepler_gpu_zones_count(g);
	size_t need = (size_t)ndev * (in->nprocs ? in->nprocs : 1);

	if (!ndev)
		return 0;
	if (in->nzones + ndev > KEPLER_MAX_ZONES)
		return -ENOSPC;
	if (kepler_array_reserve((void **)&g->weights, &g->weights_cap, need, sizeof(*g->weights)) < 0)
		return -ENOMEM;
	if (index_pids(g, in) < 0)
		return -ENOMEM;
	memset(g->weights, 0, need * sizeof(*g->weights));
	for (unsigned i = 0; i < ndev; i++) {
		const struct kepler_gpu_device *d = kepler_gpu_device(g->gpu, i);
		uint64_t *w = &g->weights[(size_t)i * in->nprocs], unlisted = 0;

		for (size_t k = 0; k < d->nweights; k++) {
			const struct pid_index *p = find_pid(g, in->nprocs, d->weights[k].pid, in);

			if (p)
				w[p->index] += d->weights[k].weight;
			else
				unlisted += d->weights[k].weight;
		}
		in->zones[in->nzones++] = (struct kepler_ledger_zone_in){
			.name = d->zone,
			.path = d->uuid,
			.source = KEPLER_SOURCE_NVML,
			.delta_uj = d->delta_uj,
			.meter_resets = d->resets,
			.baseline = { .idle_uw = d->idle_uw,
				      .method = g->idle_configured ? KEPLER_BASELINE_CONFIGURED
						: d->idle_learned  ? KEPLER_BASELINE_MINIMUM
								   : KEPLER_BASELINE_NONE },
			.device = true,
			.active_uj = d->active_delta_uj,
			.weights = in->nprocs ? w : NULL,
			.unlisted_weight = unlisted,
			.info = { .index = d->index,
				  .uuid = d->uuid,
				  .name = d->name,
				  .vendor = d->vendor == KEPLER_GPU_AMD ? "amd" : "nvidia" },
		};
	}
	return 0;
}

size_t kepler_gpu_zones_pids(const struct kepler_gpu_zones *g, uint32_t *out, size_t max)
{
	size_t n = 0;

	for (unsigned i = 0; i < kepler_gpu_zones_count(g); i++) {
		const struct kepler_gpu_device *d = kepler_gpu_device(g->gpu, i);

		for (size_t k = 0; k < d->nweights && n < max; k++) {
			size_t j = 0;

			if (!d->weights[k].pid)
				continue; /* a MIG instance's share with no process listed */
			while (j < n && out[j] != d->weights[k].pid) /* a few processes: a scan */
				j++;
			if (j == n)
				out[n++] = d->weights[k].pid;
		}
	}
	return n;
}

const char *kepler_gpu_zones_libraries(const struct kepler_gpu_zones *g)
{
	bool nvidia = false, amd = false;

	for (unsigned i = 0; i < kepler_gpu_zones_count(g); i++) {
		nvidia |= kepler_gpu_device(g->gpu, i)->vendor == KEPLER_GPU_NVIDIA;
		amd |= kepler_gpu_device(g->gpu, i)->vendor == KEPLER_GPU_AMD;
	}
	return nvidia && amd ? "nvml, rocm-smi" : amd ? "rocm-smi" : "nvml";
}

unsigned kepler_gpu_zones_count(const struct kepler_gpu_zones *g)
{
	return g ? kepler_gpu_count(g->gpu) : 0;
}

void kepler_gpu_zones_close(struct kepler_gpu_zones *g)
{
	if (!g)
		return;
	kepler_gpu_close(g->gpu);
	free(g->weights);
	free(g->pids);
	free(g);
}
