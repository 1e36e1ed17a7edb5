// SPDX-License-Identifier: Apache-2.0
/*
 * The Prometheus text exposition of a snapshot, with Kepler's metric names,
 * types, help texts and labels (labels in alphabetical order, as Kepler's
 * client_golang writes them). See docs/metrics.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#include "fmt_internal.h"
#include "kepler/fmt.h"
#include "kepler/version.h"

unsigned kepler_levels_from_list(const struct kepler_strlist *names)
{
	static const char *const known[] = {
		"node", "process", "container", "vm", "pod", "namespace", "owner"
	};
	unsigned bits = 0;

	for (size_t i = 0; names && i < names->count; i++)
		for (unsigned k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (!strcasecmp(names->items[i], known[k]))
				bits |= 1u << k;
	return bits;
}

/* ---- node ---- */

static void node_zone_labels(struct prom *pr, const struct kepler_zone *z)
{
	kepler_buf_addc(pr->out, '{');
	prom_label(pr->out, "node_name", pr->node, true);
	prom_label(pr->out, "path", z->path, false);
	prom_label(pr->out, "zone", z->name, false);
	kepler_buf_add(pr->out, "} ", 2);
}

enum node_part { NODE_TOTAL, NODE_ACTIVE, NODE_IDLE, NODE_UNATTRIBUTED };

static const struct kepler_energy *node_energy(const struct kepler_zone *z, enum node_part part)
{
	return part == NODE_ACTIVE         ? &z->active
	       : part == NODE_IDLE         ? &z->idle
	       : part == NODE_UNATTRIBUTED ? &z->unattributed
					   : &z->energy;
}

/*
 * Kepler's kepler_platform_watts (its Redfish family: the whole server's
 * power) for the zone `platform`, whatever measures it; its energy is in
 * the zone's counters above, as every zone's.
 */
static void platform_watts(struct prom *pr)
{
	const struct kepler_snapshot *s = pr->s;

	for (size_t z = 0; z < s->nzones; z++) {
		const struct kepler_zone *zn = &s->zones[z];

		if (strcmp(zn->name, "platform"))
			continue;
		kepler_prom_family(&pr->w, "kepler_platform_watts", "gauge",
				   "Power consumption of the whole platform (node) in watts");
		kepler_buf_adds(pr->out, "kepler_platform_watts{");
		prom_label(pr->out, "bmc_id", "", true);
		prom_label(pr->out, "chassis_id", "", false);
		prom_label(pr->out, "node_name", pr->node, false);
		prom_label(pr->out, "source", kepler_source_name(zn->source), false);
		prom_label(pr->out, "source_id", zn->path, false);
		prom_label(pr->out, "source_name", zn->name, false);
		prom_label(pr->out, "source_type", kepler_source_name(zn->source), false);
		kepler_buf_add(pr->out, "} ", 2);
		prom_watts(&pr->w, zn->energy.delta_uj, s->interval_ns);
		kepler_prom_end(&pr->w);
		return;
	}
}

static void node_families(struct prom *pr)
{
	static const struct {
		const char *joules, *watts, *jhelp, *whelp;
	} names[] = {
		{ "kepler_node_cpu_joules_total", "kepler_node_cpu_watts",
		  "Energy consumption of cpu at node level in joules" ESTIMATE_NOTE,
		  "Power consumption of cpu at node level in watts" ESTIMATE_NOTE },
		{ "kepler_node_cpu_active_joules_total", "kepler_node_cpu_active_watts",
		  "Energy consumption of cpu in active state at node level in joules" ESTIMATE_NOTE,
		  "Power consumption of cpu in active state at node level in watts" ESTIMATE_NOTE },
		{ "kepler_node_cpu_idle_joules_total", "kepler_node_cpu_idle_watts",
		  "Energy consumption of cpu in idle state at node level in joules" ESTIMATE_NOTE,
		  "Power consumption of cpu in idle state at node level in watts" ESTIMATE_NOTE },
		{ "kepler_node_cpu_unattributed_joules_total", "kepler_node_cpu_unattributed_watts",
		  "Energy of cpu at node level that no process took (CPU time no listed process accounts for; "
		  "idle energy attribution.idle gave to no workload) in joules" ESTIMATE_NOTE,
		  "Power of cpu at node level that no process took in watts" ESTIMATE_NOTE },
	};
	const struct kepler_snapshot *s = pr->s;
	for (int part = NODE_TOTAL; part <= NODE_UNATTRIBUTED; part++) {
		kepler_prom_family(&pr->w, names[part].joules, "counter", names[part].jhelp);
		for (size_t z = 0; z < s->nzones; z++) {
			if (!pr->zone_on[z])
				continue;
			kepler_buf_adds(pr->out, names[part].joules);
			node_zone_labels(pr, &s->zones[z]);
			prom_joules(&pr->w, node_energy(&s->zones[z], (enum node_part)part)->total_uj);
			kepler_prom_end(&pr->w);
		}
		kepler_prom_family(&pr->w, names[part].watts, "gauge", names[part].whelp);
		for (size_t z = 0; z < s->nzones; z++) {
			if (!pr->zone_on[z])
				continue;
			kepler_buf_adds(pr->out, names[part].watts);
			node_zone_labels(pr, &s->zones[z]);
			prom_watts(&pr->w, node_energy(&s->zones[z], (enum node_part)part)->delta_uj,
				   s->interval_ns);
			kepler_prom_end(&pr->w);
		}
	}
	platform_watts(pr);
	kepler_prom_family(&pr->w, "kepler_node_cpu_usage_ratio", "gauge",
			   "CPU usage ratio of a node (value between 0.0 and 1.0)");
	kepler_buf_adds(pr->out, "kepler_node_cpu_usage_ratio{");
	prom_label(pr->out, "node_name", pr->node, true);
	kepler_buf_add(pr->out, "} ", 2);
	kepler_prom_printf(&pr->w, "%.6f", s->cpu_usage_ratio);
	kepler_prom_end(&pr->w);
}

/* Each zone's counter resets and wraparounds since the collector started. */
static void meter_events(struct prom *pr)
{
	static const struct {
		const char *name, *help;
	} fams[] = {
		{ "kepler_node_meter_resets_total",
		  "Energy counter resets of a zone since the collector started (the counter went back or "
		  "jumped implausibly; that step is not counted as energy)" },
		{ "kepler_node_meter_wraps_total",
		  "Energy counter wraparounds of a zone since the collector started (normal; counted "
		  "across)" },
	};
	const struct kepler_snapshot *s = pr->s;

	for (int f = 0; f < 2; f++) {
		kepler_prom_family(&pr->w, fams[f].name, "counter", fams[f].help);
		for (size_t z = 0; z < s->nzones; z++) {
			if (!pr->zone_on[z] && !pr->device[z])
				continue;
			kepler_buf_adds(pr->out, fams[f].name);
			node_zone_labels(pr, &s->zones[z]);
			kepler_prom_u64(&pr->w, f ? s->zones[z].meter_wraps : s->zones[z].meter_resets);
			kepler_prom_end(&pr->w);
		}
	}
}

/* Always exported: where each zone's numbers come from, and the snapshot itself. */
/* The collector's own cost (snapshots of format 1.3 on; absent before). */
static void collector_cost(struct prom *pr)
{
	const struct kepler_snapshot *s = pr->s;

	if (!s->collector_cpu_ns)
		return;
	kepler_prom_family(
		&pr->w, "kepler_collector_cpu_seconds_total", "counter",
		"CPU time kepler-collectd has used since it started (it restarts at 0 with the collector)");
	kepler_buf_adds(pr->out, "kepler_collector_cpu_seconds_total{");
	prom_label(pr->out, "node_name", pr->node, true);
	kepler_buf_add(pr->out, "} ", 2);
	prom_seconds(&pr->w, s->collector_cpu_ns);
	kepler_prom_end(&pr->w);
	kepler_prom_family(&pr->w, "kepler_collector_resident_memory_bytes", "gauge",
			   "Resident memory of kepler-collectd when it built the snapshot");
	kepler_buf_adds(pr->out, "kepler_collector_resident_memory_bytes{");
	prom_label(pr->out, "node_name", pr->node, true);
	kepler_buf_add(pr->out, "} ", 2);
	kepler_prom_u64(&pr->w, s->collector_rss_bytes);
	kepler_prom_end(&pr->w);
}

static void source_and_snapshot(struct prom *pr)
{
	const struct kepler_snapshot *s = pr->s;

	kepler_prom_family(
		&pr->w, "kepler_node_zone_source_info", "gauge",
		"Energy source of each zone: rapl, hwmon, nvml (a GPU), model (an estimate, not a measurement) or fake");
	for (size_t z = 0; z < s->nzones; z++) {
		if (!pr->zone_on[z] && !pr->device[z])
			continue;
		kepler_buf_adds(pr->out, "kepler_node_zone_source_info{");
		prom_label(pr->out, "node_name", pr->node, true);
		prom_label(pr->out, "path", s->zones[z].path, false);
		prom_label(pr->out, "source", kepler_source_name(s->zones[z].source), false);
		prom_label(pr->out, "zone", s->zones[z].name, false);
		kepler_buf_add(pr->out, "} ", 2);
		kepler_prom_u64(&pr->w, 1);
		kepler_prom_end(&pr->w);
	}
	meter_events(pr);
	static const struct {
		const char *name, *help;
	} gauges[] = {
		{ "kepler_snapshot_seq", "Sequence number of the snapshot these metrics come from" },
		{ "kepler_snapshot_timestamp_seconds",
		  "Wall-clock time at the end of the snapshot's interval" },
		{ "kepler_snapshot_interval_seconds",
		  "Length of the snapshot's interval (0 for the first after a collector start)" },
		{ "kepler_snapshot_skipped_entries",
		  "/proc entries the collector could not read in the snapshot's interval" },
		{ "kepler_snapshot_lost_processes",
		  "Processes the eBPF informer lost to a full map in the snapshot's interval" },
	};
	for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
		kepler_prom_family(&pr->w, gauges[i].name, "gauge", gauges[i].help);
		kepler_buf_adds(pr->out, gauges[i].name);
		kepler_buf_addc(pr->out, '{');
		prom_label(pr->out, "node_name", pr->node, true);
		kepler_buf_add(pr->out, "} ", 2);
		switch (i) {
		case 0: kepler_prom_u64(&pr->w, s->seq); break;
		case 1: prom_seconds(&pr->w, s->wall_ns); break;
		case 2: prom_seconds(&pr->w, s->interval_ns); break;
		case 3: kepler_prom_u64(&pr->w, s->skipped_entries); break;
		default: kepler_prom_u64(&pr->w, s->lost_entries); break;
		}
		kepler_prom_end(&pr->w);
	}
	collector_cost(pr);
}

static void build_info(struct kepler_prom_writer *w)
{
	struct utsname u;

	if (uname(&u) < 0)
		strcpy(u.machine, "");
	kepler_prom_family(w, "kepler_build_info", "gauge",
			   "A metric with a constant '1' value labeled with version information");
	kepler_buf_adds(w->out, "kepler_build_info{");
	prom_label(w->out, "arch", u.machine, true);
	prom_label(w->out, "revision", KEPLER_REVISION, false);
	prom_label(w->out, "version", KEPLER_VERSION, false);
	kepler_buf_add(w->out, "} ", 2);
	kepler_prom_u64(w, 1);
	kepler_prom_end(w);
}

void kepler_fmt_prom_build_info(struct kepler_buf *out)
{
	struct kepler_prom_writer w = kepler_prom_writer(out, NULL);

	build_info(&w);
}

static void cpu_info(struct kepler_prom_writer *w, const struct kepler_cpuinfo *cpus)
{
	if (!cpus || !cpus->n)
		return;
	kepler_prom_family(w, "kepler_node_cpu_info", "gauge", "CPU information from procfs");
	for (size_t i = 0; i < cpus->n; i++) {
		const struct kepler_cpu *c = &cpus->cpus[i];

		kepler_buf_adds(w->out, "kepler_node_cpu_info{");
		prom_label(w->out, "core_id", c->core_id, true);
		prom_label(w->out, "model_name", c->model_name, false);
		prom_label(w->out, "physical_id", c->physical_id, false);
		prom_label(w->out, "processor", c->processor, false);
		prom_label(w->out, "vendor_id", c->vendor_id, false);
		kepler_buf_add(w->out, "} ", 2);
		kepler_prom_u64(w, 1);
		kepler_prom_end(w);
	}
}

void kepler_fmt_prom_cpu_info(struct kepler_buf *out, const struct kepler_cpuinfo *cpus)
{
	struct kepler_prom_writer w = kepler_prom_writer(out, NULL);

	cpu_info(&w, cpus);
}

void kepler_fmt_prom_age(struct kepler_buf *out, const char *node_name, double age_seconds)
{
	struct kepler_prom_writer w = kepler_prom_writer(out, NULL);

	kepler_prom_family(&w, "kepler_snapshot_age_seconds", "gauge",
			   "Age of the newest snapshot at this scrape; grows when the collector stops");
	kepler_buf_adds(out, "kepler_snapshot_age_seconds{");
	prom_label(out, "node_name", node_name, true);
	kepler_buf_add(out, "} ", 2);
	kepler_prom_printf(&w, "%.3f", age_seconds < 0 ? 0.0 : age_seconds);
	kepler_prom_end(&w);
}

void kepler_fmt_prom_process(struct kepler_buf *out, const struct kepler_process_stats *st)
{
	struct kepler_prom_writer w = kepler_prom_writer(out, NULL);

	kepler_prom_family(&w, "process_cpu_seconds_total", "counter",
			   "Total user and system CPU time spent in seconds.");
	kepler_buf_printf(out, "process_cpu_seconds_total %.6f\n", st->cpu_seconds);
	kepler_prom_family(&w, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	kepler_buf_printf(out, "process_resident_memory_bytes %llu\n", (unsigned long long)st->rss_bytes);
	kepler_prom_family(&w, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	kepler_buf_printf(out, "process_virtual_memory_bytes %llu\n", (unsigned long long)st->vsize_bytes);
	kepler_prom_family(&w, "process_open_fds", "gauge", "Number of open file descriptors.");
	kepler_buf_printf(out, "process_open_fds %llu\n", (unsigned long long)st->open_fds);
	kepler_prom_family(&w, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
	kepler_buf_printf(out, "process_max_fds %llu\n", (unsigned long long)st->max_fds);
	kepler_prom_family(&w, "process_start_time_seconds", "gauge",
			   "Start time of the process since unix epoch in seconds.");
	kepler_buf_printf(out, "process_start_time_seconds %.2f\n", st->start_time_seconds);
}

static bool zone_wanted(const struct kepler_strlist *zones, const char *name)
{
	if (!zones || zones->count == 0)
		return true;
	for (size_t i = 0; i < zones->count; i++)
		if (!strcasecmp(zones->items[i], name))
			return true;
	return false;
}

int kepler_fmt_prom_samples(const struct kepler_snapshot *snap, const struct kepler_prom_options *opts,
			    struct kepler_buf *out, struct kepler_prom_samples *samples)
{
	struct prom pr = {
		.s = snap,
		.w = kepler_prom_writer(out, samples),
		.out = out,
		.levels = opts->levels,
		.node = opts->node_name ? opts->node_name : "",
		.process_top = opts->process_top,
		.process_fold = opts->process_fold,
		.container_top = opts->container_top,
	};

	if (samples)
		samples->n = 0;
	for (size_t z = 0; z < snap->nzones; z++) {
		pr.device[z] = kepler_zone_is_device(&snap->zones[z]);
		pr.zone_on[z] = !pr.device[z] && zone_wanted(opts->zones, snap->zones[z].name);
	}
	if (pr.levels & KEPLER_LEVEL_NODE) {
		node_families(&pr);
		prom_gpu_node(&pr);
	}
	if ((pr.levels & KEPLER_LEVEL_PROCESS) && prom_processes(&pr) < 0 && !out->error)
		out->error = -ENOMEM;
	prom_workloads(&pr);
	source_and_snapshot(&pr);
	cpu_info(&pr.w, opts->cpus);
	build_info(&pr.w);
	return out->error;
}

int kepler_fmt_prom(const struct kepler_snapshot *snap, const struct kepler_prom_options *opts,
		    struct kepler_buf *out)
{
	return kepler_fmt_prom_samples(snap, opts, out, NULL);
}
