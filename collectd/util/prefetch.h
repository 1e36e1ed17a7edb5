/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/util/prefetch.h: start loading every cache line of a record the
 * collector reads a few processes later (its old table's entries, the
 * ledger's previous records: 150-210 bytes, across 3 or 4 lines, and
 * scattered). A macro, used in the loop's own body: GCC 12 takes a
 * function whose statements are only prefetches for one without effect
 * and deletes its calls, inline or not (seen with objdump: the ledger's
 * loop had none of a helper's seven; pid_index.h says the same of its own).
 */
#ifndef KEPLER_COLLECTD_PREFETCH_H
#define KEPLER_COLLECTD_PREFETCH_H

/* Every line of *@p, for a record of at most 256 bytes (a hint: nothing is read). */
#define KEPLER_PREFETCH_RECORD(p)                                                   \
	do {                                                                        \
		const char *b_ = (const char *)(p);                                 \
		_Static_assert(sizeof(*(p)) <= 256, "a record of at most 4 lines"); \
		__builtin_prefetch(b_);                                             \
		__builtin_prefetch(b_ + 64);                                        \
		__builtin_prefetch(b_ + 128);                                       \
		__builtin_prefetch(b_ + sizeof(*(p)) - 1);                          \
	} while (0)

#endif /* KEPLER_COLLECTD_PREFETCH_H */
