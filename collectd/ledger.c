// SPDX-License-Identifier: Apache-2.0
/*
 * The ledger: one interval's measurements in, one snapshot out, with the
 * cumulative totals kept in between (see ledger.h for the rules).
 *
 * Processes are rebuilt each interval into a new generation (records,
 * energy pool, key map), looking up the previous one for totals. Records
 * of terminated processes own copies of their strings, since the
 * informer forgets them. Containers, VMs and pods live in persistent
 * group tables with owned strings, compacted when entries expire.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribution.h"
#include "keymap.h"
#include "ledger.h"

struct proc_rec {
	struct kepler_process p;
	uint64_t ended_mono_ns; /* terminated: when it ended */
	char *owned;            /* terminated: block holding p's strings */
	bool taken;             /* prev generation: carried into the new one */
};

struct proc_gen {
	struct proc_rec *recs;
	size_t n, cap;
	struct kepler_energy *pool; /* n x nzones */
	size_t pool_cap;
	struct kepler_keymap map;
};

enum group_kind { GROUP_CONTAINER, GROUP_VM, GROUP_POD, GROUP_KINDS };

#define RESUME_HORIZON_NS (3600ULL * 1000000000ULL)

struct group_rec {
	char *id, *name, *extra, *pod_id; /* extra: runtime (containers), hypervisor (VMs) */
	uint64_t total[KEPLER_MAX_ZONES], delta[KEPLER_MAX_ZONES];
	uint64_t cpu_total, cpu_delta;
	uint64_t ended_mono_ns;
	bool terminated, present, running, fresh, emit;
	bool dormant; /* resumed at start, not seen yet: kept, not shown */
	bool keep;    /* dormant and within the horizon */
};

struct group_table {
	struct group_rec *recs;
	size_t n, cap;
	struct kepler_keymap map;
};

struct kepler_ledger {
	struct kepler_ledger_params params;
	unsigned nzones;
	char zone_names[KEPLER_MAX_ZONES][64];
	struct kepler_energy node[KEPLER_MAX_ZONES][3]; /* energy, active, idle */
	int primary;
	struct proc_gen gen[2];
	int cur; /* index of the current generation in gen[] */
	/*
	 * Processes of the snapshot resumed at start: an informer reports a
	 * process only once it runs again (eBPF), so they wait here, for up to
	 * RESUME_HORIZON, to continue their totals when they show up.
	 */
	struct proc_gen resumed;
	uint64_t resumed_until_ns;
	struct group_table groups[GROUP_KINDS];
	/* resume: node bases by zone name, until the first build */
	unsigned nresume;
	char resume_names[KEPLER_MAX_ZONES][64];
	uint64_t resume_base[KEPLER_MAX_ZONES][3];
	/* the snapshot handed out */
	struct kepler_snapshot snap;
	struct kepler_container *containers;
	struct kepler_vm *vms;
	struct kepler_pod *pods;
	struct kepler_energy *group_pool;
	size_t containers_cap, vms_cap, pods_cap, group_pool_cap;
	uint64_t *weights, *shares, *scratch;
	size_t work_cap;
};

int kepler_ledger_new(const struct kepler_ledger_params *p, struct kepler_ledger **ret,
		      struct kepler_error *err)
{
	struct kepler_ledger *l = calloc(1, sizeof(*l));

	if (!l)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	l->params = *p;
	l->primary = -1;
	*ret = l;
	return 0;
}

/* psys > package > core > dram > uncore, else the first (Kepler's order). */
static int primary_zone(const struct kepler_ledger *l)
{
	static const char *const order[] = { "psys", "package", "core", "dram", "uncore" };

	for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++)
		for (unsigned z = 0; z < l->nzones; z++)
			if (!strcmp(l->zone_names[z], order[o]))
				return (int)z;
	return 0;
}

static void *grow_array(void *p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need == 0)
		need = 1; /* never NULL for an empty table: NULL means out of memory */
	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	q = realloc(p, n * size);
	if (q)
		*cap = n;
	return q;
}

/* ---- strings ---- */

/* Copy the strings of @p into one block, pointed to by @p. */
static char *own_strings(struct kepler_process *p)
{
	const char **fields[] = { &p->comm, &p->exe, &p->container_id, &p->vm_id };
	size_t len = 0, off = 0;
	char *block;

	for (size_t i = 0; i < 4; i++)
		len += strlen(*fields[i]) + 1;
	block = malloc(len);
	if (!block)
		return NULL;
	for (size_t i = 0; i < 4; i++) {
		size_t n = strlen(*fields[i]) + 1;

		memcpy(block + off, *fields[i], n);
		*fields[i] = block + off;
		off += n;
	}
	return block;
}

/* ---- node ---- */

/* Index of zone @z of this run in the resumed snapshot's zones, or -1. */
static int resumed_index(const struct kepler_ledger *l, unsigned z)
{
	for (unsigned r = 0; r < l->nresume; r++)
		if (!strcmp(l->resume_names[r], l->zone_names[z]))
			return (int)r;
	return -1;
}

/* Resumed totals were in the old snapshot's zone order: put them in ours. */
static int remap_resumed(struct kepler_ledger *l)
{
	struct proc_gen *prev = &l->resumed;
	struct kepler_energy *pool;
	int map[KEPLER_MAX_ZONES];

	for (unsigned z = 0; z < l->nzones; z++)
		map[z] = resumed_index(l, z);
	pool = calloc((prev->n ? prev->n : 1) * (l->nzones ? l->nzones : 1), sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	for (size_t i = 0; i < prev->n; i++) {
		struct kepler_energy *old = prev->recs[i].p.usage.zones, *nz = &pool[i * l->nzones];

		for (unsigned z = 0; z < l->nzones; z++)
			if (map[z] >= 0)
				nz[z] = old[map[z]];
		prev->recs[i].p.usage.zones = nz;
	}
	free(prev->pool);
	prev->pool = pool;
	prev->pool_cap = prev->n ? prev->n * l->nzones : 1;
	for (int k = 0; k < GROUP_KINDS; k++)
		for (size_t i = 0; i < l->groups[k].n; i++) {
			struct group_rec *g = &l->groups[k].recs[i];
			uint64_t t[KEPLER_MAX_ZONES] = { 0 };

			for (unsigned z = 0; z < l->nzones; z++)
				if (map[z] >= 0)
					t[z] = g->total[map[z]];
			memcpy(g->total, t, sizeof(t));
		}
	return 0;
}

static int setup_zones(struct kepler_ledger *l, const struct kepler_ledger_input *in,
		       struct kepler_error *err)
{
	if (l->nzones) {
		if (in->nzones != l->nzones)
			return kepler_error_set(err, -EINVAL, "the meter's zones changed");
		return 0;
	}
	l->nzones = in->nzones;
	for (unsigned z = 0; z < in->nzones; z++) {
		int r;

		snprintf(l->zone_names[z], sizeof(l->zone_names[z]), "%s", in->zones[z].name);
		r = resumed_index(l, z);
		if (r >= 0)
			for (int k = 0; k < 3; k++)
				l->node[z][k].total_uj = l->resume_base[r][k];
	}
	l->primary = primary_zone(l);
	if (l->nresume && remap_resumed(l) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* The node's zones; returns Σ of process CPU deltas (0: all is idle). */
static void account_node(struct kepler_ledger *l, const struct kepler_ledger_input *in,
			 uint64_t cpu_delta_sum, uint64_t *active)
{
	for (unsigned z = 0; z < l->nzones; z++) {
		uint64_t d = in->first ? 0 : in->zones[z].delta_uj;
		uint64_t a = cpu_delta_sum ? kepler_active_uj(d, in->busy_delta_ns, in->total_delta_ns) : 0;

		active[z] = a;
		l->node[z][0].delta_uj = d;
		l->node[z][1].delta_uj = a;
		l->node[z][2].delta_uj = d - a;
		for (int k = 0; k < 3; k++)
			l->node[z][k].total_uj += l->node[z][k].delta_uj;
	}
}

/* ---- processes ---- */

static int gen_reserve(struct proc_gen *g, size_t n, unsigned nzones)
{
	struct proc_rec *recs = grow_array(g->recs, &g->cap, n, sizeof(*recs));
	struct kepler_energy *pool;
	size_t pool_cap = g->pool_cap;

	if (!recs)
		return -ENOMEM;
	g->recs = recs;
	pool = grow_array(g->pool, &pool_cap, n * (nzones ? nzones : 1), sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	g->pool = pool;
	g->pool_cap = pool_cap;
	return 0;
}

static void gen_reset(struct proc_gen *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->recs[i].owned);
	g->n = 0;
	kepler_keymap_clear(&g->map);
}

static struct proc_rec *gen_add(struct kepler_ledger *l, struct proc_gen *g)
{
	struct proc_rec *r = &g->recs[g->n];

	memset(r, 0, sizeof(*r));
	r->p.usage.zones = &g->pool[g->n * l->nzones];
	memset(r->p.usage.zones, 0, l->nzones * sizeof(struct kepler_energy));
	g->n++;
	return r;
}

static int add_measured(struct kepler_ledger *l, const struct kepler_ledger_input *in,
			const struct kepler_proc *kp, const uint64_t *shares, size_t i)
{
	struct proc_gen *cur = &l->gen[l->cur], *prev = &l->gen[!l->cur];
	struct proc_rec *r = gen_add(l, cur), *old = NULL;
	char key[12];
	size_t klen = kepler_proc_key(kp->pid, kp->start_time_ns, key);
	int64_t idx = kepler_keymap_get(&prev->map, key, klen);

	if (idx >= 0) {
		old = &prev->recs[idx];
		old->taken = true;
	} else if (l->resumed.n && (idx = kepler_keymap_get(&l->resumed.map, key, klen)) >= 0) {
		old = &l->resumed.recs[idx];
		if (old->p.usage.state != KEPLER_STATE_RUNNING)
			old = NULL;
	}
	r->p.pid = kp->pid;
	r->p.start_time_ns = kp->start_time_ns;
	r->p.comm = kp->comm;
	r->p.exe = kp->id->exe;
	r->p.type = kp->id->type;
	r->p.container_id = kp->id->container.id;
	r->p.vm_id = kp->id->vm.id;
	r->p.cycles = kp->cycles;
	r->p.instructions = kp->instructions;
	r->p.cache_misses = kp->cache_misses;
	r->p.usage.state = kp->state;
	r->p.usage.cpu_time_ns = kp->cpu_time_ns;
	r->p.usage.cpu_time_delta_ns = in->first ? 0 : kp->cpu_time_delta_ns;
	for (unsigned z = 0; z < l->nzones; z++) {
		uint64_t d = shares[(size_t)z * in->nprocs + i];

		r->p.usage.zones[z].delta_uj = d;
		r->p.usage.zones[z].total_uj = (old ? old->p.usage.zones[z].total_uj : 0) + d;
	}
	if (kp->state == KEPLER_STATE_TERMINATED) {
		r->ended_mono_ns = old && old->p.usage.state == KEPLER_STATE_TERMINATED
			? old->ended_mono_ns : in->mono_ns;
		r->owned = own_strings(&r->p);
		if (!r->owned)
			return -ENOMEM;
	}
	return kepler_keymap_put(&cur->map, key, klen, (uint32_t)(cur->n - 1));
}

static bool keep_terminated(const struct kepler_ledger *l, uint64_t now, uint64_t ended,
			    uint64_t primary_total)
{
	if (l->params.max_terminated == 0)
		return false;
	if (now > ended && now - ended > l->params.terminated_ttl_ns)
		return false;
	return primary_total >= l->params.min_terminated_energy_uj;
}

static int by_primary_desc(const void *a, const void *b, void *ctx)
{
	const struct proc_rec *const *x = a, *const *y = b;
	int z = *(const int *)ctx;
	uint64_t ex = (*x)->p.usage.zones[z].total_uj, ey = (*y)->p.usage.zones[z].total_uj;

	return ex < ey ? 1 : ex > ey ? -1 : 0;
}

/* Terminated processes of the last snapshot, carried forward with delta 0. */
static int carry_processes(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	struct proc_gen *cur = &l->gen[l->cur], *prev = &l->gen[!l->cur];
	struct proc_rec **cand;
	size_t n = 0, keep;
	int z = l->primary;

	cand = malloc((prev->n ? prev->n : 1) * sizeof(*cand));
	if (!cand)
		return -ENOMEM;
	for (size_t i = 0; i < prev->n; i++) {
		struct proc_rec *o = &prev->recs[i];

		if (o->taken || o->p.usage.state != KEPLER_STATE_TERMINATED)
			continue;
		if (keep_terminated(l, in->mono_ns, o->ended_mono_ns,
				    l->nzones ? o->p.usage.zones[z].total_uj : 0))
			cand[n++] = o;
	}
	keep = n;
	if (l->params.max_terminated >= 0 && (size_t)l->params.max_terminated < n) {
		qsort_r(cand, n, sizeof(*cand), by_primary_desc, &z);
		keep = (size_t)l->params.max_terminated;
	}
	for (size_t k = 0; k < keep; k++) {
		struct proc_rec *o = cand[k], *r = gen_add(l, cur);
		struct kepler_energy *zones = r->p.usage.zones;
		char key[12];
		size_t klen = kepler_proc_key(o->p.pid, o->p.start_time_ns, key);

		r->p = o->p;
		r->p.usage.zones = zones;
		for (unsigned zz = 0; zz < l->nzones; zz++) {
			zones[zz].total_uj = o->p.usage.zones[zz].total_uj;
			zones[zz].delta_uj = 0;
		}
		r->p.usage.cpu_time_delta_ns = 0;
		if (in->hw_counters)
			r->p.cycles = r->p.instructions = r->p.cache_misses = 0;
		else
			r->p.cycles = r->p.instructions = r->p.cache_misses = KEPLER_COUNTER_UNAVAILABLE;
		r->ended_mono_ns = o->ended_mono_ns;
		r->owned = o->owned; /* moved */
		o->owned = NULL;
		if (kepler_keymap_put(&cur->map, key, klen, (uint32_t)(cur->n - 1)) < 0) {
			free(cand);
			return -ENOMEM;
		}
	}
	free(cand);
	return 0;
}

static int build_processes(struct kepler_ledger *l, const struct kepler_ledger_input *in,
			   uint64_t *active)
{
	struct proc_gen *prev, *cur;
	uint64_t sum = 0;
	size_t n = in->nprocs;
	int r;

	if (l->resumed.n && !l->resumed_until_ns)
		l->resumed_until_ns = in->mono_ns + RESUME_HORIZON_NS;
	if (l->resumed.n && in->mono_ns > l->resumed_until_ns)
		gen_reset(&l->resumed);
	l->cur = !l->cur;
	cur = &l->gen[l->cur];
	prev = &l->gen[!l->cur];
	gen_reset(cur);
	if (gen_reserve(cur, n + prev->n, l->nzones) < 0)
		return -ENOMEM;
	l->weights = grow_array(l->weights, &l->work_cap, n + 1, sizeof(uint64_t));
	if (!l->weights)
		return -ENOMEM;
	free(l->shares);
	free(l->scratch);
	l->shares = calloc((size_t)(l->nzones ? l->nzones : 1) * (n + 1), sizeof(uint64_t));
	l->scratch = calloc(2 * n + 1, sizeof(uint64_t));
	if (!l->shares || !l->scratch)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		l->weights[i] = in->first ? 0 : in->proc_at(in->ctx, i)->cpu_time_delta_ns;
		sum += l->weights[i];
	}
	account_node(l, in, sum, active);
	for (unsigned z = 0; z < l->nzones; z++)
		kepler_split(active[z], l->weights, n, &l->shares[(size_t)z * n], l->scratch);
	for (size_t i = 0; i < prev->n; i++)
		prev->recs[i].taken = false;
	for (size_t i = 0; i < n; i++) {
		r = add_measured(l, in, in->proc_at(in->ctx, i), l->shares, i);
		if (r < 0)
			return r;
	}
	return carry_processes(l, in);
}

/* ---- containers, VMs, pods ---- */

static void group_rec_free(struct group_rec *g)
{
	free(g->id);
	free(g->name);
	free(g->extra);
	free(g->pod_id);
}

static struct group_rec *group_get(struct kepler_ledger *l, enum group_kind k, const char *id,
				   const char *name, const char *extra, const char *pod_id)
{
	struct group_table *t = &l->groups[k];
	int64_t idx = kepler_keymap_get(&t->map, id, strlen(id));
	struct group_rec *g;

	if (idx >= 0)
		return &t->recs[idx];
	t->recs = grow_array(t->recs, &t->cap, t->n + 1, sizeof(*t->recs));
	if (!t->recs)
		return NULL;
	g = &t->recs[t->n];
	memset(g, 0, sizeof(*g));
	g->id = strdup(id);
	g->name = strdup(name ? name : "");
	g->extra = strdup(extra ? extra : "");
	g->pod_id = strdup(pod_id ? pod_id : "");
	g->fresh = true;
	if (!g->id || !g->name || !g->extra || !g->pod_id ||
	    kepler_keymap_put(&t->map, id, strlen(id), (uint32_t)t->n) < 0) {
		group_rec_free(g);
		return NULL;
	}
	t->n++;
	return g;
}

static void group_add(struct kepler_ledger *l, struct group_rec *g, const struct kepler_usage *u)
{
	if (!g->present) {
		g->present = true;
		g->running = false;
		g->cpu_delta = 0;
		memset(g->delta, 0, sizeof(g->delta));
	}
	for (unsigned z = 0; z < l->nzones; z++)
		g->delta[z] += u->zones[z].delta_uj;
	g->cpu_delta += u->cpu_time_delta_ns;
	/* a group seen for the first time starts from its members' lifetime CPU */
	if (g->fresh)
		g->cpu_total += u->cpu_time_ns - u->cpu_time_delta_ns;
	g->running |= u->state == KEPLER_STATE_RUNNING;
}

/* Totals, states and which groups of @k go into this snapshot. */
static void settle_groups(struct kepler_ledger *l, enum group_kind k, uint64_t now)
{
	struct group_table *t = &l->groups[k];
	size_t carried = 0;
	int z = l->primary;

	for (size_t i = 0; i < t->n; i++) {
		struct group_rec *g = &t->recs[i];

		g->fresh = false;
		if (g->present)
			g->dormant = false;
		if (g->dormant) {
			/* resumed, not seen yet: kept for its totals, not shown */
			g->emit = now < g->ended_mono_ns + RESUME_HORIZON_NS || !g->ended_mono_ns;
			if (!g->ended_mono_ns)
				g->ended_mono_ns = now;
			g->keep = g->emit;
			g->emit = false;
			continue;
		}
		if (!g->present) {
			memset(g->delta, 0, sizeof(g->delta));
			g->cpu_delta = 0;
			g->running = false;
		}
		for (unsigned zz = 0; zz < l->nzones; zz++)
			g->total[zz] += g->delta[zz];
		g->cpu_total += g->cpu_delta;
		if (g->running) {
			g->terminated = false;
		} else if (!g->terminated) {
			g->terminated = true;
			g->ended_mono_ns = now;
		}
		g->emit = g->present;
		g->keep = g->emit;
	}
	/* carried: absent and terminated, by energy, within ttl and threshold */
	for (;;) {
		struct group_rec *best = NULL;

		if (l->params.max_terminated >= 0 && carried >= (size_t)l->params.max_terminated)
			break;
		for (size_t i = 0; i < t->n; i++) {
			struct group_rec *g = &t->recs[i];

			if (g->emit || g->dormant || !g->terminated ||
			    !keep_terminated(l, now, g->ended_mono_ns, l->nzones ? g->total[z] : 0))
				continue;
			if (!best || g->total[z] > best->total[z])
				best = g;
		}
		if (!best)
			break;
		best->emit = best->keep = true;
		carried++;
	}
}

/* Forget groups that are not emitted; rebuild the key map. */
static void compact_groups(struct group_table *t)
{
	size_t n = 0;

	kepler_keymap_clear(&t->map);
	for (size_t i = 0; i < t->n; i++) {
		struct group_rec *g = &t->recs[i];

		if (!g->keep) {
			group_rec_free(g);
			continue;
		}
		g->present = false;
		t->recs[n] = *g;
		kepler_keymap_put(&t->map, g->id, strlen(g->id), (uint32_t)n);
		n++;
	}
	t->n = n;
}

static int build_groups(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	struct proc_gen *cur = &l->gen[l->cur];

	for (int k = 0; k < GROUP_KINDS; k++)
		compact_groups(&l->groups[k]);
	for (size_t i = 0; i < cur->n; i++) {
		const struct proc_rec *r = &cur->recs[i];
		const struct kepler_proc *kp = NULL;
		struct group_rec *g;

		if (i < in->nprocs)
			kp = in->proc_at(in->ctx, i);
		if (r->p.container_id[0]) {
			g = group_get(l, GROUP_CONTAINER, r->p.container_id, "",
				      kp ? kp->id->container.runtime : "", kp ? kp->id->container.pod_uid : "");
			if (!g)
				return -ENOMEM;
			group_add(l, g, &r->p.usage);
		}
		if (r->p.vm_id[0]) {
			g = group_get(l, GROUP_VM, r->p.vm_id, kp ? kp->id->vm.name : "",
				      kp ? kp->id->vm.hypervisor : "", "");
			if (!g)
				return -ENOMEM;
			group_add(l, g, &r->p.usage);
		}
	}
	settle_groups(l, GROUP_CONTAINER, in->mono_ns);
	settle_groups(l, GROUP_VM, in->mono_ns);
	/* pods: sums of the containers of this snapshot */
	for (size_t i = 0; i < l->groups[GROUP_CONTAINER].n; i++) {
		struct group_rec *c = &l->groups[GROUP_CONTAINER].recs[i];
		struct kepler_usage u;
		struct kepler_energy e[KEPLER_MAX_ZONES];
		struct group_rec *g;

		if (!c->emit || !c->pod_id[0])
			continue; /* (dormant containers are not emitted) */
		for (unsigned z = 0; z < l->nzones; z++)
			e[z] = (struct kepler_energy){ .total_uj = c->total[z], .delta_uj = c->delta[z] };
		u = (struct kepler_usage){ .state = c->terminated ? KEPLER_STATE_TERMINATED
								  : KEPLER_STATE_RUNNING,
					   .cpu_time_ns = c->cpu_total, .cpu_time_delta_ns = c->cpu_delta,
					   .zones = e };
		g = group_get(l, GROUP_POD, c->pod_id, "", "", "");
		if (!g)
			return -ENOMEM;
		group_add(l, g, &u);
	}
	settle_groups(l, GROUP_POD, in->mono_ns);
	return 0;
}

/* ---- the snapshot ---- */

static size_t count_emitted(const struct group_table *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += t->recs[i].emit;
	return n;
}

static void fill_usage(struct kepler_ledger *l, const struct group_rec *g, struct kepler_usage *u,
		       struct kepler_energy *zones)
{
	u->state = g->terminated ? KEPLER_STATE_TERMINATED : KEPLER_STATE_RUNNING;
	u->cpu_time_ns = g->cpu_total;
	u->cpu_time_delta_ns = g->cpu_delta;
	u->zones = zones;
	for (unsigned z = 0; z < l->nzones; z++)
		zones[z] = (struct kepler_energy){ .total_uj = g->total[z], .delta_uj = g->delta[z] };
}

static int emit_groups(struct kepler_ledger *l)
{
	size_t nc = count_emitted(&l->groups[GROUP_CONTAINER]);
	size_t nv = count_emitted(&l->groups[GROUP_VM]);
	size_t np = count_emitted(&l->groups[GROUP_POD]);
	size_t used = 0;

	l->containers = grow_array(l->containers, &l->containers_cap, nc + 1, sizeof(*l->containers));
	l->vms = grow_array(l->vms, &l->vms_cap, nv + 1, sizeof(*l->vms));
	l->pods = grow_array(l->pods, &l->pods_cap, np + 1, sizeof(*l->pods));
	l->group_pool = grow_array(l->group_pool, &l->group_pool_cap,
				   (nc + nv + np + 1) * (l->nzones ? l->nzones : 1), sizeof(*l->group_pool));
	if (!l->containers || !l->vms || !l->pods || !l->group_pool)
		return -ENOMEM;
	l->snap.ncontainers = l->snap.nvms = l->snap.npods = 0;
	for (int k = 0; k < GROUP_KINDS; k++) {
		const struct group_table *t = &l->groups[k];

		for (size_t i = 0; i < t->n; i++) {
			const struct group_rec *g = &t->recs[i];
			struct kepler_energy *zones = &l->group_pool[used];

			if (!g->emit)
				continue;
			used += l->nzones;
			if (k == GROUP_CONTAINER) {
				struct kepler_container *c = &l->containers[l->snap.ncontainers++];

				*c = (struct kepler_container){ .id = g->id, .name = g->name,
								.runtime = g->extra, .pod_id = g->pod_id };
				fill_usage(l, g, &c->usage, zones);
			} else if (k == GROUP_VM) {
				struct kepler_vm *v = &l->vms[l->snap.nvms++];

				*v = (struct kepler_vm){ .id = g->id, .name = g->name, .hypervisor = g->extra };
				fill_usage(l, g, &v->usage, zones);
			} else {
				struct kepler_pod *p = &l->pods[l->snap.npods++];

				*p = (struct kepler_pod){ .id = g->id, .name = g->name, .ns = g->extra };
				fill_usage(l, g, &p->usage, zones);
			}
		}
	}
	return 0;
}

static void fill_header(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	struct kepler_snapshot *s = &l->snap;
	struct proc_gen *cur = &l->gen[l->cur];

	s->seq = 0;
	s->wall_ns = in->wall_ns;
	s->mono_ns = in->mono_ns;
	s->interval_ns = in->first ? 0 : in->interval_ns;
	s->flags = (in->first ? KEPLER_SNAP_FIRST : 0) | (in->hw_counters ? KEPLER_SNAP_HW_COUNTERS : 0);
	s->cpu_usage_ratio = in->first ? 0 : in->usage_ratio;
	s->node_cpu_busy_delta_ns = in->first ? 0 : in->busy_delta_ns;
	s->node_cpu_total_delta_ns = in->first ? 0 : in->total_delta_ns;
	s->cpu_count = in->cpu_count;
	s->skipped_entries = in->skipped;
	s->lost_entries = in->lost;
	s->nzones = l->nzones;
	for (unsigned z = 0; z < l->nzones; z++) {
		s->zones[z] = (struct kepler_zone){
			.name = in->zones[z].name, .path = in->zones[z].path, .source = in->zones[z].source,
			.energy = l->node[z][0], .active = l->node[z][1], .idle = l->node[z][2],
		};
	}
	s->nprocesses = cur->n;
	/* the records are contiguous structs with the process first: copy them out */
	s->processes = realloc(s->processes, (cur->n + 1) * sizeof(*s->processes));
	if (s->processes)
		for (size_t i = 0; i < cur->n; i++)
			s->processes[i] = cur->recs[i].p;
}

int kepler_ledger_build(struct kepler_ledger *l, const struct kepler_ledger_input *in,
			struct kepler_snapshot **ret, struct kepler_error *err)
{
	uint64_t active[KEPLER_MAX_ZONES];
	int r;

	r = setup_zones(l, in, err);
	if (r < 0)
		return r;
	r = build_processes(l, in, active);
	if (r == 0)
		r = build_groups(l, in);
	if (r == 0)
		r = emit_groups(l);
	if (r < 0)
		return kepler_error_set(err, r, "out of memory building the snapshot");
	fill_header(l, in);
	if (!l->snap.processes)
		return kepler_error_set(err, -ENOMEM, "out of memory building the snapshot");
	l->snap.containers = l->containers;
	l->snap.vms = l->vms;
	l->snap.pods = l->pods;
	*ret = &l->snap;
	return 0;
}

/* ---- resume ---- */

static void resume_processes(struct kepler_ledger *l, const struct kepler_snapshot *s)
{
	struct proc_gen *prev = &l->resumed;

	gen_reset(prev);
	if (gen_reserve(prev, s->nprocesses, (unsigned)s->nzones) < 0)
		return;
	l->nzones = (unsigned)s->nzones; /* for gen_add's pool stride; reset below */
	for (size_t i = 0; i < s->nprocesses; i++) {
		const struct kepler_process *sp = &s->processes[i];
		struct proc_rec *r = gen_add(l, prev);
		struct kepler_energy *zones = r->p.usage.zones;
		char key[12];
		size_t klen = kepler_proc_key(sp->pid, sp->start_time_ns, key);

		r->p = *sp;
		r->p.usage.zones = zones;
		memcpy(zones, sp->usage.zones, s->nzones * sizeof(*zones));
		r->owned = own_strings(&r->p);
		if (!r->owned) {
			prev->n--;
			break;
		}
		kepler_keymap_put(&prev->map, key, klen, (uint32_t)(prev->n - 1));
	}
	l->nzones = 0;
}

static void resume_groups(struct kepler_ledger *l, enum group_kind k, size_t n,
			  const struct kepler_usage *(*usage_at)(const struct kepler_snapshot *, size_t,
								 const char **, const char **,
								 const char **, const char **),
			  const struct kepler_snapshot *s)
{
	for (size_t i = 0; i < n; i++) {
		const char *id, *name, *extra, *pod;
		const struct kepler_usage *u = usage_at(s, i, &id, &name, &extra, &pod);
		struct group_rec *g;

		if (u->state != KEPLER_STATE_RUNNING)
			continue;
		g = group_get(l, k, id, name, extra, pod);
		if (!g)
			return;
		for (size_t z = 0; z < s->nzones; z++)
			g->total[z] = u->zones[z].total_uj;
		g->cpu_total = u->cpu_time_ns;
		g->fresh = false;
		g->dormant = g->keep = true;
	}
}

static const struct kepler_usage *container_at(const struct kepler_snapshot *s, size_t i,
					       const char **id, const char **name,
					       const char **extra, const char **pod)
{
	*id = s->containers[i].id;
	*name = s->containers[i].name;
	*extra = s->containers[i].runtime;
	*pod = s->containers[i].pod_id;
	return &s->containers[i].usage;
}

static const struct kepler_usage *vm_at(const struct kepler_snapshot *s, size_t i, const char **id,
					const char **name, const char **extra, const char **pod)
{
	*id = s->vms[i].id;
	*name = s->vms[i].name;
	*extra = s->vms[i].hypervisor;
	*pod = "";
	return &s->vms[i].usage;
}

static const struct kepler_usage *pod_at(const struct kepler_snapshot *s, size_t i, const char **id,
					 const char **name, const char **extra, const char **pod)
{
	*id = s->pods[i].id;
	*name = s->pods[i].name;
	*extra = s->pods[i].ns;
	*pod = "";
	return &s->pods[i].usage;
}

void kepler_ledger_resume(struct kepler_ledger *l, const struct kepler_snapshot *prev)
{
	l->nresume = (unsigned)prev->nzones;
	for (size_t z = 0; z < prev->nzones; z++) {
		snprintf(l->resume_names[z], sizeof(l->resume_names[z]), "%s", prev->zones[z].name);
		l->resume_base[z][0] = prev->zones[z].energy.total_uj;
		l->resume_base[z][1] = prev->zones[z].active.total_uj;
		l->resume_base[z][2] = prev->zones[z].idle.total_uj;
	}
	resume_processes(l, prev);
	resume_groups(l, GROUP_CONTAINER, prev->ncontainers, container_at, prev);
	resume_groups(l, GROUP_VM, prev->nvms, vm_at, prev);
	resume_groups(l, GROUP_POD, prev->npods, pod_at, prev);
}

void kepler_ledger_free(struct kepler_ledger *l)
{
	if (!l)
		return;
	for (int g = 0; g < 2; g++) {
		gen_reset(&l->gen[g]);
		free(l->gen[g].recs);
		free(l->gen[g].pool);
		kepler_keymap_free(&l->gen[g].map);
	}
	gen_reset(&l->resumed);
	free(l->resumed.recs);
	free(l->resumed.pool);
	kepler_keymap_free(&l->resumed.map);
	for (int k = 0; k < GROUP_KINDS; k++) {
		for (size_t i = 0; i < l->groups[k].n; i++)
			group_rec_free(&l->groups[k].recs[i]);
		free(l->groups[k].recs);
		kepler_keymap_free(&l->groups[k].map);
	}
	free(l->snap.processes);
	free(l->containers);
	free(l->vms);
	free(l->pods);
	free(l->group_pool);
	free(l->weights);
	free(l->shares);
	free(l->scratch);
	free(l);
}
