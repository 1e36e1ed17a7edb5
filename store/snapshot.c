// SPDX-License-Identifier: Apache-2.0
/*
 * The snapshot's vocabulary (kepler/snapshot.h): names of its enums, its
 * workloads of every kind seen one way, the primary zone and the order of
 * rows. The collector and every reader use these, so that a workload kind
 * is dispatched and a table is sorted in one place.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/snapshot.h"

static const char *const source_names[] = { "unknown", "rapl",        "hwmon",   "nvml", "model",
					    "fake",    "passthrough", "redfish", "ipmi" };
static const char *const state_names[] = { "running", "terminated" };
static const char *const type_names[] = { "regular", "container", "vm", "kernel" };
static const char *const kind_names[] = { "process", "container", "vm", "pod" };
static const char *const baseline_names[] = { "none", "configured", "fitted", "minimum", "unfitted" };
static const char *const sort_names[] = { "watts", "energy", "cpu", "pid", "name" };

_Static_assert(sizeof(source_names) / sizeof(source_names[0]) == KEPLER_SOURCE_COUNT, "source names");
_Static_assert(sizeof(state_names) / sizeof(state_names[0]) == KEPLER_STATE_COUNT, "state names");
_Static_assert(sizeof(type_names) / sizeof(type_names[0]) == KEPLER_PROC_TYPE_COUNT, "type names");
_Static_assert(sizeof(kind_names) / sizeof(kind_names[0]) == KEPLER_KIND_COUNT, "kind names");
_Static_assert(sizeof(baseline_names) / sizeof(baseline_names[0]) == KEPLER_BASELINE_METHOD_COUNT,
	       "baseline names");
_Static_assert(sizeof(sort_names) / sizeof(sort_names[0]) == KEPLER_SORT_COUNT, "sort names");

const char *kepler_source_name(enum kepler_source s)
{
	return (unsigned)s < KEPLER_SOURCE_COUNT ? source_names[s] : source_names[0];
}

bool kepler_zone_is_device(const struct kepler_zone *z)
{
	return z->source == KEPLER_SOURCE_NVML;
}

const char *kepler_baseline_method_name(enum kepler_baseline_method m)
{
	return (unsigned)m < KEPLER_BASELINE_METHOD_COUNT ? baseline_names[m] : baseline_names[0];
}

const char *kepler_idle_policy_name(enum kepler_idle_policy p)
{
	static const char *const names[KEPLER_IDLE_POLICY_COUNT] = { "none", "cpu", "size" };

	return (unsigned)p < KEPLER_IDLE_POLICY_COUNT ? names[p] : names[0];
}

const char *kepler_state_name(enum kepler_state s)
{
	return (unsigned)s < KEPLER_STATE_COUNT ? state_names[s] : state_names[0];
}

const char *kepler_process_type_name(enum kepler_process_type t)
{
	return (unsigned)t < KEPLER_PROC_TYPE_COUNT ? type_names[t] : type_names[0];
}

const char *kepler_kind_name(enum kepler_kind k)
{
	return (unsigned)k < KEPLER_KIND_COUNT ? kind_names[k] : kind_names[0];
}

const char *kepler_sort_name(enum kepler_sort s)
{
	return (unsigned)s < KEPLER_SORT_COUNT ? sort_names[s] : sort_names[0];
}

int kepler_sort_from_name(const char *name, enum kepler_sort *ret)
{
	for (int i = 0; i < KEPLER_SORT_COUNT; i++)
		if (!strcmp(name, sort_names[i])) {
			*ret = (enum kepler_sort)i;
			return 0;
		}
	return -EINVAL;
}

size_t kepler_workload_count(const struct kepler_snapshot *s, enum kepler_kind k)
{
	switch (k) {
	case KEPLER_KIND_PROCESS: return s->nprocesses;
	case KEPLER_KIND_CONTAINER: return s->ncontainers;
	case KEPLER_KIND_VM: return s->nvms;
	case KEPLER_KIND_POD: return s->npods;
	default: return 0;
	}
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

struct kepler_workload kepler_workload_at(const struct kepler_snapshot *s, enum kepler_kind k, size_t i)
{
	struct kepler_workload w = {
		.kind = k, .index = i, .id = "", .name = "", .detail = "", .parent = ""
	};

	if (k == KEPLER_KIND_PROCESS) {
		const struct kepler_process *p = &s->processes[i];

		w.pid = p->pid;
		w.name = or_empty(p->comm);
		w.detail = or_empty(p->exe);
		w.parent = p->container_id && p->container_id[0] ? p->container_id : or_empty(p->vm_id);
		w.usage = &p->usage;
	} else if (k == KEPLER_KIND_CONTAINER) {
		const struct kepler_container *c = &s->containers[i];

		w.id = or_empty(c->id);
		w.name = or_empty(c->name);
		w.detail = or_empty(c->runtime);
		w.parent = or_empty(c->pod_id);
		w.usage = &c->usage;
	} else if (k == KEPLER_KIND_VM) {
		const struct kepler_vm *v = &s->vms[i];

		w.id = or_empty(v->id);
		w.name = or_empty(v->name);
		w.detail = or_empty(v->hypervisor);
		w.usage = &v->usage;
	} else {
		const struct kepler_pod *p = &s->pods[i];

		w.id = or_empty(p->id);
		w.name = or_empty(p->name);
		w.detail = or_empty(p->ns);
		w.usage = &p->usage;
	}
	w.title = w.name[0] ? w.name : w.id;
	return w;
}

/*
 * The zones a meter gives, in a snapshot's order, and in which order they
 * are preferred as the primary zone (0 first; -1: never primary).
 */
static const struct {
	const char *name;
	int primary;
} zone_names[] = {
	{ KEPLER_ZONE_PACKAGE, 1 }, { KEPLER_ZONE_CORE, 2 }, { KEPLER_ZONE_UNCORE, 4 },
	{ KEPLER_ZONE_DRAM, 3 },    { KEPLER_ZONE_PSYS, 0 }, { KEPLER_ZONE_PLATFORM, -1 },
};

#define NZONE_NAMES (sizeof(zone_names) / sizeof(zone_names[0]))

int kepler_zone_rank(const char *name)
{
	for (size_t i = 0; i < NZONE_NAMES; i++)
		if (!strcmp(zone_names[i].name, name))
			return (int)i;
	return KEPLER_ZONE_RANK_UNKNOWN;
}

size_t kepler_primary_zone_of(const char *const *names, size_t n)
{
	for (int want = 0; want < (int)NZONE_NAMES; want++)
		for (size_t i = 0; i < NZONE_NAMES; i++) {
			if (zone_names[i].primary != want)
				continue;
			for (size_t z = 0; z < n; z++)
				if (names[z] && !strcmp(names[z], zone_names[i].name))
					return z;
		}
	return 0;
}

size_t kepler_primary_zone(const struct kepler_snapshot *s)
{
	const char *names[KEPLER_MAX_ZONES];
	size_t n = s->nzones < KEPLER_MAX_ZONES ? s->nzones : KEPLER_MAX_ZONES;

	for (size_t z = 0; z < n; z++)
		names[z] = s->zones[z].name;
	return kepler_primary_zone_of(names, n);
}

struct sort_ctx {
	enum kepler_sort sort;
	size_t zone;
	bool zoned; /* the snapshot has zones: usage->zones[zone] exists */
};

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a == b ? 0 : a > b ? -1 : 1;
}

/* Identity order: pid, then id. */
static int by_identity(const struct kepler_workload *a, const struct kepler_workload *b)
{
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return strcmp(a->id, b->id);
}

static int by_sort(const void *x, const void *y, void *arg)
{
	const struct kepler_workload *a = x, *b = y;
	const struct sort_ctx *c = arg;
	size_t z = c->zone;
	int r = 0;

	switch (c->sort) {
	case KEPLER_SORT_PID: return by_identity(a, b);
	case KEPLER_SORT_NAME: r = strcmp(a->title, b->title); return r ? r : by_identity(a, b);
	case KEPLER_SORT_WATTS:
		if (c->zoned)
			r = cmp_u64_desc(a->usage->zones[z].delta_uj, b->usage->zones[z].delta_uj);
		break;
	case KEPLER_SORT_CPU:
		r = cmp_u64_desc(a->usage->cpu_time_delta_ns, b->usage->cpu_time_delta_ns);
		break;
	default: /* energy: the first tie-breaker of the others */ break;
	}
	if (!r && c->zoned)
		r = cmp_u64_desc(a->usage->zones[z].total_uj, b->usage->zones[z].total_uj);
	return r ? r : by_identity(a, b);
}

void kepler_workload_sort(const struct kepler_snapshot *snap, struct kepler_workload *rows, size_t n,
			  enum kepler_sort sort)
{
	struct sort_ctx c = { sort, kepler_primary_zone(snap), snap->nzones > 0 };

	qsort_r(rows, n, sizeof(*rows), by_sort, &c);
}

const char *kepler_pod_label(const char *labels, const char *key, size_t *ret_len)
{
	size_t klen = strlen(key);

	for (const char *p = labels; p && *p;) {
		const char *end = strchr(p, ','), *eq;

		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq && (size_t)(eq - p) == klen && !memcmp(p, key, klen)) {
			*ret_len = (size_t)(end - eq - 1);
			return eq + 1;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}
