/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/attribution/ledger_internal.h: the ledger's state, shared by its
 * files:
 *   ledger.c     the build, in two phases: reserve (every allocation; on
 *                failure nothing has changed) then apply (cannot fail); the
 *                node's zones and the snapshot's header
 *   processes.c  generations of process records: each interval's records,
 *                totals continued from the previous generation
 *   groups.c     containers, VMs and pods: sums of their processes
 *   carry.c      terminated workloads carried forward (ttl, max, minimum)
 *   folds.c      short processes summed per container, VM or node
 *   resume.c     continuing the totals of a snapshot read back at start
 */
#ifndef KEPLER_COLLECTD_LEDGER_INTERNAL_H
#define KEPLER_COLLECTD_LEDGER_INTERNAL_H

#include "pid_index.h"
#include "kepler/array.h"
#include "keymap.h"
#include "ledger.h"

#define RESUME_HORIZON_NS (3600ULL * 1000000000ULL)

struct proc_rec {
	struct kepler_process p;
	uint64_t ended_mono_ns; /* terminated: when it ended */
	char *owned;            /* terminated: block holding p's strings */
	bool taken;             /* prev generation: carried into the new one */
	bool fresh;             /* first seen in this build (not the first build): folds.c */
	bool folded_before;     /* folded in the previous build (new then): counted in its fold once */
	/*
	 * Resumed at start and alive then (same pid and start time), not
	 * reported by the informer since (eBPF reports a process once it
	 * runs): carried, running with delta 0, until it is, for up to
	 * RESUME_HORIZON; so its totals stay in the store and a second restart
	 * resumes them again. Owns its strings, as a terminated record.
	 */
	bool dormant;
};

/* A slot of a generation's index: a record's pid, and 1 + its index (0: empty). */
struct proc_gen {
	struct proc_rec *recs;
	size_t n, cap;
	struct kepler_energy *pool; /* cap x nzones */
	size_t pool_cap;
	struct kepler_pid_index index; /* the records by (pid, start time) */
	/* the records that were given a block of strings (a moved block is NULL in its record) */
	uint32_t *owners;
	size_t nowners, owners_cap;
};

/*
 * A workload's energy slots: nzones of active energy, then, under an idle
 * policy, nzones of idle energy (struct kepler_ledger.nslots in all).
 */
#define LEDGER_MAX_SLOTS (2 * KEPLER_MAX_ZONES)

struct group_rec {
	char *id, *name, *extra, *pod_id;       /* extra: runtime, hypervisor or namespace */
	char *owner_kind, *owner_name, *labels; /* pods: struct kepler_pod's; NULL until named */
	uint64_t total[LEDGER_MAX_SLOTS], delta[LEDGER_MAX_SLOTS];
	uint64_t size_shares; /* containers under idle policy SIZE: the last size seen */
	uint64_t cpu_total, cpu_delta;
	uint64_t count_total, count_delta; /* folds: processes folded */
	uint64_t ended_mono_ns;
	bool terminated, present, running, emit;
	bool fresh;   /* created in this build: no member seen before */
	bool revived; /* created with the totals of its tombstone */
	bool dormant; /* resumed at start, not seen yet: kept, not shown */
	bool keep;    /* stays in the table after this build */
};

struct group_table {
	struct group_rec *recs;
	size_t n, cap;
	struct kepler_keymap map;
};

/*
 * The totals of a group the tables forgot (terminated, past its ttl), kept
 * so that an id that comes back (a container restarted under the same id,
 * a VM booted again) continues its counters instead of starting from 0: a
 * counter of the same identity never goes back. A ring per kind, allocated
 * once; the oldest is forgotten first.
 */
#define LEDGER_TOMBSTONES 256

struct tombstone {
	char id[KEPLER_KEY_MAX + 1]; /* "" when unused */
	uint64_t total[LEDGER_MAX_SLOTS];
	uint64_t cpu_total;
	uint64_t count_total; /* a fold's: the processes folded */
};

/* groups.c: the newest tombstone of @id among kind @k's (KEPLER_KIND_PROCESS: folds'), or NULL. */
struct tombstone *ledger_tomb_find(struct kepler_ledger *l, enum kepler_kind k, const char *id);

/*
 * groups.c: keep the totals of @g (a group, or a fold: @k PROCESS) under
 * @id among kind @k's tombstones, which the store's memory keeps.
 */
void ledger_bury(struct kepler_ledger *l, enum kepler_kind k, const char *id, const struct group_rec *g);

/* The node's totals per zone: energy, active, idle, and active no process took. */
enum { NODE_ENERGY, NODE_ACTIVE, NODE_IDLE, NODE_UNATTRIBUTED, NODE_TOTALS };

struct kepler_ledger {
	struct kepler_ledger_params params;
	unsigned nzones;
	unsigned nslots; /* energy slots per workload: nzones, twice that under an idle policy */
	bool idle;       /* an idle policy gives idle energy to workloads */
	char zone_names[KEPLER_MAX_ZONES][64];
	struct kepler_energy node[KEPLER_MAX_ZONES][NODE_TOTALS];
	size_t primary;
	struct proc_gen gen[2];
	int cur; /* index of the current generation in gen[] */
	/*
	 * Processes of the snapshot resumed at start: an informer reports a
	 * process only once it runs again (eBPF), so they wait here, for up to
	 * RESUME_HORIZON, to continue their totals when they show up.
	 */
	struct proc_gen resumed;
	uint64_t resumed_until_ns;
	/* containers, VMs and pods, indexed by enum kepler_kind (PROCESS unused) */
	struct group_table groups[KEPLER_KIND_COUNT];
	/* LEDGER_TOMBSTONES each; [KEPLER_KIND_PROCESS]: the folds of containers and VMs (folds.c) */
	struct tombstone *tombs[KEPLER_KIND_COUNT];
	/* folds of short processes (folds.c): id the key, name the container id, extra the VM id */
	struct group_table folds;
	struct kepler_fold *fold_out;
	struct kepler_energy *fold_pool;
	size_t fold_out_cap, fold_pool_cap;
	size_t tomb_next[KEPLER_KIND_COUNT];
	bool memory_dirty; /* a tombstone was written since the memory was last saved (memory.c) */
	/* resume: node bases by zone name, until the first build */
	unsigned nresume;
	char resume_names[KEPLER_MAX_ZONES][64];
	uint64_t resume_base[KEPLER_MAX_ZONES][NODE_TOTALS];
	/*
	 * The pieces of one process's account met so far in this build
	 * (processes.c): what they added to its totals, energy (nslots) and
	 * CPU time, which its own record, next in the input, adds too.
	 */
	struct {
		uint64_t uj[2 * KEPLER_MAX_ZONES];
		uint32_t pid;
		bool any;
	} pieces;
	/* the snapshot handed out */
	struct kepler_snapshot snap;
	size_t snap_procs_cap;
	struct kepler_container *containers;
	struct kepler_vm *vms;
	struct kepler_pod *pods;
	struct kepler_energy *group_pool;
	size_t containers_cap, vms_cap, pods_cap, group_pool_cap;
	/* scratch of one build, reserved before anything changes */
	uint64_t *weights, *shares, *scratch;
	size_t weights_cap, shares_cap, scratch_cap;
	uint64_t *idle_shares; /* nzones x nprocs, under an idle policy */
	size_t idle_shares_cap;
	uint64_t *unit_sums; /* SIZE: per unit, 3 x nunits + 1 */
	size_t unit_sums_cap;
	uint64_t *unit_tmp; /* SIZE: 3 x nprocs */
	size_t unit_tmp_cap;
	struct proc_rec **cand; /* carry: candidates */
	size_t cand_cap;
	char **owned; /* per input process: its strings' block if terminated */
	size_t owned_cap;
};

/* Make *@p hold @need elements of @size (at least one); on failure *@p is unchanged. -ENOMEM. */

/* ledger.c: the node's zones for this interval; @active gets each zone's active part. */
void ledger_account_node(struct kepler_ledger *l, const struct kepler_ledger_input *in, uint64_t *active);
/* ledger.c: energy of zone @z the processes did not take this interval (added up) */
void ledger_account_unattributed(struct kepler_ledger *l, unsigned z, uint64_t uj);
/* ledger.c: point @u's energies at @slots (nslots entries): active, then idle under a policy */
void ledger_point_usage(const struct kepler_ledger *l, struct kepler_usage *u, struct kepler_energy *slots);
/* The same for @nzones zones, idle slots after them if @idle. */
void ledger_point_usage_n(struct kepler_usage *u, struct kepler_energy *slots, unsigned nzones, bool idle);

/* processes.c: generations whose records have @nslots energy slots each */
int ledger_gen_reserve(struct proc_gen *g, size_t n, unsigned nslots);
void ledger_gen_reset(struct proc_gen *g);
void ledger_gen_free(struct proc_gen *g);
/*
 * A new record: not ended, owning nothing, not taken; its usage.zones
 * points at its slots (zeroed), usage.idle is NULL, and the rest of its
 * process is the caller's to fill.
 */
struct proc_rec *ledger_gen_add(struct proc_gen *g, unsigned nslots);
/* Give @r (a record of @g) the block of strings @block, freed when @g is reset (room reserved). */
void ledger_gen_own(struct proc_gen *g, struct proc_rec *r, char *block);
/* Index the record added last (replacing a record of the same key; room reserved). */
void ledger_gen_index_last(struct proc_gen *g);
/* Start loading the index slot where @pid's record would go (a hint, before ledger_gen_index_last). */
void ledger_gen_prefetch_slot(const struct proc_gen *g, uint32_t pid);
/* The record of (@pid, @start_time_ns) in @g (the last indexed of that key), or NULL. */
struct proc_rec *ledger_gen_find(const struct proc_gen *g, uint32_t pid, uint64_t start_time_ns);
char *ledger_own_strings(struct kepler_process *p);
int ledger_reserve_processes(struct kepler_ledger *l, const struct kepler_ledger_input *in);
void ledger_release_processes(struct kepler_ledger *l, size_t n);
void ledger_apply_processes(struct kepler_ledger *l, const struct kepler_ledger_input *in);

/* idle.c: the idle policies */
int ledger_reserve_idle(struct kepler_ledger *l, const struct kepler_ledger_input *in);
/*
 * Zone @z's idle energy @idle over the processes of @in by the policy,
 * into l->idle_shares; what no process takes is the zone's unattributed.
 */
void ledger_split_idle(struct kepler_ledger *l, const struct kepler_ledger_input *in, unsigned z,
		       uint64_t idle);
/* processes.c: @amount over the processes by a device zone's weights; returns what they took */
uint64_t ledger_split_device(struct kepler_ledger *l, const struct kepler_ledger_input *in, unsigned z,
			     uint64_t amount, uint64_t *shares);

/* groups.c */
int ledger_reserve_groups(struct kepler_ledger *l, const struct kepler_ledger_input *in);
/* Add record @i of this build to its container and VM (every record, in order), then settle them. */
void ledger_group_process(struct kepler_ledger *l, const struct kepler_ledger_input *in, size_t i);
void ledger_settle_groups(struct kepler_ledger *l, const struct kepler_ledger_input *in);
void ledger_emit_groups(struct kepler_ledger *l);
void ledger_compact_groups(struct kepler_ledger *l);
/* A new group of @t under @key (fresh, totals 0; its strings copied), or NULL for memory. */
struct group_rec *ledger_table_add(struct group_table *t, const char *key, size_t klen, const char *name,
				   const char *extra, const char *pod_id);
/* Free @g's strings. */
void ledger_group_rec_free(struct group_rec *g);
/* The group of kind @k and @id in the tables, or NULL. */
struct group_rec *ledger_group_find(struct kepler_ledger *l, enum kepler_kind k, const char *id);
struct group_rec *ledger_group_get(struct kepler_ledger *l, enum kepler_kind k, const char *id,
				   const char *name, const char *extra, const char *pod_id);
void ledger_groups_truncate(struct group_table *t, size_t n);
void ledger_groups_free(struct kepler_ledger *l);

/* carry.c */
bool ledger_keep_terminated(const struct kepler_ledger *l, uint64_t now, uint64_t ended,
			    uint64_t primary_total);
void ledger_carry_processes(struct kepler_ledger *l, const struct kepler_ledger_input *in);
void ledger_carry_groups(struct kepler_ledger *l, struct group_table *t, uint64_t now);

/*
 * folds.c: reserve (a fold for every terminated process); begin, fold each
 * record of the build (flagged, added to its fold when short), settle after
 * the groups; emit, compact
 */
struct group_rec *ledger_fold_get(struct kepler_ledger *l, const char *container_id, const char *vm_id);
int ledger_reserve_folds(struct kepler_ledger *l, const struct kepler_ledger_input *in);
void ledger_begin_folds(struct kepler_ledger *l);
void ledger_fold_process(struct kepler_ledger *l, struct proc_rec *r, uint64_t now);
void ledger_settle_folds(struct kepler_ledger *l);
void ledger_emit_folds(struct kepler_ledger *l);
void ledger_compact_folds(struct kepler_ledger *l);
int ledger_resume_folds(struct kepler_ledger *l, const struct kepler_snapshot *s);

/* resume.c */
int ledger_resumed_index(const struct kepler_ledger *l, const char *zone);
int ledger_remap_resumed(struct kepler_ledger *l, const char (*names)[64], unsigned nzones);

#endif /* KEPLER_COLLECTD_LEDGER_INTERNAL_H */
