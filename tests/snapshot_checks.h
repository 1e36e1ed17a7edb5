/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sums every snapshot must satisfy, per zone, exactly (DESIGN.md):
 * energy = active + idle; Σ processes = node active; Σ processes of a
 * container = container; Σ containers of a pod = pod; Σ processes of a
 * VM = VM. Returns NULL or what is wrong (a static string).
 */
#ifndef KEPLER_TESTS_SNAPSHOT_CHECKS_H
#define KEPLER_TESTS_SNAPSHOT_CHECKS_H

#include <stdio.h>
#include <string.h>

#include "kepler/snapshot.h"

static inline const char *snapshot_sums(const struct kepler_snapshot *s)
{
	static char why[256];

	for (size_t z = 0; z < s->nzones; z++) {
		uint64_t sum = 0;

		if (s->zones[z].energy.delta_uj != s->zones[z].active.delta_uj + s->zones[z].idle.delta_uj) {
			snprintf(why, sizeof(why), "seq %llu zone %zu: energy != active + idle",
				 (unsigned long long)s->seq, z);
			return why;
		}
		for (size_t i = 0; i < s->nprocesses; i++)
			sum += s->processes[i].usage.zones[z].delta_uj;
		if (kepler_zone_is_device(&s->zones[z]))
			sum += s->zones[z].unattributed.delta_uj; /* a GPU's: what no process took */
		if (sum != s->zones[z].active.delta_uj) {
			snprintf(why, sizeof(why), "seq %llu zone %zu: processes %llu != active %llu",
				 (unsigned long long)s->seq, z, (unsigned long long)sum,
				 (unsigned long long)s->zones[z].active.delta_uj);
			return why;
		}
		for (size_t c = 0; c < s->ncontainers; c++) {
			uint64_t cs = 0;

			for (size_t i = 0; i < s->nprocesses; i++)
				if (!strcmp(s->processes[i].container_id, s->containers[c].id))
					cs += s->processes[i].usage.zones[z].delta_uj;
			if (cs != s->containers[c].usage.zones[z].delta_uj) {
				snprintf(why, sizeof(why), "seq %llu zone %zu: container %s",
					 (unsigned long long)s->seq, z, s->containers[c].id);
				return why;
			}
		}
		for (size_t p = 0; p < s->npods; p++) {
			uint64_t ps = 0;

			for (size_t c = 0; c < s->ncontainers; c++)
				if (!strcmp(s->containers[c].pod_id, s->pods[p].id))
					ps += s->containers[c].usage.zones[z].delta_uj;
			if (ps != s->pods[p].usage.zones[z].delta_uj) {
				snprintf(why, sizeof(why), "seq %llu zone %zu: pod %s",
					 (unsigned long long)s->seq, z, s->pods[p].id);
				return why;
			}
		}
		for (size_t v = 0; v < s->nvms; v++) {
			uint64_t vs = 0;

			for (size_t i = 0; i < s->nprocesses; i++)
				if (!strcmp(s->processes[i].vm_id, s->vms[v].id))
					vs += s->processes[i].usage.zones[z].delta_uj;
			if (vs != s->vms[v].usage.zones[z].delta_uj) {
				snprintf(why, sizeof(why), "seq %llu zone %zu: vm %s",
					 (unsigned long long)s->seq, z, s->vms[v].id);
				return why;
			}
		}
	}
	return NULL;
}

#endif /* KEPLER_TESTS_SNAPSHOT_CHECKS_H */
