/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shared between bpf/cputime.bpf.c and user space: fixed-width types with
 * explicit padding; user space checks the sizes with _Static_assert.
 */
#ifndef KEPLER_BPF_CPUTIME_H
#define KEPLER_BPF_CPUTIME_H

#ifndef __KERNEL__
#include <linux/types.h>
#endif

#define KEPLER_CPUTIME_COMM_LEN 16

/* Key of the per-process map: one entry per thread group (process). */
struct kepler_cputime_key {
	__u32 tgid;
	__u32 pad;
	__u64 start_time_ns; /* the group leader's start (boottime ns): (tgid, start) is unique */
};

enum kepler_cputime_flags {
	KEPLER_CPUTIME_EXITED = 1u << 0,  /* the group leader has exited or is exiting */
	KEPLER_CPUTIME_KTHREAD = 1u << 1, /* a kernel thread */
	/*
	 * The group leader has been switched out for the last time: no more
	 * CPU time will come (EXITED is set a little earlier, at exit(), and
	 * the task runs on through its teardown until this final switch).
	 */
	KEPLER_CPUTIME_DEAD = 1u << 2,
};

struct kepler_cputime_value {
	__u64 cpu_ns;    /* on-CPU time of all threads, cumulative */
	__u32 flags;     /* enum kepler_cputime_flags */
	__u32 execs;     /* exec()s seen: user space identifies the process again when it changes */
	__u64 cgroup_id; /* cgroup id (inode; v2, or v1 cpu: cgroup_v1_cpu) at the last charge, 0 if none */
	char comm[KEPLER_CPUTIME_COMM_LEN]; /* the leader's, updated at exec() and at exit */
	/* hardware counters while on CPU, cumulative; 0 when not counted */
	__u64 counters[3]; /* enum kepler_cputime_counter */
	/*
	 * The part of cpu_ns whose slices had their counters read; the rest
	 * ran in slices whose switch-in this program did not see (user space
	 * scales the counters up by cpu_ns / counted_ns, as perf scales a
	 * multiplexed counter by time enabled / time running).
	 */
	__u64 counted_ns;
	/*
	 * Where cgroup_id is the v1 cpu controller's (hybrid nodes), the task's
	 * cgroup in the v2 hierarchy too, at the last charge: a workload placed
	 * in the v2 hierarchy alone (systemd units, some runtimes) is found by
	 * it. 0 otherwise.
	 */
	__u64 cgroup_id_v2;
	/*
	 * cpu_ns when the last piece was cut (struct kepler_cputime_piece): a
	 * change of identity cuts one only when at least piece_min_ns ran
	 * since, so that a fork's few hundred µs before its exec cost nothing.
	 */
	__u64 piece_at;
	/*
	 * The cgroups (as cgroup_id and cgroup_id_v2) the process is in as of
	 * its last move: set when the entry is made and by the move hook
	 * alone. A move is told by comparing with these, and a piece's time
	 * ran in them: a charge on another CPU that read the cgroup just
	 * before the move may write cgroup_id after the hook did, and would
	 * hide the next move.
	 */
	__u64 home_cgroup_id, home_cgroup_id_v2;
};

/*
 * One process in the `slots` array, which user space maps and reads in
 * place (no system call, no lock): `processes` maps the key to the slot.
 * The program fills a slot, maps the key to it, then sets `live`; user
 * space reads only live slots, and frees one by deleting the key, clearing
 * `live`, and handing the slot back (through `free_slots`) an interval
 * later, when no program can still be writing to it.
 */
struct kepler_cputime_slot {
	struct kepler_cputime_key key;
	struct kepler_cputime_value value;
	__u32 live; /* 1: the key maps here and the slot is filled */
	__u32 pad;
};

/*
 * The task now running on each CPU (an array indexed by CPU, mapped by
 * user space, which reads it without a system call), and its on-CPU time
 * when it was switched in: user space adds the part of the current slice
 * that no switch has charged yet, so that a task that keeps a CPU for
 * seconds is not reported in lumps. One cache line each: the CPUs write
 * theirs at every switch, and a line shared by two would bounce between
 * them.
 */
struct kepler_cputime_running {
	__u64 task;             /* task_struct address: identity for the BPF program */
	__u64 sum_exec_runtime; /* the task's on-CPU time at switch-in */
	__u64 counters[3];      /* this CPU's counters at switch-in */
	__u32 pid, tgid;        /* 0 for the idle task */
	__u64 pad[2];
};

/*
 * The program a process runs, as exec() was given it (linux_binprm's
 * interp: a script's interpreter, symlinks not resolved), recorded at each
 * exec so that a collector without CAP_SYS_PTRACE still names the programs
 * of other users (their /proc/PID/exe is closed to it). Keyed like
 * `processes`, in an LRU map of the same size.
 */
#define KEPLER_EXE_LEN 256
struct kepler_cputime_exe {
	char path[KEPLER_EXE_LEN];
};

/*
 * A piece of a process's account, cut when its identity changes: at an
 * exec (another program, another comm) and at a move to another cgroup
 * (a container's runtime puts its first process into the container's
 * cgroup after it has run a while). Everything in the process's entry up
 * to cpu_ns (its counters up to counters and counted_ns) ran as the comm,
 * program and cgroups recorded here; what follows runs as the entry says
 * now. Sent to user space through the `pieces` ring buffer, in the order
 * they were cut for each process.
 */
enum kepler_cputime_piece_why {
	KEPLER_CPUTIME_PIECE_EXEC = 1,
	KEPLER_CPUTIME_PIECE_MOVE = 2,
};

struct kepler_cputime_piece {
	struct kepler_cputime_key key;
	__u64 cpu_ns;                       /* the entry's cpu_ns at the cut */
	__u64 counters[3];                  /* and its counters */
	__u64 counted_ns;                   /* and counted_ns */
	__u64 cgroup_id, cgroup_id_v2;      /* where that time ran (as in the entry) */
	__u32 execs;                        /* the entry's execs before the cut */
	__u32 why;                          /* enum kepler_cputime_piece_why */
	char comm[KEPLER_CPUTIME_COMM_LEN]; /* the comm that time ran as */
	char exe[KEPLER_EXE_LEN];           /* the program, "" if the `exes` map had none */
};

/* The perf counters read at each switch when hw_counters is set. */
enum kepler_cputime_counter {
	KEPLER_CPUTIME_CYCLES = 0,
	KEPLER_CPUTIME_INSTRUCTIONS = 1,
	KEPLER_CPUTIME_CACHE_MISSES = 2,
	KEPLER_CPUTIME_NCOUNTERS = 3,
};

/*
 * Index of the counters in the `stats` per-CPU array map (the charges lost
 * because the map was full are the global `overflows`: user space reads it
 * every refresh, in place).
 */
enum kepler_cputime_stat {
	/* a task switched out that this CPU's record did not show switched in: its slice is lost */
	KEPLER_CPUTIME_STAT_UNSEEN = 0,
	/* time charged at a switch-in, its switch-out not having been seen */
	KEPLER_CPUTIME_STAT_CAUGHT_UP = 1,
	KEPLER_CPUTIME_STAT_MAX = 2,
};

#endif /* KEPLER_BPF_CPUTIME_H */
