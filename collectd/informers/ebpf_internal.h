/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/informers/ebpf_internal.h: the eBPF informer's state, shared by
 * its reading side (informer_ebpf.c: every refresh) and its opening side
 * (ebpf_open.c: loading, mapping, perf counters).
 */
#ifndef KEPLER_COLLECTD_EBPF_INTERNAL_H
#define KEPLER_COLLECTD_EBPF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cputime.h"
#include "informer_internal.h"

struct ebpf_state {
	struct cputime *skel;
	int map_fd;
	uint32_t max_entries;
	uint32_t *slot_of;               /* where each sample of the slots was read, [max_entries] */
	struct kepler_cputime_key *dead; /* keys to delete after the refresh */
	uint32_t *dead_slots;            /* their slots, [max_entries] */
	uint32_t ndead;
	struct kepler_cputime_slot *slots; /* the `slots` map, mapped */
	size_t slots_size;
	int free_fd;          /* `free_slots` */
	uint32_t *quarantine; /* slots freed last refresh, handed back at the next, [max_entries] */
	uint32_t nquarantine;
	uint64_t last_overflow;
	/*
	 * the collector numbers PIDs as procfs does (its own TID is procfs's): kill(pid, 0)
	 * says whether an idle entry's process exists, without reading /proc
	 */
	bool kill_probe;
	uint64_t stat_reads_saved; /* /proc/PID/stat reads kill(pid, 0) made unneeded */
	int ncpus;
	int on_cpu_prog;
	bool cgroup_v1_cpu; /* the program records the cpu controller's v1 cgroup ids (cgroup_tree.h) */
	/* the `switched_in` and `on_cpu` maps, mapped: [ncpus] each, cpus_map_size bytes */
	struct kepler_cputime_running *switched_in, *on_cpu;
	size_t cpus_map_size;
	struct kepler_cputime_running *running; /* [ncpus], what each CPU runs after the map is read */
	struct kepler_cputime_running *before;  /* [ncpus], read before the map */
	uint32_t *reread;                       /* tgids switched out while the map was read, [ncpus] */
	uint32_t nreread;
	struct pending {
		uint32_t tgid;
		bool mapped; /* the process has a map entry */
		uint64_t ns;
	} * pending; /* uncharged time of the tasks on a CPU now, [ncpus] */
	uint32_t npending;
	uint32_t self_tid;          /* the collecting thread's TID in the host's numbering, 0 if unknown */
	pid_t self_gettid;          /* and as gettid() gives it (another namespace's, maybe) */
	int *perf_fds;              /* [KEPLER_CPUTIME_NCOUNTERS * ncpus], -1 when not open */
	struct ring_buffer *pieces; /* the `pieces` ring (read_pieces()) */
	uint64_t last_pieces_lost;  /* the program's pieces_lost at the last refresh */
	bool census_loaded;         /* the census iterator loaded with the programs (until it runs) */
	char census_why[256];       /* why it did not */
};

/* The refresh's operations (informer_ebpf.c). */
extern const struct kepler_informer_ops kepler_ebpf_ops;

/* The ring's callback for each piece (informer_ebpf.c): @ctx is the informer. */
int kepler_ebpf_on_piece(void *ctx, void *data, size_t size);

/* Close the hardware counters' descriptors (ebpf_open.c); the state keeps -1 for each. */
void kepler_ebpf_close_perf(struct ebpf_state *st);

#endif /* KEPLER_COLLECTD_EBPF_INTERNAL_H */
