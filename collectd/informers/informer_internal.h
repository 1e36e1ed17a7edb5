/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/informers/informer_internal.h: what the informer kinds share with the
 * engine in informer.c. Not for the rest of the collector.
 */
#ifndef KEPLER_COLLECTD_INFORMER_INTERNAL_H
#define KEPLER_COLLECTD_INFORMER_INTERNAL_H

#include "cgroup_tree.h"
#include "informer.h"
#include "pid_index.h"
#include "prefetch.h"

/* One process as a source sees it at a refresh. */
struct kepler_proc_sample {
	uint32_t pid;
	uint64_t start_time_ns; /* rounded down to USER_HZ ticks */
	uint64_t key_start_ns;  /* ebpf: the map key's start time, exact (for ops->exe_of) */
	char comm[KEPLER_COMM_MAX];
	uint64_t cpu_ns;       /* the source's cumulative counter */
	uint64_t pending_ns;   /* ebpf: the part of cpu_ns not in the map yet (running now) */
	uint64_t cgroup_id;    /* cgroup id (v2, or v1 cpu's on hybrid nodes), 0 if unknown */
	uint64_t cgroup_id_v2; /* ebpf, hybrid nodes: the v2 hierarchy's id too, 0 if unknown */
	uint32_t execs;        /* ebpf: exec()s seen; a change means another program now */
	uint64_t counters[3];  /* cycles, instructions, cache misses: the source's cumulative */
	uint64_t counted_ns;   /* ebpf: CPU time whose counters were read, cumulative */
	uint64_t mapped_ns;    /* ebpf: cpu_ns less pending_ns (what @counted_ns is part of) */
	bool exited;           /* ended (ebpf: the leader exited) */
	bool kthread;
	bool unreadable; /* procfs: /proc/PID/stat not readable now: keep what we had */
	bool has_stat;   /* procfs: @stat is filled */
	/*
	 * The source looked the process up in the table already: 1 + the
	 * index of its entry, KEPLER_NOT_IN_TABLE for none; 0: not looked up.
	 */
	uint32_t table_hint;
	/* ebpf: the pieces cut from its account since the last refresh, inf->pieces[piece0, +npieces) */
	uint32_t piece0, npieces;
	struct kepler_pid_stat stat;
};

#define KEPLER_PIECE_EXE_MAX 256

/*
 * A piece of a process's account (pieces.c): the source's counter up to
 * cpu_ns ran as this comm, program and cgroups, which the process has
 * since left (an exec, a move to another cgroup).
 */
struct kepler_proc_piece {
	uint32_t pid;
	uint64_t key_start_ns; /* the source's start time, not rounded (the sample's key_start_ns) */
	uint64_t cpu_ns;       /* the source's cumulative counter at the change */
	uint64_t counters[3];
	uint64_t counted_ns;
	uint64_t cgroup_id, cgroup_id_v2;
	uint32_t execs; /* the source's exec count before the change */
	/*
	 * Made into an entry (or found reported already) at this refresh; one
	 * not used waits for the next (cut after its process was read, or of a
	 * process not read yet), for at most PIECE_REFRESHES_MAX refreshes
	 */
	bool used;
	uint8_t waited;
	char comm[KEPLER_COMM_MAX];
	char exe[KEPLER_PIECE_EXE_MAX]; /* "" if unknown */
};

/* Where the pieces of a process begin and end in its source's counters (pieces.c). */
struct kepler_piece_base {
	uint64_t cpu, counters[3], counted, mapped;
};

/* An entry of the process table: the public record and the engine's state. */
struct kepler_proc_entry {
	struct kepler_proc pub;
	uint64_t source_cpu;     /* the source's counter at the last refresh */
	uint64_t source_pending; /* ebpf: the running slice included in source_cpu */
	uint64_t offset;         /* cpu_time_ns = offset + source counter */
	uint64_t source_counters[3];
	uint64_t source_counted, source_mapped; /* the sample's counted_ns and mapped_ns */
	uint32_t idle_refreshes;
	uint32_t execs;                        /* the sample's execs when the identity was resolved */
	char identified_comm[KEPLER_COMM_MAX]; /* and its comm */
	uint64_t cgroup_id;                    /* and its cgroup id (ebpf; 0 unknown) */
	uint64_t cgroup_id_v2;                 /* and its v2 cgroup id (ebpf, hybrid nodes; 0 unknown) */
	uint32_t pieces_made;                  /* pieces of its account made into entries so far */
	bool drop;                             /* reported terminated: gone at the next refresh */
};

/* Open addressing on pid, entries in a dense array. */
struct kepler_proc_table {
	struct kepler_proc_entry *items;
	size_t count, cap;
	struct kepler_pid_index index; /* the items by (pid, start time) */
};

/* A process of the census, as a source that can take one whole (ops->census) sees it. */
struct kepler_census_proc {
	uint32_t pid;
	uint64_t start_time_ns; /* the source's, not rounded */
	uint64_t lifetime_ns;   /* CPU time of all its threads, the exited ones included */
	uint64_t cgroups;       /* equal for processes in the same cgroups of every hierarchy; 0 unknown */
	bool kthread;
	char comm[KEPLER_COMM_MAX];
	const char *exe; /* "" if none */
};
typedef int (*kepler_census_fn)(void *arg, const struct kepler_census_proc *p);

struct kepler_informer_ops {
	/* Fill inf->samples for this refresh. */
	int (*collect)(struct kepler_informer *inf, struct kepler_error *err);
	/* After the engine's update (ebpf: forget exited processes in the map). */
	void (*after)(struct kepler_informer *inf);
	void (*close)(struct kepler_informer *inf);
	/*
	 * The program of a process whose /proc/PID/exe is closed to us (no
	 * CAP_SYS_PTRACE after the privilege drop), if the source recorded it
	 * (ebpf: at exec). @start_time_ns is the source's, not rounded. NULL: none.
	 */
	bool (*exe_of)(struct kepler_informer *inf, uint32_t pid, uint64_t start_time_ns, char *buf,
		       size_t size);
	int (*map_fd)(const struct kepler_informer *inf); /* ebpf: the processes map */
	/*
	 * ebpf: every process running now, each handed to @each, in one pass
	 * (a BPF task iterator), @ret_count of them; an error if the source
	 * cannot (the engine then walks /proc).
	 */
	int (*census)(struct kepler_informer *inf, kepler_census_fn each, void *arg, size_t *ret_count,
		      struct kepler_error *err);
	bool reports_all_live; /* a live process missing from the samples is gone */
	bool resets_on_exit;   /* the source's counter restarts after an exit */
};

/* cgroup ids to paths (cgroup_ids.c), for processes gone before they were looked up. */
struct kepler_cgroup_id {
	uint64_t id;
	char *path; /* from the hierarchy's root, "/" for the root */
};

struct kepler_cgroup_ids {
	struct kepler_cgroup_tree tree; /* the hierarchy, found through host.sysfs */
	int rootfd;                     /* its root, opened at start; -1 if none */
	struct kepler_cgroup_id *items; /* sorted by id */
	size_t n, cap;
	uint64_t walks;
	bool rescanned; /* this refresh: at most one walk per refresh */
};

/* Find the hierarchy under @sysfs and open it: -ENOENT if none, or open(2)'s error. */
int kepler_cgroup_ids_open(struct kepler_cgroup_ids *c, const char *sysfs);
/* On a hybrid node (v1 cpu in @v1), its cgroup2 hierarchy (<sysfs>/fs/cgroup/unified); -ENOENT otherwise. */
int kepler_cgroup_ids_open_v2(struct kepler_cgroup_ids *c, const struct kepler_cgroup_ids *v1,
			      const char *sysfs);
/* The path of cgroup @id, walking the hierarchy again on a miss (once per refresh); NULL if none. */
const char *kepler_cgroup_ids_path(struct kepler_cgroup_ids *c, uint64_t id);
void kepler_cgroup_ids_free(struct kepler_cgroup_ids *c);

struct kepler_informer {
	enum kepler_informer_kind kind;
	const struct kepler_informer_ops *ops;
	char *procfs;
	int procfd; /* open directory of procfs */
	int statfd; /* its stat, kept open (-1 until read) */
	struct kepler_proc_sample *samples;
	size_t nsamples, samples_cap;
	struct kepler_proc_piece *pieces; /* this refresh's, sorted by (pid, key_start_ns, cpu_ns) */
	size_t npieces, pieces_cap;
	uint64_t piece_salt;                         /* pieces' start-time offsets begin here (pieces.c) */
	uint32_t wanted[KEPLER_INFORMER_WANTED_MAX]; /* kepler_informer_want() */
	size_t nwanted;
	/*
	 * How much of a new sample is cleared: all but stat (read only where
	 * has_stat is set). A size GCC cannot see at compile time, so that
	 * libc's memset clears it (a few vector stores) rather than an inline
	 * rep stos, whose start-up cost made clearing 2 % of the collector at
	 * 1,000 processes.
	 */
	size_t sample_clear;
	struct kepler_proc_table table, next;
	struct kepler_node_cpu node;
	struct kepler_cpu_stat last_cpu;
	struct kepler_informer_stats stats;
	bool hw_counters;
	struct kepler_cgroup_ids cgroups;
	struct kepler_cgroup_ids cgroups_v2; /* hybrid nodes: the v2 hierarchy, for cgroup_id_v2 */
	struct kepler_exe_prefetch *exes;    /* read at open, while privileged (exe_prefetch.c) */
	struct kepler_strpool *strings;      /* the identities' exe and cgroup paths (strpool.h) */
	/*
	 * Each CPU's busy ticks (/proc/stat) at the last sample, and their
	 * growth since the sample before (KEPLER_CPU_BUSY_UNKNOWN: not known);
	 * ncpu_busy entries each, the third array the parse's scratch.
	 */
	uint64_t *cpu_busy, *cpu_busy_delta, *cpu_busy_now;
	size_t ncpu_busy;
	uint64_t census_until_ns; /* CLOCK_MONOTONIC: identities read at open serve until then */
	void *priv;
	char describe[1024];
};

#define KEPLER_NOT_IN_TABLE UINT32_MAX

/*
 * Whether CPU @cpu had no busy tick between the last two samples (the last
 * one just taken, before this refresh's resolve): false when not known.
 */
bool kepler_informer_cpu_was_idle(const struct kepler_informer *inf, unsigned cpu);

/* node_cpu.c: room for @n CPUs' busy ticks, none known yet; false when out of memory. */
bool kepler_informer_alloc_cpu_busy(struct kepler_informer *inf, size_t n);

/* node_cpu.c: the node's CPU time and each CPU's busy ticks from /proc/stat. -errno (message in @err). */
int kepler_informer_read_node(struct kepler_informer *inf, struct kepler_error *err);

/* pieces.c: room for one more piece (NULL when out of memory or at the bound, counted lost). */
struct kepler_proc_piece *kepler_informer_add_piece(struct kepler_informer *inf);

/* pieces.c: sort this refresh's pieces (after the source's collect). */
void kepler_informer_sort_pieces(struct kepler_informer *inf);

/* pieces.c: at a refresh's start, keep the pieces the last one did not use (for a while). */
void kepler_informer_keep_waiting_pieces(struct kepler_informer *inf);

/* pieces.c: the pieces of process (@pid, @key_start_ns) into @s->piece0 and @s->npieces. */
void kepler_informer_pieces_of(const struct kepler_informer *inf, uint32_t pid, uint64_t key_start_ns,
			       struct kepler_proc_sample *s);

/*
 * pieces.c: an entry of inf->next for each piece of @s whose time follows
 * @base (the source's counters the entry @old, NULL if none, last saw),
 * each terminated, its identity the one it ran as, its time the growth
 * from the piece before; @base moved to the last. *@ret_made: how many.
 * -ENOMEM.
 */
int kepler_informer_add_pieces(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			       const struct kepler_proc_entry *old, struct kepler_piece_base *base,
			       uint32_t *ret_made);

/*
 * identity.c: the identity of a piece of a process's account: @was (the
 * process's identity before the change, copied) where given, else from the
 * piece's cgroups and program. -ENOMEM.
 */
int kepler_informer_identify_piece(struct kepler_informer *inf, const struct kepler_proc_piece *pc,
				   const struct kepler_proc_identity *was, struct kepler_proc_entry *e);

/*
 * identity.c: a process's identity (exe, cgroup, container, VM) and comm,
 * from the census on @first_sight, else /proc now, else the source's comm.
 * @ret_lifetime: its lifetime CPU time, 0 when /proc did not say. -ENOMEM.
 */
int kepler_informer_identify(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			     struct kepler_proc_entry *e, uint64_t *ret_lifetime, bool first_sight);

/* identity.c: a new process's identity, comm and the offset to its lifetime CPU time. -ENOMEM. */
int kepler_informer_resolve_new(struct kepler_informer *inf, const struct kepler_proc_sample *s,
				struct kepler_proc_entry *e);

/* identity.c: the cgroups and container of process @pid, from /proc/PID/cgroup; false if unreadable. */
bool kepler_informer_read_cgroups(struct kepler_informer *inf, uint32_t pid, struct kepler_proc_identity *id);

/* identity.c: the VM a hypervisor process runs, from its command line. */
void kepler_informer_resolve_vm(struct kepler_informer *inf, const struct kepler_pid_stat *st,
				struct kepler_proc_identity *id);

/* identity.c: /proc/PID/stat unless the source read it; true if still the process of @s. */
bool kepler_informer_stat_of(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			     struct kepler_pid_stat *st);

/* identity.c: empty strings for what was not found; false (@id freed) when out of memory. */
bool kepler_informer_complete_identity(struct kepler_informer *inf, struct kepler_proc_identity *id);

/* identity.c: free @id and give back its strings (NULL: nothing). */
void kepler_identity_free(struct kepler_proc_identity *id);

/*
 * census.c: how long after open the identities of the census serve: the
 * first refreshes of the eBPF informer see every process that runs for
 * the first time (thousands at start-up), and the census read them all in
 * one walk. Later, a process could have moved to another cgroup since: it
 * is read from /proc then.
 */
#define CENSUS_WINDOW_NS (30ULL * 1000000000ULL)

/*
 * census.c: every process's identity now, in one walk: from the source
 * when it can take a census whole (ebpf: a BPF task iterator), else from
 * /proc. NULL: out of memory.
 */
struct kepler_exe_prefetch *kepler_informer_take_census(struct kepler_informer *inf, bool iterator);

/*
 * census.c: the identity the census read for @s into @e, if it is still
 * that process and ran no other program since; false otherwise.
 */
bool kepler_informer_identify_from_census(struct kepler_informer *inf, const struct kepler_proc_sample *s,
					  struct kepler_proc_entry *e, uint64_t *ret_lifetime);

/* Room for one more sample; NULL if out of memory. */
struct kepler_proc_sample *kepler_informer_add_sample(struct kepler_informer *inf);
/*
 * As kepler_informer_add_sample(), not cleared: for a source that sets
 * every field before @stat itself (the eBPF read of 10,000 slots, where
 * clearing each first was a memset of 1.4 MB an interval).
 */
struct kepler_proc_sample *kepler_informer_add_sample_unset(struct kepler_informer *inf);

/*
 * The processes running at open (exe_prefetch.c), read while the collector
 * may still read other users' /proc/PID/exe: after the privilege drop, what
 * names a process that was already running. With @build, each entry also
 * gets the identity @build makes of it (kernel threads included), for
 * kepler_exe_prefetch_take.
 */
struct kepler_exe_prefetch;
/* @cgroups: a token equal for processes in the same cgroups of every hierarchy; 0 if unknown. */
typedef struct kepler_proc_identity *(*kepler_identity_build_fn)(void *arg, const struct kepler_pid_stat *st,
								 const char *exe, uint64_t cgroups);
typedef void (*kepler_identity_free_fn)(struct kepler_proc_identity *id);
struct kepler_exe_prefetch *kepler_exe_prefetch_read(int procfd, kepler_identity_build_fn build,
						     kepler_identity_free_fn free_id, void *arg);
/*
 * A census taken by other means (census_ebpf.c): an empty one, then each
 * process added, then done (NULL from new: out of memory).
 */
struct kepler_exe_prefetch *kepler_exe_prefetch_new(kepler_identity_free_fn free_id);
int kepler_exe_prefetch_add(struct kepler_exe_prefetch *x, const struct kepler_census_proc *p,
			    kepler_identity_build_fn build, void *arg);
void kepler_exe_prefetch_done(struct kepler_exe_prefetch *x);
/* The exe of @pid if it is still the process seen at open (same start, same comm). */
const char *kepler_exe_prefetch_find(const struct kepler_exe_prefetch *x, uint32_t pid, uint64_t start_ticks,
				     const char *comm);
/*
 * The identity built at open of @pid if it is still that process, handed
 * over (once), and its lifetime CPU time then (ns); NULL if none.
 */
struct kepler_proc_identity *kepler_exe_prefetch_take(struct kepler_exe_prefetch *x, uint32_t pid,
						      uint64_t start_ticks, const char *comm,
						      uint64_t *ret_lifetime_ns);
/* Free the identities not taken (the exes stay). */
void kepler_exe_prefetch_drop_identities(struct kepler_exe_prefetch *x);
size_t kepler_exe_prefetch_count(const struct kepler_exe_prefetch *x);
void kepler_exe_prefetch_free(struct kepler_exe_prefetch *x);

/* Table operations (proc_table.c). */
int kepler_proc_table_reserve(struct kepler_proc_table *t, size_t n);
struct kepler_proc_entry *kepler_proc_table_find(const struct kepler_proc_table *t, uint32_t pid,
						 uint64_t start_time_ns);
/* Append (the key must not be present); NULL if out of memory. */
struct kepler_proc_entry *kepler_proc_table_add(struct kepler_proc_table *t,
						const struct kepler_proc_entry *e);
/*
 * Room for an entry at the end, to be filled in place (NULL if out of
 * memory); it is found once kepler_proc_table_index_last() indexes it, or
 * given back with kepler_proc_table_pop(). Nothing else may touch the
 * table in between.
 */
struct kepler_proc_entry *kepler_proc_table_push(struct kepler_proc_table *t);
void kepler_proc_table_pop(struct kepler_proc_table *t);
void kepler_proc_table_index_last(struct kepler_proc_table *t);

/* Start loading the index slot where @pid is looked up or indexed first (a hint; a macro, as KEPLER_PID_INDEX_PREFETCH). */
#define kepler_proc_table_prefetch(t, pid) KEPLER_PID_INDEX_PREFETCH(&(t)->index, (pid))
void kepler_proc_table_clear(struct kepler_proc_table *t);
void kepler_proc_table_free(struct kepler_proc_table *t);

/*
 * Start loading the entry of @pid (every line: it is read whole when it is
 * carried), whose index slot was prefetched some lookups before
 * (kepler_proc_table_prefetch()): the slot is read, not the entry; a pid's
 * first entry, whatever its start time. A macro, as KEPLER_PREFETCH_RECORD.
 */
#define kepler_proc_table_prefetch_entry(t, pid)                        \
	do {                                                            \
		int64_t i_ = kepler_pid_index_peek(&(t)->index, (pid)); \
		if (i_ >= 0)                                            \
			KEPLER_PREFETCH_RECORD(&(t)->items[i_]);        \
	} while (0)

int kepler_informer_procfs_open(struct kepler_informer *inf, const struct kepler_informer_params *p,
				struct kepler_error *err);
int kepler_informer_ebpf_open(struct kepler_informer *inf, const struct kepler_informer_params *p,
			      struct kepler_error *err);
/*
 * The census by the BPF task iterator @prog (census_ebpf.c, loaded with the
 * informer's programs), for ops->census; the program is unloaded after it.
 */
struct bpf_program;
int kepler_census_ebpf(struct bpf_program *prog, kepler_census_fn each, void *arg, size_t *ret_count,
		       struct kepler_error *err);

#endif /* KEPLER_COLLECTD_INFORMER_INTERNAL_H */
