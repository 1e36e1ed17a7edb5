// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The census: every task the kernel has, in one walk, when the eBPF
 * informer opens (a task iterator, read by the collector like a file). For
 * each process it gives what the collector would otherwise read from three
 * files of /proc per process (stat, exe, cgroup): its start, comm, kind,
 * lifetime CPU time, program, and a token of its cgroups, so that the
 * collector reads /proc/PID/cgroup once per set of cgroups instead of once
 * per process. See collectd/informers/census_ebpf.c. Linked into the
 * informer's object (cputime.skel.h): one parse of the kernel's BTF loads
 * both; the informer loads it without this program where it fails.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "kepler_core.h"
#include "census.h"

/* Linked into the informer's object (bpf/CMakeLists.txt): its LICENSE is cputime.bpf.c's. */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kepler_census_path);
} path_scratch SEC(".maps");

/* The program of @task's process (its mm's exe_file): bytes written to @path, NUL included; 0 if none. */
static __always_inline __u32 exe_of(struct task_struct *task, struct kepler_census_path *path)
{
	struct mm_struct *mm = task->mm;
	struct file *exe;
	long n;

	if (!mm)
		return 0;
	exe = mm->exe_file;
	if (!exe)
		return 0;
	n = bpf_d_path(&exe->f_path, path->buf, sizeof(path->buf));
	return n > 0 && n <= KEPLER_CENSUS_PATH_MAX ? (__u32)n : 0;
}

/*
 * Scalars are read with BPF_CORE_READ (bpf_probe_read_kernel) rather than
 * by direct loads through BTF pointers: the verifier looks up, for each
 * pointer loaded through another, whether the kernel trusts it, by a
 * linear search of the kernel's BTF (~2 ms each on Linux 6.18). Only the
 * exe's path must be a BTF pointer (bpf_d_path takes no other).
 */
SEC("iter/task")
int kepler_census(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct kepler_census_task rec = {};
	struct kepler_census_path *path;
	__u32 zero = 0, len = 0;

	if (!task)
		return 0;
	rec.tgid = BPF_CORE_READ(task, tgid);
	rec.pid = BPF_CORE_READ(task, pid);
	if (bpf_core_field_exists(task->start_boottime))
		rec.start_time_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	else
		rec.start_time_ns = BPF_CORE_READ(task, group_leader, start_time);
	rec.cpu_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	if (rec.pid != rec.tgid) {
		bpf_seq_write(seq, &rec, sizeof(rec));
		return 0;
	}
	rec.flags = KEPLER_CENSUS_LEADER;
	if (BPF_CORE_READ(task, flags) & KEPLER_PF_KTHREAD)
		rec.flags |= KEPLER_CENSUS_KTHREAD;
	rec.cpu_ns += BPF_CORE_READ(task, signal, sum_sched_runtime);
	rec.cgroups = (__u64)BPF_CORE_READ(task, cgroups);
	BPF_CORE_READ_STR_INTO(&rec.comm, task, comm);
	path = bpf_map_lookup_elem(&path_scratch, &zero);
	if (path && !(rec.flags & KEPLER_CENSUS_KTHREAD))
		len = exe_of(task, path);
	rec.exe_len = (__u16)len;
	bpf_seq_write(seq, &rec, sizeof(rec));
	if (path && len > 0 && len <= KEPLER_CENSUS_PATH_MAX)
		bpf_seq_write(seq, path->buf, len);
	return 0;
}
