// SPDX-License-Identifier: Apache-2.0
/*
 * The counter-monotonicity check (see monotonic.h). Each identity's totals
 * (one per zone, then CPU time) live in a table indexed through a keymap:
 * processes in two generations (this snapshot's, the previous one's),
 * groups in one table that only grows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/array.h"
#include "keymap.h"
#include "monotonic.h"

#define NVALUES (2 * KEPLER_MAX_ZONES + 1) /* zone totals, idle totals (under a policy), then CPU time */

struct totals {
	struct kepler_keymap map;
	uint64_t (*values)[NVALUES];
	size_t n, cap;
};

struct kepler_monotonic {
	struct totals procs[2]; /* [cur] previous snapshot's, [!cur] being built */
	int cur;
	struct totals groups;
	struct totals node;
	long broken;
	char *why;
	size_t why_size;
};

int kepler_monotonic_new(struct kepler_monotonic **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

/* Compare @v with what @old holds for @key, then store @v in @into (may be @old). */
static int see(struct kepler_monotonic *m, const struct totals *old, struct totals *into, const char *key,
	       size_t len, const uint64_t *v, size_t nv, const char *what)
{
	int64_t at = kepler_keymap_get(&old->map, key, len);
	int r;

	if (at >= 0)
		for (size_t i = 0; i < nv; i++)
			if (v[i] < old->values[at][i]) {
				if (!m->broken++)
					snprintf(m->why, m->why_size,
						 "%s: counter %zu went from %llu to %llu", what, i,
						 (unsigned long long)old->values[at][i],
						 (unsigned long long)v[i]);
			}
	if (old == into && at >= 0) {
		memcpy(into->values[at], v, nv * sizeof(*v));
		return 0;
	}
	r = kepler_array_reserve((void **)&into->values, &into->cap, into->n + 1, sizeof(*into->values));
	if (r == 0)
		r = kepler_keymap_put(&into->map, key, len, (uint32_t)into->n);
	if (r == -E2BIG)
		return 0; /* an id longer than a key: not checked */
	if (r < 0)
		return r;
	memcpy(into->values[into->n++], v, nv * sizeof(*v));
	return 0;
}

static size_t usage_values(const struct kepler_usage *u, size_t nzones, uint64_t *v)
{
	size_t n = 0;

	for (size_t z = 0; z < nzones; z++)
		v[n++] = u->zones[z].total_uj;
	for (size_t z = 0; u->idle && z < nzones; z++)
		v[n++] = u->idle[z].total_uj;
	v[n++] = u->cpu_time_ns;
	return n;
}

static int see_group(struct kepler_monotonic *m, char kind, const char *id, const struct kepler_usage *u,
		     size_t nzones)
{
	char key[KEPLER_KEY_MAX + 2];
	uint64_t v[NVALUES];
	size_t nv = usage_values(u, nzones, v);
	int len = snprintf(key, sizeof(key), "%c%s", kind, id ? id : "");

	if (len < 0 || (size_t)len > KEPLER_KEY_MAX)
		return 0;
	return see(m, &m->groups, &m->groups, key, (size_t)len, v, nv, key);
}

static int check_all(struct kepler_monotonic *m, const struct kepler_snapshot *s)
{
	struct totals *old = &m->procs[m->cur], *now = &m->procs[!m->cur];
	size_t nz = s->nzones;
	uint64_t v[NVALUES];
	int r = 0;

	kepler_keymap_clear(&now->map);
	now->n = 0;
	for (size_t z = 0; z < nz && r == 0; z++) {
		uint64_t t[4] = { s->zones[z].energy.total_uj, s->zones[z].active.total_uj,
				  s->zones[z].idle.total_uj, s->zones[z].unattributed.total_uj };

		r = see(m, &m->node, &m->node, s->zones[z].name, strlen(s->zones[z].name), t, 4, "node zone");
	}
	for (size_t i = 0; i < s->nprocesses && r == 0; i++) {
		const struct kepler_process *p = &s->processes[i];
		char key[12];
		size_t nv = usage_values(&p->usage, nz, v);

		r = see(m, old, now, key, kepler_proc_key(p->pid, p->start_time_ns, key), v, nv, "process");
	}
	for (size_t i = 0; i < s->ncontainers && r == 0; i++)
		r = see_group(m, 'c', s->containers[i].id, &s->containers[i].usage, nz);
	for (size_t i = 0; i < s->nvms && r == 0; i++)
		r = see_group(m, 'v', s->vms[i].id, &s->vms[i].usage, nz);
	for (size_t i = 0; i < s->npods && r == 0; i++)
		r = see_group(m, 'p', s->pods[i].id, &s->pods[i].usage, nz);
	return r;
}

long kepler_monotonic_check(struct kepler_monotonic *m, const struct kepler_snapshot *s, char *why,
			    size_t size)
{
	int r;

	m->broken = 0;
	m->why = why;
	m->why_size = size;
	if (size)
		why[0] = '\0';
	if (s->nzones > KEPLER_MAX_ZONES)
		return 0;
	r = check_all(m, s);
	if (r < 0)
		return r;
	m->cur = !m->cur;
	return m->broken;
}

void kepler_monotonic_free(struct kepler_monotonic *m)
{
	if (!m)
		return;
	for (int i = 0; i < 2; i++) {
		kepler_keymap_free(&m->procs[i].map);
		free(m->procs[i].values);
	}
	kepler_keymap_free(&m->groups.map);
	free(m->groups.values);
	kepler_keymap_free(&m->node.map);
	free(m->node.values);
	free(m);
}
