// SPDX-License-Identifier: Apache-2.0
/*
 * Workloads' sizes for the idle policy size: see cpu_size.h for the rules.
 * Units and the weight cache are keyed by a 128-bit hash of the container
 * id or cgroup path (paths are longer than the key map's keys).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "cgroup_tree.h"
#include "cpu_size.h"
#include "keymap.h"
#include "procfs.h"

#define CACHE_TTL_NS (60ULL * 1000000000ULL)

struct kepler_cpu_sizes {
	int rootfd; /* the cpu controller's hierarchy; -1 if none */
	bool v2;    /* cpu.weight, else cpu.shares */
	char describe[256];
	/* weights by cgroup, read again after CACHE_TTL */
	struct kepler_keymap cache;
	uint64_t *cached;
	size_t ncached, cached_cap;
	uint64_t cache_since_ns;
	/* this interval's units */
	struct kepler_keymap map;
	struct kepler_ledger_unit *units;
	size_t nunits, units_cap;
	uint64_t unreadable;
};

static bool lists_cpu(const char *controllers)
{
	for (const char *p = controllers; (p = strstr(p, "cpu")); p += 3)
		if ((p == controllers || p[-1] == ' ') && (p[3] == ' ' || p[3] == '\n' || p[3] == '\0'))
			return true;
	return false;
}

int kepler_cpu_sizes_open(const char *sysfs, struct kepler_cpu_sizes **ret, struct kepler_error *err)
{
	struct kepler_cpu_sizes *s = calloc(1, sizeof(*s));
	struct kepler_cgroup_tree tree;
	char path[4200], buf[512];
	size_t len;

	if (!s)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	s->rootfd = -1;
	kepler_cgroup_tree_find(sysfs, &tree);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", tree.path);
	s->v2 = tree.layout == KEPLER_CGROUP_V2 && kepler_read_file(path, buf, sizeof(buf), &len) == 0 &&
		lists_cpu(buf);
	if (s->v2 || tree.v1_cpu)
		s->rootfd = open(tree.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->rootfd >= 0)
		snprintf(s->describe, sizeof(s->describe), "sizes from %s in %.160s (cgroup %s)",
			 s->v2 ? "cpu.weight" : "cpu.shares", tree.path, s->v2 ? "v2" : "v1");
	else
		snprintf(
			s->describe, sizeof(s->describe),
			"no cpu controller under %.100s/fs/cgroup: every workload without a CPU request counts as 1024 shares",
			sysfs);
	*ret = s;
	return 0;
}

const char *kepler_cpu_sizes_describe(const struct kepler_cpu_sizes *s)
{
	return s->describe;
}

void kepler_cpu_sizes_begin(struct kepler_cpu_sizes *s, uint64_t now_ns)
{
	kepler_keymap_clear(&s->map);
	s->nunits = 0;
	if (now_ns - s->cache_since_ns >= CACHE_TTL_NS || now_ns < s->cache_since_ns) {
		kepler_keymap_clear(&s->cache);
		s->ncached = 0;
		s->cache_since_ns = now_ns;
	}
}

/* A cgroup path that stays inside the hierarchy: absolute, no ".." component. */
static bool safe_path(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *q = p; (q = strstr(q, "/..")); q += 3)
		if (q[3] == '/' || q[3] == '\0')
			return false;
	return true;
}

/* The shares of @cgroup's weight file, or 0 if it cannot be read. */
static uint64_t read_shares(const struct kepler_cpu_sizes *s, const char *cgroup)
{
	char path[4200], buf[64], *end;
	unsigned long long v;
	size_t len;
	int n;

	if (s->rootfd < 0 || !safe_path(cgroup))
		return 0;
	n = snprintf(path, sizeof(path), "%s%s%s", cgroup + 1, cgroup[1] ? "/" : "",
		     s->v2 ? "cpu.weight" : "cpu.shares");
	if (n < 0 || (size_t)n >= sizeof(path) ||
	    kepler_read_file_at(s->rootfd, path, buf, sizeof(buf), &len) < 0)
		return 0;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v == 0 || v > 1ULL << 40)
		return 0;
	return s->v2 ? v * KEPLER_DEFAULT_SHARES / 100 : v;
}

static void key_of(char prefix, const char *str, char key[17])
{
	XXH128_hash_t h = XXH3_128bits(str, strlen(str));

	key[0] = prefix;
	memcpy(key + 1, &h.low64, 8);
	memcpy(key + 9, &h.high64, 8);
}

/* @cgroup's shares, from the cache or read now (1024 when unreadable, counted). */
static int shares_of(struct kepler_cpu_sizes *s, const char *cgroup, uint64_t *ret)
{
	char key[17];
	int64_t at;
	void *p;

	if (!cgroup[0]) {
		*ret = KEPLER_DEFAULT_SHARES;
		return 0;
	}
	key_of('g', cgroup, key);
	at = kepler_keymap_get(&s->cache, key, sizeof(key));
	if (at >= 0) {
		*ret = s->cached[at];
		return 0;
	}
	if (s->ncached == s->cached_cap) {
		size_t cap = s->cached_cap ? 2 * s->cached_cap : 64;

		p = realloc(s->cached, cap * sizeof(*s->cached));
		if (!p)
			return -ENOMEM;
		s->cached = p;
		s->cached_cap = cap;
	}
	*ret = read_shares(s, cgroup);
	if (!*ret) {
		s->unreadable++;
		*ret = KEPLER_DEFAULT_SHARES;
	}
	if (kepler_keymap_put(&s->cache, key, sizeof(key), (uint32_t)s->ncached) < 0)
		return -ENOMEM;
	s->cached[s->ncached++] = *ret;
	return 0;
}

int kepler_cpu_sizes_unit(struct kepler_cpu_sizes *s, const char *container_id, const char *cgroup,
			  uint32_t request_mcpu, uint32_t *ret_unit)
{
	bool container = container_id && container_id[0];
	char key[17];
	int64_t at;
	uint64_t shares;
	int r;

	key_of(container ? 'c' : 'g', container ? container_id : cgroup, key);
	at = kepler_keymap_get(&s->map, key, sizeof(key));
	if (at >= 0) {
		*ret_unit = (uint32_t)at;
		return 0;
	}
	if (s->nunits == s->units_cap) {
		size_t cap = s->units_cap ? 2 * s->units_cap : 64;
		void *p = realloc(s->units, cap * sizeof(*s->units));

		if (!p)
			return -ENOMEM;
		s->units = p;
		s->units_cap = cap;
	}
	if (container && request_mcpu) {
		shares = (uint64_t)request_mcpu * KEPLER_DEFAULT_SHARES / 1000;
		if (shares < 2)
			shares = 2; /* the kubelet's minimum */
	} else if ((r = shares_of(s, cgroup, &shares)) < 0) {
		return r;
	}
	if (kepler_keymap_put(&s->map, key, sizeof(key), (uint32_t)s->nunits) < 0)
		return -ENOMEM;
	s->units[s->nunits] = (struct kepler_ledger_unit){ .size_shares = shares, .container = container };
	*ret_unit = (uint32_t)s->nunits++;
	return 0;
}

const struct kepler_ledger_unit *kepler_cpu_sizes_units(const struct kepler_cpu_sizes *s, size_t *ret_n)
{
	*ret_n = s->nunits;
	return s->units;
}

uint64_t kepler_cpu_sizes_unreadable(const struct kepler_cpu_sizes *s)
{
	return s->unreadable;
}

void kepler_cpu_sizes_close(struct kepler_cpu_sizes *s)
{
	if (!s)
		return;
	if (s->rootfd >= 0)
		close(s->rootfd);
	kepler_keymap_free(&s->cache);
	kepler_keymap_free(&s->map);
	free(s->cached);
	free(s->units);
	free(s);
}
