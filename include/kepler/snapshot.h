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

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"

/*
 * The blob format the store writes (4.2: zstd-compressed sections, records
 * as bit-packed blocks of differences) and the plain one
 * kepler_snapshot_encode() makes (1.7); this code reads every 1.x, 2.x, 3.x
 * and 4.x (docs/store.md, "Versioning").
 */
#define KEPLER_FORMAT_MAJOR 4
#define KEPLER_FORMAT_MINOR 2
#define KEPLER_PLAIN_FORMAT_MAJOR 1
#define KEPLER_PLAIN_FORMAT_MINOR 7

/*
 * Energy zones in a snapshot: the CPU meter's (package, core, uncore, dram,
 * psys), platform and platform-other, and one per GPU: room for 32 GPUs
 * beside the rest. Readers older than this (16) refuse a snapshot of more.
 */
#define KEPLER_MAX_ZONES 40
/* Hardware counter value meaning "this machine has no such counter". */
#define KEPLER_COUNTER_UNAVAILABLE UINT64_MAX

enum kepler_source {
	KEPLER_SOURCE_UNKNOWN = 0,
	KEPLER_SOURCE_RAPL,
	KEPLER_SOURCE_HWMON,
	KEPLER_SOURCE_NVML,
	KEPLER_SOURCE_MODEL,
	KEPLER_SOURCE_FAKE,
	KEPLER_SOURCE_PASSTHROUGH, /* a VM's share of its host's energy, from kepler-passthrough */
	KEPLER_SOURCE_REDFISH,     /* the server's BMC (format 2.1) */
	KEPLER_SOURCE_IPMI,        /* the server's BMC over IPMI, DCMI's power reading (format 4.1) */
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

/*
 * Where each zone's idle energy goes (attribution.idle; format 2.2 / 1.5):
 * NONE keeps it at the node (Kepler's); CPU gives it to processes as their
 * active energy is given; SIZE by their container's size (CPU request or
 * cgroup weight). See docs/attribution.md.
 */
enum kepler_idle_policy {
	KEPLER_IDLE_NONE = 0,
	KEPLER_IDLE_CPU,
	KEPLER_IDLE_SIZE,
	KEPLER_IDLE_POLICY_COUNT,
};

/* Snapshot flags (header). */
enum kepler_snapshot_flags {
	KEPLER_SNAP_FIRST = 1u << 0,       /* first interval after start: no deltas */
	KEPLER_SNAP_HW_COUNTERS = 1u << 1, /* processes carry hardware counters */
};

struct kepler_energy {
	uint64_t total_uj;
	uint64_t delta_uj;
};

/*
 * How a zone's energy was split into active and idle (attribution.active-split):
 * NONE is Kepler's usage-ratio rule (active = energy x CPU usage); CONFIGURED,
 * FITTED (from the node's history of power against CPU usage) and MINIMUM
 * (a GPU's lowest power with no process on it; a CPU zone's in older stores)
 * subtract an idle baseline power. UNFITTED: attribution.active-split
 * baseline, but no fit trusted yet, so the zone was split by the usage ratio
 * (idle_uw 0): an idle power is never invented.
 */
enum kepler_baseline_method {
	KEPLER_BASELINE_NONE = 0,
	KEPLER_BASELINE_CONFIGURED,
	KEPLER_BASELINE_FITTED,
	KEPLER_BASELINE_MINIMUM,
	KEPLER_BASELINE_UNFITTED,
	KEPLER_BASELINE_METHOD_COUNT,
};

struct kepler_baseline {
	uint64_t idle_uw;     /* idle power subtracted (microwatts); 0 with NONE */
	uint32_t method;      /* enum kepler_baseline_method */
	uint32_t quality_ppm; /* FITTED: the fit's R^2 in millionths; else 0 */
	uint32_t samples;     /* intervals the estimate is based on (0 if configured) */
};

/*
 * What a zone that is one device (a GPU: source nvml) is (format 2.1 / 1.4);
 * "" strings and index 0 for every other zone, and in older snapshots.
 */
struct kepler_device {
	uint32_t index;     /* the driver's device index (Kepler's gpu label) */
	const char *uuid;   /* "GPU-8f3c..." */
	const char *name;   /* "NVIDIA H100 80GB HBM3" */
	const char *vendor; /* "nvidia" */
};

struct kepler_zone {
	const char *name; /* "package", "dram", ..., "gpu0" */
	const char *path; /* sysfs path, "aggregated-package", or "" */
	enum kepler_source source;
	struct kepler_energy energy; /* active + idle */
	struct kepler_energy active;
	struct kepler_energy idle;
	struct kepler_baseline baseline; /* format 1.2; NONE in older snapshots */
	/* the zone's energy counters since the collector started (format 1.2; 0 before) */
	uint64_t meter_resets; /* went back or jumped implausibly: that step not counted */
	uint64_t meter_wraps;  /* wrapped around their range: counted across */
	/*
	 * format 2.1 / 1.4: the energy no process of the snapshot took. Under
	 * idle policy NONE, of the active part (a GPU's while no process ran
	 * on it, or whose processes the informer did not see; 0 for CPU zones,
	 * whose active part is all given to processes): Σ processes ==
	 * active - unattributed. Under CPU and SIZE (format 2.2), of the whole
	 * energy: Σ processes' active + idle == energy - unattributed. Exact.
	 */
	struct kepler_energy unattributed;
	struct kepler_device device;
};

/* A zone that is a device of its own (a GPU), not a part of the CPU's or node's energy. */
bool kepler_zone_is_device(const struct kepler_zone *z);

/* What every workload level has in common. */
struct kepler_usage {
	enum kepler_state state;
	uint64_t cpu_time_ns;       /* cumulative */
	uint64_t cpu_time_delta_ns; /* this interval */
	struct kepler_energy
		*zones; /* snapshot->nzones entries: the active energy (all of it under idle policy NONE) */
	/*
	 * format 2.2: under idle policy CPU or SIZE, the idle energy given to
	 * the workload, snapshot->nzones entries beside @zones; NULL under NONE.
	 */
	struct kepler_energy *idle;
};

struct kepler_process {
	uint32_t pid;
	uint64_t start_time_ns; /* since boot; (pid, start) is the identity */
	const char *comm;
	const char *exe; /* "" for kernel threads or when unreadable */
	enum kepler_process_type type;
	const char *container_id;                    /* "" if none */
	const char *vm_id;                           /* "" if none */
	uint64_t cycles, instructions, cache_misses; /* or KEPLER_COUNTER_UNAVAILABLE */
	struct kepler_usage usage;
	uint32_t flags; /* enum kepler_process_flags (format 4.1 / 1.6; 0 before) */
};

enum kepler_process_flags {
	/*
	 * With less energy in the primary zone than
	 * monitor.min-terminated-energy, ended in this interval or first seen
	 * in it: its energy of this interval is also in its fold (struct
	 * kepler_fold), which readers may show instead.
	 */
	KEPLER_PROCESS_FOLDED = 1u << 0,
	/*
	 * A piece of a process's account (a bit readers before it ignore: to
	 * them, a short process that ended): the
	 * CPU time, and the energy, that process @pid ran in this interval
	 * under an identity it has since left (comm, exe, container, VM: before
	 * an exec, or before a move to another cgroup), recorded as that
	 * identity and terminated. Its start_time_ns is the process's plus an
	 * offset below one clock tick, so that (pid, start_time_ns) still names
	 * one record. Its deltas are the piece's; its totals (energy, CPU time)
	 * the process's at the cut, so that a counter of the process goes up
	 * whatever labels it had. The process's own record holds what ran
	 * after. The eBPF informer cuts them (docs/attribution.md).
	 */
	KEPLER_PROCESS_PIECE = 1u << 1,
};

/*
 * Short processes folded (format 4.1 / 1.6): per container, else per VM,
 * else one for the node's other processes, the sums of the processes
 * flagged KEPLER_PROCESS_FOLDED in each interval: usage's deltas are the
 * sums of those processes' deltas, its totals the sums of every such delta
 * since the fold began (each process counted once in @processes). So that a
 * reader can show one series where thousands of processes came and went,
 * and per zone, Σ unfolded processes + Σ folds == the processes' sum in
 * every snapshot.
 */
struct kepler_fold {
	const char *container_id; /* "" for the node's fold and VMs' */
	const char *vm_id;        /* "" unless a VM's (or a container's that is a VM's too) */
	uint64_t processes;       /* processes folded since the fold began */
	uint64_t processes_delta; /* in this interval */
	struct kepler_usage usage;
};

struct kepler_container {
	const char *id;
	const char *name;
	const char *runtime; /* docker, containerd, crio, podman, kubernetes */
	const char *pod_id;  /* "" if none */
	struct kepler_usage usage;
	/*
	 * format 2.2: its size under idle policy SIZE, in CPU shares (1024 =
	 * one CPU): from its CPU request, else its cgroup's weight; 0 otherwise.
	 */
	uint64_t size_shares;
};

struct kepler_vm {
	const char *id;
	const char *name;
	const char *hypervisor; /* kvm, ... */
	struct kepler_usage usage;
};

struct kepler_pod {
	const char *id; /* pod UID */
	const char *name;
	const char *ns; /* namespace */
	struct kepler_usage usage;
	/*
	 * format 4.2 / 1.7 ("" before, and when unknown): the pod's controller
	 * (Deployment, StatefulSet, DaemonSet, CronJob, Job, ReplicaSet, or any
	 * other kind; "" for a bare pod) and the labels kube.pod-labels names,
	 * as "KEY=VALUE,KEY=VALUE" in that order (a label the pod lacks is
	 * left out; kepler_pod_label() reads one).
	 */
	const char *owner_kind;
	const char *owner_name;
	const char *labels;
};

/*
 * The value of label @key in pod labels text @labels ("KEY=VALUE,..."):
 * its start and *@ret_len, or NULL when the text has no such label.
 */
const char *kepler_pod_label(const char *labels, const char *key, size_t *ret_len);

struct kepler_snapshot {
	uint64_t seq;           /* assigned by the store at commit */
	uint64_t wall_ns;       /* CLOCK_REALTIME at the end of the interval */
	uint64_t mono_ns;       /* CLOCK_MONOTONIC at the end of the interval */
	uint64_t interval_ns;   /* length of this interval (0 for the first) */
	uint32_t flags;         /* enum kepler_snapshot_flags */
	double cpu_usage_ratio; /* node busy / total CPU time, 0..1 */
	uint64_t node_cpu_busy_delta_ns;
	uint64_t node_cpu_total_delta_ns;
	uint32_t cpu_count; /* CPUs the collector counted (cpuN lines of /proc/stat); 0 if not recorded */
	uint32_t skipped_entries; /* /proc entries that could not be read */
	uint32_t lost_entries;    /* processes lost to full eBPF maps */
	/*
	 * format 1.3: intervals the store could not take (a full disk, an I/O
	 * error) merged into this snapshot, whose deltas and interval_ns cover
	 * them too, and how long the store had refused commits (wall clock, from
	 * the first refused one to this one); 0 and 0 for a snapshot stored on time.
	 */
	uint32_t unstored_intervals;
	uint64_t unstored_ns;
	/* format 1.3: the collector's own cost: CPU time since it started, resident memory */
	uint64_t collector_cpu_ns;
	uint64_t collector_rss_bytes;
	/* format 2.2: enum kepler_idle_policy (NONE in older snapshots) */
	uint32_t idle_policy;

	size_t nzones;
	struct kepler_zone zones[KEPLER_MAX_ZONES];
	size_t nprocesses, ncontainers, nvms, npods;
	struct kepler_process *processes;
	struct kepler_container *containers;
	struct kepler_vm *vms;
	struct kepler_pod *pods;
	size_t nfolds; /* format 4.1 / 1.6; 0 before */
	struct kepler_fold *folds;

	/* storage of a decoded snapshot (NULL for one built by the collector) */
	void *blob;
	struct kepler_energy *energy_pool;
	struct kepler_energy *idle_pool;
	struct kepler_energy *fold_pool; /* the folds' energies (active, then idle under a policy) */
};

/* ---- the model's vocabulary (store/snapshot.c), shared by the collector and every reader ---- */

/* Names of the enums ("rapl", "terminated", "container", ...); out of range: the first. */
const char *kepler_source_name(enum kepler_source s);
const char *kepler_baseline_method_name(enum kepler_baseline_method m);
const char *kepler_idle_policy_name(enum kepler_idle_policy p); /* "none", "cpu", "size" */
const char *kepler_state_name(enum kepler_state s);
const char *kepler_process_type_name(enum kepler_process_type t);

/* The four kinds of workload a snapshot holds. */
enum kepler_kind {
	KEPLER_KIND_PROCESS = 0,
	KEPLER_KIND_CONTAINER,
	KEPLER_KIND_VM,
	KEPLER_KIND_POD,
	KEPLER_KIND_COUNT,
};

/* "process", "container", "vm", "pod". */
const char *kepler_kind_name(enum kepler_kind k);

/*
 * One workload of any kind, seen the same way by every reader. Strings are
 * never NULL ("" when absent) and point into the snapshot.
 */
struct kepler_workload {
	enum kepler_kind kind;
	size_t index;       /* in the snapshot's array of its kind */
	uint32_t pid;       /* processes; 0 for the others */
	const char *id;     /* container and VM id, pod UID; "" for processes */
	const char *name;   /* comm; the name ("" when it has none) */
	const char *title;  /* what a person reads: the name, or the id when it has none */
	const char *detail; /* exe; container runtime; VM hypervisor; pod namespace */
	const char *parent; /* a process's container (else VM) id; a container's pod UID; else "" */
	const struct kepler_usage *usage;
};

/* How many workloads of kind @k @snap holds. */
size_t kepler_workload_count(const struct kepler_snapshot *snap, enum kepler_kind k);

/* The @i-th workload of kind @k (@i below kepler_workload_count()). */
struct kepler_workload kepler_workload_at(const struct kepler_snapshot *snap, enum kepler_kind k, size_t i);

/*
 * The zone names kepler-c gives, the one list of them: the CPU meter's
 * (RAPL's domains, a platform meter), the part of the platform no other
 * zone explains, and one "gpuN" per GPU.
 */
#define KEPLER_ZONE_PACKAGE "package"
#define KEPLER_ZONE_CORE "core"
#define KEPLER_ZONE_UNCORE "uncore"
#define KEPLER_ZONE_DRAM "dram"
#define KEPLER_ZONE_PSYS "psys"
#define KEPLER_ZONE_PLATFORM "platform"
#define KEPLER_ZONE_PLATFORM_OTHER "platform-other"
#define KEPLER_ZONE_GPU_PREFIX "gpu"

/* No place in the list: kepler_zone_rank() of a name it does not hold. */
#define KEPLER_ZONE_RANK_UNKNOWN 100

/*
 * The place of meter zone @name in a snapshot's zone order: package, core,
 * uncore, dram, psys, platform; KEPLER_ZONE_RANK_UNKNOWN for any other.
 */
int kepler_zone_rank(const char *name);

/*
 * The primary zone, which ranks workloads (Kepler's): the first present of
 * psys, package, core, dram, uncore; else the first zone (0).
 */
size_t kepler_primary_zone_of(const char *const *names, size_t n);
size_t kepler_primary_zone(const struct kepler_snapshot *snap);

/* The orders in which readers list workloads. */
enum kepler_sort {
	KEPLER_SORT_WATTS = 0, /* power in the primary zone, then energy */
	KEPLER_SORT_ENERGY,    /* cumulative energy in the primary zone */
	KEPLER_SORT_CPU,       /* CPU time in the interval, then energy */
	KEPLER_SORT_PID,       /* pid (processes), id (others) */
	KEPLER_SORT_NAME,      /* title (comm; name or id), in byte order */
	KEPLER_SORT_COUNT,
};

/* "watts", "energy", "cpu", "pid", "name". */
const char *kepler_sort_name(enum kepler_sort s);
/* The sort named @name; -EINVAL if none. */
int kepler_sort_from_name(const char *name, enum kepler_sort *ret);

/*
 * Sort @rows (workloads of @snap) by @sort, watts and energy in the primary
 * zone: largest first for watts, energy and cpu (ties: energy, then pid,
 * then id); smallest first for pid and name (ties: pid, then id). The
 * order is total, and the same in kepler-stdout and kepler-top.
 */
void kepler_workload_sort(const struct kepler_snapshot *snap, struct kepler_workload *rows, size_t n,
			  enum kepler_sort sort);

/*
 * Encode @snap into a newly allocated blob of the plain format (1.3: what
 * older readers read; the store writes kepler_snapshot_encode_packed()). On success *ret_blob (free with
 * free()) and *ret_len are set. Returns 0, -EINVAL (more than
 * KEPLER_MAX_ZONES zones, a NULL string, a workload without zones) or -ENOMEM.
 */
int kepler_snapshot_encode(const struct kepler_snapshot *snap, void **ret_blob, size_t *ret_len,
			   struct kepler_error *err);

/*
 * Encode @snap as the store keeps it: format 4.0, its sections in one zstd
 * frame, compressed at zstd's @level (1 is fast; see docs/performance.md),
 * or at one of the levels below. Same results and errors as
 * kepler_snapshot_encode(), and -EINVAL if zstd refuses.
 */
/* not compressed: the frame's raw blocks (any zstd decoder reads them) */
#define KEPLER_PACK_STORED 0
/* what the store writes: stored below KEPLER_PACK_STORED_BELOW bytes of blocks, else level 1 */
#define KEPLER_PACK_AUTO INT_MIN
#define KEPLER_PACK_STORED_BELOW (32 * 1024)
int kepler_snapshot_encode_packed(const struct kepler_snapshot *snap, int level, void **ret_blob,
				  size_t *ret_len, struct kepler_error *err);

/*
 * Decode and validate a blob (format 1.x, 2.x, 3.x or 4.x). The result owns a copy of the blob: its
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
