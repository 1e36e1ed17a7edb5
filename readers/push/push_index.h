/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_index.h: entries by their key (a series' by its
 * exposition key, push_series.h; an OTLP metric's by its name): open
 * addressing on the key's hash, the entries' own array kept by the caller
 * (an index holds positions, not entries).
 */
#ifndef KEPLER_PUSH_INDEX_H
#define KEPLER_PUSH_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* The key of entry @i of the caller's array, its length in *@len. */
typedef const char *(*push_key_fn)(const void *entries, size_t i, size_t *len);

struct push_slot {
	uint64_t hash;
	size_t entry; /* entry + 1; 0: free */
};

struct push_index {
	struct push_slot *slots; /* each with its key's hash: a probe compares keys only when hashes match */
	size_t nslots;
	push_key_fn key_of;
};

/*
 * Where @key's entry is: *@ret_found is its position when there is one;
 * otherwise the position @n (the next entry the caller will add) is
 * recorded for it and *@ret_found is @n. @entries: the caller's array of
 * @n entries. -ENOMEM.
 */
int push_index_find(struct push_index *x, const void *entries, size_t n, const char *key, size_t len,
		    size_t *ret_found);
void push_index_free(struct push_index *x);

#endif
