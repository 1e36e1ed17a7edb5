// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "push_arena.h"

int push_room(void **v, size_t n, size_t more, size_t *cap, size_t size)
{
	size_t c = *cap ? *cap : 256;
	void *nv;

	if (n + more <= *cap)
		return 0;
	while (c < n + more)
		c *= 2;
	if (!(nv = realloc(*v, c * size)))
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

size_t push_arena_put(struct push_arena *a, const char *p, size_t n)
{
	size_t at = a->len;

	if (push_room((void **)&a->data, a->len, n + 1, &a->cap, 1) < 0)
		return SIZE_MAX;
	memcpy(a->data + at, p, n);
	a->data[at + n] = 0;
	a->len += n + 1;
	return at;
}
