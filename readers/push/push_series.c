// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "push_series.h"

#define FORGET_MIN 1024 /* a table this small is never built again */

static const char *key_of(const void *ctx, size_t i, size_t *len)
{
	const struct push_series *c = ctx;

	*len = c->v[i].key_len;
	return c->keys.data + c->v[i].key;
}

void push_series_init(struct push_series *c, push_encode_fn encode, void *ctx, size_t tail)
{
	memset(c, 0, sizeof(*c));
	c->index.key_of = key_of;
	c->encode = encode;
	c->ctx = ctx;
	c->tail = tail;
	c->request = 1; /* (so that "seen in the last one" needs no care for the first) */
}

void push_series_free(struct push_series *c)
{
	free(c->v);
	push_arena_free(&c->keys);
	push_arena_free(&c->enc);
	push_index_free(&c->index);
	kepler_buf_free(&c->key);
	free(c->scratch);
	memset(c, 0, sizeof(*c));
}

/* The table built again from the entries seen in the last request. */
static int forget(struct push_series *c)
{
	struct push_series fresh;
	int r = 0;

	push_series_init(&fresh, c->encode, c->ctx, c->tail);
	fresh.request = c->request;
	for (size_t i = 0; i < c->n && r == 0; i++) {
		const struct push_series_entry *e = &c->v[i];
		struct push_series_entry *x;
		size_t at;

		if (e->seen + 1 < c->request)
			continue;
		if (push_room((void **)&fresh.v, fresh.n, 1, &fresh.cap, sizeof(*fresh.v)) < 0 ||
		    push_index_find(&fresh.index, &fresh, fresh.n, c->keys.data + e->key, e->key_len, &at) <
			    0) {
			r = -ENOMEM;
			break;
		}
		x = &fresh.v[fresh.n];
		*x = *e;
		x->follower = 0;
		x->key = push_arena_put(&fresh.keys, c->keys.data + e->key, e->key_len);
		x->enc = fresh.enc.len;
		if (x->key == SIZE_MAX || !push_arena_room(&fresh.enc, e->head + e->enc_len + c->tail)) {
			x->key_len = 0; /* (the index holds it: whole or matching nothing) */
			fresh.n++;
			r = -ENOMEM;
			break;
		}
		memcpy(fresh.enc.data + x->enc, c->enc.data + e->enc, e->head + e->enc_len);
		fresh.enc.len += e->head + e->enc_len + c->tail;
		fresh.n++;
	}
	if (r < 0) {
		push_series_free(&fresh);
		return r;
	}
	push_series_free(c);
	*c = fresh;
	return 0;
}

int push_series_begin(struct push_series *c)
{
	size_t stale = c->n - c->found; /* (not found in the request that ends) */

	c->request++;
	c->found = 0;
	return c->n >= FORGET_MIN && stale * 2 >= c->n ? forget(c) : 0;
}

/* A new entry for @s, whose key is @key (the index already holds its position, c->n). */
static int add(struct push_series *c, const struct push_sample *s, const char *key)
{
	struct push_label labels[PUSH_MAX_LABELS];
	struct push_series_entry *x = &c->v[c->n];
	size_t n, need = PUSH_KEY_SCRATCH(s->key_len);
	int r = 0;

	memset(x, 0, sizeof(*x)); /* (key_len 0 until whole: an entry abandoned matches nothing) */
	c->n++;
	if (need > c->scratch_cap) {
		free(c->scratch);
		c->scratch_cap = 0;
		if (!(c->scratch = malloc(need)))
			return -ENOMEM;
		c->scratch_cap = need;
	}
	if ((x->key = push_arena_put(&c->keys, key, s->key_len)) == SIZE_MAX) {
		x->key = 0;
		return -ENOMEM;
	}
	x->enc = c->enc.len;
	if (push_key_labels(key, s->key_len, labels, &n, c->scratch) < 0)
		x->invalid = true;
	else if ((r = c->encode(c->ctx, labels, n, &c->enc)) < 0)
		return r;
	else
		x->head = (size_t)r;
	x->enc_len = c->enc.len - x->enc - x->head;
	if (!push_arena_room(&c->enc, c->tail))
		return -ENOMEM;
	c->enc.len += c->tail;
	x->key_len = s->key_len;
	return 0;
}

/* Whether entry @i is @s's series: by id when @s has one (a kept key is not read), else by key. */
static bool same(const struct push_series *c, size_t i, const struct push_sample *s)
{
	const struct push_series_entry *e = &c->v[i];

	if (s->id)
		return e->id == s->id;
	return e->key_len == s->key_len && !memcmp(c->keys.data + e->key, s->key, s->key_len);
}

int push_series_find(struct push_series *c, const struct push_sample *s, size_t *ret, unsigned *flags)
{
	size_t guess = c->prev ? c->v[c->prev - 1].follower : 0, at;
	struct push_series_entry *x;
	const char *key;
	int r;

	*flags = 0;
	if (guess && same(c, guess - 1, s)) {
		at = guess - 1;
	} else {
		if (!(key = push_sample_key(s, &c->key)) ||
		    push_room((void **)&c->v, c->n, 1, &c->cap, sizeof(*c->v)) < 0 ||
		    push_index_find(&c->index, c, c->n, key, s->key_len, &at) < 0)
			return -ENOMEM;
		if (at == c->n) {
			if ((r = add(c, s, key)) < 0)
				return r;
			*flags |= PUSH_SERIES_NEW;
		}
		if (s->id) /* (its key is the entry's: the id names it from now on) */
			c->v[at].id = s->id;
		if (c->prev)
			c->v[c->prev - 1].follower = at + 1;
	}
	c->prev = at + 1;
	x = &c->v[at];
	if (x->seen != c->request) {
		x->seen = c->request;
		c->found++;
		*flags |= PUSH_SERIES_FIRST;
	}
	*ret = at;
	return x->invalid ? 1 : 0;
}
