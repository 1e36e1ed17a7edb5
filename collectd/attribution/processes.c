// SPDX-License-Identifier: Apache-2.0
/*
 * Process records, one generation per interval: records, their energy pool
 * and an index on (pid, start time). Each build fills the other
 * generation, continuing totals from the current one (or from the records
 * resumed at start). Records of terminated processes own a copy of their
 * strings, since the informer forgets them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/array.h"
#include "ledger_internal.h"
#include "prefetch.h"
#include "split.h"

/* The start time of record @i (the index reads it when a pid matches). */
static uint64_t start_of(const void *recs, uint32_t i)
{
	return ((const struct proc_rec *)recs)[i].p.start_time_ns;
}

static void index_rec(struct proc_gen *g, size_t i)
{
	const struct kepler_process *p = &g->recs[i].p;

	kepler_pid_index_put(&g->index, p->pid, p->start_time_ns, (uint32_t)i, start_of, g->recs);
}

/* Slots for @n records (kepler_pid_index_reserve()): lookups stay short. */
static int reserve_index(struct proc_gen *g, size_t n)
{
	int r = kepler_pid_index_reserve(&g->index, n);

	for (size_t i = 0; r == 1 && i < g->n; i++)
		index_rec(g, i); /* new slots: the records indexed again */
	return r < 0 ? r : 0;
}

int ledger_gen_reserve(struct proc_gen *g, size_t n, unsigned nslots)
{
	size_t pool_cap = g->pool_cap;
	int r = kepler_array_reserve((void **)&g->recs, &g->cap, n, sizeof(*g->recs));

	if (r == 0)
		r = kepler_array_reserve((void **)&g->pool, &pool_cap, n * (nslots ? nslots : 1),
					 sizeof(*g->pool));
	if (r == 0)
		g->pool_cap = pool_cap;
	if (r == 0)
		r = kepler_array_reserve((void **)&g->owners, &g->owners_cap, n, sizeof(*g->owners));
	return r == 0 ? reserve_index(g, n) : r;
}

/* Only the records that own strings are visited: the others are not read again. */
void ledger_gen_reset(struct proc_gen *g)
{
	for (size_t i = 0; i < g->nowners; i++)
		free(g->recs[g->owners[i]].owned);
	g->nowners = 0;
	if (g->n)
		kepler_pid_index_clear(&g->index);
	g->n = 0;
}

void ledger_gen_free(struct proc_gen *g)
{
	ledger_gen_reset(g);
	free(g->recs);
	free(g->pool);
	kepler_pid_index_free(&g->index);
	free(g->owners);
	memset(g, 0, sizeof(*g));
}

void ledger_gen_own(struct proc_gen *g, struct proc_rec *r, char *block)
{
	r->owned = block;
	g->owners[g->nowners++] = (uint32_t)(r - g->recs);
}

void ledger_gen_prefetch_slot(const struct proc_gen *g, uint32_t pid)
{
	KEPLER_PID_INDEX_PREFETCH(&g->index, pid);
}

void ledger_gen_index_last(struct proc_gen *g)
{
	index_rec(g, g->n - 1);
}

struct proc_rec *ledger_gen_find(const struct proc_gen *g, uint32_t pid, uint64_t start_time_ns)
{
	int64_t i = kepler_pid_index_find(&g->index, pid, start_time_ns, start_of, g->recs);

	return i < 0 ? NULL : &g->recs[i];
}

/*
 * A record at the end of @g (room reserved by ledger_gen_reserve). Its
 * process is left for the caller to fill whole (every caller assigns each
 * field): clearing it too was an inline rep stos per process.
 */
struct proc_rec *ledger_gen_add(struct proc_gen *g, unsigned nslots)
{
	struct proc_rec *r = &g->recs[g->n];

	r->ended_mono_ns = 0;
	r->owned = NULL;
	r->taken = false;
	r->fresh = false;
	r->folded_before = false;
	r->dormant = false;
	r->p.usage.idle = NULL;
	r->p.usage.zones = &g->pool[g->n * nslots];
	memset(r->p.usage.zones, 0, nslots * sizeof(struct kepler_energy));
	g->n++;
	return r;
}

/* The strings a record owns once terminated, in the order of their block. */
#define OWNED_FIELDS(p)                                                \
	{                                                              \
		&(p)->comm, &(p)->exe, &(p)->container_id, &(p)->vm_id \
	}

/* Point @p's strings into @block (laid out by ledger_own_strings()). */
static void point_into(struct kepler_process *p, char *block)
{
	const char **fields[] = OWNED_FIELDS(p);

	for (size_t i = 0; i < 4; i++) {
		*fields[i] = block;
		block += strlen(block) + 1;
	}
}

/* Copy the strings of @p into one block and point @p into it; NULL when out of memory. */
char *ledger_own_strings(struct kepler_process *p)
{
	const char **fields[] = OWNED_FIELDS(p);
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
		off += n;
	}
	point_into(p, block);
	return block;
}

/* The fields of an input process, as a snapshot record (strings not owned). */
static void fill_process(struct kepler_process *p, const struct kepler_ledger_proc *kp)
{
	p->pid = kp->pid;
	p->start_time_ns = kp->start_time_ns;
	p->comm = kp->comm;
	p->exe = kp->exe;
	p->type = kp->type;
	p->container_id = kp->container_id;
	p->vm_id = kp->vm_id;
	p->cycles = kp->cycles;
	p->instructions = kp->instructions;
	p->cache_misses = kp->cache_misses;
	p->usage.state = kp->state;
	p->usage.cpu_time_ns = kp->cpu_time_ns;
	p->flags = kp->piece ? KEPLER_PROCESS_PIECE : 0; /* folds.c adds FOLDED */
}

void ledger_release_processes(struct kepler_ledger *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(l->owned[i]);
		l->owned[i] = NULL;
	}
}

int ledger_reserve_processes(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	struct proc_gen *next = &l->gen[!l->cur], *prev = &l->gen[l->cur];
	size_t n = in->nprocs, nz = l->nzones ? l->nzones : 1;
	size_t most = n + prev->n + l->resumed.n; /* measured, carried, and dormant resumed */

	if (l->resumed.n && !l->resumed_until_ns)
		l->resumed_until_ns = in->mono_ns + RESUME_HORIZON_NS;
	if (l->resumed.n && in->mono_ns > l->resumed_until_ns)
		ledger_gen_reset(&l->resumed);
	ledger_gen_reset(next); /* two intervals old: nothing points into it */
	if (ledger_gen_reserve(next, most, l->nslots) < 0 ||
	    kepler_array_reserve((void **)&l->weights, &l->weights_cap, n, sizeof(*l->weights)) < 0 ||
	    kepler_array_reserve((void **)&l->shares, &l->shares_cap, nz * n, sizeof(*l->shares)) < 0 ||
	    kepler_array_reserve((void **)&l->scratch, &l->scratch_cap, 2 * n, sizeof(*l->scratch)) < 0 ||
	    kepler_array_reserve((void **)&l->cand, &l->cand_cap, prev->n, sizeof(*l->cand)) < 0 ||
	    kepler_array_reserve((void **)&l->owned, &l->owned_cap, n, sizeof(*l->owned)) < 0 ||
	    kepler_array_reserve((void **)&l->snap.processes, &l->snap_procs_cap, most,
				 sizeof(*l->snap.processes)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct kepler_process p;

		l->owned[i] = NULL;
		if (in->procs[i].state != KEPLER_STATE_TERMINATED)
			continue;
		fill_process(&p, &in->procs[i]);
		l->owned[i] = ledger_own_strings(&p);
		if (!l->owned[i]) {
			ledger_release_processes(l, i);
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * The record this process continues: the previous interval's, else a
 * resumed one. Measured processes' records lie in the order of the input,
 * so the input's hint finds most without a lookup. @take: mark it carried
 * (a piece's process only looks at it: its own record takes it next).
 */
static struct proc_rec *previous_of(struct kepler_ledger *l, const struct kepler_ledger_proc *kp, bool take)
{
	struct proc_gen *prev = &l->gen[!l->cur];
	struct proc_rec *old;

	if (kp->prev_index && kp->prev_index <= prev->n) {
		old = &prev->recs[kp->prev_index - 1];
		if (old->p.pid == kp->pid && old->p.start_time_ns == kp->start_time_ns && !old->taken) {
			old->taken = take;
			return old;
		}
	}
	old = ledger_gen_find(prev, kp->pid, kp->start_time_ns);
	if (old) {
		old->taken |= take;
		return old;
	}
	/*
	 * A resumed one, whatever its state: one stored as terminated and
	 * reported again is the same process (pid and start time name one
	 * per boot; a piece's start lies within a tick after its process's),
	 * which the run before took for ended: a leader that exited while
	 * its other threads run on (its final switch ends the eBPF entry)
	 * is found alive by the next collector's census. It goes on from its
	 * totals, as it does within a run, rather than from 0.
	 */
	if (!l->resumed.n || !(old = ledger_gen_find(&l->resumed, kp->pid, kp->start_time_ns)))
		return NULL;
	old->taken |= take; /* reported: no longer carried as dormant */
	return old;
}

/*
 * The process a piece at @i belongs to: the next record of the input that
 * is not a piece (the informer puts a process's pieces right before it),
 * NULL if that is not one of the same pid.
 */
static const struct kepler_ledger_proc *owner_of_piece(const struct kepler_ledger_input *in, size_t i)
{
	size_t j = i + 1;

	while (j < in->nprocs && in->procs[j].piece)
		j++;
	return j < in->nprocs && in->procs[j].pid == in->procs[i].pid ? &in->procs[j] : NULL;
}

/*
 * Energy slot @k's total of record @r before this interval's @d: its
 * previous record's, and what its process's pieces already added in this
 * build (a piece's totals are its process's at the cut, so that every
 * counter of the process goes up, whatever its labels).
 */
static uint64_t total_before(const struct kepler_ledger *l, const struct proc_rec *old, bool idle, unsigned k,
			     uint32_t pid)
{
	uint64_t t = 0;

	if (old && (!idle || old->p.usage.idle))
		t = idle ? old->p.usage.idle[k].total_uj : old->p.usage.zones[k].total_uj;
	if (l->pieces.any && l->pieces.pid == pid)
		t += l->pieces.uj[(idle ? l->nzones : 0) + k];
	return t;
}

/* (while none are held the sums are 0: nothing to clear for each process of 10,000) */
static void forget_pieces(struct kepler_ledger *l)
{
	if (!l->pieces.any)
		return;
	l->pieces.any = false;
	memset(l->pieces.uj, 0, sizeof(l->pieces.uj));
}

static void add_measured(struct kepler_ledger *l, const struct kepler_ledger_input *in, size_t i)
{
	const struct kepler_ledger_proc *kp = &in->procs[i],
					*owner = kp->piece ? owner_of_piece(in, i) : NULL;
	struct proc_gen *cur = &l->gen[l->cur];
	struct proc_rec *r = ledger_gen_add(cur, l->nslots), *old;
	struct kepler_energy *slots = r->p.usage.zones;

	if (l->pieces.any && l->pieces.pid != kp->pid)
		forget_pieces(l); /* (an owner that did not follow its pieces) */
	old = kp->piece ? (owner ? previous_of(l, owner, false) : NULL) : previous_of(l, kp, true);
	r->fresh = kp->piece || (!old && !in->first);
	r->folded_before = !kp->piece && old && (old->p.flags & KEPLER_PROCESS_FOLDED);
	fill_process(&r->p, kp);
	/*
	 * Never below what was stored: after a restart the informer reads a
	 * process's lifetime anew, from /proc in whole ticks (truncated), where
	 * the run before had counted it to the ns.
	 */
	if (old && old->p.usage.cpu_time_ns > r->p.usage.cpu_time_ns)
		r->p.usage.cpu_time_ns = old->p.usage.cpu_time_ns;
	ledger_point_usage(l, &r->p.usage, slots);
	r->p.usage.cpu_time_delta_ns = in->first ? 0 : kp->cpu_time_delta_ns;
	for (unsigned z = 0; z < l->nzones; z++) {
		uint64_t d = l->shares[(size_t)z * in->nprocs + i];

		r->p.usage.zones[z].delta_uj = d;
		r->p.usage.zones[z].total_uj = total_before(l, old, false, z, kp->pid) + d;
	}
	for (unsigned z = 0; l->idle && z < l->nzones; z++) {
		uint64_t d = l->idle_shares[(size_t)z * in->nprocs + i];

		r->p.usage.idle[z].delta_uj = d;
		r->p.usage.idle[z].total_uj = total_before(l, old, true, z, kp->pid) + d;
	}
	if (kp->piece && owner) {
		l->pieces.pid = kp->pid;
		l->pieces.any = true; /* (cleared when it was not) */
		for (unsigned z = 0; z < l->nzones; z++)
			l->pieces.uj[z] += r->p.usage.zones[z].delta_uj;
		for (unsigned z = 0; l->idle && z < l->nzones; z++)
			l->pieces.uj[l->nzones + z] += r->p.usage.idle[z].delta_uj;
	} else if (!kp->piece) {
		forget_pieces(l);
	}
	if (kp->state == KEPLER_STATE_TERMINATED) {
		r->ended_mono_ns = !kp->piece && old && old->p.usage.state == KEPLER_STATE_TERMINATED
					   ? old->ended_mono_ns
					   : in->mono_ns;
		ledger_gen_own(cur, r, l->owned[i]); /* moved */
		l->owned[i] = NULL;
		point_into(&r->p, r->owned);
	}
	ledger_gen_index_last(cur); /* room reserved */
}

/*
 * @amount of a device zone over the processes by the meter's weights: the
 * listed processes take their weights' share (floor), split exactly among
 * them; the rest (unlisted processes' share, or all when none ran) is left
 * for the caller to count as the zone's unattributed energy.
 */
uint64_t ledger_split_device(struct kepler_ledger *l, const struct kepler_ledger_input *in, unsigned z,
			     uint64_t amount, uint64_t *shares)
{
	const struct kepler_ledger_zone_in *zi = &in->zones[z];
	uint64_t listed = 0, taken = 0;

	for (size_t i = 0; zi->weights && i < in->nprocs; i++)
		listed += zi->weights[i];
	if (listed && !in->first) {
		taken = (uint64_t)((unsigned __int128)amount * listed / (listed + zi->unlisted_weight));
		kepler_split(taken, zi->weights, in->nprocs, shares, l->scratch);
	} else {
		memset(shares, 0, in->nprocs * sizeof(*shares));
	}
	return taken;
}

/*
 * @amount of a CPU zone's active energy over the processes by CPU time:
 * they take the part of it that their CPU time is of the node's busy CPU
 * time (all of it when they account for at least that), split exactly
 * among them; the rest, the energy of CPU time no listed process accounts
 * for (processes the informer did not see, interrupts, steal), is left for
 * the caller to count as the zone's unattributed energy.
 */
static uint64_t split_cpu(struct kepler_ledger *l, const struct kepler_ledger_input *in, uint64_t amount,
			  uint64_t sum, uint64_t *shares)
{
	uint64_t taken = amount;

	if (!sum)
		taken = 0;
	else if (sum < in->busy_delta_ns)
		taken = (uint64_t)((unsigned __int128)amount * sum / in->busy_delta_ns);
	kepler_split(taken, l->weights, in->nprocs, shares, l->scratch);
	return taken;
}

/* How many processes ahead add_measured()'s index slot is prefetched. */
#define SLOT_PREFETCH_AHEAD 8

void ledger_apply_processes(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	uint64_t sum = 0, active[KEPLER_MAX_ZONES];
	size_t n = in->nprocs;
	const struct proc_gen *prev;

	l->cur = !l->cur;
	for (size_t i = 0; i < n; i++) {
		l->weights[i] = in->first ? 0 : in->procs[i].cpu_time_delta_ns;
		sum += l->weights[i];
	}
	ledger_account_node(l, in, active);
	for (unsigned z = 0; z < l->nzones; z++) {
		uint64_t *shares = &l->shares[(size_t)z * n];

		if (in->zones[z].device)
			ledger_account_unattributed(
				l, z, active[z] - ledger_split_device(l, in, z, active[z], shares));
		else
			ledger_account_unattributed(l, z,
						    active[z] - split_cpu(l, in, active[z], sum, shares));
		if (l->idle)
			ledger_split_idle(l, in, z, l->node[z][NODE_IDLE].delta_uj);
	}
	/*
	 * No record of @prev is taken yet: each is a build's previous once,
	 * in the build after the one that added it unmarked (ledger_gen_add).
	 * The index slot of a process some ahead is loaded early: slots are
	 * spread by pid and cold (their insert's cache miss was 4 % of the
	 * collector at 1,000 processes), and so is its previous record
	 * (previous_of() reads its first and last lines, a miss each after a
	 * second of other work), fetched whole twice as far ahead, so that its
	 * pointer to its totals (total_before()) is there to read when those
	 * are fetched.
	 */
	forget_pieces(l);
	prev = &l->gen[!l->cur];
	for (size_t i = 0; i < n; i++) {
		/* (here, not in a function: GCC deletes calls of one that only prefetches, as without effect) */
		if (i + 2 * SLOT_PREFETCH_AHEAD < n) {
			const struct kepler_ledger_proc *far = &in->procs[i + 2 * SLOT_PREFETCH_AHEAD];

			if (far->prev_index && far->prev_index <= prev->n)
				KEPLER_PREFETCH_RECORD(&prev->recs[far->prev_index - 1]);
		}
		if (i + SLOT_PREFETCH_AHEAD < n) {
			const struct kepler_ledger_proc *near = &in->procs[i + SLOT_PREFETCH_AHEAD];

			ledger_gen_prefetch_slot(&l->gen[l->cur], near->pid);
			if (near->prev_index && near->prev_index <= prev->n) {
				const struct kepler_usage *u = &prev->recs[near->prev_index - 1].p.usage;

				__builtin_prefetch(u->zones);
				if (u->idle)
					__builtin_prefetch(u->idle);
			}
		}
		add_measured(l, in, i);
	}
	ledger_carry_processes(l, in);
}
