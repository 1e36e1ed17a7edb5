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

typedef unsigned __int128 u128;

unsigned kepler_levels_from_list(const struct kepler_strlist *names)
{
	static const char *const known[] = { "node", "process", "container", "vm", "pod" };
	unsigned bits = 0;

	for (size_t i = 0; names && i < names->count; i++)
		for (unsigned k = 0; k < 5; k++)
			if (!strcasecmp(names->items[i], known[k]))
				bits |= 1u << k;
	return bits;
}

void kepler_fmt_prom_label_value(struct kepler_buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t plain = 0;

	/* fast path: nothing to escape or check */
	while (p[plain] && p[plain] < 0x80 && p[plain] != '\\' && p[plain] != '"' && p[plain] != '\n')
		plain++;
	kepler_buf_add(out, p, plain);
	for (p += plain; *p;) {
		size_t n;

		if (*p == '\\' || *p == '"') {
			kepler_buf_addc(out, '\\');
			kepler_buf_addc(out, (char)*p++);
		} else if (*p == '\n') {
			kepler_buf_add(out, "\\n", 2);
			p++;
		} else if ((n = kepler_fmt_utf8_len(p)) > 0) {
			kepler_buf_add(out, p, n);
			p += n;
		} else {
			kepler_buf_add(out, "\xEF\xBF\xBD", 3); /* U+FFFD for each bad byte */
			p++;
		}
	}
}

void prom_label(struct kepler_buf *out, const char *key, const char *value, bool first)
{
	if (!first)
		kepler_buf_addc(out, ',');
	kepler_buf_adds(out, key);
	kepler_buf_add(out, "=\"", 2);
	kepler_fmt_prom_label_value(out, value ? value : "");
	kepler_buf_addc(out, '"');
}

void prom_family(struct kepler_buf *out, const char *name, const char *type, const char *help)
{
	kepler_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Values: exact decimals of integers. */
void prom_joules(struct kepler_buf *out, uint64_t uj)
{
	kepler_buf_fixed(out, uj, 6);
}

/* Watts of @delta_uj over @interval_ns, to the picowatt (truncated). */
void prom_watts(struct kepler_buf *out, uint64_t delta_uj, uint64_t interval_ns)
{
	u128 pw = interval_ns ? (u128)delta_uj * 1000000000000000ULL / interval_ns : 0;

	kepler_buf_fixed(out, pw, 12);
}

static void seconds(struct kepler_buf *out, uint64_t ns)
{
	kepler_buf_fixed(out, ns, 9);
}

void prom_end_value(struct kepler_buf *out)
{
	kepler_buf_addc(out, '\n');
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
 * Appended to the HELP of every energy and power family: a zone whose
 * source is the power model carries estimates, and kepler_node_zone_source_info
 * says which zones do (join on zone; docs/metrics.md has the PromQL).
 */
#define ESTIMATE_NOTE                                              \
	" (a model estimate, not a measurement, for a zone where " \
	"kepler_node_zone_source_info has source=\"model\")"

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
		prom_family(pr->out, "kepler_platform_watts", "gauge",
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
		prom_watts(pr->out, zn->energy.delta_uj, s->interval_ns);
		prom_end_value(pr->out);
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
		  "Energy of cpu at node level that attribution.idle gave to no workload (no process to take it) "
		  "in joules" ESTIMATE_NOTE,
		  "Power of cpu at node level that attribution.idle gave to no workload in watts" ESTIMATE_NOTE },
	};
	const struct kepler_snapshot *s = pr->s;
	int last = s->idle_policy == KEPLER_IDLE_NONE ? NODE_IDLE : NODE_UNATTRIBUTED;

	for (int part = NODE_TOTAL; part <= last; part++) {
		prom_family(pr->out, names[part].joules, "counter", names[part].jhelp);
		for (size_t z = 0; z < s->nzones; z++) {
			if (!pr->zone_on[z])
				continue;
			kepler_buf_adds(pr->out, names[part].joules);
			node_zone_labels(pr, &s->zones[z]);
			prom_joules(pr->out, node_energy(&s->zones[z], (enum node_part)part)->total_uj);
			prom_end_value(pr->out);
		}
		prom_family(pr->out, names[part].watts, "gauge", names[part].whelp);
		for (size_t z = 0; z < s->nzones; z++) {
			if (!pr->zone_on[z])
				continue;
			kepler_buf_adds(pr->out, names[part].watts);
			node_zone_labels(pr, &s->zones[z]);
			prom_watts(pr->out, node_energy(&s->zones[z], (enum node_part)part)->delta_uj,
				   s->interval_ns);
			prom_end_value(pr->out);
		}
	}
	platform_watts(pr);
	prom_family(pr->out, "kepler_node_cpu_usage_ratio", "gauge",
		    "CPU usage ratio of a node (value between 0.0 and 1.0)");
	kepler_buf_adds(pr->out, "kepler_node_cpu_usage_ratio{");
	prom_label(pr->out, "node_name", pr->node, true);
	kepler_buf_printf(pr->out, "} %.6f\n", s->cpu_usage_ratio);
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
		prom_family(pr->out, fams[f].name, "counter", fams[f].help);
		for (size_t z = 0; z < s->nzones; z++) {
			if (!pr->zone_on[z] && !pr->device[z])
				continue;
			kepler_buf_adds(pr->out, fams[f].name);
			node_zone_labels(pr, &s->zones[z]);
			kepler_buf_u64(pr->out, f ? s->zones[z].meter_wraps : s->zones[z].meter_resets);
			prom_end_value(pr->out);
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
	prom_family(
		pr->out, "kepler_collector_cpu_seconds_total", "counter",
		"CPU time kepler-collectd has used since it started (it restarts at 0 with the collector)");
	kepler_buf_adds(pr->out, "kepler_collector_cpu_seconds_total{");
	prom_label(pr->out, "node_name", pr->node, true);
	kepler_buf_add(pr->out, "} ", 2);
	seconds(pr->out, s->collector_cpu_ns);
	prom_end_value(pr->out);
	prom_family(pr->out, "kepler_collector_resident_memory_bytes", "gauge",
		    "Resident memory of kepler-collectd when it built the snapshot");
	kepler_buf_adds(pr->out, "kepler_collector_resident_memory_bytes{");
	prom_label(pr->out, "node_name", pr->node, true);
	kepler_buf_add(pr->out, "} ", 2);
	kepler_buf_u64(pr->out, s->collector_rss_bytes);
	prom_end_value(pr->out);
}

static void source_and_snapshot(struct prom *pr)
{
	const struct kepler_snapshot *s = pr->s;

	prom_family(
		pr->out, "kepler_node_zone_source_info", "gauge",
		"Energy source of each zone: rapl, hwmon, nvml (a GPU), model (an estimate, not a measurement) or fake");
	for (size_t z = 0; z < s->nzones; z++) {
		if (!pr->zone_on[z] && !pr->device[z])
			continue;
		kepler_buf_adds(pr->out, "kepler_node_zone_source_info{");
		prom_label(pr->out, "node_name", pr->node, true);
		prom_label(pr->out, "path", s->zones[z].path, false);
		prom_label(pr->out, "source", kepler_source_name(s->zones[z].source), false);
		prom_label(pr->out, "zone", s->zones[z].name, false);
		kepler_buf_add(pr->out, "} 1\n", 4);
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
		prom_family(pr->out, gauges[i].name, "gauge", gauges[i].help);
		kepler_buf_adds(pr->out, gauges[i].name);
		kepler_buf_addc(pr->out, '{');
		prom_label(pr->out, "node_name", pr->node, true);
		kepler_buf_add(pr->out, "} ", 2);
		switch (i) {
		case 0: kepler_buf_u64(pr->out, s->seq); break;
		case 1: seconds(pr->out, s->wall_ns); break;
		case 2: seconds(pr->out, s->interval_ns); break;
		case 3: kepler_buf_u64(pr->out, s->skipped_entries); break;
		default: kepler_buf_u64(pr->out, s->lost_entries); break;
		}
		prom_end_value(pr->out);
	}
	collector_cost(pr);
}

void kepler_fmt_prom_build_info(struct kepler_buf *out)
{
	struct utsname u;

	if (uname(&u) < 0)
		strcpy(u.machine, "");
	prom_family(out, "kepler_build_info", "gauge",
		    "A metric with a constant '1' value labeled with version information");
	kepler_buf_adds(out, "kepler_build_info{");
	prom_label(out, "arch", u.machine, true);
	prom_label(out, "revision", KEPLER_REVISION, false);
	prom_label(out, "version", KEPLER_VERSION, false);
	kepler_buf_add(out, "} 1\n", 4);
}

void kepler_fmt_prom_cpu_info(struct kepler_buf *out, const struct kepler_cpuinfo *cpus)
{
	if (!cpus || !cpus->n)
		return;
	prom_family(out, "kepler_node_cpu_info", "gauge", "CPU information from procfs");
	for (size_t i = 0; i < cpus->n; i++) {
		const struct kepler_cpu *c = &cpus->cpus[i];

		kepler_buf_adds(out, "kepler_node_cpu_info{");
		prom_label(out, "core_id", c->core_id, true);
		prom_label(out, "model_name", c->model_name, false);
		prom_label(out, "physical_id", c->physical_id, false);
		prom_label(out, "processor", c->processor, false);
		prom_label(out, "vendor_id", c->vendor_id, false);
		kepler_buf_add(out, "} 1\n", 4);
	}
}

void kepler_fmt_prom_age(struct kepler_buf *out, const char *node_name, double age_seconds)
{
	prom_family(out, "kepler_snapshot_age_seconds", "gauge",
		    "Age of the newest snapshot at this scrape; grows when the collector stops");
	kepler_buf_adds(out, "kepler_snapshot_age_seconds{");
	prom_label(out, "node_name", node_name, true);
	kepler_buf_printf(out, "} %.3f\n", age_seconds < 0 ? 0.0 : age_seconds);
}

void kepler_fmt_prom_process(struct kepler_buf *out, const struct kepler_process_stats *st)
{
	prom_family(out, "process_cpu_seconds_total", "counter",
		    "Total user and system CPU time spent in seconds.");
	kepler_buf_printf(out, "process_cpu_seconds_total %.6f\n", st->cpu_seconds);
	prom_family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	kepler_buf_printf(out, "process_resident_memory_bytes %llu\n", (unsigned long long)st->rss_bytes);
	prom_family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	kepler_buf_printf(out, "process_virtual_memory_bytes %llu\n", (unsigned long long)st->vsize_bytes);
	prom_family(out, "process_open_fds", "gauge", "Number of open file descriptors.");
	kepler_buf_printf(out, "process_open_fds %llu\n", (unsigned long long)st->open_fds);
	prom_family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
	kepler_buf_printf(out, "process_max_fds %llu\n", (unsigned long long)st->max_fds);
	prom_family(out, "process_start_time_seconds", "gauge",
		    "Start time of the process since unix epoch in seconds.");
	kepler_buf_printf(out, "process_start_time_seconds %.2f\n", st->start_time_seconds);
}

/* ---- processes ---- */

/* Label text of each process, rendered once: A = comm..pid, B = type, vm_id. */
struct proc_labels {
	struct kepler_buf text;
	size_t *a, *b; /* offsets: a[i]..b[i] is A, b[i]..a[i+1] is B */
	bool *dup_energy, *dup_seconds;
	bool *top;     /* metrics.process.top: [i * nzones + z], one of zone z's top; NULL: all */
	bool *any_top; /* [i]: of the top of some zone */
};

static void render_proc_labels(struct prom *pr, struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;

	for (size_t i = 0; i < s->nprocesses; i++) {
		const struct kepler_process *p = &s->processes[i];
		char pid[16];

		pl->a[i] = pl->text.len;
		prom_label(&pl->text, "comm", p->comm, true);
		prom_label(&pl->text, "container_id", p->container_id, false);
		prom_label(&pl->text, "exe", p->exe, false);
		prom_label(&pl->text, "node_name", pr->node, false);
		snprintf(pid, sizeof(pid), "%u", p->pid);
		prom_label(&pl->text, "pid", pid, false);
		pl->b[i] = pl->text.len;
		prom_label(&pl->text, "type", kepler_process_type_name(p->type), false);
		prom_label(&pl->text, "vm_id", p->vm_id, false);
	}
	pl->a[s->nprocesses] = pl->text.len;
}

/* pid, then running first, then newest first */
static int by_pid(const void *x, const void *y, void *ctx)
{
	const struct kepler_process *procs = ctx;
	const struct kepler_process *a = &procs[*(const size_t *)x];
	const struct kepler_process *b = &procs[*(const size_t *)y];

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->usage.state != b->usage.state)
		return a->usage.state == KEPLER_STATE_RUNNING ? -1 : 1;
	if (a->start_time_ns != b->start_time_ns)
		return a->start_time_ns > b->start_time_ns ? -1 : 1;
	return 0;
}

static bool same_labels(const struct kepler_process *a, const struct kepler_process *b)
{
	return a->type == b->type && !strcmp(a->comm, b->comm) && !strcmp(a->exe, b->exe) &&
	       !strcmp(a->container_id, b->container_id) && !strcmp(a->vm_id, b->vm_id);
}

/*
 * A reused pid within the terminated TTL could give two processes the same
 * label set; keep the first of each in (running, newest) order.
 */
static int find_duplicates(const struct kepler_snapshot *s, struct proc_labels *pl)
{
	size_t n = s->nprocesses, *order = malloc((n ? n : 1) * sizeof(*order));

	if (!order)
		return -1;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_pid, (void *)s->processes);
	for (size_t r = 0; r < n;) {
		size_t end = r + 1;

		while (end < n && s->processes[order[end]].pid == s->processes[order[r]].pid)
			end++;
		for (size_t i = r + 1; i < end; i++)
			for (size_t j = r; j < i; j++) {
				const struct kepler_process *a = &s->processes[order[i]];
				const struct kepler_process *b = &s->processes[order[j]];

				if (!same_labels(a, b))
					continue;
				pl->dup_seconds[order[i]] = true;
				if (a->usage.state == b->usage.state)
					pl->dup_energy[order[i]] = true;
			}
		r = end;
	}
	free(order);
	return 0;
}

static void proc_line(struct prom *pr, const struct proc_labels *pl, size_t i, const char *name,
		      bool with_state, const char *zone)
{
	const struct kepler_process *p = &pr->s->processes[i];

	kepler_buf_adds(pr->out, name);
	kepler_buf_addc(pr->out, '{');
	kepler_buf_add(pr->out, pl->text.data + pl->a[i], pl->b[i] - pl->a[i]);
	if (with_state)
		prom_label(pr->out, "state", kepler_state_name(p->usage.state), false);
	kepler_buf_add(pr->out, pl->text.data + pl->b[i], pl->a[i + 1] - pl->b[i]);
	if (zone)
		prom_label(pr->out, "zone", zone, false);
	kepler_buf_add(pr->out, "} ", 2);
}

/* Sort key of the top: more energy in the zone first, then the lower pid. */
struct top_key {
	uint64_t total_uj;
	uint32_t pid;
	size_t i;
};

static int by_energy(const void *x, const void *y)
{
	const struct top_key *a = x, *b = y;

	if (a->total_uj != b->total_uj)
		return a->total_uj > b->total_uj ? -1 : 1;
	return (a->pid > b->pid) - (a->pid < b->pid);
}

/*
 * metrics.process.top N: per zone, the N processes with the most energy
 * (cumulative, so membership changes slowly: a process joins when its
 * total passes the N-th's). -1 for out of memory.
 */
static int choose_top(struct prom *pr, struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;
	size_t n = s->nprocesses, nz = s->nzones ? s->nzones : 1;
	struct top_key *keys = malloc((n ? n : 1) * sizeof(*keys));

	pl->top = calloc(n * nz + 1, sizeof(bool));
	pl->any_top = calloc(n + 1, sizeof(bool));
	if (!keys || !pl->top || !pl->any_top) {
		free(keys);
		return -1;
	}
	for (size_t z = 0; z < s->nzones; z++) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (!pl->dup_energy[i])
				keys[m++] = (struct top_key){ s->processes[i].usage.zones[z].total_uj,
							      s->processes[i].pid, i };
		qsort(keys, m, sizeof(*keys), by_energy);
		for (size_t k = 0; k < m && k < pr->process_top; k++) {
			pl->top[keys[k].i * nz + z] = true;
			pl->any_top[keys[k].i] = true;
		}
	}
	free(keys);
	return 0;
}

static bool shown(const struct prom *pr, const struct proc_labels *pl, size_t i, size_t z)
{
	return pr->zone_on[z] && !pl->dup_energy[i] &&
	       (!pl->top || pl->top[i * (pr->s->nzones ? pr->s->nzones : 1) + z]);
}

/*
 * With a top: per zone one series for every process outside it, carrying
 * the sum of their power, so that per zone the exported process watts still
 * add up to the node's active watts exactly (in microjoules; each printed
 * value is truncated to the picowatt). Only a gauge: a counter of "the
 * rest" would go down whenever a process joins the top.
 */
static void other_watts(struct prom *pr, const struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;

	for (size_t z = 0; z < s->nzones; z++) {
		uint64_t rest = 0;

		if (!pr->zone_on[z])
			continue;
		for (size_t i = 0; i < s->nprocesses; i++)
			if (!shown(pr, pl, i, z))
				rest += s->processes[i].usage.zones[z].delta_uj;
		kepler_buf_adds(pr->out, "kepler_process_cpu_watts{");
		prom_label(pr->out, "comm", "other", true);
		prom_label(pr->out, "container_id", "", false);
		prom_label(pr->out, "exe", "", false);
		prom_label(pr->out, "node_name", pr->node, false);
		prom_label(pr->out, "pid", "", false);
		prom_label(pr->out, "state", "running", false);
		prom_label(pr->out, "type", "other", false);
		prom_label(pr->out, "vm_id", "", false);
		prom_label(pr->out, "zone", s->zones[z].name, false);
		kepler_buf_add(pr->out, "} ", 2);
		prom_watts(pr->out, rest, s->interval_ns);
		prom_end_value(pr->out);
	}
}

/* A process's labels for its GPU families: the CPU families' without zone. @ctx: the proc_labels */
static void proc_gpu_labels(struct prom *pr, size_t i, void *ctx)
{
	const struct proc_labels *pl = ctx;

	kepler_buf_add(pr->out, pl->text.data + pl->a[i], pl->b[i] - pl->a[i]);
	prom_label(pr->out, "state", kepler_state_name(pr->s->processes[i].usage.state), false);
	kepler_buf_add(pr->out, pl->text.data + pl->b[i], pl->a[i + 1] - pl->b[i]);
}

/* Under an idle policy: the idle energy given to each process (kepler-c's, beside Kepler's). */
static void process_idle_families(struct prom *pr, struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;

	if (s->idle_policy == KEPLER_IDLE_NONE)
		return;
	kepler_buf_printf(
		pr->out,
		"# HELP kepler_process_cpu_idle_joules_total Idle energy of cpu given to the process by "
		"attribution.idle %s in joules" ESTIMATE_NOTE
		"\n# TYPE kepler_process_cpu_idle_joules_total counter\n",
		kepler_idle_policy_name(s->idle_policy));
	for (size_t i = 0; i < s->nprocesses; i++)
		for (size_t z = 0; z < s->nzones && s->processes[i].usage.idle; z++) {
			if (!shown(pr, pl, i, z))
				continue;
			proc_line(pr, pl, i, "kepler_process_cpu_idle_joules_total", true, s->zones[z].name);
			prom_joules(pr->out, s->processes[i].usage.idle[z].total_uj);
			prom_end_value(pr->out);
		}
	kepler_buf_printf(pr->out,
			  "# HELP kepler_process_cpu_idle_watts Idle power of cpu given to the process by "
			  "attribution.idle %s in watts" ESTIMATE_NOTE
			  "\n# TYPE kepler_process_cpu_idle_watts gauge\n",
			  kepler_idle_policy_name(s->idle_policy));
	for (size_t i = 0; i < s->nprocesses; i++)
		for (size_t z = 0; z < s->nzones && s->processes[i].usage.idle; z++) {
			if (!shown(pr, pl, i, z))
				continue;
			proc_line(pr, pl, i, "kepler_process_cpu_idle_watts", true, s->zones[z].name);
			prom_watts(pr->out, s->processes[i].usage.idle[z].delta_uj, s->interval_ns);
			prom_end_value(pr->out);
		}
}

static void process_families(struct prom *pr, struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;

	prom_family(pr->out, "kepler_process_cpu_joules_total", "counter",
		    "Energy consumption of cpu at process level in joules" ESTIMATE_NOTE);
	for (size_t i = 0; i < s->nprocesses; i++)
		for (size_t z = 0; z < s->nzones && !pl->dup_energy[i]; z++) {
			if (!shown(pr, pl, i, z))
				continue;
			proc_line(pr, pl, i, "kepler_process_cpu_joules_total", true, s->zones[z].name);
			prom_joules(pr->out, s->processes[i].usage.zones[z].total_uj);
			prom_end_value(pr->out);
		}
	prom_family(pr->out, "kepler_process_cpu_watts", "gauge",
		    "Power consumption of cpu at process level in watts" ESTIMATE_NOTE);
	for (size_t i = 0; i < s->nprocesses; i++)
		for (size_t z = 0; z < s->nzones && !pl->dup_energy[i]; z++) {
			if (!shown(pr, pl, i, z))
				continue;
			proc_line(pr, pl, i, "kepler_process_cpu_watts", true, s->zones[z].name);
			prom_watts(pr->out, s->processes[i].usage.zones[z].delta_uj, s->interval_ns);
			prom_end_value(pr->out);
		}
	if (pl->top)
		other_watts(pr, pl);
	process_idle_families(pr, pl);
	prom_gpu_workloads(pr, KEPLER_KIND_PROCESS, proc_gpu_labels, pl, pl->dup_energy);
	prom_family(pr->out, "kepler_process_cpu_seconds_total", "counter",
		    "Total user and system time of cpu at process level in seconds");
	for (size_t i = 0; i < s->nprocesses; i++) {
		if (pl->dup_seconds[i] || (pl->any_top && !pl->any_top[i]))
			continue;
		proc_line(pr, pl, i, "kepler_process_cpu_seconds_total", false, NULL);
		seconds(pr->out, s->processes[i].usage.cpu_time_ns);
		prom_end_value(pr->out);
	}
}

static int processes(struct prom *pr)
{
	size_t n = pr->s->nprocesses;
	struct proc_labels pl = { .text = KEPLER_BUF_INIT };
	int r = -1;

	pl.a = malloc((n + 1) * sizeof(size_t));
	pl.b = malloc((n + 1) * sizeof(size_t));
	pl.dup_energy = calloc(n + 1, sizeof(bool));
	pl.dup_seconds = calloc(n + 1, sizeof(bool));
	if (!pl.a || !pl.b || !pl.dup_energy || !pl.dup_seconds)
		goto out;
	render_proc_labels(pr, &pl);
	if (pl.text.error || find_duplicates(pr->s, &pl) < 0)
		goto out;
	if (pr->process_top && choose_top(pr, &pl) < 0)
		goto out;
	process_families(pr, &pl);
	r = 0;
out:
	kepler_buf_free(&pl.text);
	free(pl.a);
	free(pl.b);
	free(pl.dup_energy);
	free(pl.dup_seconds);
	free(pl.top);
	free(pl.any_top);
	return r;
}

/* ---- containers, VMs, pods ---- */

struct group_family {
	const char *joules, *watts, *seconds; /* seconds: NULL when Kepler has none */
};

static const struct group_family group_families[KEPLER_KIND_COUNT] = {
	[KEPLER_KIND_CONTAINER] = { "kepler_container_cpu_joules_total", "kepler_container_cpu_watts",
				    "kepler_container_cpu_seconds_total" },
	[KEPLER_KIND_VM] = { "kepler_vm_cpu_joules_total", "kepler_vm_cpu_watts", NULL },
	[KEPLER_KIND_POD] = { "kepler_pod_cpu_joules_total", "kepler_pod_cpu_watts", NULL },
};

/* The labels before zone, in alphabetical order, after '{' (Kepler's names). */
static void group_labels(struct prom *pr, const struct kepler_workload *w)
{
	struct kepler_buf *o = pr->out;
	const char *state = kepler_state_name(w->usage->state);

	if (w->kind == KEPLER_KIND_CONTAINER) {
		prom_label(o, "container_id", w->id, true);
		prom_label(o, "container_name", w->name, false);
		prom_label(o, "node_name", pr->node, false);
		prom_label(o, "pod_id", w->parent, false);
		prom_label(o, "runtime", w->detail, false);
		prom_label(o, "state", state, false);
	} else if (w->kind == KEPLER_KIND_VM) {
		prom_label(o, "hypervisor", w->detail, true);
		prom_label(o, "node_name", pr->node, false);
		prom_label(o, "state", state, false);
		prom_label(o, "vm_id", w->id, false);
		prom_label(o, "vm_name", w->name, false);
	} else {
		prom_label(o, "node_name", pr->node, true);
		prom_label(o, "pod_id", w->id, false);
		prom_label(o, "pod_name", w->name, false);
		prom_label(o, "pod_namespace", w->detail, false);
		prom_label(o, "state", state, false);
	}
}

/* Sort key of the containers' top: more energy first, then the id. */
struct ctop_key {
	uint64_t total_uj;
	const char *id;
	size_t i;
};

static int by_energy_id(const void *x, const void *y)
{
	const struct ctop_key *a = x, *b = y;

	if (a->total_uj != b->total_uj)
		return a->total_uj > b->total_uj ? -1 : 1;
	return strcmp(a->id, b->id);
}

/* metrics.container.top N: per zone the N containers with the most energy. -1: out of memory. */
static int choose_container_top(struct prom *pr)
{
	const struct kepler_snapshot *s = pr->s;
	size_t n = s->ncontainers, nz = s->nzones ? s->nzones : 1;
	struct ctop_key *keys = malloc((n ? n : 1) * sizeof(*keys));

	pr->ctop = calloc(n * nz + 1, sizeof(bool));
	pr->cany = calloc(n + 1, sizeof(bool));
	if (!keys || !pr->ctop || !pr->cany) {
		free(keys);
		return -1;
	}
	for (size_t z = 0; z < s->nzones; z++) {
		for (size_t i = 0; i < n; i++)
			keys[i] = (struct ctop_key){ s->containers[i].usage.zones[z].total_uj,
						     s->containers[i].id, i };
		qsort(keys, n, sizeof(*keys), by_energy_id);
		for (size_t k = 0; k < n && k < pr->container_top; k++) {
			pr->ctop[keys[k].i * nz + z] = true;
			pr->cany[keys[k].i] = true;
		}
	}
	free(keys);
	return 0;
}

static bool group_shown(const struct prom *pr, enum kepler_kind k, size_t i, size_t z)
{
	return pr->zone_on[z] && (k != KEPLER_KIND_CONTAINER || !pr->ctop ||
				  pr->ctop[i * (pr->s->nzones ? pr->s->nzones : 1) + z]);
}

/* With a containers' top: per zone one "other" container whose watts are the rest's. */
static void other_container_watts(struct prom *pr, const char *name)
{
	const struct kepler_snapshot *s = pr->s;

	for (size_t z = 0; z < s->nzones; z++) {
		uint64_t rest = 0;

		if (!pr->zone_on[z])
			continue;
		for (size_t i = 0; i < s->ncontainers; i++)
			if (!group_shown(pr, KEPLER_KIND_CONTAINER, i, z))
				rest += s->containers[i].usage.zones[z].delta_uj;
		kepler_buf_adds(pr->out, name);
		kepler_buf_addc(pr->out, '{');
		prom_label(pr->out, "container_id", "", true);
		prom_label(pr->out, "container_name", "other", false);
		prom_label(pr->out, "node_name", pr->node, false);
		prom_label(pr->out, "pod_id", "", false);
		prom_label(pr->out, "runtime", "", false);
		prom_label(pr->out, "state", "running", false);
		prom_label(pr->out, "zone", s->zones[z].name, false);
		kepler_buf_add(pr->out, "} ", 2);
		prom_watts(pr->out, rest, s->interval_ns);
		prom_end_value(pr->out);
	}
}

/* A workload's energy in zone @z: the active part, or with @idle the idle part (an idle policy). */
static const struct kepler_energy *part_of(const struct kepler_usage *u, size_t z, bool idle)
{
	return idle ? &u->idle[z] : &u->zones[z];
}

/*
 * Kepler's family of kind @k (@idle false), or kepler-c's idle one beside it
 * (kepler_<kind>_cpu_idle_joules_total, _cpu_idle_watts) under an idle
 * policy: the idle energy the policy gave each workload, same labels.
 */
static void group_energy(struct prom *pr, enum kepler_kind k, bool as_watts, bool idle)
{
	const struct group_family *f = &group_families[k];
	const struct kepler_snapshot *s = pr->s;
	const char *kind = kepler_kind_name(k);
	char name[64];

	if (idle && s->idle_policy == KEPLER_IDLE_NONE)
		return;
	if (idle)
		snprintf(name, sizeof(name),
			 as_watts ? "kepler_%s_cpu_idle_watts" : "kepler_%s_cpu_idle_joules_total", kind);
	else
		snprintf(name, sizeof(name), "%s", as_watts ? f->watts : f->joules);
	if (idle)
		kepler_buf_printf(
			pr->out,
			"# HELP %s Idle %s of cpu given to the %s by attribution.idle %s in %s" ESTIMATE_NOTE
			"\n# TYPE %s %s\n",
			name, as_watts ? "power" : "energy", kind, kepler_idle_policy_name(s->idle_policy),
			as_watts ? "watts" : "joules", name, as_watts ? "gauge" : "counter");
	else
		kepler_buf_printf(pr->out,
				  "# HELP %s %s consumption of cpu at %s level in %s" ESTIMATE_NOTE
				  "\n# TYPE %s %s\n",
				  name, as_watts ? "Power" : "Energy", kind, as_watts ? "watts" : "joules",
				  name, as_watts ? "gauge" : "counter");
	for (size_t i = 0; i < kepler_workload_count(s, k); i++) {
		struct kepler_workload w = kepler_workload_at(s, k, i);

		for (size_t z = 0; z < s->nzones && (!idle || w.usage->idle); z++) {
			if (!group_shown(pr, k, i, z))
				continue;
			kepler_buf_adds(pr->out, name);
			kepler_buf_addc(pr->out, '{');
			group_labels(pr, &w);
			prom_label(pr->out, "zone", s->zones[z].name, false);
			kepler_buf_add(pr->out, "} ", 2);
			if (as_watts)
				prom_watts(pr->out, part_of(w.usage, z, idle)->delta_uj, s->interval_ns);
			else
				prom_joules(pr->out, part_of(w.usage, z, idle)->total_uj);
			prom_end_value(pr->out);
		}
	}
	if (as_watts && !idle && k == KEPLER_KIND_CONTAINER && pr->ctop)
		other_container_watts(pr, name);
}

static void group_seconds(struct prom *pr, enum kepler_kind k)
{
	const struct group_family *f = &group_families[k];
	const struct kepler_snapshot *s = pr->s;

	if (!f->seconds)
		return;
	kepler_buf_printf(pr->out,
			  "# HELP %s Total user and system time of cpu at %s level in seconds\n"
			  "# TYPE %s counter\n",
			  f->seconds, kepler_kind_name(k), f->seconds);
	for (size_t i = 0; i < kepler_workload_count(s, k); i++) {
		struct kepler_workload w = kepler_workload_at(s, k, i);

		if (k == KEPLER_KIND_CONTAINER && pr->cany && !pr->cany[i])
			continue;
		kepler_buf_adds(pr->out, f->seconds);
		kepler_buf_addc(pr->out, '{');
		group_labels(pr, &w);
		kepler_buf_add(pr->out, "} ", 2);
		seconds(pr->out, w.usage->cpu_time_ns);
		prom_end_value(pr->out);
	}
}

/* @ctx: the enum kepler_kind */
static void group_gpu_labels(struct prom *pr, size_t i, void *ctx)
{
	struct kepler_workload w = kepler_workload_at(pr->s, *(const enum kepler_kind *)ctx, i);

	group_labels(pr, &w);
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

int kepler_fmt_prom(const struct kepler_snapshot *snap, const struct kepler_prom_options *opts,
		    struct kepler_buf *out)
{
	struct prom pr = {
		.s = snap,
		.out = out,
		.levels = opts->levels,
		.node = opts->node_name ? opts->node_name : "",
		.process_top = opts->process_top,
		.container_top = opts->container_top,
	};

	for (size_t z = 0; z < snap->nzones; z++) {
		pr.device[z] = kepler_zone_is_device(&snap->zones[z]);
		pr.zone_on[z] = !pr.device[z] && zone_wanted(opts->zones, snap->zones[z].name);
	}
	if (pr.levels & KEPLER_LEVEL_NODE) {
		node_families(&pr);
		prom_gpu_node(&pr);
	}
	if ((pr.levels & KEPLER_LEVEL_PROCESS) && processes(&pr) < 0 && !out->error)
		out->error = -ENOMEM;
	if (pr.container_top && (pr.levels & KEPLER_LEVEL_CONTAINER) && choose_container_top(&pr) < 0 &&
	    !out->error)
		out->error = -ENOMEM;
	for (int k = KEPLER_KIND_CONTAINER; k < KEPLER_KIND_COUNT && !out->error; k++) {
		if (!(pr.levels & kepler_level_of((enum kepler_kind)k)))
			continue;
		group_energy(&pr, (enum kepler_kind)k, false, false);
		group_energy(&pr, (enum kepler_kind)k, true, false);
		group_energy(&pr, (enum kepler_kind)k, false, true);
		group_energy(&pr, (enum kepler_kind)k, true, true);
		group_seconds(&pr, (enum kepler_kind)k);
		enum kepler_kind kind = (enum kepler_kind)k;

		prom_gpu_workloads(&pr, kind, group_gpu_labels, &kind, NULL);
	}
	free(pr.ctop);
	free(pr.cany);
	source_and_snapshot(&pr);
	kepler_fmt_prom_cpu_info(out, opts->cpus);
	kepler_fmt_prom_build_info(out);
	return out->error;
}
