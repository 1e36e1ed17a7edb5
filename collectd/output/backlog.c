// SPDX-License-Identifier: Apache-2.0
/*
 * The backlog: intervals the store refused, merged into the next snapshot
 * (see backlog.h for the rules). What is held is one snapshot, copied
 * through the blob codec (so it owns its strings), covering every refused
 * interval; merging it with the newest is a walk over both, matching
 * workloads by identity: (pid, start time) for processes, the id for the
 * others.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/array.h"
#include "backlog.h"
#include "keymap.h"

struct kepler_backlog {
	size_t max_workloads;
	struct kepler_snapshot *held; /* NULL: nothing held */
	uint64_t since_wall_ns;       /* the first refused commit */
	uint64_t
		since_mono_ns; /* its snapshot's monotonic time: unstored_ns is measured on the intervals' clock */
	struct kepler_keymap map[KEPLER_KIND_COUNT];
	bool *matched[KEPLER_KIND_COUNT]; /* per held workload: in the newest snapshot too */
	size_t matched_cap[KEPLER_KIND_COUNT];
	/* the merged snapshot handed out */
	struct kepler_snapshot out;
	size_t cap[KEPLER_KIND_COUNT];
	struct kepler_energy *pool;
	size_t pool_cap;
	size_t folds_cap, fold_pool_cap;
	struct kepler_energy *fold_pool;
};

int kepler_backlog_new(size_t max_workloads, struct kepler_backlog **ret, struct kepler_error *err)
{
	struct kepler_backlog *b = calloc(1, sizeof(*b));

	if (!b)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	b->max_workloads = max_workloads;
	*ret = b;
	return 0;
}

unsigned kepler_backlog_intervals(const struct kepler_backlog *b)
{
	return b->held ? b->held->unstored_intervals + 1 : 0;
}

/* The identity of workload @i of kind @k: a key for the keymap. */
static size_t key_of(const struct kepler_snapshot *s, enum kepler_kind k, size_t i, char *key)
{
	struct kepler_workload w = kepler_workload_at(s, k, i);
	size_t len;

	if (k == KEPLER_KIND_PROCESS)
		return kepler_proc_key(s->processes[i].pid, s->processes[i].start_time_ns, key);
	len = strlen(w.id);
	if (len > KEPLER_KEY_MAX)
		return KEPLER_KEY_MAX + 1; /* the ledger never makes one: never matched */
	memcpy(key, w.id, len);
	return len;
}

/* Index the held snapshot's workloads by identity. */
static int index_held(struct kepler_backlog *b)
{
	char key[KEPLER_KEY_MAX + 1];

	for (int k = 0; k < KEPLER_KIND_COUNT; k++) {
		size_t n = kepler_workload_count(b->held, (enum kepler_kind)k);

		if (kepler_array_reserve((void **)&b->matched[k], &b->matched_cap[k], n, sizeof(bool)) < 0)
			return -ENOMEM;
		kepler_keymap_clear(&b->map[k]);
		if (kepler_keymap_reserve(&b->map[k], n) < 0)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			size_t len = key_of(b->held, (enum kepler_kind)k, i, key);

			if (len <= KEPLER_KEY_MAX)
				kepler_keymap_put(&b->map[k], key, len, (uint32_t)i); /* room reserved */
		}
	}
	return 0;
}

/* The held workload of kind @k that is workload @i of @s, or -1. */
static int64_t held_match(const struct kepler_backlog *b, const struct kepler_snapshot *s, enum kepler_kind k,
			  size_t i)
{
	char key[KEPLER_KEY_MAX + 1];
	size_t len = key_of(s, k, i, key);

	return len <= KEPLER_KEY_MAX ? kepler_keymap_get(&b->map[k], key, len) : -1;
}

/* The usage of workload @i of kind @k (writable: in the merged snapshot's arrays). */
static struct kepler_usage *usage_at(struct kepler_snapshot *s, enum kepler_kind k, size_t i)
{
	switch (k) {
	case KEPLER_KIND_PROCESS: return &s->processes[i].usage;
	case KEPLER_KIND_CONTAINER: return &s->containers[i].usage;
	case KEPLER_KIND_VM: return &s->vms[i].usage;
	default: return &s->pods[i].usage;
	}
}

static void **array_of(struct kepler_snapshot *s, enum kepler_kind k, size_t **count, size_t *size)
{
	switch (k) {
	case KEPLER_KIND_PROCESS:
		*count = &s->nprocesses;
		*size = sizeof(*s->processes);
		return (void **)&s->processes;
	case KEPLER_KIND_CONTAINER:
		*count = &s->ncontainers;
		*size = sizeof(*s->containers);
		return (void **)&s->containers;
	case KEPLER_KIND_VM:
		*count = &s->nvms;
		*size = sizeof(*s->vms);
		return (void **)&s->vms;
	default:
		*count = &s->npods;
		*size = sizeof(*s->pods);
		return (void **)&s->pods;
	}
}

static uint64_t sum_counter(uint64_t a, uint64_t b)
{
	if (a == KEPLER_COUNTER_UNAVAILABLE || b == KEPLER_COUNTER_UNAVAILABLE)
		return a == KEPLER_COUNTER_UNAVAILABLE ? b : a;
	return a + b;
}

struct candidate {
	uint64_t energy; /* in the primary zone, over the held intervals */
	uint32_t kind, index;
};

static int by_energy(const void *x, const void *y)
{
	const struct candidate *a = x, *b = y;

	return a->energy < b->energy ? -1 : a->energy > b->energy;
}

/*
 * Held workloads not in the newest snapshot beyond max_workloads: those with
 * the least energy in the primary zone go (marked matched, so not carried).
 * Returns how many, or -ENOMEM.
 */
static int64_t drop_excess(struct kepler_backlog *b, size_t *missing)
{
	size_t total = 0, pz = kepler_primary_zone(b->held), nc = 0;
	struct candidate *c;

	for (int k = 0; k < KEPLER_KIND_COUNT; k++)
		total += missing[k];
	if (total <= b->max_workloads)
		return 0;
	c = malloc(total * sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (int k = 0; k < KEPLER_KIND_COUNT; k++)
		for (size_t i = 0; i < kepler_workload_count(b->held, (enum kepler_kind)k); i++)
			if (!b->matched[k][i])
				c[nc++] = (struct candidate){
					usage_at(b->held, (enum kepler_kind)k, i)->zones[pz].delta_uj,
					(uint32_t)k, (uint32_t)i
				};
	qsort(c, nc, sizeof(*c), by_energy);
	for (size_t i = 0; i < total - b->max_workloads; i++) {
		b->matched[c[i].kind][c[i].index] = true;
		missing[c[i].kind]--;
	}
	free(c);
	return (int64_t)(total - b->max_workloads);
}

/* Room in the merged snapshot for @n[k] workloads of each kind. */
static int reserve_out(struct kepler_backlog *b, const size_t *n, size_t nzones, bool idle)
{
	size_t all = 0;

	for (int k = 0; k < KEPLER_KIND_COUNT; k++) {
		size_t *count, size;
		void **arr = array_of(&b->out, (enum kepler_kind)k, &count, &size);

		if (kepler_array_reserve(arr, &b->cap[k], n[k], size) < 0)
			return -ENOMEM;
		all += n[k];
	}
	return kepler_array_reserve((void **)&b->pool, &b->pool_cap, all * nzones * (idle ? 2 : 1),
				    sizeof(*b->pool));
}

/* Append workload @i of kind @k of @from to the merged snapshot, its zones (and idle) copied. */
static struct kepler_usage *append(struct kepler_backlog *b, const struct kepler_snapshot *from,
				   enum kepler_kind k, size_t i, size_t *pool_used)
{
	size_t *count, size;
	void **arr = array_of(&b->out, k, &count, &size);
	size_t *fcount, fsize;
	void **farr = array_of((struct kepler_snapshot *)from, k, &fcount, &fsize);
	struct kepler_usage *u;
	struct kepler_energy *zones = b->pool + *pool_used;

	memcpy((char *)*arr + *count * size, (const char *)*farr + i * size, size);
	u = usage_at(&b->out, k, (*count)++);
	memcpy(zones, u->zones, from->nzones * sizeof(*zones));
	u->zones = zones;
	*pool_used += from->nzones;
	if (u->idle) {
		memcpy(zones + from->nzones, u->idle, from->nzones * sizeof(*zones));
		u->idle = zones + from->nzones;
		*pool_used += from->nzones;
	}
	return u;
}

static void merge_usage(struct kepler_usage *u, const struct kepler_usage *old, size_t nzones)
{
	for (size_t z = 0; z < nzones; z++)
		u->zones[z].delta_uj += old->zones[z].delta_uj;
	for (size_t z = 0; u->idle && old->idle && z < nzones; z++)
		u->idle[z].delta_uj += old->idle[z].delta_uj;
	u->cpu_time_delta_ns += old->cpu_time_delta_ns;
}

static void merge_header(struct kepler_backlog *b, const struct kepler_snapshot *s, uint32_t dropped)
{
	const struct kepler_snapshot *h = b->held;
	struct kepler_snapshot *o = &b->out;

	o->seq = 0;
	o->wall_ns = s->wall_ns;
	o->mono_ns = s->mono_ns;
	o->interval_ns = h->interval_ns + s->interval_ns;
	o->flags = s->flags & ~(uint32_t)KEPLER_SNAP_FIRST;
	o->node_cpu_busy_delta_ns = h->node_cpu_busy_delta_ns + s->node_cpu_busy_delta_ns;
	o->node_cpu_total_delta_ns = h->node_cpu_total_delta_ns + s->node_cpu_total_delta_ns;
	o->cpu_usage_ratio = o->node_cpu_total_delta_ns
				     ? (double)o->node_cpu_busy_delta_ns / (double)o->node_cpu_total_delta_ns
				     : s->cpu_usage_ratio;
	o->cpu_count = s->cpu_count;
	o->collector_cpu_ns = s->collector_cpu_ns;
	o->collector_rss_bytes = s->collector_rss_bytes;
	o->skipped_entries = h->skipped_entries + s->skipped_entries;
	o->lost_entries = h->lost_entries + s->lost_entries + dropped;
	o->unstored_intervals = kepler_backlog_intervals(b);
	/*
	 * on the clock the intervals are measured on (the wall clock is sampled
	 * later in a snapshot, by however long a loaded machine takes: the two
	 * once differed by 15 ms, and unstored_ns came out above interval_ns)
	 */
	o->unstored_ns = s->mono_ns > b->since_mono_ns ? s->mono_ns - b->since_mono_ns : 0;
	o->idle_policy = s->idle_policy;
	o->nzones = s->nzones;
	for (size_t z = 0; z < s->nzones; z++) {
		o->zones[z] = s->zones[z];
		o->zones[z].energy.delta_uj += h->zones[z].energy.delta_uj;
		o->zones[z].active.delta_uj += h->zones[z].active.delta_uj;
		o->zones[z].idle.delta_uj += h->zones[z].idle.delta_uj;
		o->zones[z].unattributed.delta_uj += h->zones[z].unattributed.delta_uj;
	}
	o->blob = NULL;
	o->energy_pool = NULL;
	o->idle_pool = NULL;
}

static bool same_fold(const struct kepler_fold *a, const struct kepler_fold *b)
{
	return !strcmp(a->container_id, b->container_id) && !strcmp(a->vm_id, b->vm_id);
}

/* A copy of @f in the merged snapshot, its energies in the folds' pool. */
static struct kepler_fold *append_fold(struct kepler_backlog *b, const struct kepler_fold *f, size_t nzones)
{
	struct kepler_fold *o = &b->out.folds[b->out.nfolds];
	struct kepler_energy *e = b->fold_pool + b->out.nfolds * 2 * nzones;

	*o = *f;
	memcpy(e, f->usage.zones, nzones * sizeof(*e));
	o->usage.zones = e;
	if (f->usage.idle) {
		memcpy(e + nzones, f->usage.idle, nzones * sizeof(*e));
		o->usage.idle = e + nzones;
	}
	b->out.nfolds++;
	return o;
}

/*
 * The folds: the newest's with the held deltas added, then the held ones
 * the newest lacks (a few: one per container at most, matched by scanning).
 */
static int merge_folds(struct kepler_backlog *b, const struct kepler_snapshot *s)
{
	const struct kepler_snapshot *h = b->held;
	size_t n = s->nfolds + h->nfolds;

	if (kepler_array_reserve((void **)&b->out.folds, &b->folds_cap, n, sizeof(*b->out.folds)) < 0 ||
	    kepler_array_reserve((void **)&b->fold_pool, &b->fold_pool_cap, n * 2 * s->nzones,
				 sizeof(*b->fold_pool)) < 0)
		return -ENOMEM;
	b->out.nfolds = 0;
	for (size_t i = 0; i < s->nfolds; i++) {
		struct kepler_fold *o = append_fold(b, &s->folds[i], s->nzones);

		for (size_t j = 0; j < h->nfolds; j++)
			if (same_fold(&h->folds[j], o)) {
				merge_usage(&o->usage, &h->folds[j].usage, s->nzones);
				o->processes_delta += h->folds[j].processes_delta;
				break;
			}
	}
	for (size_t j = 0; j < h->nfolds; j++) {
		bool found = false;

		for (size_t i = 0; i < s->nfolds && !found; i++)
			found = same_fold(&h->folds[j], &s->folds[i]);
		if (!found)
			append_fold(b, &h->folds[j], s->nzones);
	}
	return 0;
}

int kepler_backlog_merge(struct kepler_backlog *b, const struct kepler_snapshot *snap,
			 struct kepler_snapshot **ret, struct kepler_error *err)
{
	size_t n[KEPLER_KIND_COUNT], missing[KEPLER_KIND_COUNT], pool_used = 0;
	int64_t dropped;

	if (!b->held) {
		*ret = (struct kepler_snapshot *)snap;
		return 0;
	}
	if (b->held->nzones != snap->nzones || b->held->idle_policy != snap->idle_policy)
		return kepler_error_set(err, -EINVAL,
					"the meter's zones changed while the store was unwritable");
	for (int k = 0; k < KEPLER_KIND_COUNT; k++) {
		size_t hn = kepler_workload_count(b->held, (enum kepler_kind)k), found = 0;

		memset(b->matched[k], 0, hn * sizeof(bool));
		for (size_t i = 0; i < kepler_workload_count(snap, (enum kepler_kind)k); i++) {
			int64_t at = held_match(b, snap, (enum kepler_kind)k, i);

			if (at >= 0 && !b->matched[k][at]) {
				b->matched[k][at] = true;
				found++;
			}
		}
		missing[k] = hn - found;
	}
	dropped = drop_excess(b, missing);
	for (int k = 0; k < KEPLER_KIND_COUNT; k++)
		n[k] = kepler_workload_count(snap, (enum kepler_kind)k) + missing[k];
	if (dropped < 0 || reserve_out(b, n, snap->nzones, snap->idle_policy != KEPLER_IDLE_NONE) < 0 ||
	    merge_folds(b, snap) < 0)
		return kepler_error_set(err, -ENOMEM,
					"out of memory merging the intervals the store refused");
	merge_header(b, snap, (uint32_t)dropped);
	for (int k = 0; k < KEPLER_KIND_COUNT; k++) {
		size_t *count, size;

		array_of(&b->out, (enum kepler_kind)k, &count, &size);
		*count = 0;
		for (size_t i = 0; i < kepler_workload_count(snap, (enum kepler_kind)k); i++) {
			struct kepler_usage *u = append(b, snap, (enum kepler_kind)k, i, &pool_used);
			int64_t at = held_match(b, snap, (enum kepler_kind)k, i);

			if (at < 0)
				continue;
			merge_usage(u, usage_at(b->held, (enum kepler_kind)k, (size_t)at), snap->nzones);
			if (k == KEPLER_KIND_PROCESS) {
				struct kepler_process *p = &b->out.processes[*count - 1];
				const struct kepler_process *old = &b->held->processes[at];

				p->cycles = sum_counter(p->cycles, old->cycles);
				p->instructions = sum_counter(p->instructions, old->instructions);
				p->cache_misses = sum_counter(p->cache_misses, old->cache_misses);
			}
		}
		/* those gone from the newest (ended and dropped, or idle): last totals, all their deltas */
		for (size_t i = 0; i < kepler_workload_count(b->held, (enum kepler_kind)k); i++)
			if (!b->matched[k][i])
				append(b, b->held, (enum kepler_kind)k, i, &pool_used);
	}
	*ret = &b->out;
	return 0;
}

int kepler_backlog_hold(struct kepler_backlog *b, const struct kepler_snapshot *merged,
			uint64_t refused_wall_ns, struct kepler_error *err)
{
	struct kepler_snapshot copy = *merged, *held = NULL;
	void *blob = NULL;
	size_t len;
	int r;

	copy.unstored_intervals = kepler_backlog_intervals(b); /* what it covers, less itself */
	r = kepler_snapshot_encode(&copy, &blob, &len, err);
	if (r == 0)
		r = kepler_snapshot_decode(blob, len, &held, err);
	free(blob);
	if (r < 0)
		return r;
	kepler_snapshot_free(b->held);
	b->held = held;
	if (!b->since_wall_ns) {
		b->since_wall_ns = refused_wall_ns;
		b->since_mono_ns = merged->mono_ns;
	}
	r = index_held(b);
	if (r < 0) {
		kepler_backlog_clear(b);
		return kepler_error_set(err, r, "out of memory holding the intervals the store refused");
	}
	return 0;
}

void kepler_backlog_clear(struct kepler_backlog *b)
{
	kepler_snapshot_free(b->held);
	b->held = NULL;
	b->since_wall_ns = 0;
	b->since_mono_ns = 0;
}

void kepler_backlog_free(struct kepler_backlog *b)
{
	if (!b)
		return;
	kepler_backlog_clear(b);
	for (int k = 0; k < KEPLER_KIND_COUNT; k++) {
		kepler_keymap_free(&b->map[k]);
		free(b->matched[k]);
	}
	free(b->out.processes);
	free(b->out.containers);
	free(b->out.vms);
	free(b->out.pods);
	free(b->out.folds);
	free(b->fold_pool);
	free(b->pool);
	free(b);
}
