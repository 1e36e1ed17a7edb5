/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bpf/census.h: the records of the census (census.bpf.c), shared by the
 * BPF program and the collector, which reads them from the iterator.
 */
#ifndef KEPLER_BPF_CENSUS_H
#define KEPLER_BPF_CENSUS_H

#ifndef __KERNEL__
#include <linux/types.h>
#endif

#define KEPLER_CENSUS_COMM_LEN 16
#define KEPLER_CENSUS_PATH_MAX 4096 /* as PATH_MAX: what readlink(/proc/PID/exe) can return */

enum kepler_census_flags {
	KEPLER_CENSUS_KTHREAD = 1u << 0, /* a kernel thread */
	KEPLER_CENSUS_LEADER = 1u << 1,  /* the thread group's leader: the record stands for the process */
};

/*
 * One task (thread). A leader's record is followed by @exe_len bytes: the
 * path of its program as /proc/PID/exe links to it, NUL included (none
 * when @exe_len is 0: a kernel thread, a zombie, a path too long).
 */
struct kepler_census_task {
	__u32 tgid;
	__u32 pid;
	__u64 start_time_ns; /* the leader's start: the clock of struct kepler_cputime_key */
	/*
	 * This thread's on-CPU time; a leader's also holds the time of the
	 * group's threads that have exited: the sum over a group's records is
	 * what /proc/PID/stat shows as utime + stime.
	 */
	__u64 cpu_ns;
	/*
	 * Leaders: the address of the task's css_set, which is shared by the
	 * tasks that are in the same cgroup of every hierarchy: equal values,
	 * equal /proc/PID/cgroup. Only ever compared, never shown.
	 */
	__u64 cgroups;
	__u32 flags; /* enum kepler_census_flags */
	__u16 exe_len;
	__u16 pad;
	char comm[KEPLER_CENSUS_COMM_LEN]; /* the leader's */
};

/* Room to build one path (too big for the BPF stack). */
struct kepler_census_path {
	char buf[KEPLER_CENSUS_PATH_MAX];
};

#endif /* KEPLER_BPF_CENSUS_H */
