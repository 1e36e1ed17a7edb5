// SPDX-License-Identifier: Apache-2.0
/*
 * Kepler's GPU families (KEPLER-REFERENCE §12), from the snapshot's device
 * zones (source nvml): names and labels as Kepler's, so its GPU dashboards
 * work unchanged; plus the unattributed remainder, which Kepler has not.
 */
#include <stdio.h>

#include "fmt_internal.h"

static void gpu_labels(struct prom *pr, const struct kepler_zone *z)
{
	char index[16];

	snprintf(index, sizeof(index), "%u", z->device.index);
	kepler_buf_addc(pr->out, '{');
	prom_label(pr->out, "gpu", index, true);
	prom_label(pr->out, "gpu_name", z->device.name, false);
	prom_label(pr->out, "gpu_uuid", z->device.uuid, false);
	prom_label(pr->out, "node_name", pr->node, false);
	prom_label(pr->out, "vendor", z->device.vendor, false);
	kepler_buf_add(pr->out, "} ", 2);
}

enum gpu_part { GPU_TOTAL, GPU_ACTIVE, GPU_IDLE, GPU_UNATTRIBUTED, GPU_PARTS };

static const struct kepler_energy *part_of(const struct kepler_zone *z, enum gpu_part p)
{
	return p == GPU_ACTIVE         ? &z->active
	       : p == GPU_IDLE         ? &z->idle
	       : p == GPU_UNATTRIBUTED ? &z->unattributed
				       : &z->energy;
}

void prom_gpu_node(struct prom *pr)
{
	static const struct {
		const char *joules, *watts, *what;
	} names[GPU_PARTS] = {
		{ "kepler_node_gpu_joules_total", "kepler_node_gpu_watts", "of the GPU" },
		{ "kepler_node_gpu_active_joules_total", "kepler_node_gpu_active_watts",
		  "of the GPU above its idle power" },
		{ "kepler_node_gpu_idle_joules_total", "kepler_node_gpu_idle_watts",
		  "of the GPU at its idle power" },
		{ "kepler_node_gpu_unattributed_joules_total", "kepler_node_gpu_unattributed_watts",
		  "of the GPU's active part that no process took (none ran, or its process was not seen)" },
	};
	const struct kepler_snapshot *s = pr->s;
	bool any = false;
	char help[160];

	for (size_t z = 0; z < s->nzones; z++)
		any = any || pr->device[z];
	if (!any)
		return;
	kepler_prom_family(&pr->w, "kepler_node_gpu_info", "gauge", "GPU information (1 per GPU)");
	for (size_t z = 0; z < s->nzones; z++)
		if (pr->device[z]) {
			kepler_buf_adds(pr->out, "kepler_node_gpu_info");
			gpu_labels(pr, &s->zones[z]);
			kepler_prom_u64(&pr->w, 1);
			kepler_prom_end(&pr->w);
		}
	for (int p = 0; p < GPU_PARTS; p++) {
		snprintf(help, sizeof(help), "Energy consumption %s at node level in joules", names[p].what);
		kepler_prom_family(&pr->w, names[p].joules, "counter", help);
		for (size_t z = 0; z < s->nzones; z++)
			if (pr->device[z]) {
				kepler_buf_adds(pr->out, names[p].joules);
				gpu_labels(pr, &s->zones[z]);
				prom_joules(&pr->w, part_of(&s->zones[z], (enum gpu_part)p)->total_uj);
				kepler_prom_end(&pr->w);
			}
		snprintf(help, sizeof(help), "Power consumption %s at node level in watts", names[p].what);
		kepler_prom_family(&pr->w, names[p].watts, "gauge", help);
		for (size_t z = 0; z < s->nzones; z++)
			if (pr->device[z]) {
				kepler_buf_adds(pr->out, names[p].watts);
				gpu_labels(pr, &s->zones[z]);
				prom_watts(&pr->w, part_of(&s->zones[z], (enum gpu_part)p)->delta_uj,
					   s->interval_ns);
				kepler_prom_end(&pr->w);
			}
	}
}

/* A workload's energy summed over every GPU. */
static struct kepler_energy gpu_sum(const struct prom *pr, const struct kepler_usage *u)
{
	struct kepler_energy e = { 0, 0 };

	for (size_t z = 0; z < pr->s->nzones; z++)
		if (pr->device[z]) {
			e.total_uj += u->zones[z].total_uj;
			e.delta_uj += u->zones[z].delta_uj;
		}
	return e;
}

void prom_gpu_workloads(struct prom *pr, enum kepler_kind k,
			void (*labels)(struct prom *pr, size_t i, void *ctx), void *ctx, const bool *skip)
{
	const struct kepler_snapshot *s = pr->s;
	size_t n = kepler_workload_count(s, k);
	char name[64], help[128];
	bool any = false;

	for (size_t z = 0; z < s->nzones; z++)
		any = any || pr->device[z];
	if (!any || k == KEPLER_KIND_VM)
		return; /* Kepler has no VM GPU families */
	for (int w = 0; w < 2; w++) {
		snprintf(name, sizeof(name), "kepler_%s_gpu_%s", kepler_kind_name(k),
			 w ? "watts" : "joules_total");
		snprintf(help, sizeof(help), "%s consumption of GPUs at %s level in %s",
			 w ? "Power" : "Energy", kepler_kind_name(k), w ? "watts" : "joules");
		kepler_prom_family(&pr->w, name, w ? "gauge" : "counter", help);
		for (size_t i = 0; i < n; i++) {
			struct kepler_workload wl = kepler_workload_at(s, k, i);
			struct kepler_energy e = gpu_sum(pr, wl.usage);

			if (!e.total_uj || (skip && skip[i]))
				continue; /* as Kepler: only workloads that used a GPU */
			kepler_buf_adds(pr->out, name);
			kepler_buf_addc(pr->out, '{');
			labels(pr, i, ctx);
			kepler_buf_add(pr->out, "} ", 2);
			if (w)
				prom_watts(&pr->w, e.delta_uj, s->interval_ns);
			else
				prom_joules(&pr->w, e.total_uj);
			kepler_prom_end(&pr->w);
		}
	}
}
