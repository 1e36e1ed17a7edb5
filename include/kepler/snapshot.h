/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/snapshot.h: the in-memory model of one snapshot (one interval),
 * and its encoding as a self-describing blob (the store's value format).
 *
 * Energy is in integer microjoules, each figure as the cumulative total and
 * this interval's delta. Times are in nanoseconds. A process is identified
 * by (pid, start_time_ns), never by pid alone. Every workload has one energy
 * entry per node zone, in the order of snapshot->zones.
 */
#ifndef KEPLER_SNAPSHOT_H
#define KEPLER_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"

/* The blob format this code writes; it reads every 1.x. */
#define KEPLER_FORMAT_MAJOR 1
#define KEPLER_FORMAT_MINOR 1

#define KEPLER_MAX_ZONES 16
/* Hardware counter value meaning "this machine has no such counter". */
#define KEPLER_COUNTER_UNAVAILABLE UINT64_MAX

enum kepler_source {
	KEPLER_SOURCE_UNKNOWN = 0,
	KEPLER_SOURCE_RAPL,
	KEPLER_SOURCE_HWMON,
	KEPLER_SOURCE_NVML,
	KEPLER_SOURCE_MODEL,
	KEPLER_SOURCE_FAKE,
	KEPLER_SOURCE_COUNT,
};

enum kepler_state {
	KEPLER_STATE_RUNNING = 0,
	KEPLER_STATE_TERMINATED,
	KEPLER_STATE_COUNT,
};

enum kepler_process_type {
	KEPLER_PROC_REGULAR = 0,
	KEPLER_PROC_CONTAINER,
	KEPLER_PROC_VM,
	KEPLER_PROC_KERNEL,
	KEPLER_PROC_TYPE_COUNT,
};

/* Snapshot flags (header). */
enum kepler_snapshot_flags {
	KEPLER_SNAP_FIRST = 1u << 0,     /* first interval after start: no deltas */
	KEPLER_SNAP_HW_COUNTERS = 1u << 1, /* processes carry hardware counters */
};

struct kepler_energy {
	uint64_t total_uj;
	uint64_t delta_uj;
};

struct kepler_zone {
	const char *name;    /* "package", "dram", ... */
	const char *path;    /* sysfs path, "aggregated-package", or "" */
	enum kepler_source source;
	struct kepler_energy energy; /* active + idle */
	struct kepler_energy active;
	struct kepler_energy idle;
};

/* What every workload level has in common. */
struct kepler_usage {
	enum kepler_state state;
	uint64_t cpu_time_ns;       /* cumulative */
	uint64_t cpu_time_delta_ns; /* this interval */
	struct kepler_energy *zones; /* snapshot->nzones entries */
};

struct kepler_process {
	uint32_t pid;
	uint64_t start_time_ns;     /* since boot; (pid, start) is the identity */
	const char *comm;
	const char *exe;            /* "" for kernel threads or when unreadable */
	enum kepler_process_type type;
	const char *container_id;   /* "" if none */
	const char *vm_id;          /* "" if none */
	uint64_t cycles, instructions, cache_misses; /* or KEPLER_COUNTER_UNAVAILABLE */
	struct kepler_usage usage;
};

struct kepler_container {
	const char *id;
	const char *name;
	const char *runtime;   /* docker, containerd, crio, podman, kubernetes */
	const char *pod_id;    /* "" if none */
	struct kepler_usage usage;
};

struct kepler_vm {
	const char *id;
	const char *name;
	const char *hypervisor; /* kvm, ... */
	struct kepler_usage usage;
};

struct kepler_pod {
	const char *id;        /* pod UID */
	const char *name;
	const char *ns;        /* namespace */
	struct kepler_usage usage;
};

struct kepler_snapshot {
	uint64_t seq;           /* assigned by the store at commit */
	uint64_t wall_ns;       /* CLOCK_REALTIME at the end of the interval */
	uint64_t mono_ns;       /* CLOCK_MONOTONIC at the end of the interval */
	uint64_t interval_ns;   /* length of this interval (0 for the first) */
	uint32_t flags;         /* enum kepler_snapshot_flags */
	double cpu_usage_ratio; /* node busy / total CPU time, 0..1 */
	uint64_t node_cpu_busy_delta_ns;
	uint64_t node_cpu_total_delta_ns;
	uint32_t cpu_count;       /* CPUs the collector counted (cpuN lines of /proc/stat); 0 if not recorded */
	uint32_t skipped_entries; /* /proc entries that could not be read */
	uint32_t lost_entries;    /* processes lost to full eBPF maps */

	size_t nzones;
	struct kepler_zone zones[KEPLER_MAX_ZONES];
	size_t nprocesses, ncontainers, nvms, npods;
	struct kepler_process *processes;
	struct kepler_container *containers;
	struct kepler_vm *vms;
	struct kepler_pod *pods;

	/* storage of a decoded snapshot (NULL for one built by the collector) */
	void *blob;
	struct kepler_energy *energy_pool;
};

const char *kepler_source_name(enum kepler_source s);
const char *kepler_state_name(enum kepler_state s);
const char *kepler_process_type_name(enum kepler_process_type t);

/*
 * Encode @snap into a newly allocated blob. On success *ret_blob (free with
 * free()) and *ret_len are set. Returns 0, -EINVAL (more than
 * KEPLER_MAX_ZONES zones, a NULL string, a workload without zones) or -ENOMEM.
 */
int kepler_snapshot_encode(const struct kepler_snapshot *snap, void **ret_blob,
			   size_t *ret_len, struct kepler_error *err);

/*
 * Decode and validate a blob. The result owns a copy of the blob: its
 * strings point into it; free it with kepler_snapshot_free(). Errors:
 * -EPROTO (corrupt or truncated, with what is wrong), -EPROTONOSUPPORT
 * (a newer major format, naming both versions), -ENOMEM.
 */
int kepler_snapshot_decode(const void *blob, size_t len, struct kepler_snapshot **ret_snap,
			   struct kepler_error *err);

/*
 * Read only the header fields (seq, times, flags, ratio, counts) of a blob,
 * checking its structure but not its checksum (that would read it all);
 * kepler_snapshot_decode() checks everything.
 */
int kepler_snapshot_peek(const void *blob, size_t len, struct kepler_snapshot *ret_header,
			 struct kepler_error *err);

/* Free a decoded snapshot. Accepts NULL. */
void kepler_snapshot_free(struct kepler_snapshot *snap);

#endif /* KEPLER_SNAPSHOT_H */
