// SPDX-License-Identifier: Apache-2.0
/*
 * Folds: the short processes of a container (else of a VM, else of the
 * node) summed. A process with less energy in the primary zone than
 * min_terminated_energy that ended in this interval (so that it is not
 * carried), or that was seen for the first time in it (one that began
 * just before the snapshot and ends just after), is flagged
 * KEPLER_PROCESS_FOLDED, and this interval's deltas of it are added to its
 * fold, whose totals are the sums of every such delta since the fold
 * began, and which counts it once. One that lives on is its own from its
 * second interval: each interval of every process is in exactly one of
 * them. A reader can then show one series per fold where
 * thousands of processes come and go, and per zone, in every snapshot,
 * Σ unfolded processes + Σ folds == Σ processes.
 *
 * A fold lives as long as the group it belongs to (the node's as long as
 * the collector), and is in the snapshots its group is in. A fold
 * forgotten with its group leaves a tombstone (as the group does: the
 * store's memory keeps it), and goes on from it if the group comes back
 * under the same id, after a restart too: its counters never go down.
 * Folds are resumed after a restart as their groups are (resume.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/array.h"
#include "ledger_internal.h"

/* Keys: a container's id; "\1" and a VM's id; "\2" for the node. At most KEPLER_KEY_MAX bytes. */
static size_t fold_key(const char *container_id, const char *vm_id, char *key)
{
	size_t n;

	if (container_id[0]) {
		n = strnlen(container_id, KEPLER_KEY_MAX);
		memcpy(key, container_id, n);
		return n;
	}
	if (vm_id[0]) {
		key[0] = '\1';
		n = strnlen(vm_id, KEPLER_KEY_MAX - 1);
		memcpy(key + 1, vm_id, n);
		return n + 1;
	}
	key[0] = '\2';
	return 1;
}

static struct group_rec *fold_find(struct kepler_ledger *l, const char *container_id, const char *vm_id)
{
	char key[KEPLER_KEY_MAX];
	size_t n = fold_key(container_id, vm_id, key);
	int64_t i = kepler_keymap_get(&l->folds.map, key, n);

	return i >= 0 ? &l->folds.recs[i] : NULL;
}

/* A fold's tombstone id: "c:" and its container's id, "v:" and its VM's; "" for the node's (none). */
static const char *tomb_id(const char *container_id, const char *vm_id, char *buf, size_t size)
{
	if (!container_id[0] && !vm_id[0])
		return "";
	snprintf(buf, size, "%s:%s", container_id[0] ? "c" : "v", container_id[0] ? container_id : vm_id);
	return buf;
}

struct group_rec *ledger_fold_get(struct kepler_ledger *l, const char *container_id, const char *vm_id)
{
	struct group_rec *g = fold_find(l, container_id, vm_id);
	char key[KEPLER_KEY_MAX], tid[KEPLER_KEY_MAX + 3];
	const struct tombstone *dead;
	const char *id;

	if (g)
		return g;
	g = ledger_table_add(&l->folds, key, fold_key(container_id, vm_id, key), container_id, vm_id, "");
	id = tomb_id(container_id, vm_id, tid, sizeof(tid));
	if (g && id[0] && (dead = ledger_tomb_find(l, KEPLER_KIND_PROCESS, id))) { /* back: it goes on */
		memcpy(g->total, dead->total, sizeof(g->total));
		g->cpu_total = dead->cpu_total;
		g->count_total = dead->count_total;
	}
	return g;
}

int ledger_reserve_folds(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	size_t before = l->folds.n, n;
	const char *cid = NULL, *vm = NULL;

	for (size_t i = 0; i < in->nprocs; i++) { /* every process may be short: new, or ended */
		const struct kepler_ledger_proc *p = &in->procs[i];

		/* as the one before: neighbours often share a container (whose id is then one string) */
		if (cid && (cid == p->container_id || !strcmp(cid, p->container_id)) &&
		    (vm == p->vm_id || !strcmp(vm, p->vm_id)))
			continue;
		if (!ledger_fold_get(l, p->container_id, p->vm_id))
			goto fail;
		cid = p->container_id;
		vm = p->vm_id;
	}
	n = l->folds.n;
	if (kepler_array_reserve((void **)&l->fold_out, &l->fold_out_cap, n, sizeof(*l->fold_out)) < 0 ||
	    kepler_array_reserve((void **)&l->fold_pool, &l->fold_pool_cap, n * (l->nslots ? l->nslots : 1),
				 sizeof(*l->fold_pool)) < 0)
		goto fail;
	return 0;
fail:
	ledger_groups_truncate(&l->folds, before);
	return -ENOMEM;
}

/*
 * Whether @r, below the energy a terminated process is carried with, ended
 * in this interval or was first seen in it.
 */
static bool is_short(const struct kepler_ledger *l, const struct proc_rec *r, uint64_t now)
{
	bool ended = r->p.usage.state == KEPLER_STATE_TERMINATED && r->ended_mono_ns == now;

	if (r->dormant || !(ended || r->fresh))
		return false;
	return (l->nzones ? r->p.usage.zones[l->primary].total_uj : 0) < l->params.min_terminated_energy_uj;
}

static void fold_add(struct kepler_ledger *l, struct group_rec *g, const struct kepler_usage *u, bool counted)
{
	for (unsigned z = 0; z < l->nzones; z++)
		g->delta[z] += u->zones[z].delta_uj;
	for (unsigned z = 0; l->idle && u->idle && z < l->nzones; z++)
		g->delta[l->nzones + z] += u->idle[z].delta_uj;
	g->cpu_delta += u->cpu_time_delta_ns;
	g->count_delta += !counted;
	g->present = true;
}

/* The group a fold belongs to, or NULL for the node's. */
static const struct group_rec *owner_of(struct kepler_ledger *l, const struct group_rec *f)
{
	const char *id = f->name[0] ? f->name : f->extra;
	enum kepler_kind k = f->name[0] ? KEPLER_KIND_CONTAINER : KEPLER_KIND_VM;

	return id[0] ? ledger_group_find(l, k, id) : NULL;
}

void ledger_begin_folds(struct kepler_ledger *l)
{
	for (size_t i = 0; i < l->folds.n; i++) {
		struct group_rec *f = &l->folds.recs[i];

		memset(f->delta, 0, sizeof(f->delta));
		f->cpu_delta = f->count_delta = 0;
		f->present = false;
	}
}

void ledger_fold_process(struct kepler_ledger *l, struct proc_rec *r, uint64_t now)
{
	struct group_rec *f;

	r->p.flags &= ~(uint32_t)KEPLER_PROCESS_FOLDED;
	if (!is_short(l, r, now) || !(f = fold_find(l, r->p.container_id, r->p.vm_id)))
		return; /* (every terminated process's fold was reserved) */
	r->p.flags |= KEPLER_PROCESS_FOLDED;
	fold_add(l, f, &r->p.usage, r->folded_before);
}

void ledger_settle_folds(struct kepler_ledger *l)
{
	for (size_t i = 0; i < l->folds.n; i++) {
		struct group_rec *f = &l->folds.recs[i];
		const struct group_rec *owner = owner_of(l, f);
		bool node = !f->name[0] && !f->extra[0];

		for (unsigned z = 0; z < l->nslots; z++)
			f->total[z] += f->delta[z];
		f->cpu_total += f->cpu_delta;
		f->count_total += f->count_delta;
		if (f->fresh && !f->present) { /* reserved for a process that was not short */
			f->emit = f->keep = false;
			continue;
		}
		f->fresh = false;
		f->keep = node || f->present || (owner && owner->keep);
		f->emit = node || f->present || (owner && owner->emit);
		f->terminated = owner ? owner->terminated : false;
	}
}

void ledger_emit_folds(struct kepler_ledger *l)
{
	struct kepler_snapshot *s = &l->snap;
	size_t used = 0;

	s->nfolds = 0;
	for (size_t i = 0; i < l->folds.n; i++) {
		const struct group_rec *f = &l->folds.recs[i];
		struct kepler_fold *o = &l->fold_out[s->nfolds];

		if (!f->emit)
			continue;
		*o = (struct kepler_fold){
			.container_id = f->name,
			.vm_id = f->extra,
			.processes = f->count_total,
			.processes_delta = f->count_delta,
			.usage = { .state = f->terminated ? KEPLER_STATE_TERMINATED : KEPLER_STATE_RUNNING,
				   .cpu_time_ns = f->cpu_total,
				   .cpu_time_delta_ns = f->cpu_delta },
		};
		ledger_point_usage(l, &o->usage, &l->fold_pool[used]);
		for (unsigned z = 0; z < l->nslots; z++)
			l->fold_pool[used + z] =
				(struct kepler_energy){ .total_uj = f->total[z], .delta_uj = f->delta[z] };
		used += l->nslots;
		s->nfolds++;
	}
	s->folds = l->fold_out;
}

void ledger_compact_folds(struct kepler_ledger *l)
{
	struct group_table *t = &l->folds;
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++) {
		struct group_rec *f = &t->recs[i];
		char tid[KEPLER_KEY_MAX + 3];
		const char *id = tomb_id(f->name, f->extra, tid, sizeof(tid));

		/*
		 * One that had members outlives its group as a tombstone; one kept
		 * but in no snapshot (its group resumed and not seen since) too, so
		 * that a restart before its group comes back finds its totals
		 */
		if (id[0] && strlen(id) <= KEPLER_KEY_MAX && (f->keep ? !f->emit : !f->fresh))
			ledger_bury(l, KEPLER_KIND_PROCESS, id, f);
		if (!f->keep) {
			ledger_group_rec_free(f);
			continue;
		}
		t->recs[n++] = *f;
	}
	t->n = n;
	ledger_groups_truncate(t, n); /* rebuilds the key map */
}

int ledger_resume_folds(struct kepler_ledger *l, const struct kepler_snapshot *s)
{
	for (size_t i = 0; i < s->nfolds; i++) {
		const struct kepler_fold *sf = &s->folds[i];
		struct group_rec *f = ledger_fold_get(l, sf->container_id, sf->vm_id);

		if (!f)
			return -ENOMEM;
		for (size_t z = 0; z < l->nresume; z++) {
			f->total[z] = sf->usage.zones[z].total_uj;
			f->total[l->nresume + z] = sf->usage.idle ? sf->usage.idle[z].total_uj : 0;
		}
		f->cpu_total = sf->usage.cpu_time_ns;
		f->count_total = sf->processes;
		f->fresh = false; /* shown again with its group (dropped at the first build without it) */
		f->keep = true;
	}
	return 0;
}
