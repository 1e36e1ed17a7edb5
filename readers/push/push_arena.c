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

void *push_arena_room(struct push_arena *a, size_t n)
{
	if (push_room((void **)&a->data, a->len, n ? n : 1, &a->cap, 1) <
	    0) /* (never NULL: NULL is out of memory) */
		return NULL;
	return a->data + a->len;
}

size_t push_arena_put(struct push_arena *a, const char *p, size_t n)
{
	size_t at = a->len;
	char *to = push_arena_room(a, n + 1);

	if (!to)
		return SIZE_MAX;
	memcpy(to, p, n);
	to[n] = 0;
	a->len += n + 1;
	return at;
}

void push_arena_free(struct push_arena *a)
{
	free(a->data);
	a->data = NULL;
	a->len = a->cap = 0;
}
