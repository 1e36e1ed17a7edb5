// SPDX-License-Identifier: Apache-2.0
/* Byte-string keys to indexes: see keymap.h. XXH3 for the hash. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "keymap.h"

#define KEY_ROOM (1 + KEPLER_KEY_MAX) /* the most one key takes in the block */

static uint64_t hash_of(const void *key, size_t len)
{
	uint64_t h = XXH3_64bits(key, len);

	return h ? h : 1; /* 0 marks an empty slot */
}

/* Rehash into @n slots (a power of two, above twice the count). */
static int rehash(struct kepler_keymap *m, size_t n)
{
	struct kepler_keymap_slot *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->nslots; i++) {
		const struct kepler_keymap_slot *o = &m->slots[i];
		size_t s;

		if (!o->hash)
			continue;
		for (s = o->hash & (n - 1); slots[s].hash; s = (s + 1) & (n - 1))
			;
		slots[s] = *o;
	}
	free(m->slots);
	m->slots = slots;
	m->nslots = n;
	return 0;
}

static int reserve_keys(struct kepler_keymap *m, size_t count)
{
	size_t want = count * KEY_ROOM;
	unsigned char *keys;

	if (want <= m->keys_cap)
		return 0;
	if (want > UINT32_MAX)
		return -ENOMEM; /* offsets are 32-bit */
	keys = realloc(m->keys, want);
	if (!keys)
		return -ENOMEM;
	m->keys = keys;
	m->keys_cap = want;
	return 0;
}

int kepler_keymap_reserve(struct kepler_keymap *m, size_t count)
{
	size_t n = m->nslots ? m->nslots : 256;

	while (count * 2 > n)
		n *= 2;
	if (reserve_keys(m, count) < 0)
		return -ENOMEM;
	return n == m->nslots ? 0 : rehash(m, n);
}

static bool same_key(const struct kepler_keymap *m, const struct kepler_keymap_slot *e, const void *key,
		     size_t len)
{
	const unsigned char *k = m->keys + e->key;

	return k[0] == len && !memcmp(k + 1, key, len);
}

int kepler_keymap_put(struct kepler_keymap *m, const void *key, size_t len, uint32_t index)
{
	uint64_t h;
	size_t s;

	if (len > KEPLER_KEY_MAX)
		return -E2BIG;
	if ((m->count + 1) * 2 > m->nslots && kepler_keymap_reserve(m, m->count + 1) < 0)
		return -ENOMEM;
	if (m->keys_used + KEY_ROOM > m->keys_cap && reserve_keys(m, 2 * (m->count + 1)) < 0)
		return -ENOMEM;
	h = hash_of(key, len);
	for (s = h & (m->nslots - 1); m->slots[s].hash; s = (s + 1) & (m->nslots - 1)) {
		struct kepler_keymap_slot *e = &m->slots[s];

		if (e->hash == h && same_key(m, e, key, len)) {
			e->index = index;
			return 0;
		}
	}
	m->slots[s].hash = h;
	m->slots[s].index = index;
	m->slots[s].key = (uint32_t)m->keys_used;
	m->keys[m->keys_used] = (unsigned char)len;
	memcpy(m->keys + m->keys_used + 1, key, len);
	m->keys_used += 1 + len;
	m->count++;
	return 0;
}

int64_t kepler_keymap_get(const struct kepler_keymap *m, const void *key, size_t len)
{
	uint64_t h;

	if (!m->nslots || len > KEPLER_KEY_MAX)
		return -1;
	h = hash_of(key, len);
	for (size_t s = h & (m->nslots - 1); m->slots[s].hash; s = (s + 1) & (m->nslots - 1)) {
		const struct kepler_keymap_slot *e = &m->slots[s];

		if (e->hash == h && same_key(m, e, key, len))
			return e->index;
	}
	return -1;
}

void kepler_keymap_clear(struct kepler_keymap *m)
{
	if (m->slots && m->count)
		memset(m->slots, 0, m->nslots * sizeof(*m->slots));
	m->count = 0;
	m->keys_used = 0;
}

void kepler_keymap_free(struct kepler_keymap *m)
{
	free(m->slots);
	free(m->keys);
	memset(m, 0, sizeof(*m));
}

size_t kepler_proc_key(uint32_t pid, uint64_t start_time_ns, char key[12])
{
	memcpy(key, &pid, 4);
	memcpy(key + 4, &start_time_ns, 8);
	return 12;
}
