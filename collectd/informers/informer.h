/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/informers/informer.h: who used the machine during each interval.
 *
 * An informer refreshes once per interval and then holds:
 *   - the node's CPU time from <procfs>/stat (busy and total, cumulative
 *     and this interval's delta, the usage ratio busy/total);
 *   - the processes that used CPU, each identified by (pid, start time),
 *     with comm, exe, type, container/pod and VM, CPU time (cumulative and
 *     this interval's delta), state running or terminated, and hardware
 *     counters (KEPLER_COUNTER_UNAVAILABLE where the machine has none).
 *
 * Kinds (informer: auto|ebpf|procfs; auto tries ebpf, then procfs):
 *   ebpf   on-CPU time accumulated in the kernel at each context switch
 *          (bpf/cputime.bpf.c); processes that start and end inside one
 *          interval are captured with their CPU time.
 *   procfs /proc/PID/stat of every process, at each refresh (tick
 *          resolution); a process that vanished between two refreshes is
 *          reported terminated with the CPU time last seen.
 *
 * The first refresh establishes the baseline: every delta is 0.
 */
#ifndef KEPLER_COLLECTD_INFORMER_H
#define KEPLER_COLLECTD_INFORMER_H

#include <stdbool.h>
#include <stdint.h>

#include "kepler/config.h"
#include "kepler/error.h"
#include "kepler/snapshot.h"
#include "procfs.h"
#include "workload.h"

/* What a process is, resolved once per (pid, start time) and cached. */
struct kepler_proc_identity {
	/* shared with every identity of equal value (strpool.h): equal strings are one pointer */
	const char *exe;    /* "" for kernel threads, or when unreadable (counted as skipped) */
	const char *cgroup; /* cgroup path (v2, else v1 cpu controller), "" if unknown */
	const char
		*cpu_cgroup; /* the path in the cpu controller's hierarchy (v1 cpu, else v2), "" if unknown */
	enum kepler_process_type type;
	/*
	 * Whether container.id and vm.id are set, beside type in the first
	 * cache line: most processes are in neither, and the collector then
	 * reads nothing further of the identity each interval (set once, by
	 * complete_identity(); the identity does not change after).
	 */
	bool in_container, in_vm;
	struct kepler_container_ref container; /* id "" if none (then pod_uid and runtime "" too) */
	struct kepler_vm_ref vm;               /* id "" if none (then name and hypervisor "" too) */
};

struct kepler_proc {
	uint32_t pid;
	uint64_t start_time_ns; /* since boot, USER_HZ resolution (as /proc/PID/stat) */
	char comm[KEPLER_COMM_MAX];
	uint64_t cpu_time_ns;                        /* cumulative: lifetime CPU time of the process */
	uint64_t cpu_time_delta_ns;                  /* this interval */
	enum kepler_state state;                     /* terminated: ended during this interval */
	uint64_t cycles, instructions, cache_misses; /* this interval, or unavailable */
	struct kepler_proc_identity *id;             /* never NULL, owned by the informer */
	uint32_t prev_index; /* 1 + its index in the previous refresh's list; 0 when new */
	/*
	 * A piece of a process's account: the CPU time it ran under an identity
	 * it has left in this interval (an exec, a move to another cgroup),
	 * reported as that identity, terminated; start_time_ns is the process's
	 * plus an offset below one clock tick, so that (pid, start time) names
	 * one entry; cpu_time_delta_ns is the piece's, cpu_time_ns the
	 * process's at the cut. The process's own entry, right after its
	 * pieces, holds what ran after the last. ebpf only.
	 */
	bool piece;
};

struct kepler_node_cpu {
	unsigned cpu_count;
	uint64_t busy_ns, total_ns;             /* since boot, all CPUs */
	uint64_t busy_delta_ns, total_delta_ns; /* this interval */
	double usage_ratio;                     /* busy / total this interval, 0 on the first */
};

struct kepler_informer_stats {
	uint64_t refreshes;
	uint32_t skipped;  /* /proc entries that could not be read, this refresh */
	uint32_t lost;     /* eBPF charges of CPU time dropped because the map was full */
	uint32_t vanished; /* processes gone before they could be resolved, this refresh */
	/*
	 * eBPF with counters: CPU time whose counters were not read (slices
	 * whose switch-in was not seen), this refresh; the counters of those
	 * processes are scaled up to cover it.
	 */
	uint64_t uncounted_ns;
	uint64_t skipped_total, lost_total, uncounted_total_ns;
	uint64_t census_hits; /* ebpf: processes identified from the census read at open, in all */
	/* ebpf: CPUs taken as idle without an IPI (no busy tick, last switch to idle), in all */
	uint64_t cpus_not_asked;
	bool census_by_iterator; /* ebpf: that census came from a BPF task iterator (else from /proc) */
	/*
	 * ebpf: pieces cut at changes of identity made into entries, and those
	 * whose time was reported already (cut between the refresh's reads) or
	 * lost (the ring full: their time went to the new identity), in all
	 */
	uint64_t pieces_total, pieces_late_total, pieces_lost_total;
	/* wanted processes (kepler_informer_want) that are not there, this refresh */
	uint32_t wanted_unresolved;
};

struct kepler_informer_params {
	enum kepler_informer_kind kind;
	const char *procfs;         /* "/proc" */
	const char *sysfs;          /* "/sys": the cgroup hierarchies under fs/cgroup (ebpf) */
	uint32_t bpf_max_processes; /* entries of the eBPF map */
	/*
	 * Tests only: count with software events (cpu-clock, in ns) in place of
	 * the hardware counters, to exercise the path on machines without them.
	 */
	bool hw_counters_software;
	/*
	 * Read every running process's exe at open: the collector is about to
	 * lose the right to read other users' /proc/PID/exe.
	 */
	bool exe_prefetch;
	/* Tests only: the eBPF informer's census from /proc even where the BPF task iterator loads. */
	bool census_procfs;
	/* Tests only: the BPF task iterator fails to load (the kernel refuses it). */
	bool census_unloadable;
};

struct kepler_informer_attempts {
	unsigned count;
	struct {
		enum kepler_informer_kind kind;
		struct kepler_error err;
	} tried[2];
};

struct kepler_informer;

/*
 * Open the informer of @p->kind, or for auto ebpf then procfs; every kind
 * tried and rejected is in @attempts (may be NULL) with its reason.
 * Errors: -EPERM (no privileges for BPF), -ENOENT (no BTF, no procfs),
 * -ENOMEM, or the kernel's error loading the program.
 */
int kepler_informer_open(const struct kepler_informer_params *p, struct kepler_informer_attempts *attempts,
			 struct kepler_informer **ret, struct kepler_error *err);

void kepler_informer_params_from_config(const struct kepler_config *cfg, struct kepler_informer_params *ret);

/*
 * Refresh, in two steps: sample reads the node's CPU counters (one read of
 * <procfs>/stat); resolve then reads every process's CPU time (the BPF map,
 * or every /proc/PID/stat), identifies new processes (exe, cgroup,
 * container, VM: slow with thousands of new processes) and builds the
 * interval's records. The collector reads the meter between the two, so
 * that the energy window and the node's CPU window, which together decide
 * the active energy, are the same however long resolving takes (process
 * CPU times only weigh the split of it). Entries that cannot be read are
 * skipped and counted, never fatal; errors are only for the informer itself
 * failing (procfs stat unreadable, BPF map errors).
 */
int kepler_informer_sample(struct kepler_informer *inf, struct kepler_error *err);
int kepler_informer_resolve(struct kepler_informer *inf, struct kepler_error *err);
/*
 * Processes to list in the next resolve even if the source has not seen
 * them run (a GPU's: NVML names the processes that use it, and one that
 * waits on its GPU sleeps on the CPU, which eBPF never sees): each is read
 * from host.procfs, listed with its identity and the CPU delta 0; one that
 * is not there (gone, or of another PID namespace) is counted in
 * wanted_unresolved. At most KEPLER_INFORMER_WANTED_MAX; @pids is copied.
 */
#define KEPLER_INFORMER_WANTED_MAX 1024
void kepler_informer_want(struct kepler_informer *inf, const uint32_t *pids, size_t n);

/* Both steps, back to back. */
int kepler_informer_refresh(struct kepler_informer *inf, struct kepler_error *err);

const struct kepler_node_cpu *kepler_informer_node(const struct kepler_informer *inf);
size_t kepler_informer_count(const struct kepler_informer *inf);
/* Process @i (< count) of the last refresh, valid until the next refresh. */
const struct kepler_proc *kepler_informer_proc(const struct kepler_informer *inf, size_t i);
const struct kepler_informer_stats *kepler_informer_stats(const struct kepler_informer *inf);
enum kepler_informer_kind kepler_informer_kind(const struct kepler_informer *inf);
const char *kepler_informer_kind_name(enum kepler_informer_kind k);
/* True if processes carry hardware counters. */
bool kepler_informer_hw_counters(const struct kepler_informer *inf);
/* One line for the start-up log. Valid until close. */
const char *kepler_informer_describe(const struct kepler_informer *inf);

void kepler_informer_close(struct kepler_informer *inf);

/* A BPF map the refresh reads (to probe access after a privilege drop), or -1. */
int kepler_informer_bpf_fd(const struct kepler_informer *inf);

/* Processes whose exe was read at open (kepler_informer_params.exe_prefetch). */
size_t kepler_informer_exes_read(const struct kepler_informer *inf);

#endif /* KEPLER_COLLECTD_INFORMER_H */
