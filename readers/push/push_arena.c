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

static const char *pair_key(const void *ctx, size_t i, size_t *len)
{
	const struct push_pairs *p = ctx;

	*len = p->v[i].key_len;
	return p->arena.data + p->v[i].name;
}

void push_pairs_init(struct push_pairs *p)
{
	memset(p, 0, sizeof(*p));
	memset(p->last, 0xff, sizeof(p->last)); /* none */
	p->index.key_of = pair_key;
}

size_t push_pairs_intern(struct push_pairs *p, size_t pos, const char *name, const char *value)
{
	size_t nlen, vlen, len, at, n, *last = pos < PUSH_PAIRS_LAST ? &p->last[pos] : NULL;

	if (last && *last < p->n && !strcmp(p->arena.data + p->v[*last].name, name) &&
	    !strcmp(p->arena.data + p->v[*last].value, value))
		return *last;
	nlen = strlen(name);
	vlen = strlen(value);
	len = nlen + 1 + vlen;

	if (push_room((void **)&p->scratch, 0, len, &p->scratch_cap, 1) < 0 ||
	    push_room((void **)&p->v, p->n, 1, &p->cap, sizeof(*p->v)) < 0)
		return SIZE_MAX;
	memcpy(p->scratch, name, nlen + 1);
	memcpy(p->scratch + nlen + 1, value, vlen);
	if (push_index_find(&p->index, p, p->n, p->scratch, len, &at) < 0)
		return SIZE_MAX;
	if (last)
		*last = at;
	if (at < p->n)
		return at;
	p->v[at] = (struct push_pair){ 0, 0, 0 }; /* (matches nothing until whole) */
	if ((n = push_arena_put(&p->arena, p->scratch, len)) == SIZE_MAX)
		return SIZE_MAX;
	p->v[at] = (struct push_pair){ n, n + nlen + 1, len };
	p->n++;
	return at;
}

void push_pairs_clear(struct push_pairs *p)
{
	p->n = 0;
	p->arena.len = 0;
	push_index_clear(&p->index);
	memset(p->last, 0xff, sizeof(p->last)); /* none */
}

void push_pairs_free(struct push_pairs *p)
{
	free(p->arena.data);
	free(p->v);
	free(p->scratch);
	push_index_free(&p->index);
	push_pairs_init(p);
}
