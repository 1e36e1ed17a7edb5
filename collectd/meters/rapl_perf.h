/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/rapl_perf.h: RAPL through perf_event (meter.source
 * rapl-perf): how the kernel's RAPL PMU describes itself in sysfs, and the
 * arithmetic of its counts. The meter itself is opened through meter.h;
 * this header is what the meter and its tests share.
 */
#ifndef KEPLER_COLLECTD_RAPL_PERF_H
#define KEPLER_COLLECTD_RAPL_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "kepler/error.h"

#define KEPLER_PERF_MAX_EVENTS 8
#define KEPLER_PERF_MAX_PACKAGES 64

/* One energy event of the PMU: events/energy-<name>, its .scale and .unit. */
struct kepler_perf_event {
	char name[32];     /* "pkg", "ram", "cores", "gpu", "psys" */
	char zone[32];     /* the zone it measures: "package", "dram", "core", "uncore", "psys" */
	uint64_t config;   /* perf_event_attr.config: the file's event=0xNN */
	long double scale; /* joules per count */
};

/* The PMU (<sysfs>/bus/event_source/devices/power). */
struct kepler_rapl_pmu {
	char dir[4096];
	uint32_t type; /* perf_event_attr.type */
	struct kepler_perf_event ev[KEPLER_PERF_MAX_EVENTS];
	unsigned nevents;
	/* its cpumask: one CPU per package, and that package's id */
	int cpu[KEPLER_PERF_MAX_PACKAGES];
	int package[KEPLER_PERF_MAX_PACKAGES];
	unsigned ncpus;
};

/*
 * Read the PMU under @sysfs: its type, cpumask, and every events/energy-*
 * file with a scale and the unit Joules (sorted by zone). -ENOENT when
 * there is no RAPL PMU; -EINVAL naming the file and what it holds when a
 * file is not what the kernel writes.
 */
int kepler_rapl_pmu_read(const char *sysfs, struct kepler_rapl_pmu *pmu, struct kepler_error *err);

/* "event=0x02" (perf's format attribute, config:0-7): the config. -EINVAL otherwise. */
int kepler_perf_parse_event(const char *text, uint64_t *ret);

/* "2.3283064365386962890625e-10": joules per count, finite and above 0. -EINVAL otherwise. */
int kepler_perf_parse_scale(const char *text, long double *ret);

/* A CPU list ("0,18", "0-1,4"): up to @max CPUs, ascending. -EINVAL, -E2BIG. */
int kepler_perf_parse_cpulist(const char *text, int *cpus, unsigned max, unsigned *ret_n);

/* @count counts of @scale joules in whole microjoules (rounded down). */
uint64_t kepler_perf_count_uj(uint64_t count, long double scale);

/*
 * How counters are opened and read: perf_event_open(2) and read(2), or a
 * test's. open returns a descriptor or -errno; read fills *count (the
 * counter's 64-bit total) or returns -errno.
 */
struct kepler_perf_io {
	int (*open)(void *ctx, uint32_t type, uint64_t config, int cpu);
	int (*read)(void *ctx, int fd, uint64_t *count);
	void *ctx;
};

/* For tests: the io the next rapl-perf meter opened uses (NULL: the kernel's). */
void kepler_rapl_perf_set_io(const struct kepler_perf_io *io);

#endif /* KEPLER_COLLECTD_RAPL_PERF_H */
