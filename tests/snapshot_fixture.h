/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helpers: build synthetic snapshots (with hostile strings) and compare
 * two snapshots field by field. Header-only so each test links what it needs.
 */
#ifndef KEPLER_TEST_SNAPSHOT_FIXTURE_H
#define KEPLER_TEST_SNAPSHOT_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/snapshot.h"

struct fixture {
	struct kepler_snapshot snap;
	char **strings; /* owned, freed by fixture_free */
	size_t nstrings, cap;
};

static inline const char *fixture_str(struct fixture *f, const char *s)
{
	if (f->nstrings == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->strings = realloc(f->strings, f->cap * sizeof(char *));
	}
	f->strings[f->nstrings] = strdup(s);
	return f->strings[f->nstrings++];
}

static const char *const hostile[] = {
	"plain",     "with \"quotes\"",  "new\nline", "back\\slash",         "bad utf8 \xff\xfe\xc3",
	"tab\there", "{\"json\": true}", "",          "label=\"x\",y=\"z\"", "\xe2\x98\x83 snowman",
};

static inline void fixture_usage(struct fixture *f, struct kepler_usage *u, uint64_t seed)
{
	u->state = seed % 7 == 0 ? KEPLER_STATE_TERMINATED : KEPLER_STATE_RUNNING;
	u->cpu_time_ns = seed * 1000003;
	u->cpu_time_delta_ns = seed * 17;
	u->zones = calloc(f->snap.nzones ? f->snap.nzones : 1, sizeof(*u->zones));
	for (size_t z = 0; z < f->snap.nzones; z++)
		u->zones[z] = (struct kepler_energy){ seed * 1000 + z, seed + z };
}

/* A snapshot with @nprocs processes and proportionate other workloads. */
static inline void fixture_build(struct fixture *f, size_t nprocs, uint64_t seed)
{
	struct kepler_snapshot *s = &f->snap;
	char buf[5000];
	static const char *const zone_names[] = { "package", "core", "dram" };

	memset(f, 0, sizeof(*f));
	s->wall_ns = 1795881600000000000ULL + seed * 5000000000ULL;
	s->mono_ns = 1000000000ULL * (100 + seed);
	s->interval_ns = 5000000000ULL;
	s->flags = KEPLER_SNAP_HW_COUNTERS;
	s->cpu_usage_ratio = 0.25 + (double)(seed % 50) / 100.0;
	s->node_cpu_busy_delta_ns = 123456789 + seed;
	s->node_cpu_total_delta_ns = 987654321;
	s->skipped_entries = 3;
	s->lost_entries = 1;
	s->cpu_count = 4;
	s->unstored_intervals = (uint32_t)(seed % 3); /* some cover intervals the store refused */
	s->unstored_ns = seed % 3 ? 7000000000ULL * (seed % 3) : 0;
	s->collector_cpu_ns = 1000000ULL * (seed + 1);
	s->collector_rss_bytes = 8ULL << 20;
	s->nzones = 3;
	for (size_t z = 0; z < 3; z++) {
		s->zones[z].name = zone_names[z];
		snprintf(buf, sizeof(buf), "/sys/class/powercap/intel-rapl:0:%zu", z);
		s->zones[z].path = fixture_str(f, buf);
		s->zones[z].source = KEPLER_SOURCE_RAPL;
		s->zones[z].energy = (struct kepler_energy){ 1000000 * (seed + 1) + z, 5000 + z };
		s->zones[z].active = (struct kepler_energy){ 600000 * (seed + 1), 3000 };
		s->zones[z].idle = (struct kepler_energy){ 400000 * (seed + 1) + z, 2000 + z };
		s->zones[z].baseline = (struct kepler_baseline){ 12000000 + seed + z, (uint32_t)(z + 1) % 4,
								 (uint32_t)(999000 + z), (uint32_t)(30 + z) };
		s->zones[z].meter_resets = seed + z;
		s->zones[z].meter_wraps = 2 * seed + z;
		/* format 2.1 / 1.4: written for every zone, whatever its source */
		s->zones[z].unattributed = (struct kepler_energy){ 7 * seed + z, z };
		snprintf(buf, sizeof(buf), "GPU-fixture-%zu", z);
		s->zones[z].device =
			(struct kepler_device){ (uint32_t)z, fixture_str(f, buf), "Fixture GPU", "nvidia" };
	}
	s->nprocesses = nprocs;
	s->processes = calloc(nprocs + 1, sizeof(*s->processes));
	for (size_t i = 0; i < nprocs; i++) {
		struct kepler_process *p = &s->processes[i];

		p->pid = (uint32_t)(i + 1);
		p->start_time_ns = 1000 * i + seed;
		if (i == 1) { /* a 4 KiB name */
			memset(buf, 'n', 4096);
			buf[4096] = '\0';
			p->comm = fixture_str(f, buf);
		} else {
			snprintf(buf, sizeof(buf), "%s-%zu", hostile[i % 10], i);
			p->comm = fixture_str(f, buf);
		}
		p->exe = hostile[(i + 3) % 10];
		p->type = (enum kepler_process_type)(i % KEPLER_PROC_TYPE_COUNT);
		p->container_id =
			i % 4 == 1 ? "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" : "";
		p->vm_id = i % 4 == 2 ? "vm-uuid-1" : "";
		p->cycles = i % 2 ? KEPLER_COUNTER_UNAVAILABLE : i * 11;
		p->instructions = i * 13;
		p->cache_misses = i;
		fixture_usage(f, &p->usage, i + seed);
	}
	s->ncontainers = nprocs / 10 + 1;
	s->containers = calloc(s->ncontainers, sizeof(*s->containers));
	for (size_t i = 0; i < s->ncontainers; i++) {
		snprintf(buf, sizeof(buf), "%064zx", i);
		s->containers[i].id = fixture_str(f, buf);
		s->containers[i].name = hostile[i % 10];
		s->containers[i].runtime = "containerd";
		s->containers[i].pod_id = i % 2 ? "pod-uid" : "";
		fixture_usage(f, &s->containers[i].usage, i + 5);
	}
	s->nvms = 2;
	s->vms = calloc(2, sizeof(*s->vms));
	s->npods = 1;
	s->pods = calloc(1, sizeof(*s->pods));
	for (size_t i = 0; i < 2; i++) {
		s->vms[i].id = i ? "vm-uuid-1" : "vm-uuid-0";
		s->vms[i].name = "guest \"one\"";
		s->vms[i].hypervisor = "kvm";
		fixture_usage(f, &s->vms[i].usage, i + 9);
	}
	s->pods[0].id = "pod-uid";
	s->pods[0].name = "web-0";
	s->pods[0].ns = "default";
	s->pods[0].owner_kind = "StatefulSet"; /* format 4.2 / 1.7 */
	s->pods[0].owner_name = "web";
	s->pods[0].labels = "app.kubernetes.io/name=web,team=shop";
	fixture_usage(f, &s->pods[0].usage, 11);
}

/* Flag every fifth process folded and give the snapshot two folds: the node's and a container's. */
static inline void fixture_add_folds(struct fixture *f)
{
	struct kepler_snapshot *s = &f->snap;

	for (size_t i = 0; i < s->nprocesses; i++)
		s->processes[i].flags = i % 5 == 3 ? KEPLER_PROCESS_FOLDED : 0;
	s->nfolds = 2;
	s->folds = calloc(2, sizeof(*s->folds));
	for (size_t i = 0; i < 2; i++) {
		s->folds[i].container_id = i ? s->containers[0].id : "";
		s->folds[i].vm_id = "";
		s->folds[i].processes = 1000 + i;
		s->folds[i].processes_delta = 3 + i;
		fixture_usage(f, &s->folds[i].usage, i + 13);
	}
}

/* Give every workload idle energies and the containers sizes, as under idle policy @policy. */
static inline void fixture_add_idle(struct fixture *f, enum kepler_idle_policy policy)
{
	struct kepler_snapshot *s = &f->snap;

	s->idle_policy = policy;
	for (int k = 0; k < KEPLER_KIND_COUNT; k++)
		for (size_t i = 0; i < kepler_workload_count(s, (enum kepler_kind)k); i++) {
			struct kepler_usage *u =
				(struct kepler_usage *)kepler_workload_at(s, (enum kepler_kind)k, i).usage;
			struct kepler_energy *e =
				realloc(u->zones, 2 * (s->nzones ? s->nzones : 1) * sizeof(*e));

			u->zones = e;
			u->idle = e + s->nzones;
			for (size_t z = 0; z < s->nzones; z++)
				u->idle[z] = (struct kepler_energy){ 77 * i + z + 1, 3 * z + k };
		}
	for (size_t i = 0; i < s->ncontainers; i++)
		s->containers[i].size_shares = 100 * (i + 1);
	for (size_t i = 0; i < s->nfolds; i++) {
		struct kepler_usage *u = &s->folds[i].usage;
		struct kepler_energy *e = realloc(u->zones, 2 * (s->nzones ? s->nzones : 1) * sizeof(*e));

		u->zones = e;
		u->idle = e + s->nzones;
		for (size_t z = 0; z < s->nzones; z++)
			u->idle[z] = (struct kepler_energy){ 55 * i + z + 1, 5 * z + 1 };
	}
}

static inline void fixture_free(struct fixture *f)
{
	struct kepler_snapshot *s = &f->snap;

	for (size_t i = 0; i < s->nprocesses; i++)
		free(s->processes[i].usage.zones);
	for (size_t i = 0; i < s->ncontainers; i++)
		free(s->containers[i].usage.zones);
	for (size_t i = 0; i < s->nvms; i++)
		free(s->vms[i].usage.zones);
	for (size_t i = 0; i < s->npods; i++)
		free(s->pods[i].usage.zones);
	for (size_t i = 0; i < s->nfolds; i++)
		free(s->folds[i].usage.zones);
	free(s->folds);
	free(s->processes);
	free(s->containers);
	free(s->vms);
	free(s->pods);
	for (size_t i = 0; i < f->nstrings; i++)
		free(f->strings[i]);
	free(f->strings);
}

/* NULL if equal, else a description of the first difference. */
static inline const char *usage_diff(const struct kepler_usage *a, const struct kepler_usage *b,
				     size_t nzones)
{
	if (a->state != b->state || a->cpu_time_ns != b->cpu_time_ns ||
	    a->cpu_time_delta_ns != b->cpu_time_delta_ns)
		return "usage";
	for (size_t z = 0; z < nzones; z++)
		if (a->zones[z].total_uj != b->zones[z].total_uj ||
		    a->zones[z].delta_uj != b->zones[z].delta_uj)
			return "zone energy";
	if (!a->idle != !b->idle)
		return "idle energy present in one only";
	for (size_t z = 0; a->idle && z < nzones; z++)
		if (a->idle[z].total_uj != b->idle[z].total_uj || a->idle[z].delta_uj != b->idle[z].delta_uj)
			return "idle energy";
	return NULL;
}

#define DIFF_STR(a, b, what)                                            \
	if (strcmp((a) ? (a) : "", (b) ? (b) : "") != 0) /* NULL: "" */ \
	return what
#define DIFF_USAGE(a, b)                                            \
	do {                                                        \
		const char *d_ = usage_diff(&(a), &(b), x->nzones); \
		if (d_)                                             \
			return d_;                                  \
	} while (0)

static inline const char *snapshot_diff(const struct kepler_snapshot *x, const struct kepler_snapshot *y)
{
	if (x->seq != y->seq || x->wall_ns != y->wall_ns || x->mono_ns != y->mono_ns ||
	    x->interval_ns != y->interval_ns || x->flags != y->flags ||
	    x->cpu_usage_ratio != y->cpu_usage_ratio ||
	    x->node_cpu_busy_delta_ns != y->node_cpu_busy_delta_ns ||
	    x->node_cpu_total_delta_ns != y->node_cpu_total_delta_ns ||
	    x->skipped_entries != y->skipped_entries || x->lost_entries != y->lost_entries ||
	    x->cpu_count != y->cpu_count || x->unstored_intervals != y->unstored_intervals ||
	    x->unstored_ns != y->unstored_ns || x->collector_cpu_ns != y->collector_cpu_ns ||
	    x->collector_rss_bytes != y->collector_rss_bytes || x->idle_policy != y->idle_policy)
		return "header";
	if (x->nzones != y->nzones || x->nprocesses != y->nprocesses || x->ncontainers != y->ncontainers ||
	    x->nvms != y->nvms || x->npods != y->npods || x->nfolds != y->nfolds)
		return "counts";
	for (size_t z = 0; z < x->nzones; z++) {
		const struct kepler_zone *a = &x->zones[z], *b = &y->zones[z];

		DIFF_STR(a->name, b->name, "zone name");
		DIFF_STR(a->path, b->path, "zone path");
		if (a->source != b->source || memcmp(&a->energy, &b->energy, sizeof(a->energy)) ||
		    memcmp(&a->active, &b->active, sizeof(a->active)) ||
		    memcmp(&a->idle, &b->idle, sizeof(a->idle)) ||
		    memcmp(&a->baseline, &b->baseline, sizeof(a->baseline)) ||
		    a->meter_resets != b->meter_resets || a->meter_wraps != b->meter_wraps ||
		    memcmp(&a->unattributed, &b->unattributed, sizeof(a->unattributed)) ||
		    a->device.index != b->device.index)
			return "zone";
		DIFF_STR(a->device.uuid, b->device.uuid, "device uuid");
		DIFF_STR(a->device.name, b->device.name, "device name");
		DIFF_STR(a->device.vendor, b->device.vendor, "device vendor");
	}
	for (size_t i = 0; i < x->nprocesses; i++) {
		const struct kepler_process *a = &x->processes[i], *b = &y->processes[i];

		if (a->pid != b->pid || a->start_time_ns != b->start_time_ns || a->type != b->type ||
		    a->cycles != b->cycles || a->instructions != b->instructions ||
		    a->cache_misses != b->cache_misses || a->flags != b->flags)
			return "process";
		DIFF_STR(a->comm, b->comm, "comm");
		DIFF_STR(a->exe, b->exe, "exe");
		DIFF_STR(a->container_id, b->container_id, "process container_id");
		DIFF_STR(a->vm_id, b->vm_id, "process vm_id");
		DIFF_USAGE(a->usage, b->usage);
	}
	for (size_t i = 0; i < x->ncontainers; i++) {
		const struct kepler_container *a = &x->containers[i], *b = &y->containers[i];

		DIFF_STR(a->id, b->id, "container id");
		DIFF_STR(a->name, b->name, "container name");
		DIFF_STR(a->runtime, b->runtime, "runtime");
		DIFF_STR(a->pod_id, b->pod_id, "pod_id");
		if (a->size_shares != b->size_shares)
			return "container size";
		DIFF_USAGE(a->usage, b->usage);
	}
	for (size_t i = 0; i < x->nvms; i++) {
		DIFF_STR(x->vms[i].id, y->vms[i].id, "vm id");
		DIFF_STR(x->vms[i].name, y->vms[i].name, "vm name");
		DIFF_STR(x->vms[i].hypervisor, y->vms[i].hypervisor, "hypervisor");
		DIFF_USAGE(x->vms[i].usage, y->vms[i].usage);
	}
	for (size_t i = 0; i < x->npods; i++) {
		DIFF_STR(x->pods[i].id, y->pods[i].id, "pod id");
		DIFF_STR(x->pods[i].name, y->pods[i].name, "pod name");
		DIFF_STR(x->pods[i].ns, y->pods[i].ns, "pod namespace");
		DIFF_STR(x->pods[i].owner_kind, y->pods[i].owner_kind, "pod owner kind");
		DIFF_STR(x->pods[i].owner_name, y->pods[i].owner_name, "pod owner name");
		DIFF_STR(x->pods[i].labels, y->pods[i].labels, "pod labels");
		DIFF_USAGE(x->pods[i].usage, y->pods[i].usage);
	}
	for (size_t i = 0; i < x->nfolds; i++) {
		DIFF_STR(x->folds[i].container_id, y->folds[i].container_id, "fold container_id");
		DIFF_STR(x->folds[i].vm_id, y->folds[i].vm_id, "fold vm_id");
		if (x->folds[i].processes != y->folds[i].processes ||
		    x->folds[i].processes_delta != y->folds[i].processes_delta)
			return "fold processes";
		DIFF_USAGE(x->folds[i].usage, y->folds[i].usage);
	}
	return NULL;
}

#endif
