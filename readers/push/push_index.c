// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "push_index.h"

static bool same(const struct push_index *x, const void *entries, size_t i, const char *key, size_t len)
{
	size_t n;
	const char *k = x->key_of(entries, i, &n);

	return n == len && !memcmp(k, key, len);
}

static struct push_slot *slot_of(const struct push_index *x, const void *entries, uint64_t hash,
				 const char *key, size_t len)
{
	size_t mask = x->nslots - 1, i = (size_t)hash & mask;

	while (x->slots[i].entry &&
	       (x->slots[i].hash != hash || !same(x, entries, x->slots[i].entry - 1, key, len)))
		i = (i + 1) & mask;
	return &x->slots[i];
}

/* Twice the slots, the entries placed again by their hashes. */
static int grow(struct push_index *x)
{
	size_t size = x->nslots ? 2 * x->nslots : 1024, oldn = x->nslots;
	struct push_slot *old = x->slots;

	if (!(x->slots = calloc(size, sizeof(*x->slots)))) {
		x->slots = old;
		return -ENOMEM;
	}
	x->nslots = size;
	for (size_t i = 0; i < oldn; i++) {
		size_t k = (size_t)old[i].hash & (size - 1);

		if (!old[i].entry)
			continue;
		while (x->slots[k].entry)
			k = (k + 1) & (size - 1);
		x->slots[k] = old[i];
	}
	free(old);
	return 0;
}

int push_index_find(struct push_index *x, const void *entries, size_t n, const char *key, size_t len,
		    size_t *ret_found)
{
	uint64_t hash = XXH3_64bits(key, len);
	struct push_slot *sl;

	if ((n + 1) * 2 > x->nslots && grow(x) < 0)
		return -ENOMEM;
	sl = slot_of(x, entries, hash, key, len);
	if (!sl->entry)
		*sl = (struct push_slot){ hash, n + 1 };
	*ret_found = sl->entry - 1;
	return 0;
}

void push_index_free(struct push_index *x)
{
	free(x->slots);
	x->slots = NULL;
	x->nslots = 0;
}
