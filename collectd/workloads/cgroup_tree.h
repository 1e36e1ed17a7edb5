/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/workloads/cgroup_tree.h: the node's cgroup layout, seen through
 * host.sysfs (in a pod, the host's /sys mounted at /host/sys: the pod's own
 * /sys/fs/cgroup shows its own cgroup alone). It says which hierarchy
 * holds every container (where container runtimes and the kubelet put
 * them): the cpu controller's, in cgroup v2 the unified hierarchy, in
 * cgroup v1 and hybrid layouts the cpu controller's v1 hierarchy (on
 * hybrid nodes the v2 hierarchy holds systemd's units alone, or nothing).
 *
 * Found from files, not from the filesystems' types, so that a tree
 * written in place of sysfs by a test is read as the real one:
 *   - <sysfs>/fs/cgroup/cgroup.controllers: cgroup v2;
 *   - else a v1 hierarchy with the cpu controller (cpu.shares at its
 *     root): <sysfs>/fs/cgroup/cpu, else any <sysfs>/fs/cgroup/NAME whose
 *     comma-separated NAME lists cpu ("cpu,cpuacct"); v1, or hybrid when
 *     <sysfs>/fs/cgroup/unified/cgroup.controllers exists too;
 *   - else <sysfs>/fs/cgroup/unified alone: hybrid, through it;
 *   - else none.
 */
#ifndef KEPLER_COLLECTD_CGROUP_TREE_H
#define KEPLER_COLLECTD_CGROUP_TREE_H

#include <stdbool.h>

enum kepler_cgroup_layout {
	KEPLER_CGROUP_NONE,
	KEPLER_CGROUP_V2,
	KEPLER_CGROUP_V1,
	KEPLER_CGROUP_HYBRID,
};

struct kepler_cgroup_tree {
	enum kepler_cgroup_layout layout;
	bool v1_cpu; /* @path is the cpu controller's v1 hierarchy (cpu.shares), else cgroup2 (cpu.weight) */
	char path[4096]; /* the hierarchy that holds the containers; "" if none */
};

/* The layout under @sysfs ("/sys", or the host's as a pod mounts it). */
void kepler_cgroup_tree_find(const char *sysfs, struct kepler_cgroup_tree *ret);

/* "v2", "v1", "hybrid", "none". */
const char *kepler_cgroup_layout_name(enum kepler_cgroup_layout layout);

#endif /* KEPLER_COLLECTD_CGROUP_TREE_H */
