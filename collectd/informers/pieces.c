// SPDX-License-Identifier: Apache-2.0
/*
 * Pieces of a process's account (informer_internal.h): the CPU time a
 * process ran under an identity it has since left (an exec, a move to
 * another cgroup), which the source cut off at the change (ebpf:
 * bpf/cputime.bpf.c's cut()). Each becomes an entry of its own in the
 * refresh's table, terminated, with the identity it ran as and the time
 * it holds; the process's own entry keeps only what ran after the last.
 * So each comm, program and container is charged what ran as it, to the
 * nanosecond the source counted, whatever the interval.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/array.h"
#include "informer_internal.h"

/* The most pieces one refresh keeps (the ring holds fewer: ~740 at 256 KiB). */
#define PIECES_MAX 65536

struct kepler_proc_piece *kepler_informer_add_piece(struct kepler_informer *inf)
{
	if (inf->npieces >= PIECES_MAX || kepler_array_reserve((void **)&inf->pieces, &inf->pieces_cap,
							       inf->npieces + 1, sizeof(*inf->pieces)) < 0) {
		inf->stats.pieces_lost_total++;
		return NULL;
	}
	memset(&inf->pieces[inf->npieces], 0, sizeof(inf->pieces[0]));
	return &inf->pieces[inf->npieces++];
}

static int by_key(const void *x, const void *y)
{
	const struct kepler_proc_piece *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->key_start_ns != b->key_start_ns)
		return a->key_start_ns < b->key_start_ns ? -1 : 1;
	if (a->cpu_ns != b->cpu_ns)
		return a->cpu_ns < b->cpu_ns ? -1 : 1;
	return 0;
}

/* How many refreshes a piece waits for its process (then its time is counted late). */
#define PIECE_REFRESHES_MAX 3

void kepler_informer_keep_waiting_pieces(struct kepler_informer *inf)
{
	size_t n = 0;

	for (size_t i = 0; i < inf->npieces; i++) {
		struct kepler_proc_piece *pc = &inf->pieces[i];

		if (pc->used)
			continue;
		if (++pc->waited >= PIECE_REFRESHES_MAX) {
			inf->stats.pieces_late_total++;
			continue;
		}
		inf->pieces[n++] = *pc;
	}
	inf->npieces = n;
}

void kepler_informer_sort_pieces(struct kepler_informer *inf)
{
	if (inf->npieces > 1)
		qsort(inf->pieces, inf->npieces, sizeof(*inf->pieces), by_key);
}

void kepler_informer_pieces_of(const struct kepler_informer *inf, uint32_t pid, uint64_t key_start_ns,
			       struct kepler_proc_sample *s)
{
	size_t lo = 0, hi = inf->npieces, end;

	s->piece0 = s->npieces = 0;
	while (lo < hi) { /* the first piece not before (pid, key_start_ns) */
		size_t mid = lo + (hi - lo) / 2;
		const struct kepler_proc_piece *m = &inf->pieces[mid];

		if (m->pid < pid || (m->pid == pid && m->key_start_ns < key_start_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < inf->npieces && inf->pieces[end].pid == pid &&
		       inf->pieces[end].key_start_ns == key_start_ns;
	     end++)
		;
	s->piece0 = (uint32_t)lo;
	s->npieces = (uint32_t)(end - lo);
}

/*
 * The offset of a piece's start time from its process's: 1 to one tick
 * less than a tick (start times are whole ticks: no other process of that
 * pid starts there), from the run's salt (a piece of the run before, kept
 * as a terminated record after a restart, is not met again).
 */
static uint64_t piece_offset(const struct kepler_informer *inf, uint32_t ordinal)
{
	uint64_t tick = kepler_ns_per_tick();

	return tick > 1 ? 1 + (inf->piece_salt + ordinal) % (tick - 1) : 0;
}

/* Growth from @before to @now: 0 when the source went back. */
static uint64_t grown(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

static void piece_counters(const struct kepler_informer *inf, struct kepler_proc_entry *e,
			   const struct kepler_proc_piece *pc, const struct kepler_piece_base *base)
{
	uint64_t mapped = grown(pc->cpu_ns, base->mapped), counted = grown(pc->counted_ns, base->counted);
	uint64_t *out[3] = { &e->pub.cycles, &e->pub.instructions, &e->pub.cache_misses };

	for (int i = 0; i < 3; i++) {
		uint64_t d = grown(pc->counters[i], base->counters[i]);

		if (!inf->hw_counters) {
			*out[i] = KEPLER_COUNTER_UNAVAILABLE;
			continue;
		}
		if (counted > 0 && counted < mapped) /* scaled as set_counters() does */
			d = (uint64_t)((double)d * ((double)mapped / (double)counted));
		*out[i] = d;
	}
}

int kepler_informer_add_pieces(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			       const struct kepler_proc_entry *old, struct kepler_piece_base *base,
			       uint32_t *ret_made)
{
	uint32_t made = 0, ordinal = old ? old->pieces_made : 0;

	*ret_made = 0;
	for (uint32_t k = s->piece0; k < s->piece0 + s->npieces; k++) {
		struct kepler_proc_piece *pc = &inf->pieces[k];
		/* the process's identity before the change is the entry's, while nothing else was cut */
		const struct kepler_proc_identity *was = old && !made && old->pub.id &&
									 pc->cgroup_id == old->cgroup_id &&
									 pc->execs == old->execs
								 ? old->pub.id
								 : NULL;
		struct kepler_proc_entry *e;
		int r;

		if (pc->cpu_ns > s->cpu_ns)
			break; /* cut after the process was read: this and the later ones wait */
		pc->used = true;
		if (pc->cpu_ns <= base->cpu) {
			inf->stats.pieces_late_total++; /* reported already, under the identity after */
			continue;
		}
		e = kepler_proc_table_push(&inf->next);
		if (!e)
			return -ENOMEM;
		memset(e, 0, sizeof(*e));
		r = kepler_informer_identify_piece(inf, pc, was, e);
		if (r < 0) {
			kepler_proc_table_pop(&inf->next);
			return r;
		}
		e->pub.pid = s->pid;
		e->pub.start_time_ns = s->start_time_ns + piece_offset(inf, ordinal + made);
		/* its CPU time of this interval; cumulative, the process's at the cut */
		e->pub.cpu_time_delta_ns = pc->cpu_ns - base->cpu;
		e->pub.cpu_time_ns = (old ? old->offset : 0) + pc->cpu_ns;
		e->pub.state = KEPLER_STATE_TERMINATED;
		e->pub.piece = true;
		piece_counters(inf, e, pc, base);
		e->drop = true;
		kepler_proc_table_index_last(&inf->next);
		/*
		 * Where the sample's slot was read before the cut (its running
		 * time, read after, covers it), its map figures are below the
		 * piece's: the process's own counters grow from the lower
		 */
		base->cpu = pc->cpu_ns;
		base->mapped = pc->cpu_ns < s->mapped_ns ? pc->cpu_ns : s->mapped_ns;
		for (int i = 0; i < 3; i++)
			base->counters[i] =
				pc->counters[i] < s->counters[i] ? pc->counters[i] : s->counters[i];
		base->counted = pc->counted_ns < s->counted_ns ? pc->counted_ns : s->counted_ns;
		made++;
	}
	inf->stats.pieces_total += made;
	*ret_made = made;
	return 0;
}
