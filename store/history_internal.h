/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/history_internal.h: the history ledger's inside, shared by the
 * ledger (history.c) and its tier record codec (history_record.c). Not a
 * public header: readers use kepler/history.h.
 */
#ifndef KEPLER_STORE_HISTORY_INTERNAL_H
#define KEPLER_STORE_HISTORY_INTERNAL_H

#include "kepler/config.h"
#include "kepler/history.h"

/* a row's strings: id, name, ns, pod_id, runtime, exe, container_id, vm_id, owner_kind, owner_name, labels */
#define HISTORY_NSTR 11

struct kepler_history {
	char *zones[KEPLER_MAX_ZONES];
	size_t nzones;
	struct kepler_history_row **rows;
	size_t nrows, cap;
	size_t *slots; /* open addressing: row index + 1, 0 empty */
	size_t nslots;
	uint64_t seq, wall_ns;
	uint32_t intensity;
};

/* The address of row @r's string @i (0 to HISTORY_NSTR - 1, in the order above). */
char **history_row_str(struct kepler_history_row *r, int i);
const char *history_row_cstr(const struct kepler_history_row *r, int i);
/* Free @r and its strings (NULL: nothing). */
void history_row_free(struct kepler_history_row *r);
/* Room for @n zones in @r's arrays, the first @old_n kept; -ENOMEM. */
int history_row_zones(struct kepler_history_row *r, size_t old_n, size_t n);
/* Take @r (owned from now on, freed on error) as a new row of @h; -ENOMEM. */
int history_insert(struct kepler_history *h, struct kepler_history_row *r);

#endif /* KEPLER_STORE_HISTORY_INTERNAL_H */
