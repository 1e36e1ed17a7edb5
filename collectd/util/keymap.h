/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/util/keymap.h: a small hash map from byte-string keys (at most
 * KEPLER_KEY_MAX bytes, copied in) to indexes into the caller's arrays.
 * Open addressing with linear probing over 16-byte slots (hash and where
 * the key lies), the keys apart in one block: four slots to a cache line,
 * so that a lookup costs one miss, two for a hit. No deletion (maps are
 * rebuilt each interval), so it stays simple and fast.
 */
#ifndef KEPLER_COLLECTD_KEYMAP_H
#define KEPLER_COLLECTD_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

#define KEPLER_KEY_MAX 72

struct kepler_keymap_slot {
	uint64_t hash; /* 0: empty */
	uint32_t index;
	uint32_t key; /* offset of the key in the block: its length, then its bytes */
};

struct kepler_keymap {
	struct kepler_keymap_slot *slots;
	size_t nslots; /* power of two */
	size_t count;
	unsigned char *keys; /* the keys, in the order they were put */
	size_t keys_used, keys_cap;
};

/*
 * Make room for @count keys, so that putting up to that many allocates
 * nothing and cannot fail for memory. -ENOMEM.
 */
int kepler_keymap_reserve(struct kepler_keymap *m, size_t count);

/* Map @key to @index (replacing an existing mapping). -ENOMEM, -E2BIG. */
int kepler_keymap_put(struct kepler_keymap *m, const void *key, size_t len, uint32_t index);
/* The index of @key, or -1. */
int64_t kepler_keymap_get(const struct kepler_keymap *m, const void *key, size_t len);
void kepler_keymap_clear(struct kepler_keymap *m);
void kepler_keymap_free(struct kepler_keymap *m);

/* The key of a process: (pid, start time) packed into 12 bytes. */
size_t kepler_proc_key(uint32_t pid, uint64_t start_time_ns, char key[12]);

#endif /* KEPLER_COLLECTD_KEYMAP_H */
