// SPDX-License-Identifier: Apache-2.0
/*
 * Resume: a restarted collector continues the totals of the newest
 * snapshot of the same boot. The node's bases wait, by zone name, for the
 * first build; processes wait in the resumed generation (for up to
 * RESUME_HORIZON) until the informer reports them, and those still alive
 * are carried meanwhile (carry.c), so that they stay in the store;
 * containers, VMs and pods wait in their tables as dormant groups, and
 * show again through their carried processes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger_internal.h"

int ledger_resumed_index(const struct kepler_ledger *l, const char *zone)
{
	for (unsigned r = 0; r < l->nresume; r++)
		if (!strcmp(l->resume_names[r], zone))
			return (int)r;
	return -1;
}

/* @total, in the resume layout, into this ledger's slots by @map. */
static void remap_totals(uint64_t *total, const int *map, unsigned nslots)
{
	uint64_t t[LEDGER_MAX_SLOTS] = { 0 };

	for (unsigned z = 0; z < nslots; z++)
		if (map[z] >= 0)
			t[z] = total[map[z]];
	memcpy(total, t, sizeof(t));
}

/*
 * The resumed totals were in the old snapshot's zone order, its active
 * energies then its idle ones (nresume each): put them in @names' order,
 * in this ledger's slots (the idle ones only under an idle policy).
 */
int ledger_remap_resumed(struct kepler_ledger *l, const char (*names)[64], unsigned nzones)
{
	struct proc_gen *g = &l->resumed;
	unsigned nslots = nzones * (l->idle ? 2 : 1), old_nz = l->nresume;
	size_t ns = nslots ? nslots : 1, cap = g->n ? g->n * ns : 1;
	struct kepler_energy *pool = calloc(cap, sizeof(*pool));
	int map[LEDGER_MAX_SLOTS];

	if (!pool)
		return -ENOMEM;
	for (unsigned z = 0; z < nzones; z++) {
		map[z] = ledger_resumed_index(l, names[z]);
		if (l->idle)
			map[nzones + z] = map[z] >= 0 ? (int)old_nz + map[z] : -1;
	}
	for (size_t i = 0; i < g->n; i++) {
		struct kepler_energy *old = g->recs[i].p.usage.zones, *nw = &pool[i * ns];

		for (unsigned z = 0; z < nslots; z++)
			if (map[z] >= 0)
				nw[z] = old[map[z]];
		ledger_point_usage_n(&g->recs[i].p.usage, nw, nzones, l->idle);
	}
	free(g->pool);
	g->pool = pool;
	g->pool_cap = cap;
	for (int k = KEPLER_KIND_PROCESS; k < KEPLER_KIND_COUNT; k++) {
		for (size_t i = 0; k != KEPLER_KIND_PROCESS && i < l->groups[k].n; i++)
			remap_totals(l->groups[k].recs[i].total, map, nslots);
		for (size_t i = 0; k == KEPLER_KIND_CONTAINER && i < l->folds.n; i++)
			remap_totals(l->folds.recs[i].total, map, nslots);
		for (size_t i = 0; l->tombs[k] && i < LEDGER_TOMBSTONES;
		     i++) /* resumed or loaded (memory.c) */
			if (l->tombs[k][i].id[0])
				remap_totals(l->tombs[k][i].total, map, nslots);
	}
	return 0;
}

static int resume_processes(struct kepler_ledger *l, const struct kepler_snapshot *s,
			    kepler_ledger_alive_fn alive, void *arg)
{
	struct proc_gen *g = &l->resumed;
	unsigned nz = l->nresume;

	/* two slots a zone, active then idle (0 from a snapshot without): remapped at the first build */
	if (ledger_gen_reserve(g, s->nprocesses, 2 * nz) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < s->nprocesses; i++) {
		const struct kepler_process *sp = &s->processes[i];
		struct proc_rec *r = ledger_gen_add(g, 2 * nz);
		struct kepler_energy *slots = r->p.usage.zones;
		char *block;

		r->p = *sp;
		ledger_point_usage_n(&r->p.usage, slots, nz, true);
		memcpy(slots, sp->usage.zones, nz * sizeof(*slots));
		if (sp->usage.idle)
			memcpy(slots + nz, sp->usage.idle, nz * sizeof(*slots));
		block = ledger_own_strings(&r->p);
		if (!block) {
			g->n--;
			return -ENOMEM;
		}
		ledger_gen_own(g, r, block);
		ledger_gen_index_last(g); /* room reserved */
		r->dormant = alive && sp->usage.state == KEPLER_STATE_RUNNING &&
			     alive(arg, sp->pid, sp->start_time_ns);
	}
	return 0;
}

static int resume_groups(struct kepler_ledger *l, enum kepler_kind k, const struct kepler_snapshot *s)
{
	for (size_t i = 0; i < kepler_workload_count(s, k); i++) {
		struct kepler_workload w = kepler_workload_at(s, k, i);
		struct group_rec *g;

		g = ledger_group_get(l, k, w.id, w.name, w.detail, w.parent);
		if (!g)
			return -ENOMEM;
		for (size_t z = 0; z < l->nresume; z++) {
			g->total[z] = w.usage->zones[z].total_uj;
			g->total[l->nresume + z] = w.usage->idle ? w.usage->idle[z].total_uj : 0;
		}
		g->cpu_total = w.usage->cpu_time_ns;
		if (k == KEPLER_KIND_POD) { /* its owner and labels until the namer says again */
			const struct kepler_pod *p = &s->pods[i];

			free(g->owner_kind), free(g->owner_name), free(g->labels);
			g->owner_kind = strdup(p->owner_kind ? p->owner_kind : "");
			g->owner_name = strdup(p->owner_name ? p->owner_name : "");
			g->labels = strdup(p->labels ? p->labels : "");
			if (!g->owner_kind || !g->owner_name || !g->labels)
				return -ENOMEM;
		}
		g->fresh = false;
		g->dormant = true;
		/* an ended one becomes a tombstone (ledger_compact_groups()): back under its id, it goes on */
		g->keep = w.usage->state == KEPLER_STATE_RUNNING;
	}
	return 0;
}

/* Whether a resumed process still alive names @id as its container (or VM). */
static bool has_live_member(const struct kepler_ledger *l, enum kepler_kind k, const char *id)
{
	for (size_t i = 0; i < l->resumed.n; i++) {
		const struct proc_rec *r = &l->resumed.recs[i];

		if (r->dormant && !strcmp(k == KEPLER_KIND_VM ? r->p.vm_id : r->p.container_id, id))
			return true;
	}
	return false;
}

/*
 * With liveness known: a container or VM none of whose processes is still
 * alive ended while the collector was down, and so did a pod none of whose
 * containers is kept; they become tombstones now, which the store keeps
 * (memory.c), rather than dormant groups a second restart would forget.
 */
static void bury_ended(struct kepler_ledger *l)
{
	struct group_table *pods = &l->groups[KEPLER_KIND_POD], *cts = &l->groups[KEPLER_KIND_CONTAINER];

	for (int k = KEPLER_KIND_CONTAINER; k < KEPLER_KIND_COUNT; k++) {
		if (k == KEPLER_KIND_POD)
			continue;
		for (size_t i = 0; i < l->groups[k].n; i++) {
			struct group_rec *g = &l->groups[k].recs[i];

			g->keep = g->keep && has_live_member(l, (enum kepler_kind)k, g->id);
		}
	}
	for (size_t i = 0; i < pods->n; i++) {
		bool kept = false;

		for (size_t j = 0; j < cts->n && !kept; j++)
			kept = cts->recs[j].keep && !strcmp(cts->recs[j].pod_id, pods->recs[i].id);
		pods->recs[i].keep = pods->recs[i].keep && kept;
	}
}

int kepler_ledger_resume(struct kepler_ledger *l, const struct kepler_snapshot *prev,
			 kepler_ledger_alive_fn alive, void *arg)
{
	int r = 0;

	l->nresume = (unsigned)(prev->nzones < KEPLER_MAX_ZONES ? prev->nzones : KEPLER_MAX_ZONES);
	for (size_t z = 0; z < l->nresume; z++) {
		snprintf(l->resume_names[z], sizeof(l->resume_names[z]), "%s", prev->zones[z].name);
		l->resume_base[z][0] = prev->zones[z].energy.total_uj;
		l->resume_base[z][1] = prev->zones[z].active.total_uj;
		l->resume_base[z][2] = prev->zones[z].idle.total_uj;
		l->resume_base[z][NODE_UNATTRIBUTED] = prev->zones[z].unattributed.total_uj;
	}
	r = resume_processes(l, prev, alive, arg);
	for (int k = KEPLER_KIND_CONTAINER; k < KEPLER_KIND_COUNT && r == 0; k++)
		r = resume_groups(l, (enum kepler_kind)k, prev);
	if (r == 0)
		r = ledger_resume_folds(l, prev);
	if (r < 0) { /* nothing resumed rather than part of it */
		ledger_gen_reset(&l->resumed);
		ledger_groups_truncate(&l->folds, 0);
		for (int k = 0; k < KEPLER_KIND_COUNT; k++)
			ledger_groups_truncate(&l->groups[k], 0);
		l->nresume = 0;
		return r;
	}
	if (alive)
		bury_ended(l);
	ledger_compact_groups(l); /* the ended ones to tombstones */
	return 0;
}
