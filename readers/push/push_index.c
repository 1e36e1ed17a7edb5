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

static size_t *slot_of(const struct push_index *x, const void *entries, const char *key, size_t len)
{
	size_t mask = x->nslots - 1, i = (size_t)XXH3_64bits(key, len) & mask;

	while (x->slots[i] && !same(x, entries, x->slots[i] - 1, key, len))
		i = (i + 1) & mask;
	return &x->slots[i];
}

/* Twice the slots, the @n entries placed again. */
static int grow(struct push_index *x, const void *entries, size_t n)
{
	size_t size = x->nslots ? 2 * x->nslots : 1024, *old = x->slots;

	if (!(x->slots = calloc(size, sizeof(*x->slots)))) {
		x->slots = old;
		return -ENOMEM;
	}
	x->nslots = size;
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *k = x->key_of(entries, i, &len);

		*slot_of(x, entries, k, len) = i + 1;
	}
	free(old);
	return 0;
}

int push_index_find(struct push_index *x, const void *entries, size_t n, const char *key, size_t len,
		    size_t *ret_found)
{
	size_t *sl;

	if ((n + 1) * 2 > x->nslots && grow(x, entries, n) < 0)
		return -ENOMEM;
	sl = slot_of(x, entries, key, len);
	if (!*sl)
		*sl = n + 1;
	*ret_found = *sl - 1;
	return 0;
}

void push_index_clear(struct push_index *x)
{
	if (x->slots)
		memset(x->slots, 0, x->nslots * sizeof(*x->slots));
}

void push_index_free(struct push_index *x)
{
	free(x->slots);
	x->slots = NULL;
	x->nslots = 0;
}
