// SPDX-License-Identifier: Apache-2.0
/*
 * The pool is a chained hash table whose entries carry their string. Each
 * entry points back to its pool, so that a string is given back on its own
 * (an identity is freed where no pool is at hand).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "strpool.h"

struct pooled {
	struct kepler_strpool *pool;
	struct pooled *next; /* in its bucket */
	uint64_t hash;
	size_t refs;
	char s[];
};

struct kepler_strpool {
	struct pooled **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
};

#define FIRST_BUCKETS 64

struct kepler_strpool *kepler_strpool_new(void)
{
	struct kepler_strpool *pool = calloc(1, sizeof(*pool));

	if (!pool)
		return NULL;
	pool->buckets = calloc(FIRST_BUCKETS, sizeof(*pool->buckets));
	if (!pool->buckets) {
		free(pool);
		return NULL;
	}
	pool->nbuckets = FIRST_BUCKETS;
	return pool;
}

void kepler_strpool_free(struct kepler_strpool *pool)
{
	if (!pool)
		return;
	/* strings still held are a caller's bug; free them rather than leak them */
	for (size_t i = 0; i < pool->nbuckets; i++)
		for (struct pooled *e = pool->buckets[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	free(pool->buckets);
	free(pool);
}

static struct pooled **bucket_of(const struct kepler_strpool *pool, uint64_t hash)
{
	return &pool->buckets[hash & (pool->nbuckets - 1)];
}

/* Twice the buckets; the pool stays as it was when out of memory (its chains get longer). */
static void grow(struct kepler_strpool *pool)
{
	size_t n = pool->nbuckets * 2;
	struct pooled **buckets = calloc(n, sizeof(*buckets));
	struct kepler_strpool bigger = { buckets, n, pool->count };

	if (!buckets)
		return;
	for (size_t i = 0; i < pool->nbuckets; i++)
		for (struct pooled *e = pool->buckets[i], *next; e; e = next) {
			struct pooled **b = bucket_of(&bigger, e->hash);

			next = e->next;
			e->next = *b;
			*b = e;
		}
	free(pool->buckets);
	*pool = bigger;
}

const char *kepler_strpool_get(struct kepler_strpool *pool, const char *s)
{
	size_t len = strlen(s);
	uint64_t hash = XXH3_64bits(s, len);
	struct pooled **b = bucket_of(pool, hash), *e;

	for (e = *b; e; e = e->next)
		if (e->hash == hash && strcmp(e->s, s) == 0) {
			e->refs++;
			return e->s;
		}
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	*e = (struct pooled){ .pool = pool, .next = *b, .hash = hash, .refs = 1 };
	memcpy(e->s, s, len + 1);
	*b = e;
	if (++pool->count > pool->nbuckets)
		grow(pool);
	return e->s;
}

/* The entry of a pooled string (its pool's, not the caller's to change). */
static struct pooled *entry_of(const char *s)
{
	return (struct pooled *)(uintptr_t)(s - offsetof(struct pooled, s));
}

const char *kepler_strpool_ref(const char *s)
{
	entry_of(s)->refs++;
	return s;
}

void kepler_strpool_put(const char *s)
{
	struct pooled *e, **at;

	if (!s)
		return;
	e = entry_of(s);
	if (--e->refs)
		return;
	for (at = bucket_of(e->pool, e->hash); *at != e; at = &(*at)->next)
		;
	*at = e->next;
	e->pool->count--;
	free(e);
}

size_t kepler_strpool_count(const struct kepler_strpool *pool)
{
	return pool ? pool->count : 0;
}
