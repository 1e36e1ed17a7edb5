/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/history_internal.h: the history ledger's inside, shared by the
 * ledger (history.c) and its tier record codec (history_record.c). Not a
 * public header: readers use kepler/history.h.
 */
#ifndef KEPLER_STORE_HISTORY_INTERNAL_H
#define KEPLER_STORE_HISTORY_INTERNAL_H

#include <stddef.h>

#include "kepler/config.h"
#include "kepler/history.h"

/* a row's strings: id, name, ns, pod_id, runtime, exe, container_id, vm_id, owner_kind, owner_name, labels */
#define HISTORY_NSTR 11

struct history_slot {
	uint64_t hash; /* the row's, so a probe reads a row only when it may be the one */
	size_t row;    /* row index + 1; 0: empty */
};

/*
 * The row a process of one add went to, by what names it in the snapshot:
 * its exe, container and VM strings' addresses and its comm's bytes
 * (history.c's memo_of()).
 */
#define HISTORY_MEMO 1024 /* entries, a power of two */
struct history_memo {
	const char *exe, *container_id, *vm_id;
	char comm[16]; /* a comm of at most 15 bytes */
	size_t comm_len;
	uint64_t add; /* the add that filled it (kepler_history's adds); older ones are void */
	struct kepler_history_row *row;
};

struct kepler_history {
	char *zones[KEPLER_MAX_ZONES];
	size_t nzones;
	struct kepler_history_row **rows;
	size_t nrows, cap;
	struct history_slot *slots; /* open addressing, by row_hash() */
	size_t nslots;
	uint64_t seq, wall_ns;
	uint32_t intensity;
	struct history_memo *memo;      /* HISTORY_MEMO entries, made at the first add; NULL: none */
	struct history_memo *memo_last; /* the entry the last process went to (void unless of this add) */
	uint64_t adds;                  /* kepler_history_add() calls */
};

/*
 * The address of row @r's string @i (0 to HISTORY_NSTR - 1, in the order
 * above). Inline, by offset: called for every key field of every workload
 * of every snapshot.
 */
static inline char **history_row_str(struct kepler_history_row *r, int i)
{
	static const size_t at[HISTORY_NSTR] = {
		offsetof(struct kepler_history_row, id),
		offsetof(struct kepler_history_row, name),
		offsetof(struct kepler_history_row, ns),
		offsetof(struct kepler_history_row, pod_id),
		offsetof(struct kepler_history_row, runtime),
		offsetof(struct kepler_history_row, exe),
		offsetof(struct kepler_history_row, container_id),
		offsetof(struct kepler_history_row, vm_id),
		offsetof(struct kepler_history_row, owner_kind),
		offsetof(struct kepler_history_row, owner_name),
		offsetof(struct kepler_history_row, labels),
	};

	return (char **)((char *)r + at[i]);
}

static inline const char *history_row_cstr(const struct kepler_history_row *r, int i)
{
	return *history_row_str((struct kepler_history_row *)r, i);
}
/* Free @r and its strings (NULL: nothing). */
void history_row_free(struct kepler_history_row *r);
/* Room for @n zones in @r's arrays, the first @old_n kept; -ENOMEM. */
int history_row_zones(struct kepler_history_row *r, size_t old_n, size_t n);
/* Take @r (owned from now on, freed on error) as a new row of @h; -ENOMEM. */
int history_insert(struct kepler_history *h, struct kepler_history_row *r);

#endif /* KEPLER_STORE_HISTORY_INTERNAL_H */
