// SPDX-License-Identifier: Apache-2.0
/*
 * The ledger: one interval's measurements in, one snapshot out, with the
 * cumulative totals kept in between (see ledger.h for the rules, and
 * ledger_internal.h for where each part lives).
 *
 * A build has two phases. Reserve makes every allocation the interval needs
 * (records, maps, scratch, owned strings, every group it may touch, the
 * snapshot's arrays); when one fails, what was reserved is released and no
 * total has changed. Apply then computes the interval and cannot fail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger_internal.h"
#include "split.h"

int kepler_ledger_new(const struct kepler_ledger_params *p, struct kepler_ledger **ret,
		      struct kepler_error *err)
{
	struct kepler_ledger *l = calloc(1, sizeof(*l));

	if (!l)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	l->params = *p;
	l->idle = p->idle == KEPLER_IDLE_CPU || p->idle == KEPLER_IDLE_SIZE;
	for (int k = KEPLER_KIND_PROCESS; k < KEPLER_KIND_COUNT; k++) {
		l->tombs[k] = calloc(LEDGER_TOMBSTONES, sizeof(*l->tombs[k]));
		if (!l->tombs[k]) {
			kepler_ledger_free(l);
			return kepler_error_set(err, -ENOMEM, "out of memory");
		}
	}
	*ret = l;
	return 0;
}

/* The first build fixes the zones (and places the resumed totals in their order). */
static int setup_zones(struct kepler_ledger *l, const struct kepler_ledger_input *in,
		       struct kepler_error *err)
{
	char names[KEPLER_MAX_ZONES][64];
	const char *ptrs[KEPLER_MAX_ZONES];

	if (l->nzones || !in->nzones) {
		if (in->nzones != l->nzones)
			return kepler_error_set(err, -EINVAL, "the meter's zones changed");
		return 0;
	}
	if (in->nzones > KEPLER_MAX_ZONES)
		return kepler_error_set(err, -EINVAL, "more than %d zones", KEPLER_MAX_ZONES);
	for (unsigned z = 0; z < in->nzones; z++) {
		snprintf(names[z], sizeof(names[z]), "%s", in->zones[z].name);
		ptrs[z] = names[z];
	}
	if (l->nresume && ledger_remap_resumed(l, (const char(*)[64])names, in->nzones) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	l->nzones = in->nzones;
	l->nslots = l->nzones * (l->idle ? 2 : 1);
	memcpy(l->zone_names, names, sizeof(names));
	for (unsigned z = 0; z < l->nzones; z++) {
		int r = ledger_resumed_index(l, names[z]);

		for (int k = 0; k < NODE_TOTALS && r >= 0; k++)
			l->node[z][k].total_uj = l->resume_base[r][k];
	}
	l->primary = kepler_primary_zone_of(ptrs, l->nzones);
	return 0;
}

void ledger_account_node(struct kepler_ledger *l, const struct kepler_ledger_input *in, uint64_t *active)
{
	for (unsigned z = 0; z < l->nzones; z++) {
		uint64_t d = in->first ? 0 : in->zones[z].delta_uj;
		const struct kepler_baseline *b = &in->zones[z].baseline;
		uint64_t a = 0;

		if (in->zones[z].device)
			a = in->first ? 0 : in->zones[z].active_uj < d ? in->zones[z].active_uj : d;
		else if (b->method != KEPLER_BASELINE_NONE && b->method != KEPLER_BASELINE_UNFITTED)
			a = kepler_active_above_uj(d, b->idle_uw, in->interval_ns);
		else
			a = kepler_active_uj(d, in->busy_delta_ns, in->total_delta_ns);

		active[z] = a;
		l->node[z][0].delta_uj = d;
		l->node[z][1].delta_uj = a;
		l->node[z][2].delta_uj = d - a;
		l->node[z][NODE_UNATTRIBUTED].delta_uj = 0;
		for (int k = 0; k < NODE_UNATTRIBUTED; k++)
			l->node[z][k].total_uj += l->node[z][k].delta_uj;
	}
}

void ledger_account_unattributed(struct kepler_ledger *l, unsigned z, uint64_t uj)
{
	l->node[z][NODE_UNATTRIBUTED].delta_uj += uj;
	l->node[z][NODE_UNATTRIBUTED].total_uj += uj;
}

void ledger_point_usage_n(struct kepler_usage *u, struct kepler_energy *slots, unsigned nzones, bool idle)
{
	u->zones = slots;
	u->idle = idle ? slots + nzones : NULL;
}

void ledger_point_usage(const struct kepler_ledger *l, struct kepler_usage *u, struct kepler_energy *slots)
{
	ledger_point_usage_n(u, slots, l->nzones, l->idle);
}

static void fill_header(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	struct kepler_snapshot *s = &l->snap;
	const struct proc_gen *cur = &l->gen[l->cur];

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
	s->idle_policy = l->idle ? l->params.idle : KEPLER_IDLE_NONE;
	s->nzones = l->nzones;
	for (unsigned z = 0; z < l->nzones; z++)
		s->zones[z] = (struct kepler_zone){
			.name = in->zones[z].name,
			.path = in->zones[z].path,
			.source = in->zones[z].source,
			.energy = l->node[z][0],
			.active = l->node[z][1],
			.idle = l->node[z][2],
			.baseline = in->zones[z].baseline,
			.meter_resets = in->zones[z].meter_resets,
			.meter_wraps = in->zones[z].meter_wraps,
			.unattributed = l->node[z][NODE_UNATTRIBUTED],
			.device = in->zones[z].device ? in->zones[z].info
						      : (struct kepler_device){ 0, "", "", "" },
		};
	s->nprocesses = cur->n; /* (copied out by apply_records()) */
}

/*
 * Each record of this build, once: into its groups and its fold, then
 * copied out into the snapshot (room reserved; the records are contiguous
 * structs with the process first). One pass where there were three, each
 * reading 1.5 MB of records at 10,000 processes.
 */
static void apply_records(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	struct proc_gen *cur = &l->gen[l->cur];

	ledger_begin_folds(l);
	for (size_t i = 0; i < cur->n; i++) {
		ledger_group_process(l, in, i);
		ledger_fold_process(l, &cur->recs[i], in->mono_ns);
		l->snap.processes[i] = cur->recs[i].p;
	}
	ledger_settle_groups(l, in);
	ledger_settle_folds(l);
}

static int reserve(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	int r = ledger_reserve_processes(l, in);

	if (r < 0)
		return r;
	r = ledger_reserve_idle(l, in);
	if (r == 0)
		r = ledger_reserve_groups(l, in);
	if (r < 0)
		ledger_release_processes(l, in->nprocs);
	return r;
}

int kepler_ledger_build(struct kepler_ledger *l, const struct kepler_ledger_input *in,
			struct kepler_snapshot **ret, struct kepler_error *err)
{
	int r = setup_zones(l, in, err);

	if (r < 0)
		return r;
	if (reserve(l, in) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory building the snapshot");
	ledger_apply_processes(l, in);
	apply_records(l, in);
	ledger_emit_groups(l);
	ledger_emit_folds(l);
	fill_header(l, in);
	ledger_compact_groups(l);
	ledger_compact_folds(l);
	*ret = &l->snap;
	return 0;
}

void kepler_ledger_free(struct kepler_ledger *l)
{
	if (!l)
		return;
	ledger_gen_free(&l->gen[0]);
	ledger_gen_free(&l->gen[1]);
	ledger_gen_free(&l->resumed);
	ledger_groups_free(l);
	free(l->owned); /* every block in it was moved or released */
	free(l->snap.processes);
	free(l->containers);
	free(l->vms);
	free(l->pods);
	free(l->group_pool);
	free(l->weights);
	free(l->shares);
	free(l->scratch);
	free(l->idle_shares);
	free(l->unit_sums);
	free(l->unit_tmp);
	free(l->cand);
	for (int k = 0; k < KEPLER_KIND_COUNT; k++)
		free(l->tombs[k]);
	free(l);
}
