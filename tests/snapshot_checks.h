/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sums every snapshot must satisfy, per zone, exactly (DESIGN.md):
 * energy = active + idle; Σ processes = node active (a GPU's: less what no
 * process took, its unattributed); under an idle policy, Σ processes'
 * active + idle + unattributed = energy; Σ processes of a container =
 * container; Σ containers of a pod = pod; Σ processes of a VM = VM, for the
 * active energies and, under an idle policy, for the idle ones; a fold =
 * Σ its folded processes (the deltas, the CPU time and the count). Returns
 * NULL or what is wrong (a static string).
 */
#ifndef KEPLER_TESTS_SNAPSHOT_CHECKS_H
#define KEPLER_TESTS_SNAPSHOT_CHECKS_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kepler/snapshot.h"

/* Workload @u's delta in zone @z: its active energy, or with @idle its idle energy. */
static inline uint64_t checks_delta(const struct kepler_usage *u, size_t z, bool idle)
{
	return idle ? (u->idle ? u->idle[z].delta_uj : 0) : u->zones[z].delta_uj;
}

/* Containers, pods and VMs as sums of their members, in zone @z. */
static inline const char *checks_groups(const struct kepler_snapshot *s, size_t z, bool idle, char *why,
					size_t size)
{
	for (size_t c = 0; c < s->ncontainers; c++) {
		uint64_t cs = 0;

		for (size_t i = 0; i < s->nprocesses; i++)
			if (!strcmp(s->processes[i].container_id, s->containers[c].id))
				cs += checks_delta(&s->processes[i].usage, z, idle);
		if (cs != checks_delta(&s->containers[c].usage, z, idle)) {
			snprintf(why, size, "seq %llu zone %zu: container %s%s", (unsigned long long)s->seq,
				 z, s->containers[c].id, idle ? " (idle)" : "");
			return why;
		}
	}
	for (size_t p = 0; p < s->npods; p++) {
		uint64_t ps = 0;

		for (size_t c = 0; c < s->ncontainers; c++)
			if (!strcmp(s->containers[c].pod_id, s->pods[p].id))
				ps += checks_delta(&s->containers[c].usage, z, idle);
		if (ps != checks_delta(&s->pods[p].usage, z, idle)) {
			snprintf(why, size, "seq %llu zone %zu: pod %s%s", (unsigned long long)s->seq, z,
				 s->pods[p].id, idle ? " (idle)" : "");
			return why;
		}
	}
	for (size_t v = 0; v < s->nvms; v++) {
		uint64_t vs = 0;

		for (size_t i = 0; i < s->nprocesses; i++)
			if (!strcmp(s->processes[i].vm_id, s->vms[v].id))
				vs += checks_delta(&s->processes[i].usage, z, idle);
		if (vs != checks_delta(&s->vms[v].usage, z, idle)) {
			snprintf(why, size, "seq %llu zone %zu: vm %s%s", (unsigned long long)s->seq, z,
				 s->vms[v].id, idle ? " (idle)" : "");
			return why;
		}
	}
	return NULL;
}

/* Whether process @p is of fold @f (a container's; else a VM's; else the node's). */
static inline bool checks_of_fold(const struct kepler_process *p, const struct kepler_fold *f)
{
	if (f->container_id[0])
		return !strcmp(p->container_id, f->container_id);
	if (p->container_id[0])
		return false;
	return !strcmp(p->vm_id, f->vm_id);
}

/* Every fold the sum of its folded processes; every folded process in a fold. */
static inline const char *checks_folds(const struct kepler_snapshot *s, char *why, size_t size)
{
	uint64_t flagged = 0, counted = 0;

	for (size_t i = 0; i < s->nprocesses; i++)
		flagged += (s->processes[i].flags & KEPLER_PROCESS_FOLDED) != 0;
	for (size_t f = 0; f < s->nfolds; f++) {
		const struct kepler_fold *fd = &s->folds[f];
		uint64_t n = 0, cpu = 0;

		for (size_t z = 0; z < s->nzones; z++)
			for (int idle = 0; idle < 2; idle++) {
				uint64_t sum = 0;

				for (size_t i = 0; i < s->nprocesses; i++)
					if ((s->processes[i].flags & KEPLER_PROCESS_FOLDED) &&
					    checks_of_fold(&s->processes[i], fd))
						sum += checks_delta(&s->processes[i].usage, z, idle);
				if (sum != checks_delta(&fd->usage, z, idle)) {
					snprintf(why, size, "seq %llu zone %zu: fold %s/%s%s",
						 (unsigned long long)s->seq, z, fd->container_id, fd->vm_id,
						 idle ? " (idle)" : "");
					return why;
				}
			}
		for (size_t i = 0; i < s->nprocesses; i++)
			if ((s->processes[i].flags & KEPLER_PROCESS_FOLDED) &&
			    checks_of_fold(&s->processes[i], fd)) {
				n++;
				cpu += s->processes[i].usage.cpu_time_delta_ns;
			}
		/* a process folded when new and again when it ends is counted once: at most n */
		if (fd->processes_delta > n || cpu != fd->usage.cpu_time_delta_ns ||
		    fd->processes < fd->processes_delta) {
			snprintf(why, size, "seq %llu: fold %s/%s has %llu processes, %llu folded",
				 (unsigned long long)s->seq, fd->container_id, fd->vm_id,
				 (unsigned long long)fd->processes_delta, (unsigned long long)n);
			return why;
		}
		counted += n;
	}
	if (counted != flagged) {
		snprintf(why, size, "seq %llu: %llu processes folded, %llu in folds",
			 (unsigned long long)s->seq, (unsigned long long)flagged,
			 (unsigned long long)counted);
		return why;
	}
	return NULL;
}

static inline const char *snapshot_sums(const struct kepler_snapshot *s)
{
	static char why[256];
	bool policy = s->idle_policy != KEPLER_IDLE_NONE;

	for (size_t z = 0; z < s->nzones; z++) {
		const struct kepler_zone *zn = &s->zones[z];
		bool device = kepler_zone_is_device(zn);
		uint64_t act = 0, idle = 0;

		if (zn->energy.delta_uj != zn->active.delta_uj + zn->idle.delta_uj) {
			snprintf(why, sizeof(why), "seq %llu zone %zu: energy != active + idle",
				 (unsigned long long)s->seq, z);
			return why;
		}
		for (size_t i = 0; i < s->nprocesses; i++) {
			act += checks_delta(&s->processes[i].usage, z, false);
			idle += checks_delta(&s->processes[i].usage, z, true);
		}
		if (!policy && act + zn->unattributed.delta_uj != zn->active.delta_uj) {
			snprintf(why, sizeof(why), "seq %llu zone %zu: processes %llu != active %llu",
				 (unsigned long long)s->seq, z, (unsigned long long)act,
				 (unsigned long long)zn->active.delta_uj);
			return why;
		}
		if (policy && (act + idle + zn->unattributed.delta_uj != zn->energy.delta_uj ||
			       act > zn->active.delta_uj || idle > zn->idle.delta_uj ||
			       (!device && act != zn->active.delta_uj))) {
			snprintf(
				why, sizeof(why),
				"seq %llu zone %zu: processes' active %llu + idle %llu + unattributed %llu != "
				"energy %llu (active %llu)",
				(unsigned long long)s->seq, z, (unsigned long long)act,
				(unsigned long long)idle, (unsigned long long)zn->unattributed.delta_uj,
				(unsigned long long)zn->energy.delta_uj,
				(unsigned long long)zn->active.delta_uj);
			return why;
		}
		if (checks_groups(s, z, false, why, sizeof(why)) ||
		    (policy && checks_groups(s, z, true, why, sizeof(why))))
			return why;
	}
	return checks_folds(s, why, sizeof(why));
}

#endif /* KEPLER_TESTS_SNAPSHOT_CHECKS_H */
