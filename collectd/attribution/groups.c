// SPDX-License-Identifier: Apache-2.0
/*
 * Containers, VMs and pods: persistent tables of groups with owned strings,
 * each interval the exact sums of their processes (pods: of their
 * containers). Every group a build may touch is created in its reserve
 * phase, so the apply phase only looks groups up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/array.h"
#include "ledger_internal.h"

void ledger_group_rec_free(struct group_rec *g)
{
	free(g->id);
	free(g->name);
	free(g->extra);
	free(g->pod_id);
	free(g->owner_kind);
	free(g->owner_name);
	free(g->labels);
}

struct group_rec *ledger_group_find(struct kepler_ledger *l, enum kepler_kind k, const char *id)
{
	struct group_table *t = &l->groups[k];
	int64_t idx = kepler_keymap_get(&t->map, id, strlen(id));

	return idx >= 0 ? &t->recs[idx] : NULL;
}

/* The newest tombstone of @id, or NULL. */
struct tombstone *ledger_tomb_find(struct kepler_ledger *l, enum kepler_kind k, const char *id)
{
	for (size_t i = 0; i < LEDGER_TOMBSTONES; i++) {
		struct tombstone *t =
			&l->tombs[k][(l->tomb_next[k] + LEDGER_TOMBSTONES - 1 - i) % LEDGER_TOMBSTONES];

		if (t->id[0] && !strcmp(t->id, id))
			return t;
	}
	return NULL;
}

void ledger_bury(struct kepler_ledger *l, enum kepler_kind k, const char *id, const struct group_rec *g)
{
	struct tombstone *t = ledger_tomb_find(l, k, id);

	if (t && t->cpu_total == g->cpu_total && t->count_total == g->count_total &&
	    !memcmp(t->total, g->total, sizeof(t->total)))
		return; /* as kept already */
	if (!t) {
		t = &l->tombs[k][l->tomb_next[k]];
		l->tomb_next[k] = (l->tomb_next[k] + 1) % LEDGER_TOMBSTONES;
	}
	snprintf(t->id, sizeof(t->id), "%s", id);
	memcpy(t->total, g->total, sizeof(t->total));
	t->cpu_total = g->cpu_total;
	t->count_total = g->count_total;
	l->memory_dirty = true;
}

struct group_rec *ledger_table_add(struct group_table *t, const char *key, size_t klen, const char *name,
				   const char *extra, const char *pod_id)
{
	struct group_rec *g;

	if (kepler_array_reserve((void **)&t->recs, &t->cap, t->n + 1, sizeof(*t->recs)) < 0)
		return NULL;
	g = &t->recs[t->n];
	memset(g, 0, sizeof(*g));
	g->id = strndup(key, klen);
	g->name = strdup(name ? name : "");
	g->extra = strdup(extra ? extra : "");
	g->pod_id = strdup(pod_id ? pod_id : "");
	g->fresh = true;
	if (!g->id || !g->name || !g->extra || !g->pod_id ||
	    kepler_keymap_put(&t->map, key, klen, (uint32_t)t->n) < 0) {
		ledger_group_rec_free(g);
		return NULL;
	}
	t->n++;
	return g;
}

struct group_rec *ledger_group_get(struct kepler_ledger *l, enum kepler_kind k, const char *id,
				   const char *name, const char *extra, const char *pod_id)
{
	struct group_rec *g = ledger_group_find(l, k, id);
	const struct tombstone *dead;

	if (g)
		return g;
	g = ledger_table_add(&l->groups[k], id, strlen(id), name, extra, pod_id);
	if (g && l->tombs[k] &&
	    (dead = ledger_tomb_find(l, k, id))) { /* back under the same id: its counters go on */
		memcpy(g->total, dead->total, sizeof(g->total));
		g->cpu_total = dead->cpu_total;
		g->revived = true;
	}
	return g;
}

/* Keep the first @n groups of @t (those before a failed reservation). */
void ledger_groups_truncate(struct group_table *t, size_t n)
{
	for (size_t i = n; i < t->n; i++)
		ledger_group_rec_free(&t->recs[i]);
	t->n = n;
	kepler_keymap_clear(&t->map);
	for (size_t i = 0; i < n; i++) /* fewer keys than before: no allocation */
		kepler_keymap_put(&t->map, t->recs[i].id, strlen(t->recs[i].id), (uint32_t)i);
}

void ledger_groups_free(struct kepler_ledger *l)
{
	ledger_groups_truncate(&l->folds, 0);
	free(l->folds.recs);
	kepler_keymap_free(&l->folds.map);
	free(l->fold_out);
	free(l->fold_pool);
	for (int k = 0; k < KEPLER_KIND_COUNT; k++) {
		ledger_groups_truncate(&l->groups[k], 0);
		free(l->groups[k].recs);
		kepler_keymap_free(&l->groups[k].map);
	}
}

/* Create the container and VM of @p, if it has them. */
static int ensure_of_process(struct kepler_ledger *l, const struct kepler_ledger_proc *p)
{
	if (p->container_id[0] && !ledger_group_get(l, KEPLER_KIND_CONTAINER, p->container_id, "",
						    p->container_runtime, p->pod_uid))
		return -ENOMEM;
	if (p->vm_id[0] && !ledger_group_get(l, KEPLER_KIND_VM, p->vm_id, p->vm_name, p->vm_hypervisor, ""))
		return -ENOMEM;
	return 0;
}

/* Create the groups of a carried process (one that was in the last snapshot). */
static int ensure_of_record(struct kepler_ledger *l, const struct kepler_process *p)
{
	if (p->container_id[0] && !ledger_group_get(l, KEPLER_KIND_CONTAINER, p->container_id, "", "", ""))
		return -ENOMEM;
	if (p->vm_id[0] && !ledger_group_get(l, KEPLER_KIND_VM, p->vm_id, "", "", ""))
		return -ENOMEM;
	return 0;
}

/*
 * Replace the owned string *@dst (NULL: none yet, as a pod's owner and
 * labels until named) by @v when they differ. -ENOMEM (then unchanged).
 */
static int set_name(char **dst, const char *v)
{
	char *d;

	if (!v || (*dst && !strcmp(*dst, v)))
		return 0;
	d = strdup(v);
	if (!d)
		return -ENOMEM;
	free(*dst);
	*dst = d;
	return 0;
}

/*
 * Containers' names and pods from the namer (what the cgroup did not say:
 * the container's name; its pod, when the cgroup path hides it). Names
 * only ever change to another known name.
 */
static int name_containers(struct kepler_ledger *l, const struct kepler_ledger_namer *nm)
{
	struct group_table *ct = &l->groups[KEPLER_KIND_CONTAINER];

	for (size_t i = 0; i < ct->n; i++) {
		struct group_rec *g = &ct->recs[i];
		const char *name, *pod;

		if (!nm->container(nm->ctx, g->id, g->pod_id, &name, &pod))
			continue;
		if (set_name(&g->name, name) < 0 ||
		    (!g->pod_id[0] && pod[0] && set_name(&g->pod_id, pod) < 0))
			return -ENOMEM;
	}
	return 0;
}

static int name_pods(struct kepler_ledger *l, const struct kepler_ledger_namer *nm)
{
	struct group_table *pt = &l->groups[KEPLER_KIND_POD];

	for (size_t i = 0; i < pt->n; i++) {
		struct group_rec *g = &pt->recs[i];
		struct kepler_ledger_pod_names n;

		if (nm->pod(nm->ctx, g->id, &n) &&
		    (set_name(&g->name, n.name) < 0 || set_name(&g->extra, n.ns) < 0 ||
		     set_name(&g->owner_kind, n.owner_kind) < 0 ||
		     set_name(&g->owner_name, n.owner_name) < 0 || set_name(&g->labels, n.labels) < 0))
			return -ENOMEM;
	}
	return 0;
}

static int ensure_groups(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	const struct proc_gen *prev = &l->gen[l->cur];
	const struct group_table *ct = &l->groups[KEPLER_KIND_CONTAINER];

	for (size_t i = 0; i < in->nprocs; i++)
		if (ensure_of_process(l, &in->procs[i]) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < prev->nowners; i++) { /* the terminated are among these */
		const struct proc_rec *r = &prev->recs[prev->owners[i]];

		if (r->p.usage.state == KEPLER_STATE_TERMINATED && ensure_of_record(l, &r->p) < 0)
			return -ENOMEM;
	}
	if (in->namer && name_containers(l, in->namer) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < ct->n; i++) /* pods: of every container there may be */
		if (ct->recs[i].pod_id[0] &&
		    !ledger_group_get(l, KEPLER_KIND_POD, ct->recs[i].pod_id, "", "", ""))
			return -ENOMEM;
	if (in->namer && name_pods(l, in->namer) < 0)
		return -ENOMEM;
	return 0;
}

/* Room for the snapshot's arrays: at most every group of the tables. */
static int reserve_emission(struct kepler_ledger *l)
{
	size_t nc = l->groups[KEPLER_KIND_CONTAINER].n, nv = l->groups[KEPLER_KIND_VM].n;
	size_t np = l->groups[KEPLER_KIND_POD].n;

	if (kepler_array_reserve((void **)&l->containers, &l->containers_cap, nc, sizeof(*l->containers)) <
		    0 ||
	    kepler_array_reserve((void **)&l->vms, &l->vms_cap, nv, sizeof(*l->vms)) < 0 ||
	    kepler_array_reserve((void **)&l->pods, &l->pods_cap, np, sizeof(*l->pods)) < 0 ||
	    kepler_array_reserve((void **)&l->group_pool, &l->group_pool_cap,
				 (nc + nv + np) * (l->nslots ? l->nslots : 1), sizeof(*l->group_pool)) < 0)
		return -ENOMEM;
	return 0;
}

int ledger_reserve_groups(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	size_t before[KEPLER_KIND_COUNT];
	int r;

	for (int k = 0; k < KEPLER_KIND_COUNT; k++)
		before[k] = l->groups[k].n;
	r = ensure_groups(l, in);
	if (r == 0)
		r = reserve_emission(l);
	if (r == 0)
		r = ledger_reserve_folds(l, in); /* on failure, the folds' table as it was */
	if (r < 0)
		for (int k = 0; k < KEPLER_KIND_COUNT; k++)
			ledger_groups_truncate(&l->groups[k], before[k]);
	return r;
}

/*
 * Add member usage @u to @g. @lifetime: the member's CPU time before this
 * interval ran in no other group this ledger counted (the first build, or
 * a process first seen now, with no piece cut from it): a group seen for
 * the first time starts from it. Not so for a process that moved in (its
 * time before is its earlier group's) nor a piece (its totals are its
 * process's whole life).
 */
static void group_add(struct kepler_ledger *l, struct group_rec *g, const struct kepler_usage *u,
		      bool lifetime)
{
	if (!g->present) {
		g->present = true;
		g->running = false;
		g->cpu_delta = 0;
		memset(g->delta, 0, sizeof(g->delta));
	}
	for (unsigned z = 0; z < l->nzones; z++)
		g->delta[z] += u->zones[z].delta_uj;
	for (unsigned z = 0; l->idle && u->idle && z < l->nzones; z++)
		g->delta[l->nzones + z] += u->idle[z].delta_uj;
	g->cpu_delta += u->cpu_time_delta_ns;
	if (lifetime && g->fresh && !g->revived)
		g->cpu_total += u->cpu_time_ns - u->cpu_time_delta_ns;
	g->running |= u->state == KEPLER_STATE_RUNNING;
}

/* A resumed group not seen yet: kept for its totals (within the horizon), not shown. */
static void settle_dormant(struct group_rec *g, uint64_t now)
{
	if (!g->ended_mono_ns)
		g->ended_mono_ns = now;
	g->keep = now < g->ended_mono_ns + RESUME_HORIZON_NS;
	g->emit = false;
}

/* Totals, states and which groups of @t go into this snapshot. */
static void settle(struct kepler_ledger *l, struct group_table *t, uint64_t now)
{
	for (size_t i = 0; i < t->n; i++) {
		struct group_rec *g = &t->recs[i];

		if (g->present)
			g->dormant = false;
		if (g->fresh && !g->present) { /* created in reserve, no member after all */
			g->emit = g->keep = false;
			continue;
		}
		g->fresh = false;
		if (g->dormant) {
			settle_dormant(g, now);
			continue;
		}
		if (!g->present) {
			memset(g->delta, 0, sizeof(g->delta));
			g->cpu_delta = 0;
			g->running = false;
		}
		for (unsigned z = 0; z < l->nslots; z++)
			g->total[z] += g->delta[z];
		g->cpu_total += g->cpu_delta;
		if (g->running) {
			g->terminated = false;
		} else if (!g->terminated) {
			g->terminated = true;
			g->ended_mono_ns = now;
		}
		g->emit = g->keep = g->present;
	}
	ledger_carry_groups(l, t, now);
}

/* Pods: the sums of the containers of this snapshot. */
static void add_pods(struct kepler_ledger *l)
{
	const struct group_table *ct = &l->groups[KEPLER_KIND_CONTAINER];

	for (size_t i = 0; i < ct->n; i++) {
		const struct group_rec *c = &ct->recs[i];
		struct kepler_energy e[LEDGER_MAX_SLOTS];
		struct kepler_usage u;
		struct group_rec *g;

		if (!c->emit || !c->pod_id[0] || !(g = ledger_group_find(l, KEPLER_KIND_POD, c->pod_id)))
			continue; /* (dormant containers are not emitted; pods were reserved) */
		for (unsigned z = 0; z < l->nslots; z++)
			e[z] = (struct kepler_energy){ .total_uj = c->total[z], .delta_uj = c->delta[z] };
		u = (struct kepler_usage){ .state = c->terminated ? KEPLER_STATE_TERMINATED
								  : KEPLER_STATE_RUNNING,
					   .cpu_time_ns = c->cpu_total,
					   .cpu_time_delta_ns = c->cpu_delta };
		ledger_point_usage(l, &u, e);
		group_add(l, g, &u, true);
	}
}

void ledger_group_process(struct kepler_ledger *l, const struct kepler_ledger_input *in, size_t i)
{
	const struct proc_gen *cur = &l->gen[l->cur];
	const struct kepler_process *p = &cur->recs[i].p;
	bool after_piece =
		i && (cur->recs[i - 1].p.flags & KEPLER_PROCESS_PIECE) && cur->recs[i - 1].p.pid == p->pid;
	bool lifetime =
		in->first || (cur->recs[i].fresh && !(p->flags & KEPLER_PROCESS_PIECE) && !after_piece);
	struct group_rec *g;

	if (p->container_id[0] && (g = ledger_group_find(l, KEPLER_KIND_CONTAINER, p->container_id)))
		group_add(l, g, &p->usage, lifetime);
	if (p->vm_id[0] && (g = ledger_group_find(l, KEPLER_KIND_VM, p->vm_id)))
		group_add(l, g, &p->usage, lifetime);
}

void ledger_settle_groups(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	for (size_t i = 0; in->units && i < in->nprocs; i++) { /* containers' sizes (SIZE) */
		const struct kepler_ledger_proc *p = &in->procs[i];
		struct group_rec *g;

		if (p->container_id[0] && p->unit < in->nunits &&
		    (g = ledger_group_find(l, KEPLER_KIND_CONTAINER, p->container_id)))
			g->size_shares = in->units[p->unit].size_shares;
	}
	settle(l, &l->groups[KEPLER_KIND_CONTAINER], in->mono_ns);
	settle(l, &l->groups[KEPLER_KIND_VM], in->mono_ns);
	add_pods(l);
	settle(l, &l->groups[KEPLER_KIND_POD], in->mono_ns);
}

static void fill_usage(const struct kepler_ledger *l, const struct group_rec *g, struct kepler_usage *u,
		       struct kepler_energy *zones)
{
	u->state = g->terminated ? KEPLER_STATE_TERMINATED : KEPLER_STATE_RUNNING;
	u->cpu_time_ns = g->cpu_total;
	u->cpu_time_delta_ns = g->cpu_delta;
	ledger_point_usage(l, u, zones);
	for (unsigned z = 0; z < l->nslots; z++)
		zones[z] = (struct kepler_energy){ .total_uj = g->total[z], .delta_uj = g->delta[z] };
}

void ledger_emit_groups(struct kepler_ledger *l)
{
	struct kepler_snapshot *s = &l->snap;
	size_t used = 0;

	s->ncontainers = s->nvms = s->npods = 0;
	for (int k = KEPLER_KIND_CONTAINER; k < KEPLER_KIND_COUNT; k++) {
		const struct group_table *t = &l->groups[k];

		for (size_t i = 0; i < t->n; i++) {
			const struct group_rec *g = &t->recs[i];
			struct kepler_usage *u;

			if (!g->emit)
				continue;
			if (k == KEPLER_KIND_CONTAINER) {
				l->containers[s->ncontainers] = (struct kepler_container){
					.id = g->id,
					.name = g->name,
					.runtime = g->extra,
					.pod_id = g->pod_id,
					.size_shares = g->size_shares,
				};
				u = &l->containers[s->ncontainers++].usage;
			} else if (k == KEPLER_KIND_VM) {
				l->vms[s->nvms] = (struct kepler_vm){ .id = g->id,
								      .name = g->name,
								      .hypervisor = g->extra };
				u = &l->vms[s->nvms++].usage;
			} else {
				l->pods[s->npods] = (struct kepler_pod){
					.id = g->id,
					.name = g->name,
					.ns = g->extra,
					.owner_kind = g->owner_kind ? g->owner_kind : "",
					.owner_name = g->owner_name ? g->owner_name : "",
					.labels = g->labels ? g->labels : "",
				};
				u = &l->pods[s->npods++].usage;
			}
			fill_usage(l, g, u, &l->group_pool[used]);
			used += l->nslots;
		}
	}
	s->containers = l->containers;
	s->vms = l->vms;
	s->pods = l->pods;
}

/* Forget the groups this build did not keep (their strings are not in the snapshot). */
void ledger_compact_groups(struct kepler_ledger *l)
{
	for (int k = KEPLER_KIND_CONTAINER; k < KEPLER_KIND_COUNT; k++) {
		struct group_table *t = &l->groups[k];
		size_t n = 0;

		for (size_t i = 0; i < t->n; i++) {
			struct group_rec *g = &t->recs[i];

			if (!g->keep) {
				if (!g->fresh) /* it had members: its totals outlive it */
					ledger_bury(l, (enum kepler_kind)k, g->id, g);
				ledger_group_rec_free(g);
				continue;
			}
			/*
			 * Resumed, not seen since: kept, but in no snapshot, so that the
			 * store's memory must have its totals for a restart before it is
			 */
			if (g->dormant)
				ledger_bury(l, (enum kepler_kind)k, g->id, g);
			g->present = false;
			g->revived = false;
			t->recs[n++] = *g;
		}
		t->n = n;
		ledger_groups_truncate(t, n); /* rebuilds the key map */
	}
}
