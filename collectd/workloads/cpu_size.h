/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/workloads/cpu_size.h: how big each workload is, for the idle
 * policy size (attribution.idle size; docs/attribution.md).
 *
 * Each interval the processes are grouped into units: a container (by its
 * id), else the processes that share a cgroup of the cpu controller. A
 * unit's size is in CPU shares (1024 = one CPU, the kernel's default):
 *   - a container's CPU request from the kubelet when known, converted as
 *     the kubelet does (millicores x 1024 / 1000, at least 2);
 *   - else its cgroup's weight: cpu.shares (cgroup v1) as it is, or
 *     cpu.weight (v2) x 1024 / 100, the linear map systemd uses between
 *     the two (weight 100, the default, is 1024 shares);
 *   - 1024 when neither can be read (counted).
 * Weights are cached per cgroup and read again every minute.
 */
#ifndef KEPLER_COLLECTD_CPU_SIZE_H
#define KEPLER_COLLECTD_CPU_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"
#include "ledger.h"

#define KEPLER_DEFAULT_SHARES 1024

struct kepler_cpu_sizes;

/*
 * Find the cpu controller's hierarchy under @sysfs (fs/cgroup: v2 when it
 * lists the cpu controller, else the v1 cpu mount). None found is not an
 * error: every unit is then 1024 shares, which the description says.
 * -ENOMEM.
 */
int kepler_cpu_sizes_open(const char *sysfs, struct kepler_cpu_sizes **ret, struct kepler_error *err);

/* One line for the start-up log. */
const char *kepler_cpu_sizes_describe(const struct kepler_cpu_sizes *s);

/* Start an interval's units; @now_ns (monotonic) ages the cache. */
void kepler_cpu_sizes_begin(struct kepler_cpu_sizes *s, uint64_t now_ns);

/*
 * The unit of a process: in container @container_id ("" if none), in
 * cgroup @cgroup (the cpu controller's path, "" if unknown), whose CPU
 * request is @request_mcpu (0: unknown). Its index in *@ret_unit. -ENOMEM.
 */
int kepler_cpu_sizes_unit(struct kepler_cpu_sizes *s, const char *container_id, const char *cgroup,
			  uint32_t request_mcpu, uint32_t *ret_unit);

/* The units of this interval so far. */
const struct kepler_ledger_unit *kepler_cpu_sizes_units(const struct kepler_cpu_sizes *s, size_t *ret_n);

/* Cgroups whose weight could not be read, since open. */
uint64_t kepler_cpu_sizes_unreadable(const struct kepler_cpu_sizes *s);

void kepler_cpu_sizes_close(struct kepler_cpu_sizes *s);

#endif /* KEPLER_COLLECTD_CPU_SIZE_H */
