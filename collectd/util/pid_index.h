/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/util/pid_index.h: the collector's one index of processes by (pid,
 * start time), used by the informer's process table and the ledger's
 * generations of process records. Open addressing on the pid, probed
 * linearly, with at least 3/2 as many slots as the room asked for: the
 * callers ask for the most items there may be, about twice as many as
 * there are, so the load stays near 1/3 (with twice as many slots, 512
 * KiB each at 10,000 processes were cleared and written at random every
 * interval). A slot holds the pid and the item's position, and the start
 * time is read from the item (the caller's array) only when a pid
 * matches. Tables are rebuilt each interval, so there is no deletion:
 * clear and put again.
 *
 * The lookups are inline, with the caller's start-time reader inlined into
 * them: they run once per process and interval.
 */
#ifndef KEPLER_COLLECTD_PID_INDEX_H
#define KEPLER_COLLECTD_PID_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct kepler_pid_slot {
	uint32_t pid;
	uint32_t item; /* the item's position + 1; 0: an empty slot */
};

struct kepler_pid_index {
	struct kepler_pid_slot *slots;
	size_t nslots; /* a power of two; 0 before the first reserve */
};

/* The start time of item @i of the caller's array @items. */
typedef uint64_t (*kepler_pid_start_fn)(const void *items, uint32_t i);

/* The one hash: Fibonacci hashing of the pid. */
static inline size_t kepler_pid_slot_of(uint32_t pid, size_t nslots)
{
	return (size_t)(((uint64_t)pid * 11400714819323198485ULL) >> 32) & (nslots - 1);
}

/*
 * Room for @n items: at least 3 @n / 2 slots. 1 when the slots were made anew
 * (empty: the caller puts its items again), 0 when there was room, -ENOMEM.
 */
int kepler_pid_index_reserve(struct kepler_pid_index *x, size_t n);
/* Every slot empty. */
void kepler_pid_index_clear(struct kepler_pid_index *x);
void kepler_pid_index_free(struct kepler_pid_index *x);

/*
 * Start loading the slot where @pid is looked up or put first (a hint), in
 * the caller's body. A macro, not an inline function: GCC 12 at -O2 emits
 * nothing for an inline function whose only statement is a prefetch (seen
 * with objdump: the collector had none of the index's prefetches left, and
 * the puts' and lookups' cache misses were 15 % of it at 10,000 processes;
 * docs/performance.md).
 */
#define KEPLER_PID_INDEX_PREFETCH(x, pid)                                                         \
	do {                                                                                      \
		const struct kepler_pid_index *x_ = (x);                                          \
		if (x_->nslots)                                                                   \
			__builtin_prefetch(&x_->slots[kepler_pid_slot_of((pid), x_->nslots)], 1); \
	} while (0)

/*
 * The position of the first item indexed under @pid, whatever its start
 * time, or -1: the item to prefetch some lookups ahead, read from a slot
 * prefetched earlier (KEPLER_PID_INDEX_PREFETCH), without touching an item.
 */
static inline int64_t kepler_pid_index_peek(const struct kepler_pid_index *x, uint32_t pid)
{
	if (!x->nslots)
		return -1;
	for (size_t s = kepler_pid_slot_of(pid, x->nslots); x->slots[s].item; s = (s + 1) & (x->nslots - 1))
		if (x->slots[s].pid == pid)
			return (int64_t)x->slots[s].item - 1;
	return -1;
}

/* The position of the item of (@pid, @start), or -1. */
static inline int64_t kepler_pid_index_find(const struct kepler_pid_index *x, uint32_t pid, uint64_t start,
					    kepler_pid_start_fn start_of, const void *items)
{
	if (!x->nslots)
		return -1;
	for (size_t s = kepler_pid_slot_of(pid, x->nslots); x->slots[s].item; s = (s + 1) & (x->nslots - 1))
		if (x->slots[s].pid == pid && start_of(items, x->slots[s].item - 1) == start)
			return (int64_t)x->slots[s].item - 1;
	return -1;
}

/* Index item @i as (@pid, @start), replacing the item of the same key (room reserved). */
static inline void kepler_pid_index_put(struct kepler_pid_index *x, uint32_t pid, uint64_t start, uint32_t i,
					kepler_pid_start_fn start_of, const void *items)
{
	size_t s;

	for (s = kepler_pid_slot_of(pid, x->nslots); x->slots[s].item; s = (s + 1) & (x->nslots - 1))
		if (x->slots[s].pid == pid && start_of(items, x->slots[s].item - 1) == start)
			break;
	x->slots[s] = (struct kepler_pid_slot){ .pid = pid, .item = i + 1 };
}

#endif /* KEPLER_COLLECTD_PID_INDEX_H */
