/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/array.h: the one growable array. A caller keeps its items as a
 * typed pointer and a capacity, and asks for room before it appends:
 *
 *	if (kepler_array_reserve((void **)&t->items, &t->cap, t->n + 1, sizeof(*t->items)) < 0)
 *		return -ENOMEM;
 *	t->items[t->n++] = item;
 *
 * The capacity doubles (from 16), so that appending n items costs O(n).
 */
#ifndef KEPLER_ARRAY_H
#define KEPLER_ARRAY_H

#include <stddef.h>

/* As kepler_array_reserve(), never past @max items: -E2BIG when @need is more. */
int kepler_array_reserve_max(void **items, size_t *cap, size_t need, size_t size, size_t max);

/*
 * Room for at least @need items of @size bytes in *@items, whose capacity
 * is *@cap items (0 and NULL at first). Never leaves *@items NULL on
 * success, even for @need 0. -ENOMEM (or a byte size that would overflow):
 * *@items and *@cap are unchanged and still valid. Inline when there is
 * room: appends call it once per item (10,000 calls an interval in the
 * collector's informer, 0.3 % of it spent in the call).
 */
static inline int kepler_array_reserve(void **items, size_t *cap, size_t need, size_t size)
{
	if (*items && (need ? need : 1) <= *cap)
		return 0;
	return kepler_array_reserve_max(items, cap, need, size, (size_t)-1);
}

#endif /* KEPLER_ARRAY_H */
