// SPDX-License-Identifier: Apache-2.0
/*
 * Terminated workloads carried forward: a process, container, VM or pod
 * that ended stays in the snapshots after the one it ended in, with delta 0
 * and its final totals, for terminated_ttl, at most max_terminated of each
 * kind (the largest by energy in the primary zone), none below
 * min_terminated_energy.
 */
#include <stdlib.h>

#include "ledger_internal.h"

bool ledger_keep_terminated(const struct kepler_ledger *l, uint64_t now, uint64_t ended,
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
	size_t z = *(const size_t *)ctx;
	uint64_t ex = (*x)->p.usage.zones[z].total_uj, ey = (*y)->p.usage.zones[z].total_uj;

	return ex < ey ? 1 : ex > ey ? -1 : 0;
}

/* A copy of @o in the current generation, with delta 0; its strings move with it. */
static void carry_one(struct kepler_ledger *l, const struct kepler_ledger_input *in, struct proc_rec *o)
{
	struct proc_gen *cur = &l->gen[l->cur];
	struct proc_rec *r = ledger_gen_add(cur, l->nslots);
	struct kepler_energy *slots = r->p.usage.zones;

	r->p = o->p;
	ledger_point_usage(l, &r->p.usage, slots);
	for (unsigned z = 0; z < l->nzones; z++)
		r->p.usage.zones[z] = (struct kepler_energy){ .total_uj = o->p.usage.zones[z].total_uj };
	for (unsigned z = 0; l->idle && o->p.usage.idle && z < l->nzones; z++)
		r->p.usage.idle[z] = (struct kepler_energy){ .total_uj = o->p.usage.idle[z].total_uj };
	r->p.usage.cpu_time_delta_ns = 0;
	r->p.cycles = r->p.instructions = r->p.cache_misses =
		in->hw_counters ? 0 : KEPLER_COUNTER_UNAVAILABLE;
	r->ended_mono_ns = o->ended_mono_ns;
	r->dormant = o->dormant;
	ledger_gen_own(cur, r, o->owned); /* moved */
	o->owned = NULL;
	ledger_gen_index_last(cur); /* room reserved */
}

/*
 * Resumed processes alive at start that the informer has not reported
 * since: from the resumed generation at first, then from the previous one
 * (ownership moves with each carry), until reported or past the horizon.
 */
static void carry_dormant(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	struct proc_gen *gens[] = { &l->resumed, &l->gen[!l->cur] };

	if (!l->resumed_until_ns || in->mono_ns > l->resumed_until_ns)
		return;
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < gens[k]->nowners; i++) {
			struct proc_rec *o = &gens[k]->recs[gens[k]->owners[i]];

			if (o->dormant && !o->taken && o->owned)
				carry_one(l, in, o);
		}
}

void ledger_carry_processes(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	struct proc_gen *prev = &l->gen[!l->cur];
	size_t n = 0, keep, z = l->primary;

	/* the terminated are among the records that own their strings: only those are read */
	for (size_t i = 0; i < prev->nowners; i++) {
		struct proc_rec *o = &prev->recs[prev->owners[i]];

		if (o->taken || !o->owned || o->dormant || o->p.usage.state != KEPLER_STATE_TERMINATED)
			continue;
		if (ledger_keep_terminated(l, in->mono_ns, o->ended_mono_ns,
					   l->nzones ? o->p.usage.zones[z].total_uj : 0))
			l->cand[n++] = o;
	}
	keep = n;
	if (l->params.max_terminated >= 0 && (size_t)l->params.max_terminated < n) {
		qsort_r(l->cand, n, sizeof(*l->cand), by_primary_desc, &z);
		keep = (size_t)l->params.max_terminated;
	}
	for (size_t k = 0; k < keep; k++)
		carry_one(l, in, l->cand[k]);
	carry_dormant(l, in);
}

void ledger_carry_groups(struct kepler_ledger *l, struct group_table *t, uint64_t now)
{
	size_t carried = 0, z = l->primary;

	for (;;) {
		struct group_rec *best = NULL;

		if (l->params.max_terminated >= 0 && carried >= (size_t)l->params.max_terminated)
			break;
		for (size_t i = 0; i < t->n; i++) {
			struct group_rec *g = &t->recs[i];

			if (g->emit || g->dormant || !g->terminated || g->fresh ||
			    !ledger_keep_terminated(l, now, g->ended_mono_ns, l->nzones ? g->total[z] : 0))
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
