// SPDX-License-Identifier: Apache-2.0
/*
 * The growable array (kepler/array.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "kepler/array.h"

int kepler_array_reserve_max(void **items, size_t *cap, size_t need, size_t size, size_t max)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need == 0)
		need = 1; /* never NULL for an empty array: NULL means out of memory */
	if (need <= *cap && *items)
		return 0;
	if (need > max)
		return -E2BIG;
	if (!size || max > SIZE_MAX / size)
		max = size ? SIZE_MAX / size : 0;
	if (need > max)
		return -ENOMEM;
	while (n < need)
		n = n > max / 2 ? max : n * 2;
	if (n > max)
		n = max;
	q = realloc(*items, n * size);
	if (!q)
		return -ENOMEM;
	*items = q;
	*cap = n;
	return 0;
}
