// SPDX-License-Identifier: Apache-2.0
/*
 * The informer's process table: entries in a dense array (iterated in
 * order, handed out as the refresh's result) indexed by (pid, start time)
 * (pid_index.h). Tables are rebuilt at each refresh, so there is no
 * deletion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "informer_internal.h"

static uint64_t start_of(const void *items, uint32_t i)
{
	return ((const struct kepler_proc_entry *)items)[i].pub.start_time_ns;
}

static void index_item(struct kepler_proc_table *t, size_t i)
{
	const struct kepler_proc_entry *e = &t->items[i];

	kepler_pid_index_put(&t->index, e->pub.pid, e->pub.start_time_ns, (uint32_t)i, start_of, t->items);
}

int kepler_proc_table_reserve(struct kepler_proc_table *t, size_t n)
{
	int r;

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
	r = kepler_pid_index_reserve(&t->index, n);
	if (r < 0)
		return r;
	for (size_t i = 0; r == 1 && i < t->count; i++)
		index_item(t, i); /* new slots: the items indexed again */
	return 0;
}

struct kepler_proc_entry *kepler_proc_table_find(const struct kepler_proc_table *t, uint32_t pid,
						 uint64_t start_time_ns)
{
	int64_t i = kepler_pid_index_find(&t->index, pid, start_time_ns, start_of, t->items);

	return i < 0 ? NULL : &t->items[i];
}

struct kepler_proc_entry *kepler_proc_table_add(struct kepler_proc_table *t,
						const struct kepler_proc_entry *e)
{
	if (kepler_proc_table_reserve(t, t->count + 1) < 0)
		return NULL;
	t->items[t->count] = *e;
	index_item(t, t->count++);
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
	index_item(t, t->count - 1);
}

void kepler_proc_table_clear(struct kepler_proc_table *t)
{
	t->count = 0;
	kepler_pid_index_clear(&t->index);
}

void kepler_proc_table_free(struct kepler_proc_table *t)
{
	free(t->items);
	kepler_pid_index_free(&t->index);
	memset(t, 0, sizeof(*t));
}
