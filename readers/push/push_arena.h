/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_arena.h: the growable arrays and the string arena a
 * request is built in, so that a batch of 100,000 samples costs a handful
 * of allocations, not one per label.
 */
#ifndef KEPLER_PUSH_ARENA_H
#define KEPLER_PUSH_ARENA_H

#include <stddef.h>

#include "push_index.h"

/* Room for @more entries of @size bytes in *@v, which holds @n (*@cap allocated). -ENOMEM. */
int push_room(void **v, size_t n, size_t more, size_t *cap, size_t size);

/* Strings, each NUL-terminated, found again by offset (the buffer moves as it grows). */
struct push_arena {
	char *data;
	size_t len, cap;
};

/* @n bytes of @p, and a NUL, appended: their offset. SIZE_MAX: out of memory. */
size_t push_arena_put(struct push_arena *a, const char *p, size_t n);

/*
 * Label pairs (name, value), each kept once however many series carry it:
 * a node's series share most of their labels (node_name, zone, state, a
 * container's), so a request holds a few thousand pairs for a hundred
 * thousand series, and its protobuf structures point to them.
 */
#define PUSH_PAIRS_LAST 32

struct push_pair {
	size_t name, value; /* in the arena */
	size_t key_len;     /* name, NUL, value: the key the index finds it by */
};

struct push_pairs {
	struct push_arena arena;
	struct push_pair *v;
	size_t n, cap;
	struct push_index index;
	char *scratch; /* a key being looked up */
	size_t scratch_cap;
	/* the pair found last at each position of a label set: series come family by family, and
	 * the next one mostly repeats them (node_name, state, zone), found again by a compare */
	size_t last[PUSH_PAIRS_LAST];
};

void push_pairs_init(struct push_pairs *p);
/*
 * The pair's number, new when not seen since the last clear; @pos: its
 * position in its label set (the pair found last there is tried first).
 * SIZE_MAX: out of memory.
 */
size_t push_pairs_intern(struct push_pairs *p, size_t pos, const char *name, const char *value);
void push_pairs_clear(struct push_pairs *p);
void push_pairs_free(struct push_pairs *p);

#endif
