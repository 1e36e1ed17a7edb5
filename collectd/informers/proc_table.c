// SPDX-License-Identifier: Apache-2.0
/*
 * The informer's process table: entries in a dense array (iterated in
 * order, handed out as the refresh's result) and an open-addressing index
 * on pid, probed linearly; the key is (pid, start time). Tables are
 * rebuilt at each refresh, so there is no deletion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "informer_internal.h"

static size_t slot_of(uint32_t pid, size_t nslots)
{
	return kepler_proc_table_slot_of(pid, nslots);
}

static void reindex(struct kepler_proc_table *t)
{
	memset(t->slots, 0, t->nslots * sizeof(*t->slots));
	for (size_t i = 0; i < t->count; i++) {
		size_t s = slot_of(t->items[i].pub.pid, t->nslots);

		while (t->slots[s])
			s = (s + 1) & (t->nslots - 1);
		t->slots[s] = (uint32_t)i + 1;
	}
}

int kepler_proc_table_reserve(struct kepler_proc_table *t, size_t n)
{
	size_t nslots = 64;

	if (n > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		struct kepler_proc_entry *items;

		while (cap < n)
			cap *= 2;
		items = realloc(t->items, cap * sizeof(*items));
		if (!items)
			return -ENOMEM;
		t->items = items;
		t->cap = cap;
	}
	while (nslots < 2 * n)
		nslots *= 2;
	if (nslots > t->nslots) {
		uint32_t *slots = calloc(nslots, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		free(t->slots);
		t->slots = slots;
		t->nslots = nslots;
		reindex(t);
	}
	return 0;
}

struct kepler_proc_entry *kepler_proc_table_find(const struct kepler_proc_table *t, uint32_t pid,
						 uint64_t start_time_ns)
{
	size_t s;

	if (!t->nslots)
		return NULL;
	for (s = slot_of(pid, t->nslots); t->slots[s]; s = (s + 1) & (t->nslots - 1)) {
		struct kepler_proc_entry *e = &t->items[t->slots[s] - 1];

		if (e->pub.pid == pid && e->pub.start_time_ns == start_time_ns)
			return e;
	}
	return NULL;
}

struct kepler_proc_entry *kepler_proc_table_add(struct kepler_proc_table *t,
						const struct kepler_proc_entry *e)
{
	size_t s;

	if (kepler_proc_table_reserve(t, t->count + 1) < 0)
		return NULL;
	t->items[t->count] = *e;
	for (s = slot_of(e->pub.pid, t->nslots); t->slots[s]; s = (s + 1) & (t->nslots - 1))
		;
	t->slots[s] = (uint32_t)++t->count;
	return &t->items[t->count - 1];
}

struct kepler_proc_entry *kepler_proc_table_push(struct kepler_proc_table *t)
{
	if (kepler_proc_table_reserve(t, t->count + 1) < 0)
		return NULL;
	return &t->items[t->count++];
}

void kepler_proc_table_pop(struct kepler_proc_table *t)
{
	t->count--;
}

void kepler_proc_table_index_last(struct kepler_proc_table *t)
{
	size_t s;

	for (s = slot_of(t->items[t->count - 1].pub.pid, t->nslots); t->slots[s];
	     s = (s + 1) & (t->nslots - 1))
		;
	t->slots[s] = (uint32_t)t->count;
}

void kepler_proc_table_clear(struct kepler_proc_table *t)
{
	t->count = 0;
	if (t->slots)
		memset(t->slots, 0, t->nslots * sizeof(*t->slots));
}

void kepler_proc_table_free(struct kepler_proc_table *t)
{
	free(t->items);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
