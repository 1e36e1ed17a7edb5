/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The few kernel types the BPF programs read, as CO-RE declarations:
 * preserve_access_index makes clang emit BTF relocations, and libbpf fixes
 * each field offset against the running kernel's BTF at load time. Only the
 * fields used are declared; their order and the struct size do not matter.
 */
#ifndef KEPLER_CORE_H
#define KEPLER_CORE_H

#include <linux/types.h>

#define KEPLER_PF_EXITING 0x00000004
#define KEPLER_PF_KTHREAD 0x00200000
#define KEPLER_TASK_DEAD 0x00000080 /* a task's state at its final context switch */

struct sched_entity {
	__u64 sum_exec_runtime; /* on-CPU ns, updated by the scheduler */
} __attribute__((preserve_access_index));

struct kernfs_node {
	__u64 id; /* a cgroup's id: its directory's inode in its hierarchy (Linux 5.5 and later) */
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
} __attribute__((preserve_access_index));

/* A controller's state in a cgroup: in cgroup v1, the cgroup of that controller's hierarchy. */
struct cgroup_subsys_state {
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

/* Controllers' indexes in css_set.subsys (their values are relocated from the kernel's BTF). */
enum cgroup_subsys_id {
	cpu_cgrp_id = 1,
};

struct css_set {
	struct cgroup_subsys_state *subsys[1]; /* by enum cgroup_subsys_id; the kernel's is longer */
	struct cgroup *dfl_cgrp;               /* the task's cgroup in the v2 (unified) hierarchy */
} __attribute__((preserve_access_index));

struct path {
	void *mnt;
	void *dentry;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
} __attribute__((preserve_access_index));

struct mm_struct {
	struct file *exe_file; /* what /proc/PID/exe links to */
} __attribute__((preserve_access_index));

struct signal_struct {
	__u64 sum_sched_runtime; /* on-CPU ns of the group's threads that have exited */
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int __state; /* Linux 5.14 and later */
	struct sched_entity se;
	int pid;
	int tgid;
	unsigned int flags;
	__u64 start_time;     /* monotonic ns since boot */
	__u64 start_boottime; /* ns since boot, suspend included: what /proc/PID/stat shows */
	struct task_struct *group_leader;
	struct css_set *cgroups;
	struct mm_struct *mm;
	struct signal_struct *signal;
	char comm[16];
} __attribute__((preserve_access_index));

/* A task iterator's context (iter/task programs). */
struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task; /* NULL at the end of the walk */
} __attribute__((preserve_access_index));

/* exec()'s arguments: the program as it was asked for, and what runs (a script's interpreter) */
struct linux_binprm {
	const char *filename;
	const char *interp;
} __attribute__((preserve_access_index));

/* Before Linux 5.14 the state field was `long state` (the ___old suffix is CO-RE's "flavour"). */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

#endif /* KEPLER_CORE_H */
