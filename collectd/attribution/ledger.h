/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/attribution/ledger.h: turns one interval's measurements (each zone's energy
 * delta, the node's CPU use, every process's CPU time) into a snapshot, and
 * keeps the cumulative totals of the node and of every workload from one
 * interval to the next.
 *
 * Per zone: active = delta x busy / total (node CPU time), or with an idle
 * baseline active = delta - baseline power x interval (never below 0);
 * idle = delta - active; active is split over the processes by their CPU-time deltas with
 * the largest-remainder rule, so that in every snapshot, per zone,
 *   sum(processes) == node active,  sum(processes of a container) ==
 *   container,  sum(containers of a pod) == pod,  sum(processes of a VM) == VM
 * exactly. When no process used CPU in an interval, the whole delta is idle.
 * Device zones (GPUs) bring their own active part and process weights
 * (struct kepler_ledger_zone_in); there Σ processes + unattributed == active.
 *
 * Idle energy stays at the node (policy NONE), or is split too (params.idle):
 * CPU by the same weights as the active part; SIZE by the units' sizes
 * (struct kepler_ledger_unit), then within a unit by CPU time (equally when
 * none ran); device zones under SIZE as under CPU. Each workload then has
 * an idle energy beside its active one, and per zone Σ processes' active +
 * idle + unattributed == energy exactly.
 *
 * Terminated workloads are in the snapshot of the interval they ended in,
 * then carried forward (delta 0, final totals) for terminated_ttl, at most
 * max_terminated per kind by energy in the primary zone, none below
 * min_terminated_energy.
 *
 * A build that fails (out of memory) changes nothing: it reserves all it
 * needs before it changes any total, so the next build continues as if the
 * failed one had not been tried, and no exported counter goes back.
 */
#ifndef KEPLER_COLLECTD_LEDGER_H
#define KEPLER_COLLECTD_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "kepler/error.h"
#include "kepler/snapshot.h"

struct kepler_ledger_params {
	uint64_t terminated_ttl_ns;
	int64_t max_terminated; /* -1: all, 0: none */
	uint64_t min_terminated_energy_uj;
	enum kepler_idle_policy idle; /* attribution.idle */
};

/*
 * Under idle policy SIZE, the units idle energy is shared over: a
 * container, or the processes outside containers that share a cgroup. A
 * container's size is taken off the node's capacity (1024 shares per CPU)
 * first; what is left goes to the other units by their size (see
 * docs/attribution.md).
 */
struct kepler_ledger_unit {
	uint64_t size_shares; /* CPU shares: 1024 = one CPU; at least 1 */
	bool container;
};

struct kepler_ledger_zone_in {
	const char *name, *path; /* must stay valid while the ledger lives */
	enum kepler_source source;
	uint64_t delta_uj;
	struct kepler_baseline baseline;    /* method NONE: Kepler's usage-ratio split */
	uint64_t meter_resets, meter_wraps; /* the meter's counts since it opened */
	/*
	 * A device zone (a GPU, source nvml): its meter gives the active part
	 * (active_uj, at most delta_uj) and how it splits over processes:
	 * @weights has in->nprocs entries (NULL: no process ran on it), and
	 * @unlisted_weight is the weight of processes the informer did not list.
	 * What no listed process takes is the zone's unattributed energy, so
	 * that Σ processes + unattributed == active exactly. @info's strings
	 * must stay valid while the ledger lives.
	 */
	bool device;
	uint64_t active_uj;
	const uint64_t *weights;
	uint64_t unlisted_weight;
	struct kepler_device info;
};

/*
 * One process of the interval, as the collector hands it over. The strings
 * must stay valid until the next build (the snapshot points to them); "" when
 * absent, never NULL.
 */
struct kepler_ledger_proc {
	uint32_t pid;
	uint64_t start_time_ns; /* with pid, the identity */
	const char *comm, *exe;
	enum kepler_process_type type;
	const char *container_id, *container_runtime, *pod_uid;
	const char *vm_id, *vm_name, *vm_hypervisor;
	enum kepler_state state;                     /* terminated: ended in this interval */
	uint64_t cpu_time_ns;                        /* cumulative */
	uint64_t cpu_time_delta_ns;                  /* this interval */
	uint64_t cycles, instructions, cache_misses; /* or KEPLER_COUNTER_UNAVAILABLE */
	uint32_t unit; /* idle policy SIZE: its index in kepler_ledger_input.units */
	/*
	 * A hint: 1 + its index in the previous build's procs (0: none). The
	 * ledger checks it (same pid and start time) before it looks the
	 * process up by key.
	 */
	uint32_t prev_index;
	bool piece; /* a piece of a process's account (informer.h): flagged KEPLER_PROCESS_PIECE */
};

/*
 * Names the ledger cannot see in procfs (Kubernetes'), asked for each
 * container and pod during a build; a name once given is kept while the
 * group lives (a terminated pod keeps its name after the kubelet forgets it).
 */
/* What names a pod (strings valid until the namer's next refresh; never NULL). */
struct kepler_ledger_pod_names {
	const char *name, *ns;
	const char *owner_kind, *owner_name, *labels; /* struct kepler_pod's */
};

struct kepler_ledger_namer {
	/*
	 * Container @id, in pod @pod_uid by its cgroup ("" if none): true and
	 * its name and its pod's UID ("" if unknown), or false if unknown.
	 */
	bool (*container)(void *ctx, const char *id, const char *pod_uid, const char **ret_name,
			  const char **ret_pod_uid);
	/* Pod @uid: true and what names it (struct kepler_ledger_pod_names), or false if unknown. */
	bool (*pod)(void *ctx, const char *uid, struct kepler_ledger_pod_names *ret);
	void *ctx;
};

/* One interval's measurements. */
struct kepler_ledger_input {
	uint64_t wall_ns, mono_ns, interval_ns;
	bool first; /* the first interval after start: no deltas */
	unsigned nzones;
	struct kepler_ledger_zone_in zones[KEPLER_MAX_ZONES];
	uint64_t busy_delta_ns, total_delta_ns;
	double usage_ratio;
	unsigned cpu_count;
	bool hw_counters;
	uint32_t skipped, lost;
	const struct kepler_ledger_proc *procs; /* the processes of the interval */
	size_t nprocs;
	const struct kepler_ledger_unit *units; /* idle policy SIZE; NULL otherwise */
	size_t nunits;
	const struct kepler_ledger_namer *namer; /* NULL: no names beyond procfs' */
};

struct kepler_ledger;

int kepler_ledger_new(const struct kepler_ledger_params *p, struct kepler_ledger **ret,
		      struct kepler_error *err);

/*
 * Continue the cumulative totals of @prev (the newest snapshot of the same
 * boot, read back at start): the node's per zone (matched by zone name) and
 * those of every running process (same pid and start time), container, VM
 * and pod, so that exported counters never go down across a restart.
 * Running processes that @alive (may be NULL) says still run (same pid and
 * start time) are carried in every snapshot, with delta 0, until the
 * informer reports them: a process asleep through a restart keeps its
 * place in the store, and the next restart resumes it again. Ended
 * containers, VMs and pods of @prev are kept, not shown, for the horizon:
 * one that comes back under the same id continues its totals.
 * Call before the first kepler_ledger_build(). -ENOMEM (nothing resumed).
 */
/*
 * The ledger's memory of forgotten identities (containers, VMs and pods
 * that ended and left the snapshots, with their totals), as text for the
 * store (memory.c), so that it outlives a restart. Changed: since the
 * last save. Save: NUL-terminated text in *@ret (free() it); -ENOMEM.
 * Load: after kepler_ledger_resume(), before the first build; lines that
 * do not parse are skipped and counted in *@ret_skipped; -EBADMSG when the
 * text's zones are not the resumed snapshot's, -EINVAL when not resumed.
 */
bool kepler_ledger_memory_changed(const struct kepler_ledger *l);
int kepler_ledger_memory_save(const struct kepler_ledger *l, char **ret);
void kepler_ledger_memory_saved(struct kepler_ledger *l);
int kepler_ledger_memory_load(struct kepler_ledger *l, const char *text, size_t len, size_t *ret_skipped,
			      struct kepler_error *err);

typedef bool (*kepler_ledger_alive_fn)(void *arg, uint32_t pid, uint64_t start_time_ns);
int kepler_ledger_resume(struct kepler_ledger *l, const struct kepler_snapshot *prev,
			 kepler_ledger_alive_fn alive, void *arg);

/*
 * Build the snapshot of @in. The result is owned by the ledger and valid
 * until the next build (its strings point into the informer's records of
 * this interval and into the ledger). -ENOMEM, -EINVAL (zones changed),
 * and then the ledger is as it was before the call.
 */
int kepler_ledger_build(struct kepler_ledger *l, const struct kepler_ledger_input *in,
			struct kepler_snapshot **ret, struct kepler_error *err);

void kepler_ledger_free(struct kepler_ledger *l);

#endif /* KEPLER_COLLECTD_LEDGER_H */
