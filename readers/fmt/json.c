// SPDX-License-Identifier: Apache-2.0
/*
 * A snapshot as one line of JSON (schema: docs/stdout.md). Numbers are
 * integers as stored (µJ, ns) except the usage ratio; identity fields are
 * named as Kepler's labels.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fmt_internal.h"
#include "kepler/fmt.h"

void kepler_fmt_json_string(struct kepler_buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	kepler_buf_addc(out, '"');
	while (*p) {
		size_t plain = 0, n;

		while (p[plain] >= 0x20 && p[plain] < 0x80 && p[plain] != '"' && p[plain] != '\\')
			plain++;
		kepler_buf_add(out, p, plain);
		p += plain;
		if (!*p)
			break;
		if (*p == '"' || *p == '\\') {
			kepler_buf_addc(out, '\\');
			kepler_buf_addc(out, (char)*p++);
		} else if (*p < 0x20) {
			kepler_buf_printf(out, "\\u%04x", *p++);
		} else if ((n = kepler_fmt_utf8_len(p)) > 0) {
			kepler_buf_add(out, p, n);
			p += n;
		} else {
			kepler_buf_add(out, "\xEF\xBF\xBD", 3);
			p++;
		}
	}
	kepler_buf_addc(out, '"');
}

void kepler_fmt_csv_field(struct kepler_buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	bool quote = strpbrk((const char *)p, ",\"\r\n") != NULL;

	if (quote)
		kepler_buf_addc(out, '"');
	while (*p) {
		size_t n = kepler_fmt_utf8_len(p);

		if (*p == '"') {
			kepler_buf_add(out, "\"\"", 2);
			p++;
		} else if (n == 0) {
			kepler_buf_add(out, "\xEF\xBF\xBD", 3);
			p++;
		} else {
			kepler_buf_add(out, p, n);
			p += n;
		}
	}
	if (quote)
		kepler_buf_addc(out, '"');
}

static void key(struct kepler_buf *out, const char *k, bool first)
{
	if (!first)
		kepler_buf_addc(out, ',');
	kepler_buf_addc(out, '"');
	kepler_buf_adds(out, k);
	kepler_buf_add(out, "\":", 2);
}

static void kv_str(struct kepler_buf *out, const char *k, const char *v, bool first)
{
	key(out, k, first);
	kepler_fmt_json_string(out, v);
}

static void kv_u64(struct kepler_buf *out, const char *k, uint64_t v, bool first)
{
	key(out, k, first);
	kepler_buf_u64(out, v);
}

/* RFC 3339 UTC with nanoseconds. */
static void timestamp(struct kepler_buf *out, uint64_t wall_ns)
{
	time_t t = (time_t)(wall_ns / 1000000000ULL);
	struct tm tm;
	char buf[64];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	kepler_buf_printf(out, "\"%s.%09lluZ\"", buf, (unsigned long long)(wall_ns % 1000000000ULL));
}

/* The energy no process took: a GPU's, or any zone's under an idle policy. */
static void unattributed(struct kepler_buf *out, const struct kepler_zone *zn)
{
	kv_u64(out, "unattributed_uj", zn->unattributed.total_uj, false);
	kv_u64(out, "unattributed_delta_uj", zn->unattributed.delta_uj, false);
}

/* A device zone (a GPU): what the device is. */
static void device(struct kepler_buf *out, const struct kepler_zone *zn)
{
	key(out, "device", false);
	kepler_buf_addc(out, '{');
	kv_u64(out, "index", zn->device.index, true);
	kv_str(out, "uuid", zn->device.uuid, false);
	kv_str(out, "name", zn->device.name, false);
	kv_str(out, "vendor", zn->device.vendor, false);
	kepler_buf_addc(out, '}');
}

static void node(struct kepler_buf *out, const struct kepler_snapshot *s)
{
	key(out, "node", false);
	kepler_buf_add(out, "{\"zones\":[", 10);
	for (size_t z = 0; z < s->nzones; z++) {
		const struct kepler_zone *zn = &s->zones[z];

		kepler_buf_add(out, z ? ",{" : "{", z ? 2 : 1);
		kv_str(out, "name", zn->name, true);
		kv_str(out, "path", zn->path, false);
		kv_str(out, "source", kepler_source_name(zn->source), false);
		kv_u64(out, "energy_uj", zn->energy.total_uj, false);
		kv_u64(out, "delta_uj", zn->energy.delta_uj, false);
		kv_u64(out, "active_uj", zn->active.total_uj, false);
		kv_u64(out, "active_delta_uj", zn->active.delta_uj, false);
		kv_u64(out, "idle_uj", zn->idle.total_uj, false);
		kv_u64(out, "idle_delta_uj", zn->idle.delta_uj, false);
		kv_u64(out, "meter_resets", zn->meter_resets, false);
		kv_u64(out, "meter_wraps", zn->meter_wraps, false);
		if (zn->baseline.method != KEPLER_BASELINE_NONE) {
			key(out, "baseline", false);
			kepler_buf_addc(out, '{');
			kv_str(out, "method", kepler_baseline_method_name(zn->baseline.method), true);
			kv_u64(out, "idle_uw", zn->baseline.idle_uw, false);
			key(out, "r2", false);
			kepler_buf_printf(out, "%.6f", zn->baseline.quality_ppm / 1e6);
			kv_u64(out, "samples", zn->baseline.samples, false);
			kepler_buf_addc(out, '}');
		}
		unattributed(out, zn);
		if (kepler_zone_is_device(zn))
			device(out, zn);
		kepler_buf_addc(out, '}');
	}
	kepler_buf_addc(out, ']');
	key(out, "cpu_usage_ratio", false);
	kepler_buf_printf(out, "%.6f", s->cpu_usage_ratio);
	kv_u64(out, "cpu_busy_delta_ns", s->node_cpu_busy_delta_ns, false);
	kv_u64(out, "cpu_total_delta_ns", s->node_cpu_total_delta_ns, false);
	kv_u64(out, "cpu_count", s->cpu_count, false);
	kepler_buf_addc(out, '}');
}

/* state, cpu times and zones of any workload, after its identity */
static void usage(struct kepler_buf *out, const struct kepler_snapshot *s, const struct kepler_usage *u)
{
	kv_str(out, "state", kepler_state_name(u->state), false);
	kv_u64(out, "cpu_time_ns", u->cpu_time_ns, false);
	kv_u64(out, "cpu_time_delta_ns", u->cpu_time_delta_ns, false);
	key(out, "zones", false);
	kepler_buf_addc(out, '[');
	for (size_t z = 0; z < s->nzones; z++) {
		kepler_buf_add(out, z ? ",{" : "{", z ? 2 : 1);
		kv_str(out, "name", s->zones[z].name, true);
		kv_u64(out, "energy_uj", u->zones[z].total_uj, false);
		kv_u64(out, "delta_uj", u->zones[z].delta_uj, false);
		if (u->idle) {
			kv_u64(out, "idle_uj", u->idle[z].total_uj, false);
			kv_u64(out, "idle_delta_uj", u->idle[z].delta_uj, false);
		}
		kepler_buf_addc(out, '}');
	}
	kepler_buf_add(out, "]}", 2);
}

static void counter(struct kepler_buf *out, const char *k, uint64_t v)
{
	key(out, k, false);
	if (v == KEPLER_COUNTER_UNAVAILABLE)
		kepler_buf_add(out, "null", 4);
	else
		kepler_buf_u64(out, v);
}

static void processes(struct kepler_buf *out, const struct kepler_snapshot *s)
{
	key(out, "processes", false);
	kepler_buf_addc(out, '[');
	for (size_t i = 0; i < s->nprocesses; i++) {
		const struct kepler_process *p = &s->processes[i];

		kepler_buf_add(out, i ? ",{" : "{", i ? 2 : 1);
		kv_u64(out, "pid", p->pid, true);
		kv_u64(out, "start_time_ns", p->start_time_ns, false);
		kv_str(out, "comm", p->comm, false);
		kv_str(out, "exe", p->exe, false);
		kv_str(out, "type", kepler_process_type_name(p->type), false);
		kv_str(out, "container_id", p->container_id, false);
		kv_str(out, "vm_id", p->vm_id, false);
		counter(out, "cycles", p->cycles);
		counter(out, "instructions", p->instructions);
		counter(out, "cache_misses", p->cache_misses);
		key(out, "folded", false);
		kepler_buf_adds(out, (p->flags & KEPLER_PROCESS_FOLDED) ? "true" : "false");
		key(out, "piece", false);
		kepler_buf_adds(out, (p->flags & KEPLER_PROCESS_PIECE) ? "true" : "false");
		usage(out, s, &p->usage);
	}
	kepler_buf_addc(out, ']');
}

/* The folds of short processes (docs/metrics.md, "Short processes folded"). */
static void folds(struct kepler_buf *out, const struct kepler_snapshot *s)
{
	key(out, "folds", false);
	kepler_buf_addc(out, '[');
	for (size_t i = 0; i < s->nfolds; i++) {
		const struct kepler_fold *f = &s->folds[i];

		kepler_buf_add(out, i ? ",{" : "{", i ? 2 : 1);
		kv_str(out, "container_id", f->container_id, true);
		kv_str(out, "vm_id", f->vm_id, false);
		kv_u64(out, "processes", f->processes, false);
		kv_u64(out, "processes_delta", f->processes_delta, false);
		usage(out, s, &f->usage);
	}
	kepler_buf_addc(out, ']');
}

/* The JSON keys of containers, VMs and pods (docs/stdout.md); parent: NULL when none. */
static const struct {
	const char *array, *id, *name, *detail, *parent;
} group_keys[KEPLER_KIND_COUNT] = {
	[KEPLER_KIND_CONTAINER] = { "containers", "container_id", "container_name", "runtime", "pod_id" },
	[KEPLER_KIND_VM] = { "vms", "vm_id", "vm_name", "hypervisor", NULL },
	[KEPLER_KIND_POD] = { "pods", "pod_id", "pod_name", "pod_namespace", NULL },
};

static void groups(struct kepler_buf *out, const struct kepler_snapshot *s, enum kepler_kind k)
{
	key(out, group_keys[k].array, false);
	kepler_buf_addc(out, '[');
	for (size_t i = 0; i < kepler_workload_count(s, k); i++) {
		struct kepler_workload w = kepler_workload_at(s, k, i);

		kepler_buf_add(out, i ? ",{" : "{", i ? 2 : 1);
		kv_str(out, group_keys[k].id, w.id, true);
		kv_str(out, group_keys[k].name, w.name, false);
		kv_str(out, group_keys[k].detail, w.detail, false);
		if (group_keys[k].parent)
			kv_str(out, group_keys[k].parent, w.parent, false);
		if (k == KEPLER_KIND_CONTAINER && s->idle_policy == KEPLER_IDLE_SIZE)
			kv_u64(out, "size_shares", s->containers[i].size_shares, false);
		if (k == KEPLER_KIND_POD) {
			const struct kepler_pod *p = &s->pods[i];

			kv_str(out, "owner_kind", p->owner_kind ? p->owner_kind : "", false);
			kv_str(out, "owner_name", p->owner_name ? p->owner_name : "", false);
			kv_str(out, "labels", p->labels ? p->labels : "", false);
		}
		usage(out, s, w.usage);
	}
	kepler_buf_addc(out, ']');
}

int kepler_fmt_json(const struct kepler_snapshot *s, unsigned levels, struct kepler_buf *out)
{
	kepler_buf_addc(out, '{');
	kv_u64(out, "seq", s->seq, true);
	key(out, "timestamp", false);
	timestamp(out, s->wall_ns);
	kv_u64(out, "wall_ns", s->wall_ns, false);
	kv_u64(out, "interval_ns", s->interval_ns, false);
	key(out, "first", false);
	kepler_buf_adds(out, (s->flags & KEPLER_SNAP_FIRST) ? "true" : "false");
	kv_u64(out, "skipped_entries", s->skipped_entries, false);
	kv_u64(out, "lost_entries", s->lost_entries, false);
	kv_u64(out, "unstored_intervals", s->unstored_intervals, false);
	kv_u64(out, "unstored_ns", s->unstored_ns, false);
	kv_u64(out, "collector_cpu_ns", s->collector_cpu_ns, false);
	kv_u64(out, "collector_rss_bytes", s->collector_rss_bytes, false);
	kv_str(out, "idle_policy", kepler_idle_policy_name(s->idle_policy), false);
	if (levels & KEPLER_LEVEL_NODE)
		node(out, s);
	if (levels & KEPLER_LEVEL_PROCESS) {
		processes(out, s);
		folds(out, s);
	}
	for (int k = KEPLER_KIND_CONTAINER; k < KEPLER_KIND_COUNT; k++)
		if (levels & kepler_level_of((enum kepler_kind)k))
			groups(out, s, (enum kepler_kind)k);
	kepler_buf_addc(out, '}');
	return out->error;
}
