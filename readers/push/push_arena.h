/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_arena.h: the growable arrays and byte arenas requests
 * are built in, so that a batch of 100,000 samples costs a handful of
 * allocations, not one per label; their memory is kept from one request
 * to the next.
 */
#ifndef KEPLER_PUSH_ARENA_H
#define KEPLER_PUSH_ARENA_H

#include <stddef.h>

/* Room for @more entries of @size bytes in *@v, which holds @n (*@cap allocated). -ENOMEM. */
int push_room(void **v, size_t n, size_t more, size_t *cap, size_t size);

/* Bytes found again by offset (the buffer moves as it grows). */
struct push_arena {
	char *data;
	size_t len, cap;
};

/* @n bytes of @p, and a NUL, appended: their offset. SIZE_MAX: out of memory. */
size_t push_arena_put(struct push_arena *a, const char *p, size_t n);
/* Room for @n more bytes: where they go (a->data + a->len; the caller adds what it wrote to a->len). NULL: out of memory. */
void *push_arena_room(struct push_arena *a, size_t n);
void push_arena_free(struct push_arena *a);

#endif
