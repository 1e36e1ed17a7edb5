/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interned, reference-counted strings: the informer's identities share one
 * copy of each exe and cgroup path (a node's thousands of processes run
 * tens of programs in hundreds of cgroups). Equal strings are the same
 * pointer, so whoever compares them (the snapshot encoder, for runs of equal
 * strings) is done without reading them.
 */
#ifndef KEPLER_STRPOOL_H
#define KEPLER_STRPOOL_H

#include <stddef.h>

struct kepler_strpool;

/* An empty pool; NULL when out of memory. */
struct kepler_strpool *kepler_strpool_new(void);

/* Free @pool (NULL is fine); every string taken from it must have been put back first. */
void kepler_strpool_free(struct kepler_strpool *pool);

/* The pool's copy of @s, with one more reference; NULL when out of memory. */
const char *kepler_strpool_get(struct kepler_strpool *pool, const char *s);

/* One more reference to @s, a string of a pool; returns @s. */
const char *kepler_strpool_ref(const char *s);

/* Give back one reference to @s (from kepler_strpool_get; NULL is fine): the last frees it. */
void kepler_strpool_put(const char *s);

/* Distinct strings in @pool. */
size_t kepler_strpool_count(const struct kepler_strpool *pool);

#endif /* KEPLER_STRPOOL_H */
